"""How the scheduling recovered from a run's chaos events, and the pods it lost (pure, over the stored tables)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kwokbench.figures.summary import per_second

SMOOTH_SECONDS = 3
"""The rolling mean (seconds of the binding rate) a recovery is read on: the least time a recovery can read."""


def recovery(events: list[dict[str, Any]], rate: pd.DataFrame, pods: pd.DataFrame,
             before: float = 10.0, level: float = 0.9, smooth: int = SMOOTH_SECONDS) -> list[dict[str, Any]]:
    """Per event: the binding rate before it, when it was back to ``level`` of that, and pods affected.

    ``rate`` is the 1 s binding-rate series (t, rate); recovery is the first time after the event ends
    at which the ``smooth``-second rolling mean is back at ``level`` × the mean of the ``before``
    seconds before the event. Pods: bound to the event's nodes (node actions), and pods lost —
    created but gone before they were ever scheduled (must be zero). A recovery is judged (``recovered``
    true or false) only when a rate after the event could show one: the rate came back, or pods kept
    arriving at least ``smooth`` seconds past the event's end; otherwise it is ``None``, not a failure.
    """
    out = []
    r = rate.sort_values("t") if len(rate) else rate
    for e in events:
        if e.get("skipped") or "t" not in e:
            out.append({**_brief(e), "recovery_seconds": None})
            continue
        t, end = float(e["t"]), float(e.get("ended", e["t"]))
        pre = r[(r["t"] >= t - before) & (r["t"] < t)]["rate"] if len(r) else pd.Series(dtype=float)
        pre_level = float(pre.mean()) if len(pre) else None
        back = None
        if pre_level and len(r):
            post = r[r["t"] >= t].assign(mean=lambda d: d["rate"].rolling(smooth, min_periods=smooth).mean())
            ok = post[(post["t"] >= end) & (post["mean"] >= level * pre_level)]
            back = float(ok["t"].iloc[0] - t) if len(ok) else None
        nodes = set(e.get("nodes") or [])
        on_nodes = int(pods["node"].isin(nodes).sum()) if nodes and len(pods) else 0
        load_after = bool(len(pods) and "created" in pods and (pods["created"] > end + smooth).any())
        recovered = (back is not None or not pre_level) if load_after or back is not None else None
        out.append({**_brief(e), "rate_before": pre_level, "recovery_seconds": back, "recovered": recovered,
                    "load_after": load_after, "pods_on_affected_nodes": on_nodes})
    return out


def rescheduling(pods: pd.DataFrame, phases: list[dict[str, Any]], affected: set[str]) -> dict[str, int]:
    """Pods evicted from affected nodes, and replacements: pods a controller (a Job) created beyond what
    its phase expected, and how many of those were scheduled. Bare pods are never replaced."""
    if not len(pods):
        return {"pods_evicted": 0, "pods_replaced": 0, "replacements_scheduled": 0}
    evicted = int((pods["deleted"].astype(bool) & pods["node"].isin(affected)).sum()) if "deleted" in pods else 0
    replaced = scheduled = 0
    for ph in phases:
        p = pods[pods["workload"] == ph["name"]]
        extra = max(0, len(p) - int(ph.get("pods_expected") or 0))
        if extra:
            newest = p.sort_values("created").tail(extra)
            replaced += extra
            scheduled += int(newest["scheduled"].notna().sum())
    return {"pods_evicted": evicted, "pods_replaced": replaced, "replacements_scheduled": scheduled}


def rate_from_pods(pods: pd.DataFrame) -> pd.DataFrame:
    """A 1 s binding-rate series from the watch's scheduled times (when /metrics was not scraped)."""
    t = pods["scheduled"].dropna().to_numpy() if len(pods) and "scheduled" in pods else np.zeros(0)
    if not len(t):
        return pd.DataFrame({"t": [], "rate": []})
    start = float(np.floor(t.min()))
    counts = per_second(t, start, float(np.ceil(t.max())))
    return pd.DataFrame({"t": start + 1.0 + np.arange(len(counts)), "rate": counts})


def _brief(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("action", "at_seconds", "t", "ended", "tainted", "component", "nodes", "error", "skipped",
            "down_seconds", "compacted_to", "compact_error")
    return {k: (len(e[k]) if k == "nodes" else e[k]) for k in keys if k in e}


def pods_lost(pods: pd.DataFrame, created: int) -> int:
    """Pods the apiserver accepted that were never scheduled and are not still waiting: gone."""
    if not len(pods):
        return created
    unscheduled = pods["scheduled"].isna()
    deleted_unscheduled = int((unscheduled & pods["deleted"].astype(bool)).sum()) if "deleted" in pods else 0
    never_seen = max(0, created - len(pods))
    return deleted_unscheduled + never_seen
