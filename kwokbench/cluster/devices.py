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


def devices_of(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``devices`` of one spec in a slice: ``<name>-<k>`` with its attributes, ``index`` k and capacity."""
    out = []
    for k in range(int(spec["count"])):
        dev: dict[str, Any] = {"name": f"{spec.get('name') or 'gpu'}-{k}",
                               "attributes": {**{a: attribute(v) for a, v in (spec.get("attributes") or {}).items()},
                                              "index": {"int": k}}}
        if spec.get("capacity"):
            dev["capacity"] = {c: {"value": str(v)} for c, v in spec["capacity"].items()}
        if spec.get("shared"):
            dev["allowMultipleAllocations"] = True
        out.append(dev)
    return out


def slice_bodies(node: str, group: str, devices: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, bytes]]:
    """(name, JSON body) of node ``node``'s ResourceSlices: one per driver, its devices in spec order."""
    by_driver: dict[str, list[dict[str, Any]]] = {}
    for spec in devices:
        by_driver.setdefault(spec["driver"], []).extend(devices_of(spec))
    for driver, devs in by_driver.items():
        name = f"{node}-{driver}"
        yield name, orjson.dumps({
            "apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": name, "labels": {NODE_GROUP_LABEL: group}},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": devs}})


def slices_per_node(devices: Sequence[Mapping[str, Any]]) -> int:
    return len({d["driver"] for d in devices})
