"""The pod timeline: a list + watch of the run's pods in a child process (``pods.parquet``)."""

from __future__ import annotations

from kwokbench.errors import ClusterError
from kwokbench.load.watcher import Watcher
from kwokbench.measure import Recorder, RunContext
from kwokbench.store import PODS, WATCH


class PodTimeline(Recorder):
    name = "pod timeline"

    def __init__(self) -> None:
        self.watcher: Watcher | None = None
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        self.watcher = Watcher(ctx.cluster.credentials(), ctx.run_label, [w.name for w in ctx.scenario.workloads],
                               ctx.run_dir / PODS)
        if not self.watcher.wait_synced(60):
            raise ClusterError("the pod watch did not start within 60s")

    def stop(self) -> None:
        if self.watcher is not None and self.run_dir is not None:
            errors = self.watcher.stop()
            self.run_dir.write_doc(WATCH, {"errors": errors, "gaps": self.watcher.gaps})
