"""DRA devices of fake nodes: the DeviceClasses claims name, and one ResourceSlice per node and driver, as a
DRA driver's kubelet plugin would publish them (the node's own pool, one slice, generation 1).

No driver process and no kubelet take part: kube-scheduler's DynamicResources plugin allocates claims from the
slices and writes the allocation, and kwok moves the bound pod to Running. The slices are posted with the nodes,
on the same connections (:func:`kwokbench.cluster.nodes.create_nodes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from kwokbench.labels import NODE_GROUP_LABEL

API = "resource.k8s.io/v1"
SLICES = f"/apis/{API}/resourceslices"
CLASSES = f"/apis/{API}/deviceclasses"


def attribute(value: str | int | bool) -> dict[str, Any]:
    """A device attribute in the API's one-of form."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


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


def _quantities(q: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {k: {"value": str(v)} for k, v in q.items()}


def counter_set_name(spec: Mapping[str, Any], k: int) -> str:
    """Device ``k``'s counter set: what the device whole and each of its partitions draw on."""
    return f"{spec.get('name') or 'gpu'}-{k}"


def devices_of(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``devices`` of one spec in a slice: ``<name>-<k>`` with its attributes, ``index`` k and capacity; a
    partitionable spec's device also as ``<name>-<k>-<profile>-<j>``, each partition drawing on the device's
    counter set (:func:`counter_sets_of`) and the device whole on all of it, with a ``profile`` attribute."""
    out = []
    partitions = spec.get("partitions") or []
    name = spec.get("name") or "gpu"
    attrs = {a: attribute(v) for a, v in (spec.get("attributes") or {}).items()}
    for k in range(int(spec["count"])):
        dev: dict[str, Any] = {"name": f"{name}-{k}", "attributes": {**attrs, "index": {"int": k}}}
        if spec.get("capacity"):
            dev["capacity"] = _quantities(spec["capacity"])
        if spec.get("shared"):
            dev["allowMultipleAllocations"] = True
        if partitions:
            dev["attributes"]["profile"] = {"string": "whole"}
            dev["consumesCounters"] = [{"counterSet": counter_set_name(spec, k),
                                        "counters": _quantities(spec["counters"])}]
        out.append(dev)
        for p in partitions:
            for j in range(int(p["count"])):
                part: dict[str, Any] = {"name": f"{name}-{k}-{p['name']}-{j}",
                                        "attributes": {**attrs, "index": {"int": k}, "profile": {"string": p["name"]}},
                                        "consumesCounters": [{"counterSet": counter_set_name(spec, k),
                                                              "counters": _quantities(p["consumes"])}]}
                if p.get("capacity"):
                    part["capacity"] = _quantities(p["capacity"])
                out.append(part)
    return out


def counter_sets_of(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A partitionable spec's counter sets, one per device (none for a spec without partitions)."""
    if not spec.get("partitions"):
        return []
    return [{"name": counter_set_name(spec, k), "counters": _quantities(spec["counters"])}
            for k in range(int(spec["count"]))]


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

