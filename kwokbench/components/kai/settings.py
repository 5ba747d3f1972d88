"""KAI-Scheduler's settings: the pinned version and names, the variant's `kai:` block (queues, configuration,
schedule period, status controllers), its queue objects and scheduler configuration, its client limits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kwokbench.errors import ScenarioError
from kwokbench.scenario.quantity import quantity
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain.sources import PinnedSource

if TYPE_CHECKING:
    pass  # the summary's frames: pandas loads when a run is analysed, not when it is planned

VERSION = "v0.13.0"
"""NVIDIA KAI-Scheduler, tag v0.13.0 (commit 5d35eca, 2026-03-02; the tag v0.20.1 is older, 2025-11-30)."""
KUBERNETES = "v1.34.2"
"""The k8s.io/kubernetes version its go.mod requires (two minors behind the control plane)."""
MODULE = "github.com/NVIDIA/KAI-scheduler"
SOURCES = (PinnedSource(MODULE, "kai-scheduler-v0.13.0.tar.gz",
                        "518caaa10fcf32f689173863c06705881c37a9645d8dbeaa8b595c464e83f065",
                        "github.com/NVIDIA/KAI-Scheduler at tag v0.13.0"),)
BINARY = "kai-scheduler"
HELPERS = ("binder", "podgrouper", "queuecontroller", "podgroupcontroller")
"""The other commands built beside the scheduler (``kai-<name>``)."""
CRDS = "crds"
"""Directory beside the binary holding KAI's CRDs."""

SCHEDULER_NAME = "kai-scheduler"
"""The schedulerName kwokbench runs KAI under (its default, ``constants.DefaultSchedulerName``)."""
QUEUE_LABEL = "kai.scheduler/queue"
POD_GROUP_ANNOTATION = "pod-group-name"
"""The pod annotation naming its PodGroup (``constants.PodGroupAnnotationForPod``)."""
GANG_TEMPLATE = "kai-podgroup"
QUEUES_PATH = "/apis/scheduling.run.ai/v2/queues"
DEFAULT_PARENT, DEFAULT_LEAF = "default-parent-queue", "default-queue"
PODGROUPCONTROLLER_METRICS_PORT = 8080
"""podgroupcontroller v0.13.0 parses ``-metrics-bind-address`` but never hands it to its manager
(``cmd/podgroupcontroller/app/app.go``): controller-runtime's default, :8080, is where its /metrics always are."""
UNLIMITED_CLIENT = 100_000
KAI_CLIENT = (50, 300)
"""KAI's own client QPS/burst (every command's ``qps``/``burst`` default)."""
CONFIG_KEYS = frozenset({"actions", "tiers", "queueDepthPerAction", "usageDBConfig"})
"""The keys of KAI's scheduler configuration (``conf.SchedulerConfiguration``); it ignores any other."""
OWN_FLAGS = ("leader-elect", "scheduler-name", "listen-address", "plugin-server-port", "enable-profiler",
             "profiler-port", "qps", "burst", "scheduler-conf", "schedule-period", "namespace")
"""Scheduler flags kwokbench sets itself."""
HELPER_OWN_FLAGS = ("kubeconfig", "leader-elect", "scheduler-name", "qps", "burst", "health-probe-bind-address",
                    "metrics-bind-address", "metrics-listen-address", "enable-webhook", "enable-podgroup-webhook")
"""Flags of the other processes kwokbench sets itself."""
Quantity = str | int | float


# ---- its settings ----------------------------------------------------------------------------------


class KaiResources(BaseModel):
    """One of a queue's quota or limit: CPU in cores (or a quantity: 500m), memory as a quantity (64Gi), GPUs
    (fractions allowed); -1 is unlimited."""

    model_config = ConfigDict(extra="forbid")

    cpu: Quantity | None = Field(None, description="CPU cores (8, 0.5, 500m) or -1 (unlimited).")
    memory: Quantity | None = Field(None, description="Memory as a quantity with its unit (64Gi, 512Mi) or -1.")
    gpu: float | None = Field(None, description="GPUs (0.5 is half a GPU) or -1.")

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, v: Quantity | None) -> Quantity | None:
        if v is not None and _amount(v) is None:
            raise ValueError(f"{v!r} is not a CPU amount (cores: 8, 0.5, 500m; or -1, unlimited)")
        return v

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: Quantity | None) -> Quantity | None:
        if v is None or str(v).strip() in ("-1", "0"):
            return v
        if isinstance(v, int | float) or re.fullmatch(r"[0-9.]+", str(v).strip()):
            raise ValueError(f"{v!r}: give memory as a quantity with its unit (64Gi, 512Mi) or -1 (a bare number "
                             "would be bytes)")
        if _amount(v) is None:
            raise ValueError(f"{v!r} is not a memory quantity (64Gi, 512Mi) or -1")
        return v

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, v: float | None) -> float | None:
        if v is not None and v != -1 and v < 0:
            raise ValueError(f"{v!r}: GPUs are >= 0, or -1 (unlimited)")
        return v

    def kai_units(self, default: float) -> dict[str, float]:
        """In KAI's units: millicpus, megabytes (10^6 bytes), GPUs; ``default`` where not given."""
        out = {}
        for r, scale in (("cpu", 1000.0), ("memory", 1e-6), ("gpu", 1.0)):
            v = getattr(self, r)
            amount = default if v is None else _amount(v)
            assert amount is not None
            out[r] = amount if amount == -1 else round(amount * scale, 6)
        return out


def _amount(v: Quantity) -> float | None:
    """A non-negative quantity as a number (or -1); None when it is neither."""
    try:
        n = quantity(v)
    except ValueError:
        return None
    return n if n == -1 or n >= 0 else None


class KaiQueueSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, description=(
        "Queue name (a Kubernetes object name). A queue no other queue names as parent is a leaf: workloads are "
        "submitted to leaves."))
    parent: str | None = Field(None, description="The parent queue (one of these queues); none: a top-level queue.")
    quota: KaiResources = Field(default_factory=KaiResources, description=(
        "The resources the queue deserves (KAI's quota), e.g. {cpu: 40, memory: 160Gi, gpu: 0}; not given: 0."))
    limit: KaiResources = Field(default_factory=KaiResources, description=(
        "The most it may use, over-quota included (KAI's limit); not given: -1, unlimited."))
    over_quota_weight: float = Field(1, ge=0, description=(
        "Its weight when resources beyond the quotas are shared (every resource)."))
    priority: int | None = Field(None, description=(
        "Queue priority (KAI's default 100): over-quota resources go to higher priorities first."))


class KaiConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queues: list[KaiQueueSpec] = Field(default_factory=list, description=(
        "scheduling.run.ai/v2 Queues created before KAI starts. Default: KAI's installation defaults, "
        "default-parent-queue and its leaf default-queue, both unlimited."))
    config: dict[str, Any] | None = Field(None, description=(
        "KAI's scheduler configuration (--scheduler-conf): actions (e.g. \"allocate, reclaim\"), tiers of plugins, "
        "queueDepthPerAction; what it leaves out is KAI's default. Default: KAI's built-in configuration."))
    config_file: str | None = Field(None, description="The same as a YAML file (relative to the scenario).")
    schedule_period: str = Field("1s", pattern=r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", description=(
        "Time between two scheduling sessions (--schedule-period, a Go duration; KAI's default 1s)."))
    status_controllers: bool = Field(True, description=(
        "Also run KAI's queuecontroller and podgroupcontroller, which keep Queue and PodGroup status current (as "
        "KAI deploys them; their writes count). The scheduler does not need them: false measures without."))
    scheduler_args: list[str] = Field(default_factory=list, description=(
        "More scheduler flags, e.g. --detailed-fit-errors=true (not those kwokbench sets)."))
    process_args: dict[Literal["binder", "podgrouper", "queuecontroller", "podgroupcontroller"], list[str]] = Field(
        default_factory=dict, description=(
            "More flags for KAI's other processes, by process: e.g. {binder: [--max-concurrent-reconciles=100], "
            "podgrouper: [-max-concurrent-reconciles=50]} as KAI's scale tests raise them (not the flags kwokbench "
            "sets: kubeconfig, leader election, scheduler name, client limits, probe and metrics addresses)."))

    @model_validator(mode="after")
    def _consistent(self) -> KaiConfig:
        if self.config is not None and self.config_file:
            raise ValueError("kai: give config or config_file, not both")
        if self.config is not None:
            config_problem(self.config, "kai.config")
        names = [q.name for q in self.queues]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"kai.queues: {', '.join(dup)} defined twice")
        parents = {q.name: q.parent for q in self.queues}
        for q in self.queues:
            if q.parent is not None and q.parent not in parents:
                raise ValueError(f"kai.queues: {q.name}'s parent {q.parent} is not one of the queues "
                                 f"({', '.join(names)}); KAI would drop {q.name} and its children silently")
            seen, p = {q.name}, q.parent
            while p is not None:
                if p in seen:
                    raise ValueError(f"kai.queues: {q.name} is its own ancestor (parents form a cycle)")
                seen.add(p)
                p = parents.get(p)
            for r in ("cpu", "memory", "gpu"):
                quota, limit = q.quota.kai_units(0)[r], q.limit.kai_units(-1)[r]
                if limit != -1 and (quota == -1 or quota > limit):
                    raise ValueError(f"kai.queues: {q.name}: {r} quota {getattr(q.quota, r)} is above its limit "
                                     f"{getattr(q.limit, r)}")
        for a in self.scheduler_args:
            flag = a.lstrip("-").split("=", 1)[0]
            if not a.startswith("--") or flag in OWN_FLAGS:
                raise ValueError(f"kai.scheduler_args: {a!r}: " + (f"kwokbench sets --{flag} itself" if
                                                                    flag in OWN_FLAGS else "flags start with --"))
        for role, args in self.process_args.items():
            if role in ("queuecontroller", "podgroupcontroller") and not self.status_controllers:
                raise ValueError(f"kai.process_args.{role}: the {role} does not run with status_controllers: false")
            for a in args:
                flag = a.lstrip("-").split("=", 1)[0]
                if not a.startswith("-") or flag in HELPER_OWN_FLAGS:
                    raise ValueError(f"kai.process_args.{role}: {a!r}: " + (
                        f"kwokbench sets -{flag} itself" if flag in HELPER_OWN_FLAGS
                        else "not a flag (give each as --name=value)"))
        return self

    def leaves(self) -> list[str]:
        """The leaf queues workloads may be submitted to."""
        qs = self.queues or default_queues()
        parents = {q.parent for q in qs}
        return [q.name for q in qs if q.name not in parents]


def config_problem(doc: Any, where: str) -> None:
    """ValueError when ``doc`` is not KAI's scheduler configuration (a mapping of its keys)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: KAI's scheduler configuration is a mapping (actions, tiers, …)")
    unknown = sorted(set(doc) - CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{where}: {unknown[0]!r} is not a key of KAI's scheduler configuration (one of: "
                         f"{', '.join(sorted(CONFIG_KEYS))}); KAI would ignore it")


def default_queues() -> list[KaiQueueSpec]:
    """KAI's installation defaults (``examples/quickstart/default-queues.yaml``): a parent and its leaf, no
    quota, no limit."""
    return [KaiQueueSpec(name=DEFAULT_PARENT), KaiQueueSpec(name=DEFAULT_LEAF, parent=DEFAULT_PARENT)]


class KaiWorkloadSpec(BaseModel):
    """How a KAI variant sees this phase: the leaf queue its pods are submitted to (other kinds ignore it)."""

    model_config = ConfigDict(extra="forbid")

    queue: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description=(
        "The leaf queue of this phase's pods (their kai.scheduler/queue label, the gang's PodGroup spec.queue). "
        "Default: the variant's only leaf queue (default-queue with KAI's default queues)."))


class KaiSpec(SchedulerSpec):
    """A ``binary: kai`` variant: KAI-Scheduler serves the schedulerName ``kai-scheduler`` and is configured by its
    ``kai:`` block (client limits as every kind's)."""

    SERVES = SCHEDULER_NAME
    binary: Literal["kai"] = Field("kai", description="NVIDIA KAI-Scheduler, built from its pinned source "
                                                      "(`kwokbench tools install kai`).")
    kai: KaiConfig = Field(default_factory=KaiConfig, description=(
        "KAI's queues (scheduling.run.ai/v2 Queue objects), its scheduler configuration and schedule period. "
        "Default: KAI's default queues and configuration."))

    @model_validator(mode="after")
    def _name(self) -> KaiSpec:
        if self.scheduler_name not in (None, SCHEDULER_NAME):
            raise ValueError(f"scheduler {self.name}: KAI runs as schedulerName {SCHEDULER_NAME} only; drop "
                             "scheduler_name")
        return self


def queue_objects(spec: KaiConfig) -> list[dict[str, Any]]:
    """The Queue objects of the variant, parents first (KAI's units: millicpus, megabytes, GPUs)."""
    qs = spec.queues or default_queues()
    depth = {q.name: 0 for q in qs}
    parents = {q.name: q.parent for q in qs}
    for name in depth:
        p = parents[name]
        while p is not None:
            depth[name] += 1
            p = parents[p]
    out = []
    for q in sorted(qs, key=lambda q: depth[q.name]):
        quota, limit = q.quota.kai_units(0), q.limit.kai_units(-1)
        res = {r: {"quota": quota[r], "limit": limit[r], "overQuotaWeight": q.over_quota_weight}
               for r in ("cpu", "gpu", "memory")}
        body: dict[str, Any] = {"resources": res}
        if q.parent:
            body["parentQueue"] = q.parent
        if q.priority is not None:
            body["priority"] = q.priority
        out.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                    "metadata": {"name": q.name, "labels": {"app.kubernetes.io/managed-by": "kwokbench"}},
                    "spec": body})
    return out


def scheduler_config(spec: KaiConfig, base: Path) -> dict[str, Any] | None:
    """The scheduler configuration the variant gives (its ``config``, or its ``config_file`` read), None for KAI's
    built-in default."""
    if spec.config_file is None:
        return spec.config
    path = Path(spec.config_file).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ScenarioError(f"kai.config_file {spec.config_file}: {e.strerror or e} (relative to {base})") from e
    except yaml.YAMLError as e:
        raise ScenarioError(f"kai.config_file {spec.config_file}: not YAML: {str(e).splitlines()[0]}") from e
    try:
        config_problem(doc, f"kai.config_file {spec.config_file}")
    except ValueError as e:
        raise ScenarioError(str(e)) from e
    assert isinstance(doc, dict)
    return doc


def has_snapshot_plugin(config: dict[str, Any] | None) -> bool:
    """Whether the scheduler runs its ``snapshot`` plugin (KAI's default tiers do; tiers left out are the
    default's)."""
    tiers = (config or {}).get("tiers") or []
    if not tiers:
        return True
    return any(p.get("name") == "snapshot" for t in tiers if isinstance(t, dict) for p in t.get("plugins") or []
               if isinstance(p, dict))


def client_limits(qps_limits: bool, client_qps: float | None, client_burst: int | None) -> tuple[int, int]:
    """Every KAI process's client QPS/burst: the variant's, else unlimited (as kube-scheduler's) unless the
    scenario keeps the components' default limits (then KAI's own, 50/300)."""
    if client_qps is not None:
        return max(1, int(client_qps)), int(client_burst or client_qps)
    return KAI_CLIENT if qps_limits else (UNLIMITED_CLIENT, UNLIMITED_CLIENT)


