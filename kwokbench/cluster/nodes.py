"""Create fake nodes from a template, concurrently, and wait until the kwok controller made them Ready."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kwokbench.cluster import devices
from kwokbench.cluster.api import Api, gather_limited
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.kwok_controllers import partition_of, with_partition
from kwokbench.errors import ApiError, ClusterError
from kwokbench.manifests import ManifestFactory


@dataclass(frozen=True)
class NodeGroup:
    name: str
    count: int
    template: Path
    params: dict[str, Any]
    prefix: str = ""
    """Node names are ``<prefix>-<i>`` (default ``kb-<name>``)."""
    devices: tuple[dict[str, Any], ...] = ()
    """DRA devices of every node (``DeviceSpec.model_dump()``): its ResourceSlices are created with it."""


@dataclass(frozen=True)
class NodesResult:
    created: int
    ready: int
    create_seconds: float
    ready_seconds: float
    slices: int = 0
    """ResourceSlices created with the nodes (DRA devices)."""


STOPPED_EVERY = 2.0
"""Seconds between two looks at the components while nodes are not yet Ready."""


def is_ready(node: dict[str, Any]) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


async def create_nodes(creds: Credentials, groups: list[NodeGroup], timeout: float = 300.0,
                       concurrency: int = 64, on_ready: Callable[[int], None] | None = None,
                       partitions: int = 1, stopped: Callable[[], list[str]] | None = None) -> NodesResult:
    """Create the groups' nodes and wait until all are Ready; with ``partitions`` > 1 each node is labelled
    with the kwok controller partition that manages it (round-robin over all groups). ``stopped`` names the
    components that have stopped (asked every few seconds while nodes are not Ready): the wait ends at once
    when one has, instead of running to the timeout."""
    factories = [(g, ManifestFactory(g.template, {**g.params, "group": g.name}, g.prefix or f"kb-{g.name}"))
                 for g in groups]
    wanted = {f.name(i) for g, f in factories for i in range(g.count)}
    total = len(wanted)
    ready: set[str] = set()
    all_ready = asyncio.Event()
    stop = asyncio.Event()
    synced = asyncio.Event()
    errors: list[str] = []

    def handle(typ: str, obj: dict[str, Any], _t: float) -> None:
        name = obj.get("metadata", {}).get("name", "")
        if name not in wanted:
            return
        if typ != "DELETED" and is_ready(obj):
            ready.add(name)
        else:
            ready.discard(name)
        if on_ready:
            on_ready(len(ready))
        if len(ready) == total:
            all_ready.set()

    t0 = time.monotonic()
    async with Api(creds, connections=concurrency) as api:
        watch = asyncio.create_task(api.watch("/api/v1/nodes", handle, stop, on_error=errors.append,
                                              synced=synced))
        try:
            await asyncio.wait_for(synced.wait(), 60)
            for cls in devices.device_classes([d for g in groups for d in g.devices]):
                await _post_job(api, devices.CLASSES, orjson.dumps(cls), f"DeviceClass {cls['metadata']['name']}")()
            # each node's slices right after it, on the same connections: slices cost what nodes cost
            bodies = list(with_slices(factories, node_bodies(factories, partitions)))
            results = await gather_limited([_post_job(api, path, body, name if path == devices.SLICES
                                                      else f"node {name}") for path, name, body in bodies],
                                           concurrency)
            created = sum(1 for (path, _, _), r in zip(bodies, results, strict=True) if r and path != devices.SLICES)
            made_slices = sum(1 for (path, _, _), r in zip(bodies, results, strict=True)
                              if r and path == devices.SLICES)
            t_created = time.monotonic() - t0
            deadline = time.monotonic() + timeout
            while not all_ready.is_set():
                gone = stopped() if stopped else []
                if gone:
                    raise ClusterError(f"only {len(ready)}/{total} nodes became Ready: {'; '.join(gone)}")
                if time.monotonic() >= deadline:
                    raise ClusterError(f"only {len(ready)}/{total} nodes became Ready within {timeout:.0f}s "
                                       "(is the kwok controller running? see its log)")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(all_ready.wait(), min(STOPPED_EVERY, max(0.0, deadline - time.monotonic())))
        finally:
            stop.set()
            await asyncio.gather(watch, return_exceptions=True)
    return NodesResult(created, len(ready), t_created, time.monotonic() - t0, made_slices)


def node_bodies(factories: list[tuple[NodeGroup, ManifestFactory]],
                partitions: int = 1) -> Iterator[tuple[str, str, bytes]]:
    """(collection path, name, JSON body) of every node of the groups, in order; with ``partitions`` > 1 each
    carries the label of its kwok controller partition, dealt round-robin over all groups."""
    j = 0
    for g, f in factories:
        path = f.namespaced_path(None)
        for i in range(g.count):
            body = f.body(i)
            yield path, f.name(i), with_partition(body, partition_of(j, partitions)) if partitions > 1 else body
            j += 1


def with_slices(factories: list[tuple[NodeGroup, ManifestFactory]],
                nodes: Iterator[tuple[str, str, bytes]]) -> Iterator[tuple[str, str, bytes]]:
    """The nodes' (path, name, body), each followed by its ResourceSlices (its group's DRA devices)."""
    devs = {f.name(i): g for g, f in factories if g.devices for i in range(g.count)}
    for path, name, body in nodes:
        yield path, name, body
        g = devs.get(name)
        if g is not None:
            for sname, sbody in devices.slice_bodies(name, g.name, g.devices):
                yield devices.SLICES, f"ResourceSlice {sname}", sbody


async def wait_service_account(creds: Credentials, namespace: str = "default", timeout: float = 60.0) -> None:
    """Pods are refused (403) until the namespace's default ServiceAccount exists. The controller-manager
    creates it a few seconds after the components report Ready; kwokbench creates it itself (kept if it
    is there), so a cluster without controller-manager takes pods too."""
    deadline = time.monotonic() + timeout
    body = orjson.dumps({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    status = 0
    async with Api(creds) as api:
        while time.monotonic() < deadline:
            status, _ = await api.raw("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body)
            if status in (201, 409):
                return
            await asyncio.sleep(0.2)
    raise ClusterError(f"the default ServiceAccount of namespace {namespace!r} could not be created within "
                       f"{timeout:.0f}s (HTTP {status})")


def _post_job(api: Api, path: str, body: bytes, name: str) -> Callable[[], Any]:
    async def job() -> bool:
        for attempt in range(5):
            status, data = await api.raw("POST", path, body)
            if status == 201:
                return True
            if status == 409:  # already there (re-run of up on the same cluster)
                return False
            if status == 429 or status >= 500:
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            raise ApiError(f"creating {name}: HTTP {status}: {data[:200].decode(errors='replace')}", status)
        raise ApiError(f"creating {name}: still failing after 5 attempts (HTTP {status})", status)

    return job
