"""A real Prometheus (``cluster.prometheus``) asked for the binding rate over the run: an independent
figure next to kwokbench's own (``prometheus.json``)."""

from __future__ import annotations

from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.measure import Recorder, RunContext
from kwokbench.metrics.prometheus import query_run
from kwokbench.store import PROMETHEUS, RunDir, load_run


class PrometheusCrossCheck(Recorder):
    name = "prometheus cross-check"

    def collect(self, ctx: RunContext) -> None:
        pods = load_run(ctx.run_dir).pods
        if not ctx.prometheus_port or not isinstance(ctx.cluster, ClusterInfo) or not len(pods):
            return
        ctx.reporter.info("querying Prometheus for the independent binding-rate cross-check")
        prom = query_run(ctx.prometheus_port, ctx.cluster.apiserver_port, float(pods["created"].min()),
                         float(pods["scheduled"].max()))
        RunDir(ctx.run_dir).write_doc(PROMETHEUS, prom)
