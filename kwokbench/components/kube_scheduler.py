"""The stock kube-scheduler (the control plane's version), and what every kube-scheduler kind shares.

kwokctl runs it as one of the cluster's components, configured from the variant (``configure``); when several
variants share a cluster (``concurrent_schedulers``), kwokbench starts each kube-scheduler itself instead, with
its own profile name, secure port and configuration (:func:`kwokbench.cluster.schedulers.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from kwokbench import flags
from kwokbench.cluster import schedulers as own
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions
from kwokbench.components import Base, PodSettings, Scheduler, cluster_options, own_component_name
from kwokbench.components.extender.component import Extender
from kwokbench.errors import ScenarioError
from kwokbench.progress import Reporter
from kwokbench.scenario import ExtenderSpec, WorkloadSpec
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain import versions

NATIVE_GANGS_FROM = "v1.36.0"
"""kube-scheduler's own gangs (PodGroup, members naming it in ``spec.schedulingGroup``) as kwokbench creates them:
``scheduling.k8s.io/v1alpha2`` in 1.36 (the GenericWorkload and GangScheduling gates, both alpha), ``v1beta1`` from
1.37 (GenericWorkload; GangScheduling is on there). 1.35's v1alpha1 has another shape (Workload objects, pods naming
them in ``workloadRef``) and is refused."""
NATIVE_GANGS_BETA_FROM = "v1.37.0"


def native_gangs_api(release: str) -> tuple[str, dict[str, bool]]:
    """The PodGroup API version and the feature gates kube-scheduler's own gangs need on ``release``."""
    if versions.tag_key(release) < versions.tag_key(NATIVE_GANGS_BETA_FROM):
        return "scheduling.k8s.io/v1alpha2", {"GenericWorkload": True, "GangScheduling": True}
    return "scheduling.k8s.io/v1beta1", {"GenericWorkload": True}


class KubeSchedulerBase(SchedulerSpec):
    """What every kube-scheduler build takes: a configuration file and flags."""

    config: str | None = Field(None, description=(
        "KubeSchedulerConfiguration file (relative to the scenario). Client QPS/burst are set unlimited "
        "unless cluster.qps_limits is true."))
    extra_args: list[str] = Field(default_factory=list, description=(
        "kube-scheduler flags of this variant, key=value (e.g. `v=3`, `feature-gates=SchedulerAsyncAPICalls=true`), "
        "after the cluster's kube-scheduler entries: a repeated flag takes the last value, feature gates merge. "
        "Flags kwokbench sets (config, kubeconfig, ports, leader election, client limits) are refused: each has a "
        "setting of its own."))
    plugin_args: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "pluginConfig args by plugin name, merged over the configuration's (each key replaces the one there), "
        "e.g. `{GPUShare: {policy: BestFit}}`: variants that differ in one argument share one configuration file. "
        "A value `{trace.seed}` is the seed of the scenario's trace workload, so a plugin's own random draws follow "
        "the pod list's seed (`--set workloads.0.trace.seed=43` moves both)."))


    @field_validator("extra_args")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        return flags.check_scheduler_flags(v)


class KubeSchedulerSpec(KubeSchedulerBase):
    """A kube-scheduler variant (stock, scheduler-plugins): configuration, flags, kwokbench's extender."""

    extender: ExtenderSpec | None = Field(None, description=(
        "Start kwokbench's builtin HTTP extender for this variant and add it to the configuration's extenders."))
    gangs: Literal["none", "native"] = Field("none", description=(
        "`native`: a gang workload's groups are kube-scheduler's own PodGroups (scheduling.k8s.io/v1beta1 from "
        "1.37, v1alpha2 in 1.36; placed whole by its GangScheduling plugin; the feature gates and the API are turned "
        "on), each member naming its group in spec.schedulingGroup; from Kubernetes v1.36.0, stock kube-scheduler "
        "only. "
        "`none` (default): the members are placed one by one."))

    def concurrent_problem(self) -> str | None:
        return "an extender only runs with one variant per cluster" if self.extender else None


CATALOGUE = Path(__file__).resolve().parent.parent / "builtin_configs"
TRACE_SEED = "{trace.seed}"
"""A plugin_args value that stands for the seed of the scenario's trace workload."""
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
        "scheduler_config": ("config",), "extenders": ("extender",), "extra_args": ("extra_args",),
        "scheduler_flags": ("extra_args",),
        "feature_gates": ("gangs",), "runtime_config": ("gangs",)}
    variant: KubeSchedulerBase

    @property
    def replaces_kube_scheduler(self) -> bool:  # type: ignore[override]
        return self.setup.concurrent

    @property
    def native_gangs(self) -> bool:
        return getattr(self.variant, "gangs", "none") == "native"

    def check(self) -> None:
        resolve_config(self.setup.base, self.variant.config)
        self.plugin_args()
        if self.native_gangs:
            release = self.setup.scenario.kubernetes_for(self.variant)
            where = f"scheduler {self.variant.name}: gangs: native"
            if self.kind != "kube-scheduler":
                raise ScenarioError(f"{where} is the stock kube-scheduler's (binary: kube-scheduler), "
                                    f"not {self.kind}'s")
            if versions.tag_key(release) < versions.tag_key(NATIVE_GANGS_FROM):
                raise ScenarioError(f"{where} needs Kubernetes {NATIVE_GANGS_FROM} or newer (its PodGroup API is "
                                    f"scheduling.k8s.io/v1alpha2 in 1.36, v1beta1 from 1.37; 1.35's v1alpha1 is "
                                    f"not supported); this variant runs {release}")
            if not self.setup.scenario.cluster.controller_manager:
                raise ScenarioError(f"{where} needs cluster.controller_manager: true (its podgroup-protection "
                                    "controller releases a deleted PodGroup)")
        if self.setup.reused and getattr(self.variant, "extender", None):
            raise ScenarioError("--cluster reuses a cluster whose scheduler is already configured; a variant with an "
                                "extender needs a fresh cluster (drop --cluster)")

    def plugin_args(self) -> dict[str, dict[str, Any]]:
        """The variant's plugin_args, each ``{trace.seed}`` the seed of the scenario's trace workload."""
        args = self.variant.plugin_args
        if not any(v == TRACE_SEED for a in args.values() for v in a.values()):
            return args
        seeds = sorted({w.trace.seed for w in self.setup.scenario.workloads if w.trace is not None})
        if len(seeds) != 1:
            has = f"trace workloads of seeds {', '.join(map(str, seeds))}" if seeds else "no trace workload"
            raise ScenarioError(f"scheduler {self.variant.name}: plugin_args {TRACE_SEED} is the seed of the "
                                f"scenario's trace workload, and it has {has}")
        return {p: {k: seeds[0] if v == TRACE_SEED else v for k, v in a.items()} for p, a in args.items()}

    def addons(self) -> list[Base]:
        ext: ExtenderSpec | None = getattr(self.variant, "extender", None)
        return [Extender(ext)] if ext is not None and not self.setup.reused else []

    def own_options(self, copts: ClusterOptions) -> None:
        """The variant's configuration, flags and binary in the options its kube-scheduler is started with."""
        copts.scheduler_config = resolve_config(self.setup.base, self.variant.config)
        copts.extra_args = [*copts.extra_args, *[f"kube-scheduler={a}" for a in self.variant.extra_args]]
        if self.variant.plugin_args:
            copts.scheduler_plugin_args = {**copts.scheduler_plugin_args, **self.plugin_args()}
        if self.binary is not None:
            copts.scheduler_binary = self.binary

    def configure(self, copts: ClusterOptions) -> None:
        if not self.setup.concurrent:  # several at once: each starts with options of its own (start)
            self.own_options(copts)
        if self.native_gangs:  # the apiserver serves the API, the scheduler and controller-manager use it
            api, gates = native_gangs_api(self.setup.scenario.kubernetes_for(self.variant))
            copts.feature_gates = {**copts.feature_gates, **gates}
            copts.runtime_config = [*copts.runtime_config, f"{api}=true"]

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        name = self.variant.effective_scheduler_name if self.variant.scheduler_name else None
        if self.native_gangs and w.gang:
            api, _ = native_gangs_api(self.setup.scenario.kubernetes_for(self.variant))
            return PodSettings(scheduler_name=name, gang_template="native-podgroup", scheduling_group=True,
                               gang_params={"api_version": api})
        return PodSettings(scheduler_name=name)

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
                          self.setup.toolchain.path("kube-scheduler"), self.binary,
                          flags.for_component(copts.extra_args, "kube-scheduler"),
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
