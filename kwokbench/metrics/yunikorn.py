"""YuniKorn's own account of a run, from its ``/ws/v1/metrics`` scraped each second (pure, over a stored run).

- **Allocation attempts by outcome** (``yunikorn_scheduler_container_allocation_attempt_total{state}``:
  allocated, rejected, error, released) and applications submitted / accepted.
- **Its scheduling routine's duration**: ``yunikorn_scheduler_scheduling_latency_milliseconds`` (one pass of
  the core's scheduling loop) and ``…_scheduling_cycle_milliseconds``. Despite the names, yunikorn-core
  v1.8.0 observes both in *seconds* (``pkg/metrics/scheduler.go``: ``Observe(SinceInSeconds(start))``, buckets
  from 0.1 ms), so they are reported as seconds here.
- **Queue usage over time**: ``yunikorn_queue_resource{queue, state, resource}`` gives each queue's
  guaranteed, max, allocated and pending resources at every scrape; the section keeps each queue's allocated
  series (vcore, memory, pods) and its mean share of the guarantee from the first pod created to the end of
  the run, which is what queue fairness is judged by.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

KEEP: dict[str, Any] = {
    "yunikorn_scheduler_container_allocation_attempt_total": None,
    "yunikorn_scheduler_application_submission_total": None,
    "yunikorn_scheduler_scheduling_latency_milliseconds": None,
    "yunikorn_scheduler_scheduling_cycle_milliseconds": None,
    "yunikorn_queue_resource": lambda lb: lb.get("resource") in ("vcore", "memory", "pods"),
}
"""Families kept from a scheduler component's scrapes (a kube-scheduler serves none of them)."""
RESOURCES = ("vcore", "memory", "pods")


def queue_usage(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue: guaranteed and max (last seen), allocated peak, the allocated series, and over the window
    the mean share of the guarantee per resource."""
    q = series[(series["component"] == component) & (series["name"] == "yunikorn_queue_resource")]
    if not len(q):
        return {}
    lb = q["labels"].map(json.loads)
    q = q.assign(queue=lb.map(lambda d: d.get("queue", "")), state=lb.map(lambda d: d.get("state", "")),
                 resource=lb.map(lambda d: d.get("resource", "")))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        last = qd[qd["t"] == qd["t"].max()]
        fixed = {st: {r: float(v) for r, v in last[last["state"] == st].set_index("resource")["value"].items()}
                 for st in ("guaranteed", "max")}
        alloc = qd[qd["state"] == "allocated"].pivot_table(index="t", columns="resource", values="value",
                                                           aggfunc="sum").sort_index()
        entry: dict[str, Any] = {**fixed, "allocated_peak": {str(r): float(alloc[r].max()) for r in alloc.columns}}
        entry["series"] = {"t": (alloc.index.to_numpy(dtype=float) - t0).round(2).tolist(),
                           **{str(r): alloc[r].fillna(0).tolist() for r in alloc.columns if r in RESOURCES}}
        if window and fixed["guaranteed"]:
            inw = alloc[alloc.index >= window[0]]  # from the first pod on: a queue's pods may bind in a second
            entry["share_of_guarantee_mean"] = {
                r: float(np.nanmean(inw[r].to_numpy() / g)) if r in inw and g and len(inw) else None
                for r, g in fixed["guaranteed"].items()}
        out[str(name)] = entry
    return out


def yunikorn_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                     proc: dict[str, Any], counter_increase: Any, histogram_quantiles: Any) -> dict[str, Any] | None:
    """The summary's ``yunikorn`` section (None when the component served no YuniKorn metrics)."""
    has = series[(series["component"] == component) & series["name"].str.startswith("yunikorn_")]
    if not len(has):
        return None
    return {
        "component": component,
        "allocation_attempts": counter_increase(series, component,
                                                "yunikorn_scheduler_container_allocation_attempt_total", by="state"),
        "applications": counter_increase(series, component, "yunikorn_scheduler_application_submission_total",
                                         by="result"),
        "scheduling_latency_seconds": histogram_quantiles(
            series, component, "yunikorn_scheduler_scheduling_latency_milliseconds"),
        "scheduling_cycle_seconds": histogram_quantiles(
            series, component, "yunikorn_scheduler_scheduling_cycle_milliseconds"),
        "queues": queue_usage(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }
