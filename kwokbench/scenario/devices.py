"""The devices a node group's ``devices:`` spec (``DeviceSpec.model_dump()``) gives each node: their names,
attributes, capacity and, for partitionable devices, the counter sets they draw on. Pure: rendered into
ResourceSlices by :mod:`kwokbench.cluster.devices`, and read back by the claims' analysis
(:func:`kwokbench.figures.claims.counters_section`) from the scenario a run stored, so both see one layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def attribute(value: str | int | bool) -> dict[str, Any]:
    """A device attribute in the API's one-of form."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


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
