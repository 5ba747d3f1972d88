"""Every component's ``/metrics`` each second, raw, plus CPU and RSS of each process (a child process)."""

from __future__ import annotations

from kwokbench.cluster.endpoints import Endpoint
from kwokbench.errors import ClusterError
from kwokbench.measure import Recorder, RunContext
from kwokbench.metrics.scrape import Scraper, cluster_endpoints
from kwokbench.store import SCRAPE_STATS


class ComponentScrapes(Recorder):
    name = "component scrapes"

    def __init__(self) -> None:
        self._scraper: Scraper | None = None
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        attached = ctx.attached
        pids = {"kwok-controller": attached.kwok_pid} if attached else ctx.kwokctl.pids(ctx.cluster.name)
        self._scraper = Scraper(endpoints(ctx), pids, ctx.run_dir, ctx.scrape_interval,
                                pid_dir=None if attached else ctx.kwokctl.cluster_dir(ctx.cluster.name) / "pids")
        if not self._scraper.wait_started(60):
            raise ClusterError("the metrics scraper did not start within 60s")

    def stop(self) -> None:
        if self._scraper is not None and self.run_dir is not None:
            self.run_dir.write_doc(SCRAPE_STATS, self._scraper.stop())


def endpoints(ctx: RunContext) -> list[Endpoint]:
    """The cluster's components, less kwokctl's kube-scheduler when kwokbench runs the scheduler(s) itself,
    plus every endpoint the run's components serve (schedulers started here, Kueue)."""
    out = cluster_endpoints(ctx.cluster)
    if any(c.replaces_kube_scheduler for c in ctx.components):
        out = [e for e in out if e.component != "kube-scheduler"]
    for c in ctx.components:
        out += c.endpoints()
    return out
