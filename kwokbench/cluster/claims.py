"""DRA resource claims of a workload's pods: the ResourceClaimTemplate each pod gets its own claim from
(kube-controller-manager's resourceclaim controller creates it with the pod and deletes it with the pod), or
ResourceClaims that N consecutive pods share; both created before the phase's pods, like a gang's PodGroups.

Each claim has one request (its ``name``) of ``count`` devices of a DeviceClass, with CEL selectors and the
capacity it consumes of a shared device. The apiserver validates the CEL when the objects are created: an
invalid expression fails the phase with the apiserver's own message before any pod is submitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from kwokbench.cluster.api import Api, gather_limited, status_reason
from kwokbench.cluster.devices import API
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError, ScenarioError
from kwokbench.labels import RUN_LABEL, WORKLOAD_LABEL
from kwokbench.manifests import PodClaim
from kwokbench.scenario import ClaimSpec, SubRequestSpec, WorkloadSpec
from kwokbench.trace.kube import DRA_GPU_DRIVER, claim_template_name, dra_claim_shape, dra_template_name


def object_prefix(prefix: str, claim: ClaimSpec) -> str:
    """Workload ``prefix``'s template of ``claim`` is named this; its shared claims ``<this>-<k>``."""
    return f"{prefix}-{claim.name}"


def pod_claims(w: WorkloadSpec, prefix: str) -> tuple[PodClaim, ...]:
    return tuple(PodClaim(c.name, object_prefix(prefix, c), 0 if c.shared_by == 1 else c.shared_by)
                 for c in w.claims)


def _request(r: SubRequestSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": r.device_class, "allocationMode": "ExactCount", "count": r.count}
    if r.selectors:
        out["selectors"] = [{"cel": {"expression": e}} for e in r.selectors]
    if r.capacity:
        out["capacity"] = {"requests": {k: str(v) for k, v in r.capacity.items()}}
    return out


def claim_spec(c: ClaimSpec) -> dict[str, Any]:
    """A ResourceClaimSpec with the claim's one request: exactly its class, or its first-available list."""
    if c.first_available:
        request: dict[str, Any] = {"name": c.name, "firstAvailable": [{"name": a.name, **_request(a)}
                                                                      for a in c.first_available]}
    else:
        [(_, exact)] = c.alternatives()
        request = {"name": c.name, "exactly": _request(exact)}
    return {"devices": {"requests": [request]}}


def trace_claim(shape: tuple[int, int, tuple[str, ...]]) -> ClaimSpec:
    """The claim of a DRA-form trace pod's shape (:func:`~kwokbench.trace.kube.dra_claim_shape`): k devices of
    the trace's GPU class, m milli of one when it shares, its models as a CEL selector."""
    k, milli, models = shape
    listed = ", ".join(f'"{m}"' for m in models)
    return ClaimSpec(name="gpu", device_class=DRA_GPU_DRIVER, count=k,
                     selectors=[f'device.attributes["{DRA_GPU_DRIVER}"].model in [{listed}]'] if models else [],
                     capacity={"milli": milli} if milli else {})


def claim_objects(w: WorkloadSpec, prefix: str, run_label: str,
                  labels: dict[str, str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of every claim object phase ``w`` needs before its pods, labelled with the run
    and workload (a template's claims carry the same labels: the controller copies its ``spec.metadata``): a
    template per claim of ``claims:`` (or shared claims), and a replayed trace's in DRA form one per shape."""
    meta_labels = {RUN_LABEL: run_label, WORKLOAD_LABEL: w.name, **(labels or {})}
    ns = w.namespace
    templates = [(object_prefix(prefix, c), c) for c in w.claims if c.shared_by == 1]
    if w.trace is not None and w.trace.gpus == "dra":
        shapes = sorted({sh for p in w.trace_pods if (sh := dra_claim_shape(p)) is not None})
        templates = [(dra_template_name(sh), trace_claim(sh)) for sh in shapes] + templates
    if w.trace is not None:  # claims captured from a DRA cluster (checked when the trace was read)
        captured = {claim_template_name(c): c for p in w.trace_pods for c in p.claims}
        templates = [(name, ClaimSpec.model_validate(c)) for name, c in sorted(captured.items())] + templates
    out: list[tuple[str, dict[str, Any]]] = [
        (f"/apis/{API}/namespaces/{ns}/resourceclaimtemplates",
         {"apiVersion": API, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "labels": meta_labels},
          "spec": {"metadata": {"labels": meta_labels}, "spec": claim_spec(c)}}) for name, c in templates]
    for c in w.claims:
        for k in range(math.ceil(w.count / c.shared_by)) if c.shared_by > 1 else ():
            out.append((f"/apis/{API}/namespaces/{ns}/resourceclaims",
                        {"apiVersion": API, "kind": "ResourceClaim",
                         "metadata": {"name": f"{object_prefix(prefix, c)}-{k}", "labels": meta_labels},
                         "spec": claim_spec(c)}))
    return out


def allocated_devices(claim: dict[str, Any]) -> list[str]:
    """``driver/pool/device`` of every device allocated to ``claim`` (empty when not allocated)."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [f"{r.get('driver', '')}/{r.get('pool', '')}/{r.get('device', '')}" for r in results]


async def create_claims(creds: Credentials, w: WorkloadSpec, objects: list[tuple[str, dict[str, Any]]],
                        concurrency: int = 32) -> int:
    """Create phase ``w``'s claim objects (kept when they exist); what the apiserver refuses (an invalid CEL
    selector, a request its validation rejects) is one :class:`ScenarioError` with the apiserver's reason."""
    async with Api(creds) as api:
        def post(path: str, obj: dict[str, Any]) -> Callable[[], Any]:
            async def job() -> tuple[int, bytes]:
                return await api.raw("POST", path, orjson.dumps(obj))
            return job
        results = await gather_limited([post(p, o) for p, o in objects], concurrency)
    for (_, obj), (status, body) in zip(objects, results, strict=True):
        if status in (201, 409):
            continue
        what = f"workload {w.name}: {obj['kind']} {obj['metadata']['name']}"
        if status in (400, 422):
            raise ScenarioError(f"{what}: the apiserver refused it: {refusal(body)}")
        raise ApiError(f"{what}: HTTP {status}: {status_reason(body)}", status)
    return len(objects)


def refusal(body: bytes) -> str:
    """The apiserver's reason for refusing an object, on one line: each cause's field and the first line of its
    message (a CEL compile error adds the expression with a caret under the fault, on lines of its own)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return " ".join(status_reason(body).split())
    causes = ((doc.get("details") or {}).get("causes") or []) if isinstance(doc, dict) else []
    if not causes:
        return " ".join(status_reason(body).split())
    return "; ".join(f"{c.get('field', '')}: {str(c.get('message', '')).splitlines()[0] if c.get('message') else ''}"
                     for c in causes)[:500]
