"""Nodes and the latest FailedScheduling message of every pod, read before the cluster goes
(``nodes.parquet``, ``failed_scheduling.json``), for placement quality."""

from __future__ import annotations

import asyncio

import pandas as pd

from kwokbench.cluster.objects import cluster_state
from kwokbench.errors import KwokbenchError
from kwokbench.measure import Recorder, RunContext
from kwokbench.store import FAILED_SCHEDULING, NODES, RunDir


class ClusterState(Recorder):
    name = "cluster state"

    def collect(self, ctx: RunContext) -> None:
        if not (ctx.created_cluster or ctx.extras.get("reused_cluster")):
            return
        namespaces = {w.namespace for w in ctx.scenario.workloads}
        try:
            rows, messages = asyncio.run(cluster_state(ctx.cluster.credentials(), namespaces))
        except KwokbenchError as e:
            ctx.reporter.warn(f"placement quality not measured: could not read nodes/events ({e})")
            return
        rd = RunDir(ctx.run_dir)
        rd.write_frame(NODES, pd.DataFrame(rows, columns=["name", "group", "cpu_m", "gpus", "pods", "mem_mi",
                                                          "gpu_milli", "gpu_model"]))
        rd.write_doc(FAILED_SCHEDULING, {"messages": messages})
