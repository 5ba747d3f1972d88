"""Host-noise evidence over the measured window: CPU steal and load, a CPU calibration before and after."""

from __future__ import annotations

from kwokbench.measure import RunContext
from kwokbench.metrics.host import HostNoise
from kwokbench.store import HOST, RunDir


class HostEvidence:
    name = "host noise"

    def __init__(self) -> None:
        self._noise: HostNoise | None = None
        self._run_dir: RunDir | None = None

    def start(self, ctx: RunContext) -> None:
        self._run_dir = RunDir(ctx.run_dir)
        self._noise = HostNoise().start()

    def stop(self) -> None:
        if self._noise is not None and self._run_dir is not None:
            self._run_dir.write_doc(HOST, self._noise.stop())

    def collect(self, ctx: RunContext) -> None:
        pass
