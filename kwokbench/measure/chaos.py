"""The scenario's timed disruptions, run in a thread; every event as it happened (``chaos.json``)."""

from __future__ import annotations

from kwokbench.cluster.chaos import Chaos
from kwokbench.measure import Recorder, RunContext
from kwokbench.store import CHAOS


class ChaosEvents(Recorder):
    name = "chaos"

    def __init__(self) -> None:
        self._chaos: Chaos | None = None
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        # component actions were refused for attached clusters before the run started
        self._chaos = Chaos(ctx.scenario.chaos, ctx.cluster, ctx.kwokctl, [])
        self._chaos.start()

    def stop(self) -> None:
        if self._chaos is not None and self.run_dir is not None:
            self.run_dir.write_doc(CHAOS, {"events": self._chaos.stop()})
