"""Setup and end-of-run objects: CRDs, gang PodGroups, and the cluster state a placement analysis needs
(nodes with their allocatable resources, FailedScheduling events of pods left pending)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

from kwokbench.cluster.api import Api, gather_limited
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError, ClusterError
from kwokbench.scenario.quantity import quantity

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def yaml_documents(path: Path) -> list[Any]:
    """Every non-empty document of a YAML file, read with libyaml's safe loader where PyYAML has it (the same
    documents as the pure-Python one; Volcano's 1.1 MB of CRDs in 0.19 s of CPU instead of 1.72)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]


def _established(crd: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


async def apply_crds(creds: Credentials, files: list[Path], timeout: float = 60.0) -> list[str]:
    """Create the CRDs of ``files`` (kept when they exist) and wait until each is served."""
    docs = [d for f in files for d in yaml_documents(f) if d.get("kind") == "CustomResourceDefinition"]
    if not docs:
        raise ClusterError(f"no CustomResourceDefinition in {', '.join(map(str, files))}")
    return await create_crds(creds, docs, timeout)


async def create_crds(creds: Credentials, docs: list[dict[str, Any]], timeout: float = 60.0) -> list[str]:
    """Create CRDs already read (kept when they exist) and wait until each is served; their names."""
    names = [d["metadata"]["name"] for d in docs]
    async with Api(creds) as api:
        for d in docs:
            status, body = await api.raw("POST", CRD_PATH, orjson.dumps(d))
            if status not in (201, 409):
                raise ClusterError(f"creating CRD {d['metadata']['name']}: HTTP {status} {body[:200]!r}")
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            for n in sorted(pending):
                if _established(await api.json("GET", f"{CRD_PATH}/{n}")):
                    pending.discard(n)
            if pending and time.monotonic() > deadline:
                raise ClusterError(f"CRDs not established within {timeout:g}s: {', '.join(sorted(pending))}")
            await asyncio.sleep(0.2)
        # Established means the apiserver accepts the kind; wait until the collection also answers
        for d in docs:
            group, plural = d["spec"]["group"], d["spec"]["names"]["plural"]
            version = next(v["name"] for v in d["spec"]["versions"] if v.get("served", True))
            while (await api.raw("GET", f"/apis/{group}/{version}/{plural}", params={"limit": "1"}))[0] != 200:
                if time.monotonic() > deadline:
                    raise ClusterError(f"/apis/{group}/{version}/{plural} not served within {timeout:g}s")
                await asyncio.sleep(0.2)
    return names


async def create_all(creds: Credentials, path: str, bodies: list[bytes], concurrency: int = 32) -> None:
    """POST every body (e.g. the PodGroups of a gang phase); any failure but 409 is an error."""
    async with Api(creds) as api:
        def post(body: bytes) -> Callable[[], Any]:
            async def job() -> tuple[int, bytes]:
                return await api.raw("POST", path, body)
            return job
        results = await gather_limited([post(b) for b in bodies], concurrency)
    bad = [(s, b) for s, b in results if s not in (201, 409)]
    if bad:
        raise ClusterError(f"{len(bad)} of {len(bodies)} creates at {path} failed, first: HTTP {bad[0][0]} "
                           f"{bad[0][1][:200]!r}")


def node_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per node: name, node group, allocatable CPU (millicores), GPUs, pods, memory (MiB), milli-GPUs
    (a replayed trace's GPU sharing) and GPU model."""
    rows = []
    for n in items:
        meta, alloc = n.get("metadata") or {}, (n.get("status") or {}).get("allocatable") or {}
        try:
            rows.append({"name": meta.get("name", ""),
                         "group": (meta.get("labels") or {}).get("kwokbench.io/node-group", ""),
                         "cpu_m": quantity(alloc.get("cpu", 0)) * 1000,
                         "gpus": quantity(alloc.get("nvidia.com/gpu", 0)),
                         "pods": quantity(alloc.get("pods", 0)),
                         "mem_mi": quantity(alloc.get("memory", 0)) / 2**20,
                         "gpu_milli": quantity(alloc.get("kwokbench.io/gpu-milli", 0)),
                         "gpu_model": str((meta.get("labels") or {}).get("nvidia.com/gpu.product", ""))})
        except ValueError:
            continue
    return rows


async def cluster_state(creds: Credentials, namespaces: set[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(node rows, latest FailedScheduling message per ``namespace/pod``) at the end of a run."""
    async with Api(creds) as api:
        nodes = await api.json("GET", "/api/v1/nodes")
        messages: dict[str, tuple[str, str]] = {}
        for ns in sorted(namespaces):
            try:
                ev = await api.json("GET", f"/api/v1/namespaces/{ns}/events",
                                    params={"fieldSelector": "reason=FailedScheduling"})
            except ApiError:
                continue
            for e in ev.get("items") or []:
                obj = e.get("involvedObject") or {}
                key = f"{ns}/{obj.get('name', '')}"
                when = str(e.get("lastTimestamp") or e.get("eventTime") or "")
                if key not in messages or when >= messages[key][0]:
                    messages[key] = (when, str(e.get("message") or e.get("note") or ""))
    return node_rows(nodes.get("items") or []), {k: v[1] for k, v in messages.items()}


# namespaced kinds kwokbench creates for a run: (name, cluster-wide list path, namespaced collection path)
_RUN_KINDS = (("jobs", "/apis/batch/v1/jobs", "/apis/batch/v1/namespaces/{ns}/jobs"),
              ("podgroups", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
               "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"),
              ("native podgroups", "/apis/scheduling.k8s.io/v1beta1/podgroups",
               "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"),
              ("native podgroups (v1alpha2)", "/apis/scheduling.k8s.io/v1alpha2/podgroups",
               "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups"),
              ("volcano jobs", "/apis/batch.volcano.sh/v1alpha1/jobs",
               "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"),
              ("pods", "/api/v1/pods", "/api/v1/namespaces/{ns}/pods"),
              ("resourceclaims", "/apis/resource.k8s.io/v1/resourceclaims",
               "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"),
              ("resourceclaimtemplates", "/apis/resource.k8s.io/v1/resourceclaimtemplates",
               "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"))


async def delete_labelled(creds: Credentials, selector: str, wait_seconds: float = 0.0) -> dict[str, int]:
    """Delete every Job, PodGroup, pod, DRA claim and claim template matching ``selector`` (one collection
    DELETE per namespace holding some, pods without grace), optionally waiting until no such pod is left;
    counts per kind. A kind the cluster does not serve (no PodGroup CRD) is skipped."""
    counts: dict[str, int] = {}
    params = {"labelSelector": selector}
    async with Api(creds) as api:
        for kind, list_path, ns_path in _RUN_KINDS:
            status, body = await api.raw("GET", list_path, params=params)
            if status == 404:
                continue
            if status != 200:
                raise ClusterError(f"listing {kind} labelled {selector}: HTTP {status}")
            items = orjson.loads(body).get("items") or []
            for ns in sorted({it["metadata"]["namespace"] for it in items}):
                await api.raw("DELETE", ns_path.format(ns=ns),
                              params={**params, "gracePeriodSeconds": "0", "propagationPolicy": "Background"})
            counts[kind] = len(items)
        deadline = time.monotonic() + wait_seconds
        while wait_seconds:
            left = await api.json("GET", "/api/v1/pods", params={**params, "limit": "1"})
            if not left.get("items"):
                break
            if time.monotonic() > deadline:
                raise ClusterError(f"pods labelled {selector} still present after {wait_seconds:g}s")
            await asyncio.sleep(0.5)
    return counts
