"""The scenario's timed disruptions, run in a thread; every event as it happened (``chaos.json``)."""

from __future__ import annotations

from kwokbench.chaos import Chaos
from kwokbench.measure import RunContext
from kwokbench.store import CHAOS, RunDir


class ChaosEvents:
    name = "chaos"

    def __init__(self) -> None:
        self._chaos: Chaos | None = None
        self._run_dir: RunDir | None = None

    def start(self, ctx: RunContext) -> None:
        self._run_dir = RunDir(ctx.run_dir)
        # component actions were refused for attached clusters before the run started
        self._chaos = Chaos(ctx.scenario.chaos, ctx.cluster, ctx.kwokctl, [])
        self._chaos.start()

    def stop(self) -> None:
        if self._chaos is not None and self._run_dir is not None:
            self._run_dir.write_doc(CHAOS, {"events": self._chaos.stop()})

    def collect(self, ctx: RunContext) -> None:
        pass
