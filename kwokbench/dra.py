"""The DRA claims of a stored run, as figures: how many claims were allocated, how long allocation took,
which devices went to more than one claim at once (a device that is not shareable must never), and, for each
claim's pod, created → claim allocated → bound → Running. Pure: from ``claims.parquet`` and the pod timeline."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kwokbench.summary import percentile_stats


def overlapping(claims: pd.DataFrame) -> dict[str, int]:
    """Devices held by two claims at the same time (allocated to released: the allocation cleared, or the claim
    deleted), over claims given them whole (no share ID): device → most claims holding it at once, for those
    above one."""
    out: dict[str, int] = {}
    whole = claims[claims["allocated"].notna() & ~claims["shareable"].astype(bool)]
    spans: dict[str, list[tuple[float, float]]] = {}
    for row in whole.itertuples(index=False):
        gone = row.released if "released" in claims and pd.notna(row.released) else row.deleted
        end = float(gone) if pd.notna(gone) else float("inf")
        for dev in str(row.devices).split():
            spans.setdefault(dev, []).append((float(row.allocated), end))
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
    from kwokbench.quantity import quantity

    if "consumed" not in claims:
        return {}
    events: dict[str, list[tuple[float, float]]] = {}
    for row in claims[claims["allocated"].notna() & claims["shareable"].astype(bool)].itertuples(index=False):
        gone = row.released if pd.notna(row.released) else row.deleted
        end = float(gone) if pd.notna(gone) else float("inf")
        amounts = [dict(kv.split("=", 1) for kv in part.split(",") if "=" in kv)
                   for part in str(row.consumed or "").split()]
        for dev, got in zip(str(row.devices).split(), amounts, strict=False):
            if capacity in got:
                q = quantity(got[capacity])
                events.setdefault(dev, []).extend([(float(row.allocated), q), (end, -q)])
    out: dict[str, float] = {}
    for dev, ev in events.items():
        held = most = 0.0
        for _, q in sorted(ev, key=lambda e: (e[0], e[1])):  # a release before an allocation at the same time
            held += q
            most = max(most, held)
        out[dev] = most
    return out


def claims_section(claims: pd.DataFrame, pods: pd.DataFrame | None = None) -> dict[str, Any]:
    """The summary's ``claims`` section. A pod's claim is one (pod, claim name); kube-controller-manager may make
    more than one object for it (it did under load here: 11 of 1200, never allocated, deleted with the pod):
    those are counted as ``extra_claims``, not as claims left unallocated."""
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
        "devices_given_twice": overlapping(claims),
        "shared_peak_milli": max(peak_consumed(claims).values(), default=None),
        "seen_to_allocated": percentile_stats(wait)}
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
    st = section.get("pod_stages")
    if st:
        rows.append(["DRA pod stages p50 / p99: created → claim allocated → bound → Running",
                     " → ".join(f"{_ms(st.get(k), 'p50')} / {_ms(st.get(k), 'p99')}"
                                for k in ("created_to_allocated", "allocated_to_bound", "bound_to_running"))])
    return rows
