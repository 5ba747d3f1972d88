"""Schedulers and the other components a run brings up next to kwokctl's control plane, behind one protocol.

Every scheduler kind (stock kube-scheduler, scheduler-plugins, a Go plugin build, the WASM host with a guest,
an external binary, Apache YuniKorn) and every add-on component (kwokbench's extender, Kueue) implements
:class:`Component`, a file each, so :func:`kwokbench.runner.run_variant` reads as the lifecycle alone:

``build`` (binaries into the cache, before any cluster) → ``configure`` (its share of how the cluster is
created: which kube-scheduler kwokctl runs, with which configuration, or none) → ``prepare`` (a process the
cluster's configuration names, started before the cluster: the extender) → *the cluster comes up* →
``start`` (started and ready, with a record for ``meta.json``) → *measured*: ``endpoints`` (metrics and
pprof), ``measurements`` (its own recorders) → ``stop`` (always, whatever state the run is in).

A new scheduler kind is one file here plus one line in :data:`KINDS` (the ``binary:`` value that selects it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kwokbench.errors import ScenarioError
from kwokbench.metrics.scrape import Endpoint

if TYPE_CHECKING:
    from kwokbench.cluster.attach import AttachedCluster
    from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions
    from kwokbench.measure import Measurement
    from kwokbench.progress import Reporter
    from kwokbench.scenario import Scenario, SchedulerSpec, WorkloadSpec
    from kwokbench.toolchain import Toolchain


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


class Scheduler(Base):
    """What every scheduler kind holds: its variant and run, the binary it built, and once started on a
    cluster, that cluster and its record."""

    role = "scheduler"
    cluster_process = True

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.variant = setup.variant
        self.name = setup.variant.name
        self.binary: Path | None = None
        """Its binary, when not the control plane's own kube-scheduler."""
        self._info: ClusterInfo | None = None
        self._record: dict[str, Any] | None = None


def kinds() -> dict[str, type[Base]]:
    """``binary:`` value → scheduler kind (a directory selects :class:`GoPlugin`, or :class:`WasmHost`
    with a ``wasm:`` guest)."""
    from kwokbench.components.external import External
    from kwokbench.components.kube_scheduler import KubeScheduler
    from kwokbench.components.scheduler_plugins import SchedulerPlugins
    from kwokbench.components.wasm_extension import WasmExtension
    from kwokbench.components.yunikorn import YuniKorn

    return {
        "kube-scheduler": KubeScheduler,
        "scheduler-plugins": SchedulerPlugins,
        "external": External,
        "yunikorn": YuniKorn,
        "wasm-extension": WasmExtension,
    }


KINDS = ("kube-scheduler", "scheduler-plugins", "external", "yunikorn", "wasm-extension")
"""The named kinds (for messages; :func:`kinds` maps them)."""


def scheduler(setup: Setup) -> Base:
    """The scheduler component of ``setup.variant``."""
    from kwokbench.components.go_plugin import GoPlugin
    from kwokbench.components.wasm_host import WasmHost

    v = setup.variant
    kind = kinds().get(v.binary)
    if kind is not None:
        return kind(setup)
    path = Path(v.binary).expanduser()
    path = path if path.is_absolute() else setup.base / path
    if not path.is_dir():
        raise ScenarioError(f"scheduler {v.name}: binary {v.binary!r} is neither {', '.join(KINDS)} nor a plugin "
                            f"directory (relative to {setup.base})")
    return WasmHost(setup, path) if v.wasm else GoPlugin(setup, path)


def for_variant(setup: Setup, variants: list[SchedulerSpec] | None = None) -> list[Base]:
    """The run's components, in start order: its scheduler(s) (every variant's when they run together), the
    extender its configuration names, Kueue."""
    from kwokbench.components.extender import Extender
    from kwokbench.components.kueue import Kueue

    v = setup.variant
    if setup.concurrent:
        out: list[Base] = [scheduler(Setup(setup.scenario, setup.base, s, setup.toolchain, concurrent=True))
                           for s in variants or []]
    else:
        out = [scheduler(setup)]
    if v.extender and not setup.reused:
        out.insert(0, Extender(v))
    if setup.scenario.cluster.kueue is not None and v.kueue and not setup.concurrent:
        out.append(Kueue(setup.scenario))
    return out


def own_component_name(variant: str) -> str:
    """pid-file, log and metrics name of a variant's scheduler when several run at once."""
    return f"scheduler-{variant}"
