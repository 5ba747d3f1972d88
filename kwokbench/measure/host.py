"""Host-noise evidence over the measured window: CPU steal and load, a CPU calibration before and after."""

from __future__ import annotations

from kwokbench.measure import Recorder, RunContext
from kwokbench.metrics.host import HostNoise
from kwokbench.store import HOST


class HostEvidence(Recorder):
    name = "host noise"

    def __init__(self) -> None:
        self._noise: HostNoise | None = None
        super().__init__()

    def start(self, ctx: RunContext) -> None:
        super().start(ctx)
        self._noise = HostNoise().start()

    def stop(self) -> None:
        if self._noise is not None and self.run_dir is not None:
            self.run_dir.write_doc(HOST, self._noise.stop())
