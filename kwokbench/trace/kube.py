"""Trace rows as Kubernetes resources and labels, including kwokbench's form of GPU sharing.

Kubernetes has no native fractional GPU: ``nvidia.com/gpu`` is a count of whole devices. kwokbench
counts shared GPUs in a second extended resource, ``kwokbench.io/gpu-milli``, in thousandths of a GPU:

- a GPU node advertises ``nvidia.com/gpu: n`` and ``kwokbench.io/gpu-milli: 1000 x n``;
- a whole-GPU pod requests ``nvidia.com/gpu: k`` AND ``kwokbench.io/gpu-milli: 1000 x k``, so a GPU that
  shared pods have started to fill can no longer be handed out whole (the two counts stay consistent);
- a GPU-sharing pod requests only ``kwokbench.io/gpu-milli: m`` (m < 1000).

Both are extended resources, so a pod manifest must put them in ``limits`` too (Kubernetes requires
limits == requests for extended resources). The accounting is per node, not per GPU; what that changes
against the FGD paper's simulator is explained in ``kwokbench.trace.alibaba``.

GPU models are the label NVIDIA GPU feature discovery sets, ``nvidia.com/gpu.product``; a pod's
``gpu_models`` become a required node affinity on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kwokbench.trace.format import (
    GPU_DEMAND_ANNOTATION,
    GPU_MILLI_RESOURCE,
    GPU_RESOURCE,
    MILLI_PER_GPU,
    TraceNode,
    TracePod,
)

__all__ = ["GPU_MILLI_RESOURCE", "GPU_PRODUCT_LABEL", "GPU_RESOURCE", "node_allocatable", "node_labels",
           "pod_affinity", "pod_annotations", "pod_params", "pod_requests"]
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
TRACE_NAME_ANNOTATION = "kwokbench.io/trace-name"
"""The pod's name in the trace (kwokbench names the replayed pod <workload>-<run>-<i>)."""
DELETE_AFTER_ANNOTATION = "kwokbench.io/delete-after"
"""How long the pod lives once Running (a Go duration); a kwok Stage deletes it then."""


def pod_requests(p: TracePod) -> dict[str, str]:
    """Resource requests as Kubernetes quantities: cpu ``1500m``, memory ``2048Mi``, GPUs, then ``extended``."""
    out = {"cpu": f"{p.cpu_milli}m", "memory": f"{p.memory_mib}Mi"}
    if p.gpu:
        out[GPU_RESOURCE] = str(p.gpu)
    if p.gpu or p.gpu_milli:
        out[GPU_MILLI_RESOURCE] = str(p.gpu * MILLI_PER_GPU + p.gpu_milli)
    return {**out, **p.extended}


def node_allocatable(n: TraceNode) -> dict[str, str]:
    """What the node offers (its allocatable and capacity alike: kwok nodes reserve nothing)."""
    out = {"cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi", "pods": str(n.pods)}
    if n.gpu:
        out[GPU_RESOURCE] = str(n.gpu)
        out[GPU_MILLI_RESOURCE] = str(n.gpu * MILLI_PER_GPU)
    return out


def node_labels(n: TraceNode) -> dict[str, str]:
    """The node's labels plus its GPU model under NVIDIA GPU feature discovery's key."""
    return {**n.labels, GPU_PRODUCT_LABEL: n.gpu_model} if n.gpu_model else dict(n.labels)


def pod_affinity(p: TracePod) -> dict[str, Any] | None:
    """A pod's ``spec.affinity`` limiting it to its GPU models, or None when it takes any."""
    if not p.gpu_models:
        return None
    term = {"matchExpressions": [{"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(p.gpu_models)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def pod_annotations(p: TracePod, lifetime: bool = True) -> dict[str, str]:
    """What is the pod's own: its name in the trace and, with lifetimes, how long it lives once Running."""
    out = {TRACE_NAME_ANNOTATION: p.name}
    if lifetime and p.lifetime_seconds is not None:
        out[DELETE_AFTER_ANNOTATION] = f"{max(p.lifetime_seconds, 0.001):.3f}s"
    return out


def pod_params(p: TracePod) -> dict[str, Any]:
    """The variables of the builtin ``trace-pod`` template for one trace pod (its shape: many pods share it)."""
    out: dict[str, Any] = {"requests": pod_requests(p), "labels": dict(p.labels),
                           "node_selector": dict(p.node_selector), "tolerations": [dict(t) for t in p.tolerations]}
    if (affinity := pod_affinity(p)) is not None:
        out["affinity"] = affinity
    if p.priority_class:
        out["priority_class"] = p.priority_class
    if p.claims:
        out["claims"] = [{"name": c["name"], "template": claim_template_name(c)} for c in p.claims]
    return out


def claim_template_name(claim: Mapping[str, Any]) -> str:
    """The ResourceClaimTemplate of a trace pod's claim entry (``claims`` column): one per distinct entry,
    shared by the pods that have it."""
    import hashlib
    import json

    return "trace-claim-" + hashlib.sha256(json.dumps(claim, sort_keys=True).encode()).hexdigest()[:12]


# ---- the DRA representation: each GPU a device, shares fitted per GPU ---------------------------------------

DRA_GPU_DRIVER = "gpu.kwokbench.io"
"""The driver (and DeviceClass) of a trace's GPUs in its DRA representation."""



def dra_node_devices(n: TraceNode) -> list[dict[str, Any]]:
    """A node's GPUs as DRA devices: each a device of 1000 milli of consumable capacity (shared by claims that
    ask for part of it), its model an attribute (``DeviceSpec`` fields)."""
    if not n.gpu:
        return []
    return [{"driver": DRA_GPU_DRIVER, "count": n.gpu, "name": "gpu",
             "attributes": {"model": n.gpu_model or ""}, "capacity": {"milli": MILLI_PER_GPU}, "shared": True}]


def dra_claim_shape(p: TracePod) -> tuple[int, int, tuple[str, ...]] | None:
    """(GPUs, milli of one shared GPU, models) a pod claims, or None for a CPU-only pod: k whole GPUs (a claim
    of k devices asking no capacity takes each whole), or m milli of one GPU."""
    if p.gpu:
        return (p.gpu, 0, tuple(sorted(p.gpu_models)))
    if p.gpu_milli:
        return (1, p.gpu_milli, tuple(sorted(p.gpu_models)))
    return None


def dra_template_name(shape: tuple[int, int, tuple[str, ...]]) -> str:
    """The ResourceClaimTemplate of a claim shape (one per shape, shared by its pods)."""
    import hashlib

    k, milli, models = shape
    tag = hashlib.sha256(",".join(models).encode()).hexdigest()[:8] if models else "any"
    return f"trace-gpu-{k}x{milli}-{tag}"


def dra_pod_params(p: TracePod) -> dict[str, Any]:
    """:func:`pod_params` of the DRA representation: no GPU resources, no model affinity (the claim's
    selector says it), the claim template of its shape in ``claims``, its demand in an annotation."""
    out = pod_params(p)
    out["requests"] = {k: v for k, v in out["requests"].items() if k not in (GPU_RESOURCE, GPU_MILLI_RESOURCE)}
    out.pop("affinity", None)
    shape = dra_claim_shape(p)
    if shape is not None:
        out["claims"] = [*out.get("claims", []), {"name": "gpu", "template": dra_template_name(shape)}]
        out["annotations"] = {GPU_DEMAND_ANNOTATION: f"{p.gpu},{p.gpu * MILLI_PER_GPU + p.gpu_milli}"}
    return out
