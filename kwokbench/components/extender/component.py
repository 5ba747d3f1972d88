"""kwokbench's builtin HTTP scheduler extender (``extender:`` on a variant): a process the scheduler's
configuration names by URL, so it starts before the cluster and stops with the run."""

from __future__ import annotations

from kwokbench.cluster.kwokctl import ClusterOptions
from kwokbench.components import Base
from kwokbench.components.extender.process import ExtenderProcess
from kwokbench.measure import Measurement
from kwokbench.progress import Reporter
from kwokbench.scenario import ExtenderSpec


class Extender(Base):
    name = "extender"

    def __init__(self, spec: ExtenderSpec) -> None:
        self.process = ExtenderProcess(spec)

    @property
    def url(self) -> str:
        return self.process.url

    def configure(self, copts: ClusterOptions) -> None:
        copts.scheduler_extenders = [*copts.scheduler_extenders, self.process.config]

    def prepare(self, rep: Reporter) -> None:
        self.process.start()

    def measurements(self) -> list[Measurement]:
        from kwokbench.components.extender.measure import ExtenderStats

        return [ExtenderStats(self.process.url)]

    def version(self) -> str:
        from kwokbench import __version__

        return f"kwokbench builtin extender {__version__}"

    def stop(self) -> None:
        self.process.stop()
