"""Schedulers and the other components a run brings up next to kwokctl's control plane, behind one protocol.

Every scheduler kind (stock kube-scheduler, scheduler-plugins, a Go plugin build, the WASM host with a guest,
an external binary, Apache YuniKorn, the reference WASM extension) and every add-on component (kwokbench's
extender, Kueue) implements :class:`Component`, a file each, so :func:`kwokbench.runner.run_variant` reads as the
lifecycle alone:

``build`` (binaries into the cache, before any cluster) → ``configure`` (its share of how the cluster is
created: which kube-scheduler kwokctl runs, with which configuration, or none) → ``prepare`` (a process the
cluster's configuration names, started before the cluster: the extender) → *the cluster comes up* →
``start`` (started and ready, with a record for ``meta.json``) → *measured*: ``endpoints`` (metrics and
pprof), ``measurements`` (its own recorders) → ``stop`` (always, whatever state the run is in).

A new scheduler kind is one file here (a :class:`Scheduler` subclass that also says what
:class:`kwokbench.scheduler_kinds.Kind` asks: its settings, fairness keys, metrics, report rows, source build) plus
one line in ``pyproject.toml``'s ``kwokbench.schedulers`` entry points (the ``binary:`` value that selects it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import yaml
from pydantic import BaseModel

from kwokbench import scheduler_kinds
from kwokbench.cluster import stages
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterOptions, free_port, home_dir
from kwokbench.components.kueue.cluster import write_stage_config
from kwokbench.scheduler_kinds import SchedulerSpec

if TYPE_CHECKING:
    from kwokbench.cluster.attach import AttachedCluster
    from kwokbench.cluster.kwokctl import ClusterInfo
    from kwokbench.measure import Measurement
    from kwokbench.progress import Reporter
    from kwokbench.scenario import Scenario, WorkloadSpec
    from kwokbench.toolchain import Toolchain
    from kwokbench.toolchain.sources import SourceBuild


@dataclass
class Setup:
    """What a component knows of the run it belongs to."""

    scenario: Scenario
    base: Path
    """The scenario file's directory (relative paths are relative to it)."""
    variant: SchedulerSpec
    toolchain: Toolchain
    concurrent: bool = False
    """Several scheduler variants share one cluster: kwokbench starts each itself under its own name."""
    reused: bool = False
    """The run reuses an existing cluster (``--cluster``): nothing that changes its creation applies."""
    attached: AttachedCluster | None = None


@dataclass
class PodSettings:
    """What a scheduler kind writes into the pods it owns, besides the workload's own template."""

    scheduler_name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    group_labels: tuple[str, ...] = ()
    """Labels whose value is the pod's group (gang, or application of ``group_size`` pods)."""
    group_size: int = 0
    gang_template: str | None = None
    """A gang workload's group objects are made from this template (a builtin name or a path) instead of the
    workload's ``gang.template``: the kind's own PodGroup kind."""
    gang_params: dict[str, Any] = field(default_factory=dict)
    """More variables of that template (besides min_member and schedule_timeout_seconds)."""
    gang_annotations: tuple[str, ...] = ()
    """Pod annotations whose value is the pod's gang (group object) name."""
    scheduling_group: bool = False
    """A gang member names its group in ``spec.schedulingGroup.podGroupName`` (kube-scheduler's own gangs)."""
    object_kinds: frozenset[str] = frozenset({"Pod", "Job"})
    """The workload objects it runs (:func:`kwokbench.manifests.object_kind`): a Volcano Job's pods, say, are
    made by Volcano's own controller, which only Volcano runs."""
    object_spec: dict[str, Any] = field(default_factory=dict)
    """Fields it sets on a workload object's own spec (a Volcano Job's queue and schedulerName)."""


class Component(Protocol):
    """One component of a run. ``start`` may assume ``build``, ``configure`` and ``prepare`` ran; ``stop``
    must be safe in any state (a failed ``start``, a run interrupted before it)."""

    name: str

    def build(self, rep: Reporter) -> None:
        """Provision its binaries (cached: a no-op once built); before any cluster exists."""

    def configure(self, copts: ClusterOptions) -> None:
        """Its share of the cluster's options (kwokctl's kube-scheduler binary, configuration, or none)."""

    def prepare(self, rep: Reporter) -> None:
        """Start what must exist before the cluster does (e.g. a URL in the scheduler's configuration)."""

    def start(self, info: ClusterInfo | AttachedCluster, rep: Reporter) -> dict[str, Any] | None:
        """Start on the running cluster and wait until ready; its record for ``meta.json`` (None: nothing
        of its own runs). One-line :class:`~kwokbench.errors.KwokbenchError` on failure, process stopped."""

    def endpoints(self) -> list[Endpoint]:
        """Its metrics endpoints (scraped each second; ``pprof`` where profiles are served)."""

    def measurements(self) -> list[Measurement]:
        """Recorders only it brings (the extender's call log, Kueue's Workloads)."""

    def fairness(self) -> dict[str, Any]:
        """What it adds to the run's fairness manifest (client limits, configuration)."""

    def version(self) -> str:
        """Its version line (the fairness manifest's ``component_versions``)."""

    def stop(self) -> None:
        """Stop what ``prepare``/``start`` started (idempotent)."""


class Base:
    """Defaults for every hook: a component overrides what it needs."""

    def __init__(self, *args: Any) -> None:
        del args

    name = "component"
    role = "addon"
    """``scheduler`` for a scheduler kind (its record goes to meta.json's ``schedulers``), else ``addon``."""
    replaces_kube_scheduler = False
    """kwokctl's kube-scheduler is not started (kwokbench runs this scheduler itself)."""
    cluster_process = False
    """Its process is one of the cluster's (pid file, log): ``--keep-cluster`` keeps it running with the
    cluster, ``down`` stops it."""

    def build(self, rep: Reporter) -> None:
        pass

    def configure(self, copts: ClusterOptions) -> None:
        pass

    def prepare(self, rep: Reporter) -> None:
        pass

    def start(self, info: ClusterInfo | AttachedCluster, rep: Reporter) -> dict[str, Any] | None:
        return None

    def endpoints(self) -> list[Endpoint]:
        return []

    def measurements(self) -> list[Measurement]:
        return []

    def fairness(self) -> dict[str, Any]:
        return {}

    def stop(self) -> None:
        pass

    # -- what a scheduler kind also says (add-ons keep the defaults) --

    def check(self) -> None:
        """Scenario-time checks (files exist, commands parse): ScenarioError before any cluster."""

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        """What it writes into the pods of phase ``w`` (one pod's ``requests``; the template's ``kind``)."""
        return PodSettings()

    def version(self) -> str:
        """Its version line, for the fairness manifest."""
        return ""

    def libraries(self) -> str | None:
        """The Kubernetes release of the client libraries it is built on, when not the control plane's own (a
        kind built from pinned sources: its recipe's); its skew to the control plane is recorded and checked."""
        recipe = getattr(type(self), "recipe", None)
        return recipe.kubernetes if recipe is not None else None


class Scheduler(Base):
    """What every scheduler kind holds: its variant and run, the binary it built, and once started on a
    cluster, that cluster and its record. Its class attributes are what
    :class:`kwokbench.scheduler_kinds.Kind` asks of a kind (the defaults: nothing of its own)."""

    role = "scheduler"
    cluster_process = True
    kind: ClassVar[str] = ""
    title: ClassVar[str] = ""
    settings: ClassVar[type[SchedulerSpec]] = SchedulerSpec
    workload_settings: ClassVar[type[BaseModel] | None] = None
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    under_test: ClassVar[frozenset[str]] = frozenset()
    keep: ClassVar[Mapping[str, Any]] = {}
    recipe: ClassVar[SourceBuild | None] = None
    section: ClassVar[Any] = None
    rows: ClassVar[Any] = None

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.variant = setup.variant
        self.name = setup.variant.name
        self.binary: Path | None = None
        """Its binary, when not the control plane's own kube-scheduler."""
        self._info: ClusterInfo | None = None
        self._record: dict[str, Any] | None = None

    @classmethod
    def create(cls, setup: Setup) -> Base:
        """The component of ``setup.variant`` (a kind may pick a class of its own by the settings)."""
        return cls(setup)

    def addons(self) -> list[Base]:
        """Components the variant's settings bring with this scheduler (started before it: an extender)."""
        return []


def scheduler(setup: Setup) -> Base:
    """The scheduler component of ``setup.variant``: its kind's (:func:`kwokbench.scheduler_kinds.kind_of`)."""
    return cast(type[Scheduler], scheduler_kinds.kind_of(setup.variant.binary)).create(setup)


def own_component_name(variant: str) -> str:
    """pid-file, log and metrics name of a variant's scheduler when several run at once."""
    return f"scheduler-{variant}"


def cluster_options(scenario: Scenario, base: Path, variant: SchedulerSpec, name: str, tc: Toolchain,
                    comps: list[Base] = ()) -> ClusterOptions:  # type: ignore[assignment]
    """How a variant's cluster is created (the same for a fresh cluster per run and for a sweep's cluster):
    the scenario's settings, then each component's share (:meth:`~Component.configure`: which scheduler binary,
    its configuration and flags, extenders, plugin arguments), kwokctl's kube-scheduler off for a scheduler
    kwokbench starts itself."""
    copts = ClusterOptions(
        name=name, qps_limits=scenario.cluster.qps_limits,
        scheduler_client_qps=variant.client_qps, scheduler_client_burst=variant.client_burst,
        # for every variant, so the default scheduler meets the same objects as Coscheduling
        crds=tc.scheduler_plugins_crds() if any(w.gang for w in scenario.workloads) else [],
        prometheus_port=free_port() if scenario.cluster.prometheus else None,
        extra_args=list(scenario.cluster.extra_args),
        disable=[] if scenario.cluster.controller_manager else ["kube-controller-manager"],
        kwok_configs=[*([write_stage_config(home_dir() / "configs" / "kwok-complete-after.yaml")]
                        if any(w.complete_after for w in scenario.workloads) else []),
                      *([stages.write_config(home_dir() / "configs" / "kwok-delete-after.yaml",
                                             stages.delete_after_stage())]
                        if any((w.trace and w.trace.lifetimes) or w.delete_after for w in scenario.workloads)
                        else [])],
        kwok_stages=kwok_stages(tc, scenario.cluster.pod_lifecycle),
        node_lease_seconds=scenario.cluster.node_lease_seconds, pin_scheduler=scenario.cluster.pin_scheduler,
        kwok_controllers=scenario.cluster.kwok_controllers)
    for c in comps:
        c.configure(copts)
    if any(c.replaces_kube_scheduler for c in comps):
        copts.disable = [*copts.disable, "kube-scheduler"]
    return copts


POD_STAGES_OFF = {"pod-ready", "pod-complete"}
"""kwok stages left out with ``pod_lifecycle: none`` (pod-delete stays: deleting a bound pod needs it)."""


def kwok_stages(tc: Toolchain, pod_lifecycle: str) -> list[dict[str, Any]]:
    """kwok's stages for the cluster: kwokctl's defaults (none given), or them without the pod stages."""
    if pod_lifecycle == "running":
        return []
    docs = [d for d in yaml.safe_load_all(tc.path("stages.yaml").read_text()) if d]
    return [d for d in docs if (d.get("metadata") or {}).get("name") not in POD_STAGES_OFF]
