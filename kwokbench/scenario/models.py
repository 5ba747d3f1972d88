"""The scenario's pydantic models: cluster, node groups and their devices, scheduler variants, workload phases
and their arrivals, claims, gangs, chaos, Kueue; the cross-field checks; the model with every installed scheduler
kind (:func:`scenario_model`) and its JSON Schema. Every field has a description, so ``kwokbench schema`` gives
editors a complete JSON Schema."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    create_model,
    field_validator,
    model_validator,
)

from kwokbench import flags, scheduler_kinds
from kwokbench.manifests import is_quantity
from kwokbench.scenario.quantity import quantity
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain import versions

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


TraceFormat = Literal["kwokbench", "alibaba-gpu-2023"]
TraceGpus = Literal["per-node", "dra"]
GPUS_DESCRIPTION = (
    "How a trace's GPUs are scheduled. per-node: extended resources, nvidia.com/gpu and kwokbench.io/gpu-milli "
    "counted per node, a relaxation (a node whose two GPUs each have 600 milli free takes a 1000-milli share); "
    "dra: each GPU a DRA device of 1000 milli of consumable capacity with its model as an attribute, a shared pod "
    "claiming its milli on one GPU and a k-GPU pod k whole GPUs, so every fit is per GPU as in the FGD "
    "simulator. The node groups and the trace workload must say the same.")


class NodeTraceSpec(_Model):
    file: str = Field(description=(
        "The nodes table: relative to the scenario's folder, else to $KWOKBENCH_TRACES (default ../shared/traces "
        "from the project root)."))
    format: TraceFormat = Field("kwokbench", description=(
        "kwokbench (its own trace format, CSV or Parquet) or alibaba-gpu-2023 (openb_node_list_*.csv)."))
    gpus: TraceGpus = Field("per-node", description=GPUS_DESCRIPTION)


DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
QUALIFIED_NAME = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$")
Quantity = Annotated[str | int, Field(description="A Kubernetes quantity (e.g. 1000, 80Gi, 500m).")]


class PartitionSpec(_Model):
    """A partition profile of a partitionable device (as a GPU's MIG profile): ``count`` partitions of it offered
    on every device, each drawing ``consumes`` from the device's counters (DRA partitionable devices)."""

    name: str = Field(pattern=DNS_LABEL, max_length=20, description=(
        "The profile's name, e.g. 1g-10gb: partitions are named <device>-<profile>-<j> and carry it as their "
        "`profile` attribute."))
    count: int = Field(ge=1, le=63, description="Partitions of this profile each device offers.")
    consumes: dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=63)], Quantity] = Field(description=(
        "What one partition takes of its device's counters, e.g. {memory: 10Gi, slices: 1}."))
    capacity: dict[Annotated[str, Field(pattern=QUALIFIED_NAME)], Quantity] = Field(
        default_factory=dict, description="Capacities of each partition (e.g. memory: 10Gi), as a device's.")


PARTITIONS_FROM = "v1.36.0"
"""DRAPartitionableDevices is beta and on from Kubernetes 1.36 (alpha and off in 1.35: the apiserver would drop
the counters and every partition would be free at once)."""


class DeviceSpec(_Model):
    """Devices of every node of a group, as a DRA driver would publish them: one ResourceSlice per node and
    driver (the node's own pool), no driver process and no kubelet."""

    driver: str = Field(pattern=DNS_SUBDOMAIN, max_length=63, description=(
        "The DRA driver's name (a DNS subdomain, e.g. gpu.example.com); the devices' ResourceSlice names it."))
    count: int = Field(ge=1, le=128, description="Devices per node (the API allows 128 per ResourceSlice).")
    name: str = Field("gpu", pattern=DNS_LABEL, max_length=50, description=(
        "Device names are <name>-<k>, k = 0 … count-1 (k is also the device's `index` attribute)."))
    device_class: str | None = Field(None, pattern=DNS_SUBDOMAIN, max_length=253, description=(
        "The DeviceClass claims name to get these devices (default: the driver's name); kwokbench creates it, "
        "selecting the driver's devices by CEL."))
    attributes: dict[Annotated[str, Field(pattern=QUALIFIED_NAME)], str | int | bool] = Field(
        default_factory=dict, description=(
            "Attributes of every device (e.g. model: H100, memory_gb: 80): strings, integers and booleans, "
            "selectable in a claim's CEL as device.attributes[\"<driver>\"].<name>."))
    capacity: dict[Annotated[str, Field(pattern=QUALIFIED_NAME)], Quantity] = Field(
        default_factory=dict, description=(
            "Capacities of every device (e.g. memory: 80Gi, milli: 1000); with shared, what claims consume."))
    shared: bool = Field(False, description=(
        "allowMultipleAllocations: several claims share a device, each consuming its capacity requests "
        "(DRA consumable capacity, beta and on in Kubernetes 1.36); a claim asking no capacity takes it whole."))

    counters: dict[Annotated[str, Field(pattern=DNS_LABEL, max_length=63)], Quantity] = Field(
        default_factory=dict, description=(
            "Partitionable devices: each device's counter set (e.g. {memory: 80Gi, slices: 7}), published in a "
            "ResourceSlice of its own; the device whole consumes all of it, each of its partitions what it "
            "`consumes`, so a device is given whole or as partitions that fit its counters (Kubernetes 1.36 on)."))
    partitions: list[PartitionSpec] = Field(default_factory=list, description=(
        "Partitionable devices: the partition profiles every device also offers (needs counters). Each device "
        "then carries a `profile` attribute: `whole` for the device itself, the profile's name for a partition."))

    @property
    def class_name(self) -> str:
        return self.device_class or self.driver

    @property
    def per_node(self) -> int:
        """Devices a node publishes of this spec: each device, and its partitions."""
        return self.count * (1 + sum(p.count for p in self.partitions))

    @model_validator(mode="after")
    def _shared_needs_capacity(self) -> DeviceSpec:
        where = f"devices of driver {self.driver}"
        if self.shared and not self.capacity:
            raise ValueError(f"{where}: shared devices need a capacity to share (e.g. capacity: {{milli: 1000}})")
        if self.partitions and not self.counters:
            raise ValueError(f"{where}: partitions draw on the device's counters: give counters too "
                             "(e.g. counters: {memory: 80Gi})")
        if self.partitions and self.shared:
            raise ValueError(f"{where}: a device is shared (consumable capacity) or partitioned, not both")
        for key, v in self.counters.items():
            if not is_quantity(v):
                raise ValueError(f"{where}: counters.{key}: {v!r} is not a Kubernetes quantity")
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: partition names must differ ({', '.join(names)})")
        for p in self.partitions:
            longest = f"{self.name}-{self.count - 1}-{p.name}-{p.count - 1}"
            if len(longest) > 63:
                raise ValueError(f"{where}: partition {p.name}: device names such as {longest} pass 63 characters; "
                                 "shorten the device's or the partition's name")
            for key, v in p.consumes.items():
                if key not in self.counters:
                    raise ValueError(f"{where}: partition {p.name} consumes {key}, which is none of the device's "
                                     f"counters ({', '.join(self.counters)})")
                if not is_quantity(v):
                    raise ValueError(f"{where}: partition {p.name}: consumes.{key}: {v!r} is not a Kubernetes "
                                     "quantity")
                if quantity(v) > quantity(self.counters[key]):
                    raise ValueError(f"{where}: partition {p.name} consumes {v} of {key}, more than a device has "
                                     f"({self.counters[key]})")
        return self


class SubRequestSpec(_Model):
    """One alternative of a claim's first-available list: a class, a count, selectors and capacity."""

    name: str = Field(pattern=DNS_LABEL, max_length=63, description=(
        "The alternative's name: an allocation made by it names <claim>/<this> (the summary counts them)."))
    device_class: str = Field(pattern=DNS_SUBDOMAIN, max_length=253, description=(
        "The DeviceClass to allocate from: one a node group's devices offer."))
    count: int = Field(1, ge=1, le=128, description="Devices this alternative asks for (ExactCount).")
    selectors: list[str] = Field(default_factory=list, description="CEL expressions every device must satisfy.")
    capacity: dict[Annotated[str, Field(pattern=QUALIFIED_NAME)], Quantity] = Field(
        default_factory=dict, description="Capacity requested of each device (capacity.requests).")


class ClaimSpec(_Model):
    """A ResourceClaim of every pod of a workload (DRA): through a ResourceClaimTemplate (a claim per pod) or
    claims shared by several pods."""

    name: str = Field("gpu", pattern=DNS_LABEL, max_length=63, description=(
        "The claim's name in the pod (spec.resourceClaims[].name) and its one request's name."))
    device_class: str | None = Field(None, pattern=DNS_SUBDOMAIN, max_length=253, description=(
        "The DeviceClass to allocate from: one a node group's devices offer (or give first_available)."))
    first_available: list[SubRequestSpec] = Field(default_factory=list, max_length=8, description=(
        "Alternatives in order of preference instead of device_class (DRA prioritized list, firstAvailable): "
        "the scheduler allocates the first one a node can satisfy, e.g. a whole GPU, else two partitions."))
    count: int = Field(1, ge=1, le=128, description="Devices the claim asks for (allocationMode ExactCount).")
    selectors: list[str] = Field(default_factory=list, description=(
        "CEL expressions every allocated device must satisfy, e.g. device.attributes[\"gpu.example.com\"].model "
        "== \"H100\" (checked by the apiserver when the claim is created)."))
    capacity: dict[Annotated[str, Field(pattern=QUALIFIED_NAME)], Quantity] = Field(
        default_factory=dict, description=(
            "Capacity requested of each device (capacity.requests), e.g. milli: 250 of a shared GPU."))
    shared_by: int = Field(1, ge=1, le=10_000, description=(
        "Pods per claim: 1 gives every pod its own claim through a ResourceClaimTemplate (deleted with the pod); "
        "N > 1 creates one ResourceClaim per N consecutive pods, which they share (scheduler_perf's "
        "SchedulingWithResourceClaim)."))

    @model_validator(mode="after")
    def _one_request_form(self) -> ClaimSpec:
        if (self.device_class is None) == (not self.first_available):
            raise ValueError(f"claim {self.name}: give device_class or first_available (one of them)")
        if self.first_available and (self.selectors or self.capacity or self.count != 1):
            raise ValueError(f"claim {self.name}: with first_available, count, selectors and capacity go in each "
                             "alternative")
        names = [a.name for a in self.first_available]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.name}: first_available names must differ ({', '.join(names)})")
        return self

    def alternatives(self) -> list[tuple[str, SubRequestSpec]]:
        """(where, request) of each way the claim can be met: its own exact request, or each alternative."""
        if self.first_available:
            return [(f"first_available.{k}", a) for k, a in enumerate(self.first_available)]
        assert self.device_class is not None
        return [("", SubRequestSpec(name=self.name, device_class=self.device_class, count=self.count,
                                    selectors=self.selectors, capacity=self.capacity))]


class NodeGroupSpec(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=30,
                      description="Group name; nodes are named kb-<group>-<i> and labelled kwokbench.io/node-group.")
    count: int = Field(0, ge=0, le=100_000, description="Number of nodes in the group (not with from_trace).")
    template: str = Field("node", description="Node template: a path (relative to the scenario) or a builtin name.")
    params: dict[str, Any] = Field(default_factory=dict, description=(
        "Template variables, e.g. cpu, memory, pods, gpus, extended, labels, taints for the builtin node template."))
    from_trace: NodeTraceSpec | None = Field(None, description=(
        "The nodes of a trace: one node per row (its allocatable, GPUs, GPU model label, labels, taints), as node "
        "groups <name>-<k> of identical nodes. count and params do not apply."))
    devices: list[DeviceSpec] = Field(default_factory=list, description=(
        "DRA devices of every node of the group: a ResourceSlice per node and driver, and the DeviceClasses "
        "claims ask for, created with the nodes."))

    @model_validator(mode="before")
    @classmethod
    def _count_or_trace(cls, data: Any) -> Any:
        if isinstance(data, dict) and "count" not in data and data.get("from_trace") is None:
            raise ValueError(f"node group {data.get('name', '?')}: give count (or from_trace)")
        if isinstance(data, dict) and data.get("from_trace") is not None and ("count" in data or data.get("params")):
            raise ValueError(f"node group {data.get('name', '?')}: count and params do not apply with from_trace")
        return data


class ClusterQueueSpec(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=60, description="ClusterQueue name.")
    quota: dict[str, str | int] = Field(min_length=1, description=(
        "Nominal quota per resource of the queue's flavor, e.g. {cpu: 100, memory: 400Gi}."))
    flavor: str = Field("default-flavor", pattern=DNS_LABEL, description="Its ResourceFlavor (created if missing).")
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = Field("BestEffortFIFO", description=(
        "Kueue's queueing strategy."))


class LocalQueueSpec(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=60, description="LocalQueue name (a workload's `queue`).")
    namespace: str = Field("default", pattern=DNS_LABEL, description="Its namespace (the workloads' namespace).")
    cluster_queue: str = Field(description="The ClusterQueue it feeds.")


class KueueSpec(_Model):
    cluster_queues: list[ClusterQueueSpec] = Field(min_length=1, description="ClusterQueues (with their quota).")
    local_queues: list[LocalQueueSpec] = Field(min_length=1, description="LocalQueues workloads submit to.")

    @model_validator(mode="after")
    def _refs(self) -> KueueSpec:
        cqs = {c.name for c in self.cluster_queues}
        for lq in self.local_queues:
            if lq.cluster_queue not in cqs:
                raise ValueError(f"local queue {lq.name}: no cluster queue {lq.cluster_queue!r} "
                                 f"(have: {', '.join(sorted(cqs))})")
        return self


class ClusterSpec(_Model):
    node_groups: list[NodeGroupSpec] = Field(min_length=1, description="Fake node groups to create.")
    qps_limits: bool = Field(False, description=(
        "Keep the components' default client QPS limits and apiserver priority & fairness. Off by default: "
        "with stock limits the scheduler's client caps it near 50 pods/s."))
    kubernetes_version: str = Field(versions.KUBERNETES, description=(
        f"Kubernetes release of the control plane: a release tag from {versions.OLDEST_KUBERNETES} on (an alpha, "
        f"beta or rc tag when the module proxy serves all its modules), built from Go modules on first use; default "
        f"{versions.KUBERNETES}. A variant's "
        "`kubernetes:` overrides it for that variant."))
    prometheus: bool = Field(False, description="Also run Prometheus through kwokctl --prometheus-port.")
    extra_args: list[str] = Field(default_factory=list, description=(
        "Flags of the cluster's processes, component=key=value (component: " + ", ".join(flags.COMPONENTS) +
        "), e.g. kube-apiserver=v=2 or kube-scheduler=feature-gates=SchedulerAsyncAPICalls=true; each reaches its "
        "process as --key=value after kwokctl's and kwokbench's own. kube-scheduler entries go to every "
        "kube-scheduler of the run (kwokctl's or one kwokbench starts); flags kwokbench sets for it (config, "
        "kubeconfig, ports, leader election, client limits) are refused."))
    controller_manager: bool = Field(True, description=(
        "Run kube-controller-manager. A scenario of bare pods needs none of it (kwokbench creates each "
        "namespace's default ServiceAccount itself), and off it spends no CPU on pod and node events; Jobs, "
        "Kueue and chaos node actions need it."))
    pod_lifecycle: Literal["running", "none"] = Field("running", description=(
        "What kwok does with a bound pod: `running` (kwok's pod stages: Running, a Job's pods complete) or "
        "`none` (it stays Pending on its node: one status write per pod less for apiserver, etcd and kwok; "
        "wait_for running/completed is then impossible)."))
    node_lease_seconds: int | None = Field(None, ge=10, le=86400, description=(
        "kwok's node lease duration (renewed every quarter of it, for every node); default kwokctl's. With "
        "controller_manager off nothing reads leases, so a long one only saves apiserver and etcd writes."))
    kueue: KueueSpec | None = Field(None, description=(
        "Run Kueue (sigs.k8s.io/kueue, built from Go modules on first use) with these queues; workloads with a "
        "`queue` are submitted to it as suspended Jobs labelled kueue.x-k8s.io/queue-name. Runs without "
        "webhooks (kwokctl clusters have no Service networking): what they would default is set on the Job."))
    kwok_controllers: int = Field(1, ge=1, le=16, strict=True, description=(
        "kwok controllers sharing the fake nodes: node j gets label kwokbench.io/kwok-partition=j mod K and "
        "controller i manages partition i (kwokctl's own is 0, the others run as processes of the cluster), "
        "so node heartbeats and pod stages are spread over K processes."))
    pin_scheduler: bool = Field(False, description=(
        "Pin the scheduler(s) to CPU 0 and every other component to the remaining CPUs (Linux affinity), so "
        "the scheduler does not share a core with the apiserver."))

    @field_validator("kubernetes_version")
    @classmethod
    def _release(cls, v: str) -> str:
        return versions.kubernetes_tag(v)

    @field_validator("extra_args")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        return flags.check_component_flags(v)


class ExtenderSpec(_Model):
    rule: Literal["gpu", "nodenumber"] = Field("gpu", description=(
        "Rule of kwokbench's builtin extender: `gpu`, the rule of plugins/gpufilter (GPU-intensive pods only on "
        "nodes with nvidia.com/gpu, CPU-intensive ones on nodes with >= 2000m CPU), or `nodenumber`, the "
        "reference WASM plugin's example (prioritize 10 when the node's name ends in the pod's last digit)."))
    filter: bool = Field(True, description="Call the extender's filter verb.")
    prioritize: bool = Field(True, description="Call the extender's prioritize verb.")
    weight: int = Field(1, ge=1, le=100, description="Weight of the extender's priorities.")


class QpsArrival(_Model):
    type: Literal["qps"] = Field("qps", description="Fixed rate: object i is due at t0 + i/qps (open loop).")
    qps: float = Field(gt=0, le=100_000, description="Objects created per second.")


class PoissonArrival(_Model):
    type: Literal["poisson"] = Field(description="Poisson process: exponential gaps with mean 1/rate, seeded.")
    rate: float = Field(gt=0, le=100_000, description="Mean objects per second.")


class RampArrival(_Model):
    type: Literal["ramp"] = Field(description="Rate rising linearly from start_qps to end_qps, then held.")
    start_qps: float = Field(gt=0, le=100_000, description="Rate at t0.")
    end_qps: float = Field(gt=0, le=100_000, description="Rate reached after duration_seconds.")
    duration_seconds: float = Field(gt=0, description="Length of the ramp.")


Arrival = Annotated[QpsArrival | PoissonArrival | RampArrival, Field(discriminator="type")]
WaitFor = Literal["none", "created", "scheduled", "running", "completed"]


class GangSpec(_Model):
    size: int = Field(ge=1, le=10_000, description="Pods per gang: pods i*size … (i+1)*size-1 form gang i.")
    min_member: int | None = Field(None, ge=1, description="PodGroup minMember (default: size).")
    template: str = Field("podgroup", description="PodGroup template (builtin: podgroup).")
    schedule_timeout_seconds: int = Field(30, ge=1, description="PodGroup scheduleTimeoutSeconds.")

    @model_validator(mode="after")
    def _min_member(self) -> GangSpec:
        if self.min_member is not None and self.min_member > self.size:
            raise ValueError(f"min_member {self.min_member} is larger than the gang size {self.size}")
        return self


class TraceSpec(_Model):
    file: str = Field(description=(
        "The pods table: relative to the scenario's folder, else to $KWOKBENCH_TRACES (default ../shared/traces "
        "from the project root)."))
    format: TraceFormat = Field("kwokbench", description=(
        "kwokbench (its own trace format, CSV or Parquet) or alibaba-gpu-2023 (openb_pod_list_*.csv)."))
    nodes: str | None = Field(None, description=(
        "The trace's nodes table (same format): checks the pods' GPU models and is the capacity `inflate` "
        "measures (default: the scenario's from_trace node groups)."))
    limit: int | None = Field(None, ge=1, description="Only the first N pods (in arrival order).")
    inflate: float | None = Field(None, gt=0, le=100, description=(
        "Resample the pod list (seeded) until the pods request this many times the cluster's GPU capacity (CPU "
        "for a CPU-only trace), as the FGD paper's simulator does (tune 1.3)."))
    seed: int = Field(42, description="Seed of `inflate`'s resampling.")
    rate: float | None = Field(None, gt=0, le=100_000, description=(
        "Create the pods in trace order at this fixed rate (the simulator's way) instead of at their arrival "
        "times."))
    shuffle: bool | Literal["simulator"] = Field(False, description=(
        "With `rate`: create the pods in an order shuffled with `seed` instead of trace order, as the FGD paper's "
        "experiment does (its simulator's --shuffle-pod): the pod list (after `limit`) shuffled, then the pods "
        "`inflate` resampled appended. `simulator` (with `inflate`, GPU traces): the simulator's own pod list for "
        "`seed`, draw for draw with Go's math/rand as it shuffles and resamples (built on first use)."))
    time_scale: float | None = Field(None, gt=0, description=(
        "Multiply the trace's arrival times and lifetimes by this (0.001: 149 days in 3.6 hours)."))
    duration_seconds: float | None = Field(None, gt=0, description=(
        "Scale arrival times and lifetimes so that the last pod arrives this many seconds after the first."))
    lifetimes: bool = Field(True, description=(
        "Pods with a lifetime are deleted that long (scaled) after they start Running (kwok Stage driven by the "
        "annotation kwokbench.io/delete-after), so the cluster fills and drains as in production."))
    gpus: TraceGpus = Field("per-node", description=GPUS_DESCRIPTION)

    @model_validator(mode="after")
    def _one_clock(self) -> TraceSpec:
        given = [k for k in ("rate", "time_scale", "duration_seconds") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"trace: give one of rate, time_scale, duration_seconds (got {', '.join(given)})")
        if self.shuffle and self.rate is None:
            raise ValueError("trace.shuffle: give rate too (the pods' own arrival times have an order of their own)")
        if self.shuffle == "simulator" and self.inflate is None:
            raise ValueError("trace.shuffle: simulator: give inflate too (the simulator shuffles and resamples "
                             "with one generator; its list for a seed is both)")
        return self


class WorkloadSpec(_Model):
    name: str = Field(pattern=DNS_LABEL, max_length=30, description="Phase name; objects are named <name>-<i>.")
    template: str = Field("pod", description="Workload template (path relative to the scenario, or builtin: "
                                              "pod, job, gpu-pod, trace-pod).")
    count: int = Field(1, ge=1, le=1_000_000, description=(
        "Number of objects to create (a trace workload: the trace's pods after limit and inflate)."))
    trace: TraceSpec | None = Field(None, description=(
        "Replay a trace: one pod per trace row, created at its (scaled) arrival time or at `rate`, with its "
        "requests, GPU model affinity, labels, tolerations and lifetime. count, arrival and params do not apply; "
        "the template defaults to trace-pod."))
    settle_seconds: float | None = Field(None, gt=0, description=(
        "End the phase once every object was created and no pod was bound for this long, instead of waiting for "
        "`wait_for`: a cluster that cannot hold every pod leaves the rest pending, and that is the result."))
    gang: GangSpec | None = Field(None, description=(
        "Submit the pods as gangs: one scheduler-plugins PodGroup per `size` pods, created before the phase's "
        "pods, each pod labelled scheduling.x-k8s.io/pod-group. Installs the PodGroup CRD (for every variant)."))
    namespace: str = Field("default", pattern=DNS_LABEL, description="Namespace (created when missing).")
    params: dict[str, Any] = Field(default_factory=dict, description="Template variables.")
    arrival: Arrival = Field(default_factory=lambda: QpsArrival(qps=100),
                             description="When each object is created.")
    wait_for: WaitFor = Field("scheduled", description=(
        "What every pod of this phase must reach before the next phase starts."))
    timeout_seconds: float = Field(300, gt=0, description="How long to wait for wait_for after the last create.")
    queue: str | None = Field(None, description=(
        "A Kueue LocalQueue (cluster.kueue) in this phase's namespace: its Jobs are created suspended with the "
        "queue-name label, and Kueue admits them within quota. Job templates only."))
    complete_after: str | None = Field(None, pattern=r"^\d+(\.\d+)?(ms|s|m|h)$", description=(
        "Job pods (a batch/v1 Job's or a VolcanoJob's) run this long once Running (a Go duration, e.g. 30s) "
        "before kwok completes them (by default kwok completes a Job's pods at once); sets annotation "
        "kwokbench.io/complete-after."))
    delete_after: str | None = Field(None, pattern=r"^\d+(\.\d+)?(ms|s|m|h)$", description=(
        "Pods are deleted this long after they are Running (a Go duration, e.g. 5s; Pod templates): a churn "
        "phase that frees nodes and devices for the next. Sets annotation kwokbench.io/delete-after, which a "
        "kwok stage acts on."))
    scheduler: str | None = Field(None, description=(
        "With concurrent_schedulers: the variant owning every pod of this phase (default: pods are dealt to the "
        "variants in turn, pod i to variant i mod n)."))
    connections: int | None = Field(None, ge=1, le=4096, description=(
        "Most keep-alive connections the submitter opens to the apiserver (one request in flight each). Default: "
        "enough for 100 ms on the wire at the peak offered rate (rate / 10), at least 64, at most 1024. When every "
        "connection is busy, requests wait for one and the run says so."))

    claims: list[ClaimSpec] = Field(default_factory=list, description=(
        "DRA resource claims of every pod (Pod templates; Job templates with a claim per pod, shared_by 1): "
        "devices of a node group's `devices`, allocated "
        "by the scheduler; their objects are created before the phase's pods."))

    _trace_pods: list[Any] = PrivateAttr(default_factory=list)
    _trace_offsets: list[float] = PrivateAttr(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _trace_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("trace") is not None:
            given = [k for k in ("count", "arrival", "params") if k in data]
            if given:
                raise ValueError(f"workload {data.get('name', '?')}: {', '.join(given)} do not apply to a trace "
                                 "workload (its pods and times come from the trace)")
            data = {**data, "template": data.get("template", "trace-pod")}
        return data

    @property
    def trace_pods(self) -> list[Any]:
        """A trace workload's pods (``kwokbench.trace.format.TracePod``), once loaded (:func:`load_scenario`)."""
        return self._trace_pods

    @property
    def templated_claims(self) -> bool:
        """Pods of this phase have claims made from ResourceClaimTemplates: its ``claims:`` (shared_by 1), a
        trace's GPUs as DRA devices, or claims a trace captured from a DRA cluster (once loaded)."""
        return (any(c.shared_by == 1 for c in self.claims)
                or (self.trace is not None and (self.trace.gpus == "dra" or any(p.claims for p in self.trace_pods))))

    @property
    def has_claims(self) -> bool:
        """Pods of this phase have DRA claims (from templates or shared)."""
        return bool(self.claims) or self.templated_claims

    @property
    def trace_offsets(self) -> list[float]:
        """Seconds after the phase's start at which each of :attr:`trace_pods` is created."""
        return self._trace_offsets

    def block(self, key: str) -> Any:
        """The block a scheduler kind adds to workloads (its settings for this phase; defaults when not given)."""
        return getattr(self, key, None)


ChaosAction = Literal["restart-scheduler", "restart-apiserver", "restart-controller-manager", "nodes-not-ready",
                      "delete-nodes"]


class ChaosEvent(_Model):
    at_seconds: float = Field(ge=0, description="When, in seconds after the first workload phase starts.")
    action: ChaosAction = Field(description=(
        "restart-scheduler / restart-apiserver / restart-controller-manager: stop the component, wait "
        "down_seconds, start it again with the same command line; nodes-not-ready: kwok stops managing a share "
        "of nodes and their Ready condition turns False; delete-nodes: delete a share of nodes."))
    down_seconds: float = Field(0, ge=0, le=600, description="Restart actions: how long the component stays down.")
    share: float = Field(0.1, gt=0, le=1, description="Node actions: the share of nodes affected (at least one).")
    group: str | None = Field(None, description="Node actions: only nodes of this node group.")
    compact_etcd: bool = Field(False, description=(
        "restart-apiserver only: while it is down, compact etcd to its newest revision, as the compaction of a "
        "peer apiserver in a highly available control plane would. Every watch resumed from before it (the "
        "schedulers' informers, kwokbench's own) is refused with 410 Gone and relists: how a scheduler recovers "
        "from that, and what kwokbench's record says of its own gap (the report's watch rows)."))

    @model_validator(mode="after")
    def _compact_only_on_apiserver_restart(self) -> ChaosEvent:
        if self.compact_etcd and self.action != "restart-apiserver":
            raise ValueError(f"compact_etcd: only with restart-apiserver (the action is {self.action}): etcd is "
                             "compacted while the apiserver is down")
        return self


def offered_classes(groups: Iterable[NodeGroupSpec]) -> dict[str, list[DeviceSpec]]:
    """Each DeviceClass the node groups' devices offer, with those devices."""
    offered: dict[str, list[DeviceSpec]] = {}
    for g in groups:
        for d in g.devices:
            offered.setdefault(d.class_name, []).append(d)
    return offered


def check_claim(claim: ClaimSpec, offered: Mapping[str, list[DeviceSpec]], where: str) -> None:
    """ValueError when no node could ever satisfy ``claim`` (a class no devices offer, more capacity or devices
    than any has): found here, not after the cluster is up with every pod pending."""
    for alt, c in claim.alternatives():
        at = ".".join(filter(None, (where, alt)))
        devices = offered.get(c.device_class)
        if not devices:
            have = ", ".join(sorted(offered)) or "none: give a node group devices"
            raise ValueError(f"{at}.device_class: no node group's devices offer class {c.device_class} "
                             f"(offered: {have})")
        for key, want in c.capacity.items():
            if not is_quantity(want):
                raise ValueError(f"{at}.capacity.{key}: {want!r} is not a Kubernetes quantity")
            most = max((quantity(cap[key]) for d in devices
                        for cap in (d.capacity, *(p.capacity for p in d.partitions)) if key in cap), default=None)
            if most is None:
                raise ValueError(f"{at}.capacity.{key}: no device of class {c.device_class} has a {key} capacity")
            if quantity(want) > most:
                raise ValueError(f"{at}.capacity.{key}: {want} is more than any device of class "
                                 f"{c.device_class} has ({most:g})")
        if c.count > max(d.per_node for d in devices):
            raise ValueError(f"{at}.count: {c.count} devices, but no node has more than "
                             f"{max(d.per_node for d in devices)} of class {c.device_class}")


class Scenario(_Model):
    schema_version: Literal[1] = Field(description="Format version of this file; must be 1.")
    name: str = Field(pattern=DNS_LABEL, max_length=60, description="Scenario name; runs are stored under it.")
    description: str = Field("", description="What this scenario measures.")
    seed: int = Field(0, description="Seed of every random choice (arrival gaps), so a run is reproducible.")
    cluster: ClusterSpec = Field(description="The simulated cluster.")
    schedulers: list[SchedulerSpec] = Field(default_factory=lambda: [SchedulerSpec()], min_length=1, description=(
        "Scheduler variants; each runs on a fresh identical cluster. Each is one of the registered scheduler kinds "
        "(its `binary`), with that kind's settings."))
    concurrent_schedulers: bool = Field(False, description=(
        "Run every scheduler variant at once on one cluster (the multiple-schedulers deployment), each owning "
        "its pods by schedulerName, instead of one fresh cluster per variant. Placement then counts "
        "overcommitted nodes and which scheduler pushed each over."))
    duet: bool | Literal["clusters"] = Field(False, description=(
        "Run the two scheduler variants at the same time on one control plane (a duet), each on its own identical "
        "node pool (every node group twice, labelled kwokbench.io/duet-pool) with the whole workload of its own, "
        "its pods offered in lockstep with the other's (created alternately at twice the rate), so whatever slows "
        "the host slows both; the pools and the start order swap between repeats. The summary's `duet` section "
        "gives each side's figures over the same window and their ratio; `kwokbench gate` compares the sides of "
        "duet runs pair by pair. Implies concurrent_schedulers; a variant without scheduler_name serves "
        "duet-<its name>. Not with traces, DRA devices or claims, chaos, Kueue or per-phase `scheduler`. Variants "
        "that differ in their Kubernetes release (`kubernetes:`) run as **two clusters at once** instead: each "
        "the whole scenario on its own control plane, every phase started on both at the same instants, the "
        "sides' start order swapped between repeats; the gate pairs their runs by repeat. Any scenario can run so: "
        "`duet: clusters` asks for two clusters whatever the variants differ in."))
    workloads: list[WorkloadSpec] = Field(min_length=1, description="Workload phases, submitted in order.")
    chaos: list[ChaosEvent] = Field(default_factory=list, description=(
        "Timed disruptions during the workload; the report marks them and measures recovery."))
    gates: list[Annotated[str, Field(pattern=r"^[a-z0-9_]+(@[-a-z0-9]+)?:\d+(\.\d+)?%?$")]] = Field(
        default_factory=list, description=(
            "Regression gates used by `kwokbench gate` when it is given no --metric, as NAME:MAX_REGRESSION "
            "(e.g. throughput:10%, latency_p99:15%; latency_p50/p90/p99@PHASE for one phase's pods, e.g. "
            "latency_p50@churn:50%)."))

    @model_validator(mode="after")
    def _gate_phases(self) -> Scenario:
        phases = [w.name for w in self.workloads]
        for i, g in enumerate(self.gates):
            phase = g.split(":")[0].partition("@")[2]
            if phase and phase not in phases:
                raise ValueError(f"gates.{i}: no phase {phase!r} (the phases: {', '.join(phases)})")
        return self

    @model_validator(mode="after")
    def _chaos_groups(self) -> Scenario:
        groups = {g.name for g in self.cluster.node_groups}
        for i, e in enumerate(self.chaos):
            if e.group is not None and e.group not in groups:
                raise ValueError(f"chaos.{i}.group: no node group {e.group!r} (have: {', '.join(sorted(groups))})")
        return self

    @model_validator(mode="after")
    def _simulation(self) -> Scenario:
        c = self.cluster
        if c.pod_lifecycle == "none":
            for i, w in enumerate(self.workloads):
                if w.wait_for in ("running", "completed"):
                    raise ValueError(f"workloads.{i}.wait_for: {w.wait_for} never happens with cluster.pod_lifecycle "
                                     "none (pods stay Pending on their nodes)")
        if not c.controller_manager:
            templated = [w.name for w in self.workloads if w.templated_claims]
            if templated:
                raise ValueError(f"workload {templated[0]}: a claim per pod (shared_by 1, or a trace's GPUs as "
                                 "DRA devices) is made from its template by kube-controller-manager, which "
                                 "cluster.controller_manager: false turns off")
            nodes = [e.action for e in self.chaos if e.action in ("nodes-not-ready", "restart-controller-manager")]
            if nodes:
                raise ValueError(f"chaos {nodes[0]} needs kube-controller-manager (cluster.controller_manager: false)")
        return self

    @model_validator(mode="after")
    def _queues(self) -> Scenario:
        kueue = self.cluster.kueue
        for i, w in enumerate(self.workloads):
            if w.queue is None:
                continue
            if kueue is None:
                raise ValueError(f"workloads.{i}.queue: needs cluster.kueue")
            have = {(q.name, q.namespace) for q in kueue.local_queues}
            if (w.queue, w.namespace) not in have:
                raise ValueError(f"workloads.{i}.queue: no local queue {w.queue!r} in namespace {w.namespace!r} "
                                 f"(have: {', '.join(f'{n} in {ns}' for n, ns in sorted(have))})")
        if kueue is not None and not self.cluster.controller_manager:
            raise ValueError("cluster.kueue admits Jobs, whose pods kube-controller-manager makes: "
                             "cluster.controller_manager must be on")
        if kueue is not None and self.concurrent_schedulers:
            raise ValueError("cluster.kueue and concurrent_schedulers cannot be combined")
        return self

    @model_validator(mode="after")
    def _claims(self) -> Scenario:
        """A claim asks for a class some node group's devices offer, and for no more capacity than the largest
        such device has: otherwise every pod would stay pending, found only after the cluster is up."""
        offered = offered_classes(self.cluster.node_groups)
        drivers: dict[str, str] = {}
        for g in self.cluster.node_groups:
            for j, d in enumerate(g.devices):
                if drivers.setdefault(d.class_name, d.driver) != d.driver:
                    raise ValueError(f"node group {g.name}: devices.{j}: device class {d.class_name} is already "
                                     f"the class of driver {drivers[d.class_name]}; name another device_class")
        for i, w in enumerate(self.workloads):
            names = [c.name for c in w.claims]
            if len(set(names)) != len(names):
                raise ValueError(f"workloads.{i}.claims: claim names must differ ({', '.join(names)})")
            for j, claim in enumerate(w.claims):
                check_claim(claim, offered, f"workloads.{i}.claims.{j}")
        for g in self.cluster.node_groups:
            named: dict[str, set[str]] = {}
            for j, d in enumerate(g.devices):
                for key, v in d.capacity.items():
                    if not is_quantity(v):
                        raise ValueError(f"node group {g.name}: devices.{j}.capacity.{key}: {v!r} is not a "
                                         "Kubernetes quantity")
                if d.name in named.setdefault(d.driver, set()):
                    raise ValueError(f"node group {g.name}: devices.{j}: two device entries of driver {d.driver} "
                                     f"are named {d.name}: name one otherwise (their devices would collide)")
                named[d.driver].add(d.name)
                if d.partitions:
                    for variant in self.schedulers:
                        release = self.kubernetes_for(variant)
                        if versions.tag_key(release) < versions.tag_key(PARTITIONS_FROM):
                            raise ValueError(f"node group {g.name}: devices.{j}.partitions need Kubernetes "
                                             f"{PARTITIONS_FROM} or later (DRAPartitionableDevices is off before "
                                             f"1.36); variant {variant.name} runs {release}")
        return self

    @model_validator(mode="after")
    def _trace_gpus(self) -> Scenario:
        """A trace's pods and nodes say the same about GPUs: a DRA claim on nodes with no devices (or the other
        way round) would leave every GPU pod pending."""
        nodes = {g.from_trace.gpus for g in self.cluster.node_groups if g.from_trace is not None}
        for i, w in enumerate(self.workloads):
            if w.trace is None:
                continue
            if w.trace.gpus == "dra" and nodes != {"dra"}:
                raise ValueError(f"workloads.{i}.trace.gpus: dra needs the GPUs as devices: give the from_trace node "
                                 "groups gpus: dra too")
            if w.trace.gpus == "per-node" and "dra" in nodes:
                raise ValueError(f"workloads.{i}.trace.gpus: the from_trace node groups have gpus: dra; give the "
                                 "trace workload gpus: dra too")
        return self

    @model_validator(mode="after")
    def _gangs(self) -> Scenario:
        for w in self.workloads:
            if w.gang and w.count % w.gang.size:
                raise ValueError(f"workload {w.name}: count {w.count} is not a multiple of gang.size {w.gang.size}")
        return self

    @model_validator(mode="before")
    @classmethod
    def _duet_names(cls, data: Any) -> Any:
        """A duet runs its variants together: each serves a name of its own unless it names one. Variants that
        name different Kubernetes releases cannot share a control plane: they run as two clusters at once."""
        if isinstance(data, dict) and data.get("duet") in (True, "clusters") and isinstance(data.get("schedulers"),
                                                                                             list):
            if data["duet"] == "clusters" or len({str(v.get("kubernetes") or "") for v in data["schedulers"]
                                                  if isinstance(v, dict)}) > 1:
                return data
            data = {**data, "concurrent_schedulers": True, "schedulers": [
                {**v, "scheduler_name": f"duet-{v.get('name', 'default')}"}
                if isinstance(v, dict) and not v.get("scheduler_name") else v for v in data["schedulers"]]}
        return data

    @model_validator(mode="after")
    def _duet(self) -> Scenario:
        if not self.duet:
            return self
        if not self.concurrent_schedulers:  # two clusters: each the whole scenario, whatever it holds
            if len(self.schedulers) != 2:
                raise ValueError("duet needs exactly two scheduler variants")
            return self
        why = ("exactly two scheduler variants" if len(self.schedulers) != 2 else
               "no trace workloads" if any(w.trace for w in self.workloads) else
               "no per-phase `scheduler` (each side has the whole workload)" if any(w.scheduler for w in
                                                                                    self.workloads) else
               "no DRA devices or claims" if any(g.devices for g in self.cluster.node_groups) or any(
                   w.claims for w in self.workloads) else
               "no node groups from a trace" if any(g.from_trace for g in self.cluster.node_groups) else
               "no gangs (a gang's members would be dealt to both sides)" if any(w.gang for w in
                                                                                  self.workloads) else
               "no chaos events" if self.chaos else
               "no Kueue" if self.cluster.kueue else "")
        if why:
            raise ValueError(f"duet needs {why}")
        return self

    @model_validator(mode="after")
    def _concurrent(self) -> Scenario:
        names = {s.name for s in self.schedulers}
        for i, w in enumerate(self.workloads):
            if w.scheduler is not None and not self.concurrent_schedulers:
                raise ValueError(f"workloads.{i}.scheduler: only with concurrent_schedulers: true")
            if w.scheduler is not None and w.scheduler not in names:
                raise ValueError(f"workloads.{i}.scheduler: no scheduler variant {w.scheduler!r} "
                                 f"(have: {', '.join(sorted(names))})")
        if self.concurrent_schedulers:
            if len(self.schedulers) < 2:
                raise ValueError("concurrent_schedulers needs at least two scheduler variants")
            served = [s.effective_scheduler_name for s in self.schedulers]
            dup = sorted({n for n in served if served.count(n) > 1})
            if dup:
                raise ValueError(f"concurrent_schedulers: variants share schedulerName {', '.join(dup)}; give each "
                                 "its own scheduler_name")
            problems = [f"{s.name}: {p}" for s in self.schedulers if (p := s.concurrent_problem())]
            if problems:
                raise ValueError(f"concurrent_schedulers: {'; '.join(problems)}")
            releases = sorted({self.kubernetes_for(s) for s in self.schedulers})
            if len(releases) > 1:
                raise ValueError(f"concurrent_schedulers: the variants share one cluster, so one Kubernetes release "
                                 f"(they name {', '.join(releases)}); set cluster.kubernetes_version instead")
        return self

    def kubernetes_for(self, variant: SchedulerSpec) -> str:
        """The Kubernetes release of ``variant``'s control plane: its own ``kubernetes:``, else the cluster's."""
        return variant.kubernetes or self.cluster.kubernetes_version

    @model_validator(mode="after")
    def _unique_names(self) -> Scenario:
        for what, names in (("workload", [w.name for w in self.workloads]),
                            ("scheduler", [s.name for s in self.schedulers]),
                            ("node group", [g.name for g in self.cluster.node_groups])):
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"duplicate {what} name(s): {', '.join(sorted(dup))}")
        return self


def _by_kind(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A ``schedulers:`` entry is validated by the settings of the kind its ``binary`` names (errors keep their
    field paths, e.g. ``schedulers.1.<its block>.queues.0.name``)."""
    if isinstance(value, dict):
        kind = scheduler_kinds.kind_of(str(value.get("binary") or scheduler_kinds.DEFAULT_KIND))
        return kind.settings.model_validate(value)
    return value if isinstance(value, SchedulerSpec) else handler(value)


@functools.cache
def scenario_model() -> type[Scenario]:
    """The scenario model with every registered scheduler kind: each ``schedulers:`` entry its kind's settings,
    each workload the blocks kinds add to it (named after the kind). Built on first use,
    from :func:`kwokbench.scheduler_kinds.registry`."""
    kinds = scheduler_kinds.registry()
    settings = tuple(dict.fromkeys(k.settings for k in kinds.values()))
    entry = Annotated[Union[settings], WrapValidator(_by_kind)]  # type: ignore[valid-type]  # noqa: UP007
    blocks = {key: (model, Field(default_factory=model, description=f"Read by `{key}` variants only: "
                                                                   f"{(model.__doc__ or '').strip()}"))
              for key, model in scheduler_kinds.workload_blocks().items()}
    workload = create_model("WorkloadSpec", __base__=WorkloadSpec, **blocks)  # type: ignore[call-overload]
    default = kinds[scheduler_kinds.DEFAULT_KIND].settings
    return create_model(
        "Scenario", __base__=Scenario,
        schedulers=(list[entry], Field(default_factory=lambda: [default()], min_length=1,
                                       description=Scenario.model_fields["schedulers"].description)),
        workloads=(list[workload], Field(min_length=1,
                                         description=Scenario.model_fields["workloads"].description)))


def json_schema() -> dict[str, Any]:
    return scenario_model().model_json_schema()
