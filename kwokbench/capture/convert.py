"""A live cluster's nodes and pods as trace rows: pure functions from the API's JSON to TraceNode and TracePod.

Nothing here talks to a cluster, so every rule is tested on a few objects written by hand. The rules:

- Quantities are read exactly (``1500m``, ``2Gi``, ``1e3``, ``100M``) and rounded so that a replay is not
  kinder than the cluster was: a pod's request rounds up (to the millicore, MiB, whole GPU), a node's
  allocatable rounds down.
- A pod's request is the scheduler's: the sum over its containers, or more when an init container needs
  more, plus sidecars (restartable init containers) and the pod's overhead.
- A node keeps all its labels and taints except the taints the node lifecycle controller puts on and takes
  off with the node's condition (``node.kubernetes.io/not-ready``, ``unreachable``, ``unschedulable``,
  ``*-pressure``, ...): they describe the moment, not the node. Which nodes were NotReady or cordoned is
  reported instead. Its GPU model comes from the first GPU-model label it has (:data:`GPU_MODEL_LABELS`).
- A pod's ``gpu_models`` come from a required node affinity ``In`` on a GPU-model label, kept to the models
  the captured nodes have; a pod left with none could run nowhere in a replay and is skipped. The rest of
  its affinity, pod (anti-)affinity and topology spread have no column in the trace format: counted as
  dropped, so the capture says how much of the cluster's placement rules a replay leaves out.
- The tolerations the DefaultTolerationSeconds admission plugin adds to every pod (NoExecute on not-ready
  and unreachable) are left out: they say nothing about the workload.
- Pods of DaemonSets (one per node whatever the load) and static pods (a kubelet's mirror pods, never
  scheduled) are skipped.
- ``group`` is ``<namespace>/<kind>/<name>`` of the pod's controller, its Deployment for a ReplicaSet that
  a ``pod-template-hash`` label ties to one; ``owner_kind`` is the controller's own kind.
- ``arrival_seconds`` counts from the earliest captured pod's ``creationTimestamp`` (whole seconds: the API
  keeps no finer time); ``lifetime_seconds`` is known for a pod being deleted (its ``deletionTimestamp``)
  or finished (its containers' last ``finishedAt``), else empty (it runs until the replay ends).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kwokbench.cluster.nodes import is_ready
from kwokbench.load.watcher import creation_time
from kwokbench.manifests import is_quantity
from kwokbench.trace.anonymise import Anonymiser
from kwokbench.trace.format import (
    DEFAULT_MAX_PODS,
    GPU_MILLI_RESOURCE,
    GPU_RESOURCE,
    MILLI_PER_GPU,
    TraceNode,
    TracePod,
)
from kwokbench.trace.kube import GPU_PRODUCT_LABEL

GPU_MODEL_LABELS = (GPU_PRODUCT_LABEL, "cloud.google.com/gke-accelerator", "k8s.amazonaws.com/accelerator")
"""Node labels naming a GPU model, first found wins: NVIDIA GPU feature discovery's, GKE's, EKS's."""
CONDITION_TAINTS = frozenset({
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable", "node.kubernetes.io/out-of-service",
    "node.cloudprovider.kubernetes.io/uninitialized", "node.cloudprovider.kubernetes.io/shutdown",
})
"""Taints Kubernetes sets from a node's condition; left out of the captured nodes."""
DEFAULT_TOLERATION_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TEMPLATE_HASH_LABEL = "pod-template-hash"

SKIPPED: dict[str, str] = {
    "daemonset": "DaemonSet pods: one per node whatever the load, not part of the workload a scheduler places",
    "static": "static (mirror) pods: started by a kubelet from a file, never scheduled",
    "gpu-model": "pods whose node affinity allows only GPU models no captured node has: they could run nowhere",
}
"""Why pods are left out of a capture, by key (the keys of :attr:`Captured.skipped`)."""
DROPPED: dict[str, str] = {
    "node-affinity": "pods with node affinity beyond the GPU model (matchFields, other keys, preferred terms): "
                     "the trace keeps nodeSelector and GPU models only",
    "pod-affinity": "pods with pod affinity or anti-affinity: no trace column",
    "topology-spread": "pods with topology spread constraints: no trace column",
    "native-resources": "pods requesting ephemeral-storage or hugepages: the trace's nodes offer neither",
    "node-extended": "nodes offering extended resources other than GPUs: the trace's nodes have no column for "
                     "them, so pods requesting them (kept in `extended`) fit no node in a replay",
    "dra-partitionable": "DRA devices drawing on counter sets (partitionable devices): left out of their node's "
                         "devices",
    "dra-pool": "ResourceSlices of no one node (all nodes, a node selector: network-attached devices): the trace's "
                "devices are a node's own",
    "dra-shared-claim": "pods of a ResourceClaim several pods share: a replay gives each pod a claim of its own",
    "dra-request": "DRA claim requests the trace cannot express (allocation mode All, admin access, tolerations, "
                   "a DeviceClass whose driver its selectors do not name): left out of the pod's claims",
    "dra-constraints": "DRA claims with constraints across their requests (matchAttribute): each request is a claim "
                       "of its own in a replay",
    "dra-missing": "pods naming a ResourceClaim or template that was not listed: left out of the pod's claims",
    "dra-no-devices": "DRA claims of a class none of whose devices were captured (all partitionable or "
                      "network-attached): left out of the pod's claims, which no replayed node could satisfy",
}
"""What a capture keeps of its objects but cannot express, by key (the keys of :attr:`Captured.dropped`)."""

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
"""The number a quantity starts with (:data:`kwokbench.manifests.QUANTITY` checks the whole)."""
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MIB = Decimal(1 << 20)


class Skip(Exception):
    """A pod that is not captured; ``str`` is its key in :data:`SKIPPED`."""


def quantity(value: Any) -> Decimal:
    """A Kubernetes quantity exactly: ``1500m`` → 1.5, ``2Gi`` → 2147483648, ``1e3`` → 1000; a JSON number as it is."""
    if value is None or not is_quantity(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    text = str(value)
    number = _NUMBER.match(text)
    assert number is not None  # is_quantity matched the same number
    amount, suffix = Decimal(number[0]), text[number.end():]
    if suffix in _BINARY:
        return amount * Decimal(1024 ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return amount.scaleb(_DECIMAL[suffix])
    return amount.scaleb(int(suffix[1:])) if suffix else amount


def _whole(value: Decimal, up: bool) -> int:
    """Rounded up (a request) or down (what a node offers), never below 0."""
    return max(0, math.ceil(value) if up else math.floor(value))


def milli_cpu(value: Decimal, up: bool) -> int:
    return _whole(value * 1000, up)


def mebibytes(value: Decimal, up: bool) -> int:
    return _whole(value / _MIB, up)


def _text(value: Decimal) -> str:
    """A quantity as the trace's ``extended`` writes it: a whole number, or a plain decimal."""
    return str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")


# -- nodes ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeState:
    name: str
    ready: bool
    cordoned: bool
    extended: tuple[str, ...]
    """Extended resources it offers that the trace has no column for."""


def gpu_model(labels: Mapping[str, str]) -> str | None:
    return next((labels[k] for k in GPU_MODEL_LABELS if labels.get(k)), None)


def _extended_name(name: str) -> bool:
    """Whether a resource is an extended one (a domain-qualified name outside kubernetes.io)."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io") \
        and not name.startswith("requests.")


def _taint(t: Mapping[str, Any]) -> dict[str, str]:
    """Key, value (when not empty) and effect: the trace's taint (``timeAdded`` is a moment, not the taint)."""
    return {k: str(t[k]) for k in ("key", "value", "effect") if t.get(k) not in (None, "")}


def node_row(node: Mapping[str, Any]) -> TraceNode:
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    offers = status.get("allocatable") or status.get("capacity") or {}
    labels = dict(meta.get("labels") or {})
    taints = tuple(_taint(t) for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("key") not in CONDITION_TAINTS)
    return TraceNode(
        name=str(meta.get("name", "")),
        cpu_milli=milli_cpu(quantity(offers.get("cpu", 0)), up=False),
        memory_mib=mebibytes(quantity(offers.get("memory", 0)), up=False),
        gpu=_whole(quantity(offers.get(GPU_RESOURCE, 0)), up=False),
        gpu_model=gpu_model(labels),
        labels=labels, taints=taints,
        pods=_whole(quantity(offers["pods"]), up=False) if "pods" in offers else DEFAULT_MAX_PODS)


def node_state(node: Mapping[str, Any]) -> NodeState:
    status = node.get("status") or {}
    offers = status.get("allocatable") or status.get("capacity") or {}
    extended = tuple(sorted(r for r in offers if _extended_name(r) and r not in (GPU_RESOURCE, GPU_MILLI_RESOURCE)
                            and quantity(offers[r]) > 0))
    return NodeState(str((node.get("metadata") or {}).get("name", "")), is_ready(dict(node)),
                     bool((node.get("spec") or {}).get("unschedulable")), extended)


# -- pods -------------------------------------------------------------------------------------------------------

def controller_of(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference marked as the controller, else the first one."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def skip_reason(pod: Mapping[str, Any]) -> str | None:
    """The key in :data:`SKIPPED` of a pod that is not captured whatever the other pods, or None."""
    meta = pod.get("metadata") or {}
    owner = controller_of(pod)
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}) or (owner is not None and owner.get("kind") == "Node"):
        return "static"
    if owner is not None and owner.get("kind") == "DaemonSet":
        return "daemonset"
    return None


def _resources(listed: Mapping[str, Any]) -> dict[str, Decimal]:
    return {name: quantity(q) for name, q in listed.items()}


def _add(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for name, q in other.items():
        into[name] = into.get(name, Decimal(0)) + q


def _container_requests(c: Mapping[str, Any]) -> dict[str, Decimal]:
    """Its requests; a resource given only in limits is requested at the limit (the apiserver's default)."""
    res = c.get("resources") or {}
    return _resources({**(res.get("limits") or {}), **(res.get("requests") or {})})


def _max_into(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for name, q in other.items():
        into[name] = max(into.get(name, Decimal(0)), q)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the scheduler counts for the pod (``k8s.io/component-helpers`` PodRequests): the containers' sum plus
    the sidecars, or the largest init-container need (with the sidecars started before it) when that is more;
    plus the pod's overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        _add(total, _container_requests(c))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for c in spec.get("initContainers") or []:
        need = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, need)
            _max_into(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, need)
            _max_into(init_peak, step)
    _add(total, sidecars)
    _max_into(total, init_peak)
    _add(total, _resources(spec.get("overhead") or {}))
    return total


def _affinity(pod: Mapping[str, Any], dropped: set[str]) -> tuple[str, ...]:
    """GPU models of the required node affinity (union over its terms); what else it says goes to ``dropped``."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    node = affinity.get("nodeAffinity") or {}
    if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
        dropped.add("pod-affinity")
    if node.get("preferredDuringSchedulingIgnoredDuringExecution"):
        dropped.add("node-affinity")
    models: list[str] = []
    for term in (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []:
        if term.get("matchFields"):
            dropped.add("node-affinity")
        for e in term.get("matchExpressions") or []:
            if e.get("key") in GPU_MODEL_LABELS and e.get("operator") == "In":
                models += [str(v) for v in e.get("values") or []]
            else:
                dropped.add("node-affinity")
    return tuple(dict.fromkeys(models))


def _group(pod: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(group, owner_kind): the controller as ``namespace/Kind/name``, a ReplicaSet's Deployment where its
    name is the Deployment's plus the pod's ``pod-template-hash``."""
    owner = controller_of(pod)
    if owner is None:
        return None, None
    meta = pod.get("metadata") or {}
    kind, name = str(owner.get("kind", "")), str(owner.get("name", ""))
    template_hash = (meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL, "")
    group_kind, group_name = kind, name
    if kind == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
        group_kind, group_name = "Deployment", name[: -len(template_hash) - 1]
    return f"{meta.get('namespace', 'default')}/{group_kind}/{group_name}", kind or None


def _tolerations(pod: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    out = []
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("key") in DEFAULT_TOLERATION_KEYS and t.get("operator") == "Exists" and t.get("effect") == "NoExecute":
            continue
        out.append({k: v for k, v in t.items() if k in ("key", "operator", "value", "effect", "tolerationSeconds")
                    and v not in (None, "")})
    return tuple(out)


def _finished(pod: Mapping[str, Any]) -> float | None:
    """When a finished pod's last container ended (epoch seconds)."""
    status = pod.get("status") or {}
    if status.get("phase") not in ("Succeeded", "Failed"):
        return None
    ends = [creation_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            for s in status.get("containerStatuses") or []]
    known = [t for t in ends if not math.isnan(t)]
    return max(known) if known else None


def created(obj: Mapping[str, Any]) -> float:
    """``metadata.creationTimestamp`` in epoch seconds."""
    t = creation_time((obj.get("metadata") or {}).get("creationTimestamp"))
    if math.isnan(t):
        raise ValueError(f"{(obj.get('metadata') or {}).get('name', '?')}: no creationTimestamp")
    return t


def pod_row(pod: Mapping[str, Any], start: float, gpu_models: Collection[str],
            dropped: set[str] | None = None, dra: Dra | None = None) -> TracePod:
    """The pod as a trace row arriving ``created - start`` seconds in; ``gpu_models`` are the captured nodes'.
    Raises :class:`Skip` for a pod that is not captured; adds to ``dropped`` the keys of :data:`DROPPED` that
    apply to it."""
    if (reason := skip_reason(pod)) is not None:
        raise Skip(reason)
    lost: set[str] = set() if dropped is None else dropped
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    born = created(pod)
    asked = _affinity(pod, lost)
    models = tuple(m for m in asked if m in gpu_models)
    if asked and not models:
        raise Skip("gpu-model")
    if spec.get("topologySpreadConstraints"):
        lost.add("topology-spread")
    req = pod_requests(pod)
    gpu = _whole(req.get(GPU_RESOURCE, Decimal(0)), up=True)
    shared = _whole(req.get(GPU_MILLI_RESOURCE, Decimal(0)), up=True)  # a kwokbench replay's GPU share
    if any(r == "ephemeral-storage" or r.startswith("hugepages-") for r in req):
        lost.add("native-resources")
    extended = {r: _text(q) for r, q in sorted(req.items()) if _extended_name(r) and q > 0
                and r not in (GPU_RESOURCE, GPU_MILLI_RESOURCE)}
    deleted = creation_time(meta.get("deletionTimestamp"))
    end = _finished(pod) if math.isnan(deleted) else deleted
    group, owner_kind = _group(pod)
    return TracePod(
        name=str(meta.get("name", "")), namespace=str(meta.get("namespace") or "default"),
        arrival_seconds=max(0.0, born - start),
        lifetime_seconds=None if end is None else max(0.0, end - born),
        cpu_milli=milli_cpu(req.get("cpu", Decimal(0)), up=True),
        memory_mib=mebibytes(req.get("memory", Decimal(0)), up=True),
        gpu=gpu, gpu_milli=0 if gpu else min(shared, MILLI_PER_GPU), extended=extended,
        priority_class=spec.get("priorityClassName") or None,
        labels=dict(meta.get("labels") or {}), node_selector=dict(spec.get("nodeSelector") or {}),
        gpu_models=models, tolerations=_tolerations(pod), group=group, owner_kind=owner_kind,
        claims=pod_claims(pod, dra, lost) if dra is not None else ())


# -- DRA --------------------------------------------------------------------------------------------------------

_DRIVER_CEL = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


def _attribute(value: Mapping[str, Any]) -> str | int | bool | None:
    """A device attribute's value (``{"string": ...}``, ``int``, ``bool``; a ``version`` as its text)."""
    for kind in ("string", "int", "bool", "version"):
        if kind in value:
            v = value[kind]
            return str(v) if kind == "version" else v
    return None


def _cels(selectors: Any) -> list[str]:
    """The CEL expressions of a class's or a request's ``selectors``."""
    return [str(((sel or {}).get("cel") or {}).get("expression", "")) for sel in selectors or []]


def node_devices(slices: Iterable[Mapping[str, Any]], dropped: Counter[str]) -> dict[str, tuple[dict[str, Any], ...]]:
    """Each node's devices from its ResourceSlices, as scenario ``devices:`` entries: the devices of a driver
    alike in name stem (``gpu-3`` → ``gpu``), attributes (``index`` renumbered), capacity and sharing counted
    into one entry; the DeviceClass is the driver's own (claims carry their class's selectors instead)."""
    entries: dict[str, dict[str, dict[str, Any]]] = {}
    for sl in slices:
        spec = sl.get("spec") or {}
        node, driver = spec.get("nodeName"), str(spec.get("driver", ""))
        if not node:
            dropped["dra-pool"] += 1
            continue
        mine = entries.setdefault(str(node), {})
        for dev in spec.get("devices") or []:
            if dev.get("consumesCounters"):
                dropped["dra-partitionable"] += 1
                continue
            attrs = {k: v for k, raw in sorted((dev.get("attributes") or {}).items()) if k != "index"
                     and (v := _attribute(raw or {})) is not None}
            capacity = {k: str((c or {}).get("value")) for k, c in sorted((dev.get("capacity") or {}).items())}
            shared = bool(dev.get("allowMultipleAllocations"))
            stem = re.sub(r"-?\d+$", "", str(dev.get("name", ""))).lower()[:40].strip("-") or "device"
            key = json.dumps([driver, stem, attrs, capacity, shared], sort_keys=True)
            if key not in mine:
                taken = {e["name"] for e in mine.values() if e["driver"] == driver}
                name = stem if stem not in taken else next(f"{stem}-{k}" for k in range(2, 1000)
                                                           if f"{stem}-{k}" not in taken)
                mine[key] = {"driver": driver, "name": name, "count": 0,
                             **({"attributes": attrs} if attrs else {}), **({"capacity": capacity} if capacity else {}),
                             **({"shared": True} if shared else {})}
            mine[key]["count"] += 1
    return {node: tuple(e.values()) for node, e in entries.items()}


def class_drivers(classes: Iterable[Mapping[str, Any]], drivers: Collection[str]) -> dict[str, tuple[str, list[str]]]:
    """DeviceClass → (the driver its devices come from, its CEL selectors): the driver its selectors compare
    ``device.driver`` to, else the only driver the cluster's slices name; a class told neither is left out."""
    out: dict[str, tuple[str, list[str]]] = {}
    for c in classes:
        cels = _cels((c.get("spec") or {}).get("selectors"))
        named = {m for e in cels for m in _DRIVER_CEL.findall(e)}
        driver = next(iter(named)) if len(named) == 1 else next(iter(drivers)) if len(drivers) == 1 and not named \
            else None
        if driver is not None:
            out[str((c.get("metadata") or {}).get("name", ""))] = (driver, [e for e in cels if e])
    return out


def _exact(x: Mapping[str, Any], dra: Dra) -> dict[str, Any] | str:
    """A request (``exactly`` or a first-available alternative) as a claim entry's fields, or the key of
    :data:`DROPPED` saying why it cannot be one."""
    if x.get("allocationMode", "ExactCount") != "ExactCount" or x.get("adminAccess") or x.get("tolerations"):
        return "dra-request"
    known = dra.classes.get(str(x.get("deviceClassName", "")))
    if known is None:
        return "dra-request"
    driver, class_cels = known
    if driver not in dra.drivers:
        return "dra-no-devices"
    cels = [*class_cels, *_cels(x.get("selectors"))]
    capacity = {k: str(v) for k, v in sorted(((x.get("capacity") or {}).get("requests") or {}).items())}
    return {"device_class": driver, "count": int(x.get("count") or 1), **({"selectors": cels} if cels else {}),
            **({"capacity": capacity} if capacity else {})}


def claim_entries(spec: Mapping[str, Any], name: str, dra: Dra, lost: set[str]) -> list[dict[str, Any]]:
    """A ResourceClaimSpec as claim entries of the pod's claim ``name``: one per request (``<name>-<request>``
    when there are several)."""
    devices = spec.get("devices") or {}
    requests = devices.get("requests") or []
    if devices.get("constraints") and len(requests) > 1:
        lost.add("dra-constraints")
    out = []
    for r in requests:
        entry_name = name if len(requests) == 1 else f"{name}-{r.get('name', '')}"[:63].strip("-")
        if "firstAvailable" in r:
            alts = [(str(a.get("name", "")), _exact(a, dra)) for a in r.get("firstAvailable") or []]
            why = [e for _, e in alts if isinstance(e, str)] or ([] if alts else ["dra-request"])
            if why:
                lost.add(why[0])
                continue
            out.append({"name": entry_name, "first_available": [{"name": n, **e} for n, e in alts
                                                                if not isinstance(e, str)]})
        elif isinstance(e := _exact(r.get("exactly") or {}, dra), str):
            lost.add(e)
        else:
            out.append({"name": entry_name, **e})
    return out


@dataclass(frozen=True)
class Dra:
    """A cluster's DRA objects, indexed for the pods' conversion."""

    classes: Mapping[str, tuple[str, list[str]]] = field(default_factory=dict)
    templates: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    """(namespace, name) → the ResourceClaimSpec a template makes."""
    claims: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    """(namespace, name) → a ResourceClaim's spec."""
    users: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(namespace, name) of a ResourceClaim → the pods naming it."""
    drivers: Collection[str] = ()
    """The drivers some captured node has devices of."""


def pod_claims(pod: Mapping[str, Any], dra: Dra, lost: set[str]) -> tuple[dict[str, Any], ...]:
    """The pod's claims (``spec.resourceClaims``) as claim entries, each from its template or its claim."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    out: list[dict[str, Any]] = []
    for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = str(rc.get("name", ""))
        if (t := rc.get("resourceClaimTemplateName")) is not None:
            spec = dra.templates.get((ns, str(t)))
        elif (c := rc.get("resourceClaimName")) is not None:
            spec = dra.claims.get((ns, str(c)))
            if dra.users.get((ns, str(c)), 0) > 1:
                lost.add("dra-shared-claim")
        else:
            continue
        if spec is None:
            lost.add("dra-missing")
            continue
        out += claim_entries(spec, name, dra, lost)
    return tuple(out)


def index_dra(objects: Mapping[str, Sequence[Mapping[str, Any]]], pods: Iterable[Mapping[str, Any]],
              captured: Collection[str]) -> Dra:
    """The listed DRA objects (``live.DRA_COLLECTIONS``) indexed by what pods name; ``captured``, the drivers of
    the devices captured."""
    def key(o: Mapping[str, Any]) -> tuple[str, str]:
        meta = o.get("metadata") or {}
        return str(meta.get("namespace") or "default"), str(meta.get("name", ""))

    drivers = {str((s.get("spec") or {}).get("driver", "")) for s in objects.get("resourceslices", [])}
    users: Counter[tuple[str, str]] = Counter()
    for pod in pods:
        ns = str((pod.get("metadata") or {}).get("namespace") or "default")
        for rc in (pod.get("spec") or {}).get("resourceClaims") or []:
            if rc.get("resourceClaimName"):
                users[(ns, str(rc["resourceClaimName"]))] += 1
    return Dra(classes=class_drivers(objects.get("deviceclasses", []), drivers),
               templates={key(t): ((t.get("spec") or {}).get("spec") or {}) for t in
                          objects.get("resourceclaimtemplates", [])},
               claims={key(c): (c.get("spec") or {}) for c in objects.get("resourceclaims", [])},
               users=dict(users), drivers=frozenset(captured))


# -- a whole cluster --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Captured:
    """A cluster's nodes and pods as trace rows, and what the conversion left out."""

    nodes: tuple[TraceNode, ...]
    pods: tuple[TracePod, ...]
    """By arrival; pods created in the same second keep the order the API listed them in."""
    start: float | None
    """When the first captured pod was created (epoch seconds): arrival 0."""
    not_ready: tuple[str, ...] = ()
    cordoned: tuple[str, ...] = ()
    skipped: Mapping[str, int] = field(default_factory=dict)
    """Pods not captured, by key of :data:`SKIPPED`."""
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Captured objects with something the trace cannot hold, by key of :data:`DROPPED`."""


def convert(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
            dra: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Captured:
    """Nodes, pods and the DRA objects (by collection, as :mod:`.live` lists them) → trace rows; objects the
    API would never return (a quantity that does not parse) raise ``ValueError``."""
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    devices = node_devices((dra or {}).get("resourceslices", []), dropped)
    node_rows = tuple(dataclasses.replace(row, devices=devices.get(row.name, ())) for row in map(node_row, nodes))
    states = [node_state(n) for n in nodes]
    models = {n.gpu_model for n in node_rows if n.gpu_model}
    dropped.update(["node-extended"] * sum(1 for s in states if s.extended))
    indexed = index_dra(dra, pods, {d["driver"] for n in node_rows for d in n.devices}) if dra else None
    rows: list[TracePod] = []
    for pod in pods:
        lost: set[str] = set()
        try:
            rows.append(pod_row(pod, 0.0, models, lost, indexed))
        except Skip as e:
            skipped[str(e)] += 1
            continue
        dropped.update(lost)
    start = min((p.arrival_seconds for p in rows), default=None)
    shifted = sorted((dataclasses.replace(p, arrival_seconds=p.arrival_seconds - (start or 0.0)) for p in rows),
                     key=lambda p: p.arrival_seconds)
    return Captured(node_rows, tuple(shifted), start,
                    not_ready=tuple(s.name for s in states if not s.ready),
                    cordoned=tuple(s.name for s in states if s.cordoned),
                    skipped=dict(skipped), dropped=dict(dropped))


def anonymise(got: Captured, salt: str) -> Captured:
    """Every name and label value hashed under ``salt`` (:mod:`kwokbench.trace.anonymise`), the NotReady and
    cordoned nodes' names too, so that they still name the captured rows."""
    anon = Anonymiser(salt)
    return dataclasses.replace(got, nodes=tuple(map(anon.node, got.nodes)), pods=tuple(map(anon.pod, got.pods)),
                               not_ready=tuple(map(anon.hash, got.not_ready)),
                               cordoned=tuple(map(anon.hash, got.cordoned)))
