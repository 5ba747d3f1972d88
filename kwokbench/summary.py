"""Figures of one stored run, as pure functions of its frames (so ``report`` can recompute them).

Scheduling throughput follows clusterloader2/scheduler_perf: pods scheduled per second, counted in
1-second buckets over the window in which pods were pending (first create → last bind), so idle
tails before or after the load do not dilute it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

PERCENTILES = (50, 90, 99)


def _pct(values: np.ndarray) -> dict[str, float | None]:
    v = values[~np.isnan(values)]
    if not len(v):
        return dict.fromkeys([*(f"p{p}" for p in PERCENTILES), "max", "mean"])
    out: dict[str, float | None] = {f"p{p}": float(np.percentile(v, p)) for p in PERCENTILES}
    out["max"], out["mean"] = float(v.max()), float(v.mean())
    return out


def per_second(times: np.ndarray, start: float, end: float) -> np.ndarray:
    """Events per 1-second bucket in [start, end)."""
    t = times[~np.isnan(times)]
    if end <= start:
        return np.zeros(0)
    edges = np.arange(start, end + 1.0, 1.0)
    counts, _ = np.histogram(t, bins=edges)
    return counts.astype(np.float64)


def throughput(pods: pd.DataFrame) -> dict[str, Any]:
    created, scheduled = pods["created"].to_numpy(), pods["scheduled"].to_numpy()
    if not len(pods) or np.isnan(scheduled).all():
        return {"pods_scheduled": 0, "average": 0.0, "window_seconds": 0.0,
                "per_second": {f"p{p}": None for p in PERCENTILES} | {"max": None}}
    start, end = float(np.nanmin(created)), float(np.nanmax(scheduled))
    window = max(end - start, 1e-9)
    n = int((~np.isnan(scheduled)).sum())
    series = per_second(scheduled, np.floor(start), np.ceil(end))
    return {
        "pods_scheduled": n,
        "average": n / window,
        "window_seconds": window,
        "per_second": {f"p{p}": float(np.percentile(series, p)) for p in PERCENTILES} | {"max": float(series.max())},
    }


def pod_latencies(pods: pd.DataFrame) -> dict[str, Any]:
    """Seconds from creation to scheduled / running / finished, over pods whose ADDED event was seen."""
    exact = pods[~pods["from_list"]] if len(pods) else pods
    out: dict[str, Any] = {}
    for state in ("scheduled", "running", "finished"):
        d = (exact[state] - exact["created"]).to_numpy(dtype=np.float64) if len(exact) else np.zeros(0)
        out[f"created_to_{state}"] = _pct(d)
    out["approximate_pods"] = int(pods["from_list"].sum()) if len(pods) else 0
    return out


def request_stats(requests: pd.DataFrame, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase: achieved vs target create rate, lateness of sends, latency, errors by status."""
    out = []
    for ph in phases:
        r = requests[requests["phase"] == ph["name"]] if len(requests) else requests
        sent = r["sent"].to_numpy(dtype=np.float64) if len(r) else np.zeros(0)
        ok = int((r["status"] == 201).sum()) if len(r) else 0
        span = float(np.nanmax(sent) - np.nanmin(sent)) if len(sent) > 1 else 0.0
        achieved = (len(sent) - 1) / span if span > 0 else None
        # the schedule's own rate: a Poisson schedule of 50 arrivals is not exactly its nominal rate, so
        # the harness's fidelity is achieved vs this, and the nominal target is reported beside it
        sched = r["scheduled"].to_numpy(dtype=np.float64) if len(r) else np.zeros(0)
        sspan = float(np.nanmax(sched) - np.nanmin(sched)) if len(sched) > 1 else 0.0
        scheduled_qps = (len(sched) - 1) / sspan if sspan > 0 else None
        codes: dict[str, int] = {}
        if len(r):
            for code, cnt in r["status"].value_counts().items():
                if int(code) != 201:
                    c = int(code)
                    codes[str(c) if c > 0 else ("connection error" if c < 0 else "not sent")] = int(cnt)
        lateness = (r["sent"] - r["scheduled"]).to_numpy(dtype=np.float64) if len(r) else np.zeros(0)
        out.append({
            "phase": ph["name"],
            "requests": len(r),
            "created": ok,
            "target_qps": ph.get("target_qps"),
            "achieved_qps": achieved,
            "scheduled_qps": scheduled_qps,
            "achieved_ratio": (achieved / scheduled_qps) if achieved and scheduled_qps else None,
            "send_lateness_seconds": _pct(lateness),
            "latency_seconds": _pct(r["latency"].to_numpy(dtype=np.float64) if len(r) else np.zeros(0)),
            "errors": codes,
            "throttled_429": codes.get("429", 0),
        })
    return out


POD_COLUMNS: dict[str, type] = {"created": float, "scheduled": float, "running": float, "finished": float,
                                "from_list": bool}
REQUEST_COLUMNS: dict[str, type] = {"phase": str, "scheduled": float, "sent": float, "latency": float, "status": int}


def with_columns(df: pd.DataFrame, columns: dict[str, type]) -> pd.DataFrame:
    """A run stopped before anything was recorded has empty frames without columns."""
    missing = {c: pd.Series(dtype=t) for c, t in columns.items() if c not in df.columns}
    return df.assign(**missing) if missing else df


def summarize(pods: pd.DataFrame, requests: pd.DataFrame, phases: list[dict[str, Any]],
              expected_pods: int) -> dict[str, Any]:
    pods, requests = with_columns(pods, POD_COLUMNS), with_columns(requests, REQUEST_COLUMNS)
    tp = throughput(pods)
    scheduled = int((~pods["scheduled"].isna()).sum()) if len(pods) else 0
    return {
        "pods_expected": expected_pods,
        "pods_seen": len(pods),
        "pods_scheduled": scheduled,
        "pods_running": int((~pods["running"].isna()).sum()) if len(pods) else 0,
        "pods_finished": int((~pods["finished"].isna()).sum()) if len(pods) else 0,
        "pods_unscheduled": max(0, expected_pods - scheduled),
        "throughput": tp,
        "latency": pod_latencies(pods),
        "submit": request_stats(requests, phases),
    }
