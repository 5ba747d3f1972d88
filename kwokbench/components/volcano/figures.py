"""Volcano's own account of a run (pure, over a stored run's scrapes): the summary's `volcano` section and its
console rows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kwokbench.formatting import fmt, ms

if TYPE_CHECKING:
    import pandas as pd  # the summary's frames: pandas loads when a run is analysed, not when it is planned


QUEUE_GAUGES = ("volcano_queue_allocated_milli_cpu", "volcano_queue_allocated_memory_bytes",
                "volcano_queue_request_milli_cpu", "volcano_queue_request_memory_bytes",
                "volcano_queue_deserved_milli_cpu", "volcano_queue_deserved_memory_bytes", "volcano_queue_share",
                "volcano_queue_weight", "volcano_queue_overused")
HISTOGRAMS = ("volcano_e2e_scheduling_latency_milliseconds", "volcano_open_session_duration_milliseconds",
              "volcano_action_scheduling_latency_milliseconds", "volcano_plugin_scheduling_latency_milliseconds",
              "volcano_task_scheduling_latency_milliseconds", "volcano_scheduling_stage_duration_milliseconds",
              "volcano_e2e_job_scheduling_latency_milliseconds")
KEEP: dict[str, Any] = {**dict.fromkeys(HISTOGRAMS), "volcano_unschedule_job_count": None,
                        **dict.fromkeys(QUEUE_GAUGES)}
"""Families kept from a scheduler component's scrapes (a kube-scheduler serves none of them). Left out: the per-job
gauges (``volcano_e2e_job_scheduling_*{job_name}``, ``volcano_unschedule_task_count{job_id}``, ``volcano_job_*``),
which grow with every PodGroup, and ``volcano_schedule_attempts_total``, which vc-scheduler v1.15.1 declares but
never increments (only its agent scheduler does)."""
SESSIONS = "volcano_e2e_scheduling_latency_milliseconds"


def _seconds(h: dict[str, Any]) -> dict[str, Any]:
    """A histogram's quantiles observed in milliseconds, in seconds."""
    return {k: (v / 1000 if isinstance(v, float) and k != "count" else v) for k, v in h.items()}


def _per(h: dict[str, Any]) -> dict[str, Any]:
    return {k: _seconds(v) for k, v in h.items()}


def queue_usage(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue (from the proportion plugin's gauges, set each session): peaks of allocated and requested CPU
    (millicores) and memory, the last deserved CPU, share and weight, and the allocated CPU over time."""
    q = series[(series["component"] == component) & series["name"].isin(QUEUE_GAUGES)]
    if not len(q):
        return {}
    q = q.assign(queue=q["labels"].map(lambda x: json.loads(x).get("queue_name", "")),
                 short=q["name"].str.removeprefix("volcano_queue_"))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        by = {str(k): g.sort_values("t") for k, g in qd.groupby("short")}
        entry: dict[str, Any] = {}
        for k in ("allocated_milli_cpu", "allocated_memory_bytes", "request_milli_cpu", "request_memory_bytes"):
            if k in by:
                entry[f"{k}_peak"] = float(by[k]["value"].max())
        for k in ("deserved_milli_cpu", "share", "weight"):
            if k in by:
                entry[k] = float(by[k]["value"].iloc[-1])
        if "overused" in by:
            entry["overused_seconds"] = int((by["overused"]["value"] > 0).sum())  # scrapes (1 s apart) it was over
        if "allocated_milli_cpu" in by:
            a = by["allocated_milli_cpu"]
            entry["series"] = {"t": (a["t"].to_numpy(dtype=float) - t0).round(2).tolist(),
                               "allocated_milli_cpu": a["value"].tolist()}
        out[str(name)] = entry
    return out


def volcano_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                    proc: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's ``volcano`` section (None when the component served no Volcano metrics)."""
    from kwokbench.metrics.derive import histogram_quantiles

    has = series[(series["component"] == component) & series["name"].str.startswith("volcano_")]
    if not len(has):
        return None
    plugins = {on: _per(histogram_quantiles(series, component, "volcano_plugin_scheduling_latency_milliseconds",
                                            group_by="plugin", OnSession=on))
               for on in ("OnSessionOpen", "OnSessionClose")}
    unsched = has[has["name"] == "volcano_unschedule_job_count"]
    return {
        "component": component,
        "session_seconds": _seconds(histogram_quantiles(series, component, SESSIONS)),
        "open_session_seconds": _seconds(histogram_quantiles(series, component,
                                                             "volcano_open_session_duration_milliseconds")),
        "action_seconds": _per(histogram_quantiles(series, component, "volcano_action_scheduling_latency_milliseconds",
                                                   group_by="action")),
        "plugin_seconds": {on: p for on, p in plugins.items() if p},
        "task_latency_seconds": _per(histogram_quantiles(
            series, component, "volcano_task_scheduling_latency_milliseconds", group_by="stage")),
        "stage_seconds": _per(histogram_quantiles(series, component, "volcano_scheduling_stage_duration_milliseconds",
                                                  group_by="stage")),
        "job_latency_seconds": _seconds(histogram_quantiles(series, component,
                                                            "volcano_e2e_job_scheduling_latency_milliseconds")),
        "unschedulable_jobs_max": float(unsched["value"].max()) if len(unsched) else None,
        "queues": queue_usage(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }


def volcano_rows(v: dict[str, Any] | None, who: str = "Volcano") -> list[list[str]]:
    """Volcano's own metrics: its sessions and the actions in them, schedule attempts, each queue's usage."""
    if not v:
        return []
    s = v.get("session_seconds") or {}
    rows = [[f"{who} sessions: count; mean / p99 (open, actions, close)",
             f"{s.get('count', 0):.0f}; {ms(s.get('mean'))} / {ms(s.get('p99'))}"]]
    acts = v.get("action_seconds") or {}
    if acts:
        rows.append([f"{who} actions: mean / p99 per session",
                     "; ".join(f"{a} {ms(h.get('mean'))} / {ms(h.get('p99'))}" for a, h in sorted(acts.items()))])
    bound = (v.get("task_latency_seconds") or {}).get("Bound") or {}
    if bound:
        rows.append([f"{who} pods bound, its metric: count; created → bound p50 / p99",
                     f"{bound.get('count', 0):.0f}; {ms(bound.get('p50'))} / {ms(bound.get('p99'))}"])
    if v.get("unschedulable_jobs_max"):
        rows.append([f"{who} PodGroups it could not schedule, most at once", f"{v['unschedulable_jobs_max']:.0f}"])
    for q, u in sorted((v.get("queues") or {}).items()):
        if q == "root":
            continue
        rows.append([f"{who} queue {q}: allocated peak CPU / requested peak CPU; share",
                     f"{u.get('allocated_milli_cpu_peak', 0) / 1000:g} / {u.get('request_milli_cpu_peak', 0) / 1000:g}"
                     f"; {fmt(u.get('share'), '', 2)}"])
    if v.get("cpu_seconds") is not None:
        rows.append([f"{who} scheduler CPU", fmt(v["cpu_seconds"], " s", 2)])
    return rows


