"""What a scheduler kind is, as the layers that name none of them see it, and the registry of the kinds.

A scheduler kind (stock kube-scheduler, scheduler-plugins, a Go plugin build, an external binary, YuniKorn, the
reference WASM extension, …) is **one module** under :mod:`kwokbench.components`: its scenario settings (a
:class:`SchedulerSpec` subclass, plus a block each workload may carry for it), which fairness keys come from its
settings, what it keeps of its metrics scrapes and the summary section it makes of them, its report rows, its
source build, and its processes. It is registered by **one line** in ``pyproject.toml``::

    [project.entry-points."kwokbench.schedulers"]
    yunikorn = "kwokbench.components.yunikorn:YuniKorn"

The scenario loader, the summary, the report table and the gate ask :func:`registry` for the kinds instead of
importing them, so none of those lower layers imports a kind (each kind imports them), and a scheduler kind may
as well come from another installed package: an entry point of that group is all it takes (the same mechanism as
pytest's plugins). The name is the scenario's ``binary:`` value; ``plugin`` is the kind of every other value (a
Go plugin directory).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kwokbench.errors import KwokbenchError
from kwokbench.toolchain import versions

if TYPE_CHECKING:
    import pandas as pd

    from kwokbench.toolchain.sources import SourceBuild

GROUP = "kwokbench.schedulers"
"""The entry-point group of scheduler kinds."""
DIRECTORY_KIND = "plugin"
"""The kind of a ``binary:`` that names no kind: a Go plugin directory (relative to the scenario)."""
DEFAULT_KIND = "kube-scheduler"
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class SchedulerSpec(BaseModel):
    """What every scheduler variant has, whatever its kind; a kind's settings subclass it."""

    model_config = ConfigDict(extra="forbid")
    SERVES: ClassVar[str | None] = None
    """The schedulerName the kind always serves (None: the variant's ``scheduler_name``)."""

    name: str = Field("default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=30,
                      description="Variant name, used in reports.")
    binary: str = Field(DEFAULT_KIND, min_length=1, description=(
        "The scheduler kind: `kube-scheduler` (stock, the control plane's version), `scheduler-plugins` "
        "(sigs.k8s.io/scheduler-plugins: Coscheduling, CapacityScheduling, …), `external` (any binary: "
        "`command`), a kind built from pinned sources (`yunikorn`, `wasm-extension`, … : `kwokbench tools "
        "install NAME`), or a Go plugin directory (path relative to the scenario) compiled in by `kwokbench "
        "tools build-scheduler`. `kwokbench tools kinds` lists the installed kinds."))
    scheduler_name: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=63,
                                       description=(
        "spec.schedulerName written into every pod this variant owns (default: default-scheduler). A "
        "kube-scheduler variant's profile gets this name; an external scheduler must serve it."))
    client_qps: float | None = Field(None, gt=0, description=(
        "Scheduler client QPS (default: unlimited, or kube-scheduler's 50 when cluster.qps_limits is true)."))
    client_burst: int | None = Field(None, gt=0, description="Scheduler client burst (default: as client_qps).")
    kueue: bool = Field(True, description=(
        "With cluster.kueue: run this variant's Jobs through Kueue (default), or false to submit the very same "
        "Jobs straight to the scheduler (no Kueue, not suspended) — the kueue-vs-direct baseline."))
    ready_timeout_seconds: float = Field(60, gt=0, le=3600, description=(
        "A scheduler kwokbench starts itself: how long it may take to become ready."))
    kubernetes: str | None = Field(None, description=(
        "The Kubernetes release of this variant's control plane (a release tag from v1.35.0 on, e.g. v1.37.2 or "
        "v1.36.4; a pre-release only where the module proxy serves every module it is built from; default "
        "`cluster.kubernetes_version`): variants that differ only here compare releases on "
        "identical clusters, interleaved. Built from Go modules on first use (`kwokbench tools install "
        "--kubernetes TAG`)."))
    root: str | None = Field(None, description=(
        "The folder this variant's relative paths (its plugin directory, configuration and files) resolve "
        "against (default: the scenario file's folder). `run --duet-with` sets it on the side it takes from the "
        "other file, e.g. a pull request's base checkout."))

    @field_validator("kubernetes")
    @classmethod
    def _release(cls, v: str | None) -> str | None:
        return None if v is None else versions.kubernetes_tag(v)

    @property
    def effective_scheduler_name(self) -> str:
        return self.SERVES or self.scheduler_name or DEFAULT_SCHEDULER_NAME

    def concurrent_problem(self) -> str | None:
        """Why this variant cannot share a cluster with others (``concurrent_schedulers``), or None."""
        return None


class SectionMaker(Protocol):
    def __call__(self, series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                 proc: dict[str, Any]) -> dict[str, Any] | None: ...


class RowMaker(Protocol):
    def __call__(self, section: dict[str, Any], who: str) -> list[list[str]]: ...


class Kind(Protocol):
    """A scheduler kind's class, as the layers below the kinds use it (its instances are the run's component)."""

    kind: ClassVar[str]
    """Its ``binary:`` value (the entry point's name)."""
    title: ClassVar[str]
    """How reports name it (YuniKorn)."""
    settings: ClassVar[type[SchedulerSpec]]
    """Its scenario settings."""
    workload_settings: ClassVar[type[BaseModel] | None]
    """A block each workload may carry for it, under the key :attr:`kind` (``-`` as ``_``), or None."""
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]]
    """Fairness-manifest key → the settings it comes from: runs whose variants differ there compare that."""
    under_test: ClassVar[frozenset[str]]
    """Fairness keys that identify the scheduler under test itself (differ between base and head by design)."""
    keep: ClassVar[Mapping[str, Any]]
    """Metric families of its metrics endpoint kept from each scrape (name → label filter or None)."""
    recipe: ClassVar[SourceBuild | None]
    """How ``kwokbench tools install NAME`` builds it from pinned sources (None: not built that way)."""

    section: ClassVar[SectionMaker | None]
    """Its summary section (under its block key) from a scheduler component's stored scrapes and process figures;
    the maker returns None when the component served none of its metrics. None: no section of its own."""
    rows: ClassVar[RowMaker | None]
    """The console and report rows of its summary section (given the section and who it is: its variant)."""


@functools.cache
def registry() -> dict[str, Kind]:
    """``binary:`` value → kind, from the installed entry points (loaded once)."""
    out: dict[str, Kind] = {}
    for ep in entry_points(group=GROUP):
        try:
            out[ep.name] = ep.load()
        except (ImportError, AttributeError) as e:
            raise KwokbenchError(f"scheduler kind {ep.name} ({ep.value}) cannot be loaded: {e}") from e
    if DEFAULT_KIND not in out:
        raise KwokbenchError(f"no scheduler kind {DEFAULT_KIND!r} is registered (entry points {GROUP}): is "
                             "kwokbench installed (pip install -e .)?")
    return out


def kind_of(binary: str) -> Kind:
    """The kind a ``binary:`` value selects (a directory: the Go plugin kind)."""
    kinds = registry()
    return kinds.get(binary) or kinds[DIRECTORY_KIND]


def named() -> list[str]:
    """The kinds a ``binary:`` names (for messages)."""
    return [k for k in registry() if k != DIRECTORY_KIND]


def block_key(kind: str) -> str:
    """The workload key of a kind's block (``wasm-extension`` → ``wasm_extension``)."""
    return kind.replace("-", "_")


def workload_blocks() -> dict[str, type[BaseModel]]:
    """Workload key → the model of that kind's block, for every kind that has one."""
    return {block_key(k.kind): k.workload_settings for k in registry().values() if k.workload_settings}


def with_sections() -> dict[str, Kind]:
    """Summary key (the kind's block key) → every kind that makes a summary section of its own."""
    return {block_key(name): k for name, k in registry().items() if k.section is not None}


def source_built() -> dict[str, SourceBuild]:
    """Kind → how ``kwokbench tools install NAME`` builds it from pinned sources, for kinds built that way."""
    return {name: k.recipe for name, k in registry().items() if k.recipe is not None}
