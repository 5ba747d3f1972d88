"""The stock kube-scheduler (the control plane's version), and what every kube-scheduler kind shares.

kwokctl runs it as one of the cluster's components, configured from the variant (``configure``); when several
variants share a cluster (``concurrent_schedulers``), kwokbench starts each kube-scheduler itself instead, with
its own profile name, secure port and configuration (:func:`kwokbench.cluster.schedulers.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions
from kwokbench.components import Base, PodSettings, Scheduler, cluster_options, own_component_name
from kwokbench.components.extender import Extender
from kwokbench.errors import ScenarioError
from kwokbench.kind import SchedulerSpec
from kwokbench.progress import Reporter
from kwokbench.scenario import ExtenderSpec, WorkloadSpec


class KubeSchedulerBase(SchedulerSpec):
    """What every kube-scheduler build takes: a configuration file and flags."""

    config: str | None = Field(None, description=(
        "KubeSchedulerConfiguration file (relative to the scenario). Client QPS/burst are set unlimited "
        "unless cluster.qps_limits is true."))
    extra_args: list[str] = Field(default_factory=list, description="Extra kube-scheduler flags, key=value.")


class KubeSchedulerSpec(KubeSchedulerBase):
    """A kube-scheduler variant (stock, scheduler-plugins): configuration, flags, kwokbench's extender."""

    extender: ExtenderSpec | None = Field(None, description=(
        "Start kwokbench's builtin HTTP extender for this variant and add it to the configuration's extenders."))

    def concurrent_problem(self) -> str | None:
        return "an extender only runs with one variant per cluster" if self.extender else None


CATALOGUE = Path(__file__).resolve().parent.parent / "builtin_configs"
"""kwokbench's own KubeSchedulerConfigurations (``scenarios/configs`` in a checkout is this folder)."""


def resolve_config(base: Path, p: str | None) -> Path | None:
    """A variant's ``config``, relative to the scenario; else, by its file name, one of kwokbench's own
    configurations (so ``configs/binpack.yaml`` works in a scenario written outside this repository, such as a
    capture's); missing from both, a ScenarioError."""
    if p is None:
        return None
    path = Path(p).expanduser()
    path = path if path.is_absolute() else base / path
    if path.is_file():
        return path
    builtin = CATALOGUE / Path(p).name
    if not Path(p).is_absolute() and builtin.is_file():
        return builtin
    known = ", ".join(sorted(f.name for f in CATALOGUE.glob("*.yaml")))
    raise ScenarioError(f"scheduler config {p}: no such file (relative to {base}), nor one of kwokbench's own "
                        f"configurations ({known})")


class KubeScheduler(Scheduler):
    kind = "kube-scheduler"
    title = "kube-scheduler"
    settings: ClassVar[type[SchedulerSpec]] = KubeSchedulerSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "scheduler_config": ("config",), "extenders": ("extender",), "extra_args": ("extra_args",)}
    variant: KubeSchedulerBase

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.concurrent

    def check(self) -> None:
        resolve_config(self.setup.base, self.variant.config)
        if self.setup.reused and getattr(self.variant, "extender", None):
            raise ScenarioError("--cluster reuses a cluster whose scheduler is already configured; a variant with an "
                                "extender needs a fresh cluster (drop --cluster)")

    def addons(self) -> list[Base]:
        ext: ExtenderSpec | None = getattr(self.variant, "extender", None)
        return [Extender(ext)] if ext is not None and not self.setup.reused else []

    def own_options(self, copts: ClusterOptions) -> None:
        """The variant's configuration, flags and binary in the options its kube-scheduler is started with."""
        copts.scheduler_config = resolve_config(self.setup.base, self.variant.config)
        copts.extra_args = [*copts.extra_args, *[f"kube-scheduler={a}" for a in self.variant.extra_args]]
        if self.binary is not None:
            copts.scheduler_binary = self.binary

    def configure(self, copts: ClusterOptions) -> None:
        if not self.setup.concurrent:  # several at once: each starts with options of its own (start)
            self.own_options(copts)

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        return PodSettings(scheduler_name=self.variant.effective_scheduler_name if self.variant.scheduler_name
                           else None)

    def version(self) -> str:
        if self._record is not None:
            return str(self._record.get("version", ""))
        return own.version([str(self.binary or self.setup.toolchain.path("kube-scheduler")), "--version"],
                           Path.cwd())

    def fairness(self) -> dict[str, Any]:
        return {"scheduler_config": self.variant.config}

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        if not self.replaces_kube_scheduler:
            return None
        assert isinstance(info, ClusterInfo)
        copts = cluster_options(self.setup.scenario, self.setup.base, self.variant, info.name, self.setup.toolchain)
        self.own_options(copts)
        # one variant alone is the run's scheduler: measured as kube-scheduler, like kwokctl's
        component = own_component_name(self.name) if self.setup.concurrent else "kube-scheduler"
        launch = own.plan(self.name, self.variant.effective_scheduler_name, info, copts, component,
                          self.setup.toolchain.path("kube-scheduler"), self.binary, self.variant.extra_args,
                          self.variant.ready_timeout_seconds)
        self._info = info
        with rep.status(f"starting scheduler {self.name} ({launch.scheduler_name})"):
            self._record = {"kind": self.kind, **own.start(launch, info)}
        return self._record

    def endpoints(self) -> list[Endpoint]:
        return own.endpoints_of(self._record, self._info)

    def stop(self) -> None:
        if self._record is not None and self._info is not None:
            own.stop(self._info, self._record["component"])
            self._record = None
