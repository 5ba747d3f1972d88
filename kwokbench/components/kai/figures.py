"""KAI-Scheduler's own account of a run (pure, over a stored run's scrapes): the summary's `kai` section and its
console rows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from kwokbench.formatting import fmt, ms

if TYPE_CHECKING:
    import pandas as pd  # the summary's frames: pandas loads when a run is analysed, not when it is planned


KEEP: dict[str, Any] = {
    "kai_e2e_scheduling_latency_milliseconds": None,
    "kai_open_session_latency_milliseconds": None,
    "kai_close_session_latency_milliseconds": None,
    "kai_action_scheduling_latency_milliseconds": None,
    "kai_plugin_scheduling_latency_milliseconds": lambda lb: lb.get("OnSession") == "OnSessionOpen",
    "kai_task_scheduling_latency_milliseconds": None,
    "kai_task_bind_latency_milliseconds": None,
    "kai_podgroups_scheduled_by_action": None,
    "kai_podgroups_acted_on_by_action": None,
    "kai_total_preemption_attempts": None,
    "kai_queue_fair_share_cpu_cores": None,
    "kai_queue_fair_share_memory_gb": None,
    "kai_queue_fair_share_gpu": None,
}
"""Families kept from a scheduler component's scrapes (``kai_``: the scheduler's --metrics-namespace)."""


def _in_window(s: pd.DataFrame, window: tuple[float, float] | None) -> pd.DataFrame:
    """Samples from the first pod created to the scrape after the last was scheduled (a gauge shows the last
    session, which ends after the pods it bound)."""
    if window is None or not len(s):
        return s
    after = s.loc[s["t"] > window[1], "t"]
    end = float(after.min()) if len(after) else float(window[1])
    return s[(s["t"] >= window[0]) & (s["t"] <= end)]


def gauge_seconds(series: pd.DataFrame, component: str, name: str, window: tuple[float, float] | None,
                  by: str | None = None) -> dict[str, Any]:
    """A milliseconds gauge sampled each scrape, over the window, in seconds: mean, p99 and max of the samples
    (per label ``by``)."""
    s = _in_window(series[(series["component"] == component) & (series["name"] == name)], window)
    if not len(s):
        return {}
    s = s.assign(key=s["labels"].map(lambda x: json.loads(x).get(by, "") if by else ""))
    out: dict[str, Any] = {}
    for key, g in s.groupby("key"):
        v = g["value"].to_numpy(dtype=np.float64) / 1000
        out[str(key)] = {"samples": len(v), "mean": float(v.mean()), "p99": float(np.percentile(v, 99)),
                         "max": float(v.max())}
    return out if by else out[""]


def histogram_seconds(series: pd.DataFrame, component: str, family: str) -> dict[str, Any]:
    """A milliseconds histogram's quantiles in seconds, with the share of observations above its highest bucket
    (KAI's end at 2.56 s: a quantile there is a floor, not a value)."""
    from kwokbench.metrics.derive import histogram_quantiles

    h = histogram_quantiles(series, component, family)
    if not h:
        return {}
    out = {k: (v / 1000 if v is not None and k != "count" else v) for k, v in h.items()}
    b = series[(series["component"] == component) & (series["name"] == f"{family}_bucket")]
    le = b["labels"].map(lambda x: float(json.loads(x)["le"]))
    top = float(le[np.isfinite(le)].max()) if np.isfinite(le).any() else None
    out["top_bucket"] = top / 1000 if top is not None else None
    if top is not None and h.get("count"):
        t0, t1 = b["t"].min(), b["t"].max()

        def count(bound: float, t: float) -> float:
            return float(b.loc[(le == bound) & (b["t"] == t), "value"].sum())
        above = (count(np.inf, t1) - count(np.inf, t0)) - (count(top, t1) - count(top, t0))
        out["above_top_bucket_share"] = above / h["count"]
    return out


def queue_fair_shares(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue: its fair share (CPU cores, memory GB, GPUs) at the end and at its peak, and the CPU share over
    time (seconds from the first pod created)."""
    names = {"cpu": "kai_queue_fair_share_cpu_cores", "memory_gb": "kai_queue_fair_share_memory_gb",
             "gpu": "kai_queue_fair_share_gpu"}
    q = series[(series["component"] == component) & series["name"].isin(list(names.values()))]
    if not len(q):
        return {}
    q = q.assign(queue=q["labels"].map(lambda x: json.loads(x).get("queue_name", "")),
                 res=q["name"].map({v: k for k, v in names.items()}))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        wide = qd.pivot_table(index="t", columns="res", values="value", aggfunc="sum").sort_index()
        out[str(name)] = {"last": {str(r): float(wide[r].iloc[-1]) for r in wide.columns},
                          "peak": {str(r): float(wide[r].max()) for r in wide.columns},
                          "series": {"t": (wide.index.to_numpy(dtype=float) - t0).round(2).tolist(),
                                     "cpu": wide["cpu"].round(3).tolist() if "cpu" in wide else []}}
    return out


def kai_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                proc: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's ``kai`` section (None when the component served no KAI metrics)."""
    from kwokbench.metrics.derive import counter_increase

    mine = series[(series["component"] == component) & series["name"].str.startswith("kai_")]
    if not len(mine):
        return None
    plugins = gauge_seconds(series, component, "kai_plugin_scheduling_latency_milliseconds", window, by="plugin")
    return {
        "component": component,
        "pod_scheduling_seconds": histogram_seconds(series, component, "kai_task_scheduling_latency_milliseconds"),
        "bind_request_seconds": histogram_seconds(series, component, "kai_task_bind_latency_milliseconds"),
        "session_seconds": gauge_seconds(series, component, "kai_e2e_scheduling_latency_milliseconds", window),
        "open_session_seconds": gauge_seconds(series, component, "kai_open_session_latency_milliseconds", window),
        "actions_seconds": gauge_seconds(series, component, "kai_action_scheduling_latency_milliseconds", window,
                                         by="action"),
        "plugins_seconds": dict(sorted(plugins.items(), key=lambda kv: -kv[1]["mean"])),
        # the parser names a counter's samples <family>_total (KAI's counters have no such suffix)
        "podgroups_scheduled": counter_increase(series, component, "kai_podgroups_scheduled_by_action_total",
                                                by="action"),
        "podgroups_acted_on": counter_increase(series, component, "kai_podgroups_acted_on_by_action_total",
                                               by="action"),
        "preemption_attempts": sum(counter_increase(series, component,
                                                    "kai_total_preemption_attempts_total").values()),
        "queues": queue_fair_shares(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }


def kai_rows(k: dict[str, Any] | None, who: str = "KAI") -> list[list[str]]:
    """KAI's own metrics: its pods' scheduling latency and BindRequest writes, sessions, actions and plugins, pod
    groups per action, queue fair shares, its CPU."""
    if not k:
        return []
    pod, bind = k.get("pod_scheduling_seconds") or {}, k.get("bind_request_seconds") or {}
    rows = [[f"{who} pod created → BindRequest written mean / p50 / p99 (its histogram)",
             f"{ms(pod.get('mean'))} / {_quantile(pod, 'p50')} / {_quantile(pod, 'p99')} over "
             f"{pod.get('count', 0):.0f} pods"
             + (f"; {pod['above_top_bucket_share'] * 100:.0f}% above its top bucket" if
                pod.get("above_top_bucket_share") else "")],
            [f"{who} BindRequest write mean / p99", f"{ms(bind.get('mean'))} / {_quantile(bind, 'p99')}"]]
    sess = k.get("session_seconds") or {}
    if sess:
        rows.append([f"{who} session mean / max (sampled each second)",
                     f"{ms(sess.get('mean'))} / {ms(sess.get('max'))} over {sess.get('samples')} samples"])
    acts = k.get("actions_seconds") or {}
    if acts:
        rows.append([f"{who} actions, mean per session",
                     ", ".join(f"{a} {ms(v['mean'])}" for a, v in sorted(acts.items(), key=lambda kv: -kv[1]["mean"]))])
    plugins = k.get("plugins_seconds") or {}
    if plugins:
        slow = [f"{p} {ms(v['mean'])}" for p, v in list(plugins.items())[:3] if v["mean"] >= 0.0005]
        rows.append([f"{who} slowest plugins at session open, mean",
                     ", ".join(slow) or f"each of {len(plugins)} under 1 ms"])
    sched, acted = k.get("podgroups_scheduled") or {}, k.get("podgroups_acted_on") or {}
    if sched or acted:
        rows.append([f"{who} pod groups scheduled / acted on, by action",
                     ", ".join(f"{a} {sched.get(a, 0):.0f} / {acted.get(a, 0):.0f}"
                               for a in sorted(set(sched) | set(acted)))
                     + f"; preemption attempts {k.get('preemption_attempts', 0):.0f}"])
    for q, share in sorted((k.get("queues") or {}).items()):
        last, peak = share.get("last") or {}, share.get("peak") or {}
        rows.append([f"{who} queue {q}: fair share CPU last / peak",
                     f"{fmt(last.get('cpu'), ' cores', 1)} / {fmt(peak.get('cpu'), ' cores', 1)}"])
    if k.get("cpu_seconds") is not None:
        rows.append([f"{who} scheduler CPU", fmt(k["cpu_seconds"], " s", 2)])
    return rows


def _quantile(h: dict[str, Any], q: str) -> str:
    """A histogram quantile; one in its top bucket is only a floor (``≥ 2560 ms``)."""
    v, top = h.get(q), h.get("top_bucket")
    if v is not None and top is not None and v >= top and h.get("above_top_bucket_share"):
        return f"≥ {ms(top)}"
    return ms(v)


