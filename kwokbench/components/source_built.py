"""The shape the scheduler kinds built from pinned sources share (Volcano, KAI, YuniKorn): built by their recipe,
started as processes of their own in place of kwokctl's kube-scheduler on clusters kwokbench creates, each process a
cluster component (pid file, log) stopped in reverse order of start."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.components import Scheduler, Setup, own_component_name
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter
from kwokbench.toolchain.sources import SourceBuild


class SourceBuilt(Scheduler):
    """A scheduler kind built from its pinned sources (``recipe``) that runs in place of kube-scheduler. A kind
    says what it checks, starts and measures; this says where it runs, how it is built, its version line and how its
    processes stop."""

    replaces_kube_scheduler = True
    recipe: ClassVar[SourceBuild]

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self._component = own_component_name(self.name) if setup.concurrent else "kube-scheduler"
        """Its scheduler process's pid-file, log and metrics name (kube-scheduler's, whose place it takes)."""
        self._started: list[str] = []
        """Components started on the cluster, in start order (stopped in reverse)."""

    def refuse_attached(self, info: Any = None) -> None:
        """ScenarioError on a cluster kwokbench did not create (``info``: the cluster it is about to start on)."""
        if self.setup.attached is not None or (info is not None and not isinstance(info, ClusterInfo)):
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts {self.title} only on clusters it creates")

    def check(self) -> None:
        self.refuse_attached()

    def build(self, rep: Reporter) -> None:
        self.binary = self.recipe.build(None, rep)

    def built(self, info: Any, rep: Reporter) -> Path:
        """Its binary, built if it was not, before starting on ``info`` (refused there if kwokbench did not
        create it)."""
        self.refuse_attached(info)
        if self.binary is None:
            self.build(rep)
        assert self.binary is not None
        return self.binary

    def version(self) -> str:
        return self.recipe.version_line()

    def stop(self) -> None:
        if self._info is not None:
            for component in reversed(self._started):
                own.stop(self._info, component)
            self._started = []
            self._info = None
