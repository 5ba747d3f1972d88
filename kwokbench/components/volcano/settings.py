"""Volcano's settings: the pinned version and names, the variant's `volcano:` block (queues, actions and tiers,
the agent scheduler), its scheduler configuration, queue objects, client limits and gang resources."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kwokbench.errors import ScenarioError
from kwokbench.scenario.quantity import quantity
from kwokbench.scheduler_kinds import SchedulerSpec

if TYPE_CHECKING:
    pass  # the summary's frames: pandas loads when a run is analysed, not when it is planned

VOLCANO = "v1.15.1"
"""Volcano's release (tag v1.15.1, commit 0a56ed3), built from the pinned archive (the proxy does not serve it)."""
VOLCANO_KUBERNETES = "v1.35.3"
"""The k8s.io/kubernetes version its go.mod requires (one minor behind the 1.36 control plane)."""
GIT_SHA = "0a56ed3"

SCHEDULER_NAME = "volcano"
"""The schedulerName vc-scheduler and its pg-controller serve (their ``--scheduler-name`` default)."""
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
"""A pod's queue (``QueueNameAnnotationKey``), copied into the PodGroup the pg-controller makes for it."""
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""A pod's PodGroup (``KubeGroupNameAnnotationKey``): the pg-controller makes none for a pod that names one."""
DEFAULT_QUEUE = "default"
"""The queue vc-scheduler creates at start (with ``root``) and puts PodGroups naming none in."""
API = "/apis/scheduling.volcano.sh/v1beta1"
UNLIMITED_CLIENT = 100_000
"""Client QPS/burst of both processes when client limits are off (kube-scheduler's are then unlimited too)."""
CHART_CLIENT = {"scheduler": (2000, 2000), "controller_manager": (50, 100)}
"""The Helm chart's client limits (values.yaml), used with ``cluster.qps_limits``: the components' defaults."""
CONTROLLERS = "*,-sharding-controller"
"""vc-controller-manager's default controllers (every one but the sharding controller)."""

DEFAULT_ACTIONS = "enqueue, allocate, backfill"
DEFAULT_TIERS: list[dict[str, Any]] = [
    {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}]},
    {"plugins": [{"name": "overcommit"}, {"name": "drf", "enablePreemptable": False}, {"name": "predicates"},
                 {"name": "proportion"}, {"name": "nodeorder"}, {"name": "binpack"}]},
]
"""The Helm chart's ``installer/helm/chart/volcano/config/volcano-scheduler.conf`` (a unit test compares them)."""

Quantity = str | int | float
AGENT_OWN_FLAGS = ("kubeconfig", "leader-elect", "scheduler-name", "scheduler-conf", "enable-healthz",
                   "healthz-address", "kube-api-qps", "kube-api-burst")
"""vc-agent-scheduler flags kwokbench sets itself."""
NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class VolcanoQueueSpec(BaseModel):
    """One Volcano Queue (a child of ``root``); its values are checked by Volcano's Queue schema."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME, max_length=63, description=(
        "Queue name (a cluster-scoped Queue object). `default` configures the queue Volcano creates itself."))
    weight: int = Field(1, description="Its share of the cluster when queues compete (proportion plugin; 1–65535).")
    capability: dict[str, Quantity] = Field(default_factory=dict, description=(
        "The most it may use, e.g. {cpu: 20, memory: 80Gi} (a hard limit: pods beyond it wait)."))
    deserved: dict[str, Quantity] = Field(default_factory=dict, description=(
        "What it deserves when the cluster is contended (capacity plugin; reclaimed back from other queues)."))
    guarantee: dict[str, Quantity] = Field(default_factory=dict, description=(
        "Resources reserved for it (spec.guarantee.resource), never lent to other queues."))
    reclaimable: bool = Field(True, description="Whether other queues may reclaim what it uses beyond its share.")
    priority: int | None = Field(None, description="Its priority (higher: scheduled first, reclaimed last).")

    @model_validator(mode="after")
    def _not_root(self) -> VolcanoQueueSpec:
        if self.name == "root":
            raise ValueError("queue root is Volcano's own (the parent of every queue); name a child queue")
        return self


class VolcanoPlugin(BaseModel):
    """One plugin of a tier, as in volcano-scheduler.conf: its name and any of its options (passed through)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="Plugin name (gang, priority, drf, proportion, binpack, …).")


class VolcanoTier(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plugins: list[VolcanoPlugin] = Field(min_length=1, description="The tier's plugins.")


class VolcanoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queues: list[VolcanoQueueSpec] = Field(default_factory=list, description=(
        "Queues created before Volcano starts (workloads pick one with `volcano.queue`; without queues every "
        "PodGroup goes to Volcano's `default` queue)."))
    actions: str | list[str] = Field(DEFAULT_ACTIONS, description=(
        "The actions of each scheduling session, in order (volcano-scheduler.conf's `actions`), e.g. "
        "\"enqueue, allocate, backfill\" or [enqueue, allocate, preempt, backfill]."))
    tiers: list[VolcanoTier] = Field(default_factory=lambda: [VolcanoTier.model_validate(t) for t in DEFAULT_TIERS],
                                     description=(
        "The plugin tiers (volcano-scheduler.conf's `tiers`); default the Helm chart's: priority, gang, "
        "conformance; overcommit, drf, predicates, proportion, nodeorder, binpack."))
    configurations: list[dict[str, Any]] = Field(default_factory=list, description=(
        "Action arguments (volcano-scheduler.conf's `configurations`: [{name: ACTION, arguments: {…}}])."))
    conf_file: str | None = Field(None, description=(
        "A whole volcano-scheduler.conf (relative to the scenario) instead of actions/tiers/configurations."))
    schedule_period_seconds: float = Field(1.0, gt=0, le=60, description=(
        "Seconds between scheduling sessions (`--schedule-period`; Volcano's default 1 s): pods created meanwhile "
        "wait for the next session."))
    scheduler_args: list[str] = Field(default_factory=list, description=(
        "More vc-scheduler flags, e.g. [--percentage-nodes-to-find=50, -v=3]."))
    controller_manager_args: list[str] = Field(default_factory=list, description=(
        "More vc-controller-manager flags, e.g. [--worker-threads-for-podgroup=10]."))
    agent_scheduler: bool = Field(False, description=(
        "Schedule the variant's pods with Volcano's agent-scheduler (vc-agent-scheduler, one pod at a time with "
        "kube-scheduler's queue; no sessions, PodGroups or queues) instead of vc-scheduler, as Volcano's own "
        "benchmark sends bare pods (benchmark/ in volcano-sh/volcano). It runs alone: vc-scheduler and "
        "vc-controller-manager have no pod to act on. Bare pods only (a gang needs vc-scheduler); it serves no "
        "/metrics in v1.15.1, so its figures are the apiserver's and its CPU."))
    agent_scheduler_args: list[str] = Field(default_factory=list, description=(
        "More vc-agent-scheduler flags, e.g. [--scheduler-worker-count=2, --node-worker-threads=20]."))

    @model_validator(mode="after")
    def _one_source(self) -> VolcanoConfig:
        given = {"actions", "tiers", "configurations"} & self.model_fields_set
        if self.conf_file and given:
            raise ValueError(f"volcano: give conf_file or {'/'.join(sorted(given))}, not both")
        names = [q.name for q in self.queues]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"volcano.queues: {', '.join(dup)} given twice")
        for a in [*self.scheduler_args, *self.controller_manager_args, *self.agent_scheduler_args]:
            if not a.startswith("-"):
                raise ValueError(f"volcano: {a!r} is not a flag (give each as --name=value)")
        if self.agent_scheduler_args and not self.agent_scheduler:
            raise ValueError("volcano.agent_scheduler_args: set agent_scheduler: true too")
        for a in self.agent_scheduler_args:
            flag = a.lstrip("-").split("=", 1)[0]
            if flag in AGENT_OWN_FLAGS:
                raise ValueError(f"volcano.agent_scheduler_args: {a!r}: kwokbench sets --{flag} itself")
        if self.agent_scheduler:
            vc_only = sorted(f for f in ("queues", "scheduler_args", "controller_manager_args", "actions", "tiers",
                                       "configurations", "conf_file", "schedule_period_seconds")
                           if f in self.model_fields_set)
            if vc_only:
                raise ValueError(f"volcano: {', '.join(vc_only)}: settings of vc-scheduler or its controllers, which "
                                 "do not run with agent_scheduler: true (the agent-scheduler has no sessions or "
                                 "queues; its flags go in agent_scheduler_args)")
        return self


class VolcanoWorkloadSpec(BaseModel):
    """How a Volcano variant sees this phase: the queue of its pods (other kinds ignore it)."""

    model_config = ConfigDict(extra="forbid")

    queue: str = Field(DEFAULT_QUEUE, pattern=NAME, max_length=63, description=(
        "The Volcano queue of this phase's pods (annotation scheduling.volcano.sh/queue-name; a gang's PodGroup "
        "spec.queue): `default` or one of the variant's `volcano.queues`."))


class VolcanoSpec(SchedulerSpec):
    """A ``binary: volcano`` variant: Volcano serves the schedulerName ``volcano`` and is configured by its
    ``volcano:`` block (client limits as every kind's)."""

    SERVES = SCHEDULER_NAME
    binary: Literal["volcano"] = Field("volcano", description=(
        "Volcano, built from pinned sources (`kwokbench tools install volcano`)."))
    volcano: VolcanoConfig | None = Field(None, description=(
        "Volcano's queues and scheduler configuration (volcano-scheduler.conf). Default: the Helm chart's "
        "configuration, every pod in the `default` queue."))

    @model_validator(mode="after")
    def _name(self) -> VolcanoSpec:
        if self.scheduler_name not in (None, SCHEDULER_NAME):
            raise ValueError(f"scheduler {self.name}: Volcano serves schedulerName {SCHEDULER_NAME} only; drop "
                             "scheduler_name")
        return self


def scheduler_conf(spec: VolcanoConfig | None, base: Path) -> str:
    """The variant's volcano-scheduler.conf: its ``conf_file``, or its actions, tiers and configurations."""
    spec = spec or VolcanoConfig()
    if spec.conf_file:
        path = Path(spec.conf_file).expanduser()
        path = path if path.is_absolute() else base / path
        try:
            return path.read_text()
        except OSError as e:
            raise ScenarioError(f"volcano.conf_file {spec.conf_file}: {e.strerror or e} (relative to {base})") from e
    actions = spec.actions if isinstance(spec.actions, str) else ", ".join(spec.actions)
    doc: dict[str, Any] = {"actions": actions, "tiers": [t.model_dump(exclude_none=True) for t in spec.tiers]}
    if spec.configurations:
        doc["configurations"] = spec.configurations
    return yaml.safe_dump(doc, sort_keys=False)


def queue_objects(spec: VolcanoConfig | None) -> list[dict[str, Any]]:
    """The variant's Queue objects (weight and reclaimable written out: no webhook defaults them)."""
    out = []
    for q in (spec or VolcanoConfig()).queues:
        body: dict[str, Any] = {"weight": q.weight, "reclaimable": q.reclaimable}
        for key in ("capability", "deserved"):
            if getattr(q, key):
                body[key] = {r: str(v) for r, v in getattr(q, key).items()}
        if q.guarantee:
            body["guarantee"] = {"resource": {r: str(v) for r, v in q.guarantee.items()}}
        if q.priority is not None:
            body["priority"] = q.priority
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": q.name, "labels": {"app.kubernetes.io/managed-by": "kwokbench"}},
                    "spec": body})
    return out


def client_limits(qps_limits: bool, client_qps: float | None, client_burst: int | None) -> dict[str, tuple[int, int]]:
    """QPS/burst of vc-scheduler and vc-controller-manager: unlimited (as kube-scheduler's) unless the scenario keeps
    the components' default limits (then the Helm chart's); the variant's ``client_qps`` sets the scheduler's."""
    out = dict(CHART_CLIENT) if qps_limits else dict.fromkeys(CHART_CLIENT, (UNLIMITED_CLIENT, UNLIMITED_CLIENT))
    if client_qps is not None:
        out["scheduler"] = (int(client_qps), int(client_burst or client_qps))
    return out


def times(q: Quantity, n: int, resource: str) -> str:
    """``n`` times quantity ``q`` (a gang's minResources), in millicores for CPU, else whole units."""
    v = quantity(q) * n
    return f"{round(v * 1000)}m" if resource == "cpu" else str(round(v))


def gang_resources(requests: dict[str, str], members: int) -> dict[str, str]:
    return {r: times(q, members, r) for r, q in requests.items()}


