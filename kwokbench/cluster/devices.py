"""DRA devices of fake nodes: the DeviceClasses claims name, and the ResourceSlices of each node and driver, as
a DRA driver's kubelet plugin would publish them (the node's own pool, generation 1: one slice, more past a
slice's limits or for counter sets). What the devices are: :mod:`kwokbench.scenario.devices`.

No driver process and no kubelet take part: kube-scheduler's DynamicResources plugin allocates claims from the
slices and writes the allocation, and kwok moves the bound pod to Running. The slices are posted with the nodes,
on the same connections (:func:`kwokbench.cluster.nodes.create_nodes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from kwokbench.labels import NODE_GROUP_LABEL
from kwokbench.scenario.devices import counter_sets_of, devices_of

API = "resource.k8s.io/v1"
SLICES = f"/apis/{API}/resourceslices"
CLASSES = f"/apis/{API}/deviceclasses"


def device_class(name: str, driver: str) -> dict[str, Any]:
    """The DeviceClass ``name``: every device of ``driver``."""
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def device_classes(devices: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The DeviceClasses of these device specs (``DeviceSpec.model_dump()``), one per class, by name."""
    seen: dict[str, str] = {}
    for d in devices:
        seen.setdefault(d.get("device_class") or d["driver"], d["driver"])
    return [device_class(name, driver) for name, driver in sorted(seen.items())]


MAX_DEVICES = 128
"""Devices a ResourceSlice may hold, and (:data:`MAX_DEVICES_WITH_COUNTERS`) when any of them consumes counters."""
MAX_DEVICES_WITH_COUNTERS = 64
MAX_COUNTER_SETS = 8
"""Counter sets a ResourceSlice may hold; a slice holds devices or counter sets, never both (1.35 on)."""


def _chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def slice_bodies(node: str, group: str, devices: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, bytes]]:
    """(name, JSON body) of node ``node``'s ResourceSlices: per driver, one pool of the node's name whose slices
    hold its devices in spec order (``<node>-<driver>``, then ``-1``, ``-2`` … past a slice's limit) and, for
    partitionable devices, their counter sets (``<node>-<driver>-counters``, …)."""
    by_driver: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for spec in devices:
        devs, sets = by_driver.setdefault(spec["driver"], ([], []))
        devs.extend(devices_of(spec))
        sets.extend(counter_sets_of(spec))
    for driver, (devs, sets) in by_driver.items():
        per_slice = MAX_DEVICES_WITH_COUNTERS if sets else MAX_DEVICES
        parts: list[tuple[str, dict[str, Any]]] = [
            (f"{node}-{driver}" + (f"-{i}" if i else ""), {"devices": chunk})
            for i, chunk in enumerate(_chunks(devs, per_slice))]
        parts += [(f"{node}-{driver}-counters" + (f"-{i}" if i else ""), {"sharedCounters": chunk})
                  for i, chunk in enumerate(_chunks(sets, MAX_COUNTER_SETS))]
        for name, content in parts:
            yield name, orjson.dumps({
                "apiVersion": API, "kind": "ResourceSlice",
                "metadata": {"name": name, "labels": {NODE_GROUP_LABEL: group}},
                "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                      "resourceSliceCount": len(parts)},
                         **content}})

