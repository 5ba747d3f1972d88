"""The DRA claims of a stored run, as figures: how many claims were allocated, how long allocation took,
which devices went to more than one claim at once (a device that is not shareable must never), and, for each
claim's pod, created → claim allocated → bound → Running. Pure: from ``claims.parquet`` and the pod timeline."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kwokbench.figures.summary import percentile_stats
from kwokbench.scenario.devices import counter_sets_of, devices_of
from kwokbench.scenario.quantity import quantity


def given(row: Any) -> list[tuple[str, bool]]:
    """(device, given shared) of a holding's devices: per device from its ``shared`` flags, or (a run stored before
    them) the holding's ``shareable`` for all its devices."""
    devices = str(row.devices or "").split()
    flags = str(getattr(row, "shared", "") or "").split()
    if len(flags) == len(devices):
        return [(d, f == "1") for d, f in zip(devices, flags, strict=True)]
    return [(d, bool(row.shareable)) for d in devices]


def _end(row: Any) -> float:
    gone = row.released if pd.notna(getattr(row, "released", None)) else row.deleted
    return float(gone) if pd.notna(gone) else float("inf")


def overlapping(claims: pd.DataFrame) -> dict[str, int]:
    """Devices held whole by two holdings at the same time (each holding from its allocation to its release: the
    allocation cleared, or the claim deleted), over every holding of every claim, and over each device a claim was
    given whole even when it was given others shared: device → most holdings at once, for those above one."""
    out: dict[str, int] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for row in claims[claims["allocated"].notna()].itertuples(index=False):
        for dev, shared in given(row):
            if not shared:
                spans.setdefault(dev, []).append((float(row.allocated), _end(row)))
    for dev, iv in spans.items():
        if len(iv) < 2:
            continue
        events = sorted([(s, 1) for s, _ in iv] + [(e, -1) for _, e in iv])  # an end sorts before a start at t
        held = most = 0
        for _, d in events:
            held += d
            most = max(most, held)
        if most > 1:
            out[dev] = most
    return out


def peak_consumed(claims: pd.DataFrame, capacity: str = "milli") -> dict[str, float]:
    """Shared devices: device → the most of ``capacity`` the claims holding it at once consumed (from each
    claim's allocation to its release), from the allocations' own ``consumedCapacity``."""
    return {dev: most[capacity] for dev, most in peaks_consumed(claims).items() if capacity in most}


def peaks_consumed(claims: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Shared devices: device → capacity name → the most of it the claims holding the device at once consumed."""
    if "consumed" not in claims:
        return {}
    events: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for row in claims[claims["allocated"].notna()].itertuples(index=False):
        end = _end(row)
        amounts = [dict(kv.split("=", 1) for kv in part.split(",") if "=" in kv)
                   for part in str(row.consumed or "").split()]
        for (dev, shared), got in zip(given(row), amounts, strict=False):
            if shared:
                for name, q in got.items():
                    events.setdefault((dev, name), []).extend(
                        [(float(row.allocated), quantity(q)), (end, -quantity(q))])
    out: dict[str, dict[str, float]] = {}
    for (dev, name), ev in events.items():
        held = most = 0.0
        for _, amount in sorted(ev, key=lambda e: (e[0], e[1])):  # a release before an allocation at one time
            held += amount
            most = max(most, held)
        out.setdefault(dev, {})[name] = most
    return out


def shared_overconsumed(claims: pd.DataFrame, node_groups: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Shared devices whose claims together consumed more of a capacity than the device has, at some moment:
    ``driver/pool/device`` → capacity → peak, from the scenario's device specs (the capacities the slices were
    rendered with) and the claims' consumption over time. The allocator must never let that happen."""
    caps: dict[tuple[str, str, str], dict[str, float]] = {}
    for g in node_groups:
        for spec in g.get("devices") or []:
            if spec.get("shared") and spec.get("capacity"):
                for device in devices_of(spec):
                    caps[(g["name"], spec["driver"], device["name"])] = {
                        k: quantity(v["value"]) for k, v in (device.get("capacity") or {}).items()}
    out: dict[str, dict[str, float]] = {}
    for dev, most in peaks_consumed(claims).items():
        driver, pool, name = [*dev.split("/", 2), "", ""][:3]
        cap = caps.get((_pool_group(pool), driver, name), {})
        beyond = {k: v for k, v in most.items() if k in cap and v > cap[k] * (1 + 1e-9)}
        if beyond:
            out[dev] = beyond
    return out


def _pool_group(pool: str) -> str:
    """The node group of a node-local pool (a node named kb-<group>-<i>)."""
    return pool.removeprefix("kb-").rsplit("-", 1)[0]


def counters_section(claims: pd.DataFrame, node_groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Partitionable devices: what the claims holding a node's devices at once drew from each counter set (a
    device whole draws all of it, a partition its share), from the scenario's device specs (the layout the slices
    were rendered from) and the claims' allocations and releases. ``overcommitted`` names every counter set whose
    claims together drew more than it has at some moment: the allocator must never let that happen. None when no
    node group has partitionable devices."""
    layout: dict[tuple[str, str, str], tuple[str, dict[str, float]]] = {}
    capacity: dict[tuple[str, str, str], dict[str, float]] = {}
    for g in node_groups:
        for spec in g.get("devices") or []:
            for cset in counter_sets_of(spec):
                capacity[(g["name"], spec["driver"], cset["name"])] = {k: quantity(v["value"])
                                                                       for k, v in cset["counters"].items()}
            for device in devices_of(spec) if spec.get("partitions") else ():
                for use in device.get("consumesCounters") or []:
                    layout[(g["name"], spec["driver"], device["name"])] = (
                        use["counterSet"], {k: quantity(v["value"]) for k, v in use["counters"].items()})
    if not layout:
        return None
    events: dict[tuple[str, str, str, str], list[tuple[float, dict[str, float], int]]] = {}
    for row in claims[claims["allocated"].notna()].itertuples(index=False):
        gone = row.released if pd.notna(row.released) else row.deleted
        end = float(gone) if pd.notna(gone) else float("inf")
        for d in str(row.devices).split():
            driver, pool, dev = [*d.split("/", 2), "", ""][:3]
            group = _pool_group(pool)
            if (group, driver, dev) in layout:
                cs, use = layout[(group, driver, dev)]
                key = (group, driver, pool, cs)
                events.setdefault(key, []).extend([(float(row.allocated), use, 1), (end, use, -1)])
    over: dict[str, dict[str, float]] = {}
    peak_share = 0.0
    for (group, driver, pool, cs), ev in events.items():
        cap = capacity[(group, driver, cs)]
        held = dict.fromkeys(cap, 0.0)
        most = dict.fromkeys(cap, 0.0)
        for _, use, sign in sorted(ev, key=lambda e: (e[0], e[2])):  # a release before an allocation at one time
            for k, q in use.items():
                held[k] = held.get(k, 0.0) + sign * q
                most[k] = max(most.get(k, 0.0), held[k])
        for k, peak in most.items():
            if cap.get(k):
                peak_share = max(peak_share, peak / cap[k])
        beyond = {k: v for k, v in most.items() if v > cap.get(k, 0.0) * (1 + 1e-9)}
        if beyond:
            over[f"{driver}/{pool}/{cs}"] = beyond
    return {"counter_sets_drawn": len(events), "peak_share": peak_share, "overcommitted": over}


def by_request(claims: pd.DataFrame) -> dict[str, int]:
    """Allocated claims by the request (``<request>/<alternative>`` for a first-available list) their devices
    went to; empty for runs recorded before the requests were (or claims with one plain request each)."""
    if "requests" not in claims:
        return {}
    got = claims[claims["allocated"].notna()]["requests"].fillna("").astype(str)
    counts = got.map(lambda s: " ".join(sorted(set(s.split())))).value_counts()
    return {str(k): int(v) for k, v in counts.items() if "/" in str(k)}


def claims_section(claims: pd.DataFrame, pods: pd.DataFrame | None = None,
                   node_groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The summary's ``claims`` section. A pod's claim is one (pod, claim name); kube-controller-manager may make
    more than one object for it (it did under load here: 11 of 1200, never allocated, deleted with the pod):
    those are counted as ``extra_claims``, not as claims left unallocated."""
    every = claims  # every holding: what devices were held, and when
    holdings = claims["holding"].fillna(0).astype(int) if "holding" in claims else pd.Series(0, index=claims.index)
    claims = claims[holdings == 0]  # a claim's first holding (or its row, never allocated): the per-claim figures
    allocated = claims[claims["allocated"].notna()]
    owned = claims["pod"].astype(str) != ""
    slot = claims["name"].where(~owned, claims["pod"].astype(str) + "/" + (
        claims["pod_claim"].astype(str) if "pod_claim" in claims else claims["name"]))
    held = claims["allocated"].notna().groupby(slot).any()
    devices = [d for s in allocated["devices"].astype(str) for d in s.split()]
    per_device = pd.Series(devices).value_counts() if devices else pd.Series(dtype=int)
    wait = (allocated["allocated"] - allocated["seen"]).to_numpy(dtype=np.float64)
    out: dict[str, Any] = {
        "claims": len(held), "allocated": int(held.sum()), "never_allocated": int((~held).sum()),
        "extra_claims": int(len(claims) - len(held)),
        "devices_allocated": len(per_device), "allocations": len(devices),
        "shared_allocations": int(allocated["shareable"].astype(bool).sum()),
        "reallocated": int((holdings > 0).groupby(every["namespace"].astype(str) + "/" + every["name"].astype(str))
                           .any().sum()),
        "devices_given_twice": overlapping(every),
        "released_in_gap": int(every["gap"].eq(True).sum()) if "gap" in every else 0,
        "shared_peak_milli": max(peak_consumed(every).values(), default=None),
        "seen_to_allocated": percentile_stats(wait)}
    if chosen := by_request(claims):
        out["first_available"] = chosen
    if node_groups and (counters := counters_section(every, node_groups)) is not None:
        out["counters"] = counters
    if node_groups:
        out["shared_overconsumed"] = shared_overconsumed(every, node_groups)
    if pods is not None and len(pods) and "name" in pods:
        # a pod bound although its claim was never allocated: a scheduler that ignores DRA (a kubelet would not
        # start such a pod; kwok does)
        waiting = set(held.index[~held])
        bound = set(pods[pods["scheduled"].notna()]["name"].astype(str))
        out["bound_unallocated"] = sum(1 for k in waiting if "/" in k and k.split("/", 1)[0] in bound)
        mine = allocated[allocated["pod"].astype(str) != ""]
        joined = mine.merge(pods[["name", "created", "scheduled", "running"]], left_on="pod", right_on="name")
        if len(joined):
            t = {c: joined[c].to_numpy(dtype=np.float64) for c in ("created", "allocated", "scheduled", "running")}
            out["pod_stages"] = {"pods": len(joined),
                                 "created_to_allocated": percentile_stats(t["allocated"] - t["created"]),
                                 "allocated_to_bound": percentile_stats(t["scheduled"] - t["allocated"]),
                                 "bound_to_running": percentile_stats(t["running"] - t["scheduled"])}
    return out


def _ms(stats: dict[str, Any] | None, key: str) -> str:
    v = (stats or {}).get(key)
    return "-" if v is None else f"{v * 1000:.0f} ms"


def claims_rows(section: dict[str, Any] | None) -> list[list[str]]:
    """The console table's rows of a run with claims (none otherwise)."""
    if not section:
        return []
    twice = section.get("devices_given_twice") or {}
    rows = [["DRA claims allocated; devices given; held twice at once",
             f"{section['allocated']} / {section['claims']}; {section['devices_allocated']} devices"
             f" ({section['shared_allocations']} shared allocations); "
             + (f"{section['extra_claims']} extra claim objects made; " if section.get("extra_claims") else "")
             + (f"{len(twice)} DEVICES HELD TWICE" if twice else "none twice")]]
    if section.get("bound_unallocated"):
        rows.append(["DRA: PODS BOUND WITH A CLAIM NEVER ALLOCATED",
                     f"{section['bound_unallocated']} (the scheduler ignored their claims: a kubelet would not start "
                     "them)"])
    if section.get("first_available"):
        rows.append(["DRA claims by the alternative allocated (first available)",
                     ", ".join(f"{k} {v}" for k, v in sorted(section["first_available"].items()))])
    counters = section.get("counters")
    if counters:
        over = counters.get("overcommitted") or {}
        rows.append(["DRA partitionable devices: counter sets drawn on; most of one drawn at once",
                     f"{counters['counter_sets_drawn']}; {counters['peak_share']:.0%}; "
                     + (f"{len(over)} COUNTER SETS OVERCOMMITTED" if over else "none overcommitted")])
    if over_shared := section.get("shared_overconsumed"):
        worst = max(over_shared, key=lambda d: max(over_shared[d].values()))
        rows.append(["DRA: SHARED DEVICES CONSUMED BEYOND THEIR CAPACITY",
                     f"{len(over_shared)} (e.g. {worst}: "
                     + ", ".join(f"{k} {v:g}" for k, v in sorted(over_shared[worst].items())) + " at once)"])
    st = section.get("pod_stages")
    if st:
        rows.append(["DRA pod stages p50 / p99: created → claim allocated → bound → Running",
                     " → ".join(f"{_ms(st.get(k), 'p50')} / {_ms(st.get(k), 'p99')}"
                                for k in ("created_to_allocated", "allocated_to_bound", "bound_to_running"))])
    return rows
