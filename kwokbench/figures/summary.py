"""Figures of one stored run, as pure functions of its frames (so ``report`` can recompute them).

Scheduling throughput follows clusterloader2/scheduler_perf: pods scheduled per second, counted in
1-second buckets over the window in which pods were pending (first create → last bind), so idle
tails before or after the load do not dilute it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kwokbench.figures.acceptance import OK, acceptance_ratio, normalise_requests, phase_rates, verdict

PERCENTILES = (50, 90, 99)
SUMMARY_FORMAT_VERSION = 2
"""summary.json history: 1 (no format_version key): ``submit`` rates were the pacer's send rate and
unscheduled pods were left out of latencies; 2: offered / sent / accepted rates, where requests waited,
unscheduled pods censored at the phase timeout in latencies, ``phases_timed_out``."""


def percentile_stats(values: np.ndarray) -> dict[str, float | None]:
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


WAITED_STATES = {"none": ("scheduled",), "created": ("scheduled",), "scheduled": ("scheduled",),
                 "running": ("scheduled", "running"), "completed": ("scheduled", "running", "finished")}
"""The latencies in which a pod that never got there counts (censored at the phase timeout at least):
never being scheduled always counts; running and finished when the phase waited for them."""


def pod_latencies(pods: pd.DataFrame, phases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Seconds from creation to scheduled / running / finished, over pods whose ADDED event was seen.

    A pod that never reached a state its phase waited for is not dropped (that would let a scheduler that
    strands pods improve its percentiles): it counts as ``max(phase timeout, end of observation - created)``
    and is counted in ``censored``."""
    exact = pods[~pods["from_list"]] if len(pods) else pods
    seen = exact[list(POD_COLUMNS)[:4]].to_numpy(dtype=np.float64) if len(exact) else np.zeros(0)
    end = float(seen[~np.isnan(seen)].max()) if (~np.isnan(seen)).any() else 0.0
    by_phase = {p["name"]: p for p in phases or []}
    out: dict[str, Any] = {}
    for state in ("scheduled", "running", "finished"):
        d = (exact[state] - exact["created"]).to_numpy(dtype=np.float64) if len(exact) else np.zeros(0)
        censored = 0
        if len(exact) and by_phase and "workload" in exact:
            wl = exact["workload"].astype(str).to_numpy()
            timeout = np.array([by_phase.get(w, {}).get("timeout_seconds") or 0.0 for w in wl], dtype=np.float64)
            waited = np.array([state in WAITED_STATES.get(by_phase.get(w, {}).get("wait_for", "none"), ())
                               for w in wl], dtype=bool)
            missing = np.isnan(d) & waited & ~np.isnan(exact["created"].to_numpy(dtype=np.float64))
            if missing.any():
                floor = end - exact["created"].to_numpy(dtype=np.float64)
                d = np.where(missing, np.maximum(timeout, floor), d)
                censored = int(missing.sum())
        out[f"created_to_{state}"] = {**percentile_stats(d), "censored": censored}
    out["approximate_pods"] = int(pods["from_list"].sum()) if len(pods) else 0
    if len(phases or []) > 1 and len(exact) and "workload" in exact:
        out["by_phase"] = {p["name"]: phase_startup(exact[exact["workload"].astype(str) == p["name"]])
                           for p in phases or []}
    return out


def phase_startup(pods: pd.DataFrame) -> dict[str, Any]:
    """One phase's pod startup split as clusterloader2 reports a phase's (its DRA test's FastFillPodStartup and
    ChurnPodStartup): created → scheduled and scheduled → running, over the phase's pods that got there (the
    run's ``created_to_*`` count those that did not)."""
    def stage(a: str, b: str) -> dict[str, Any]:
        return percentile_stats((pods[b] - pods[a]).dropna().to_numpy(dtype=np.float64))
    return {"pods": len(pods), "created_to_scheduled": stage("created", "scheduled"),
            "scheduled_to_running": stage("scheduled", "running")}


def request_stats(requests: pd.DataFrame, phases: list[dict[str, Any]],
                  pods: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per phase: offered, sent and accepted rates (see :mod:`kwokbench.figures.acceptance`), where requests waited,
    lateness of the pacer, latency, errors by status, and a sentence when the load was not accepted."""
    requests = normalise_requests(requests)
    out = []
    for ph in phases:
        r = requests[requests["phase"] == ph["name"]] if len(requests) else requests
        ok = int(r["status"].isin(OK).sum()) if len(r) else 0
        created = stamps = None
        seen: int | None = None
        # the apiserver's own view, for phases whose objects are the pods themselves
        if pods is not None and len(pods) and "workload" in pods and ph.get("kind", "Pod") == "Pod":
            everyone = pods[pods["workload"] == ph["name"]]
            seen = len(everyone)  # pods first seen in a list count too (a watch that reconnected relists)
            mine = everyone[~everyone["from_list"]]
            created = mine["created"].to_numpy(dtype=np.float64)
            if "creation_timestamp" in mine:
                stamps = mine["creation_timestamp"].to_numpy(dtype=np.float64)
        rates = phase_rates(r, created, stamps) if len(r) else {}
        whole = rates.get("whole", {})
        offered, accepted = whole.get("offered"), whole.get("accepted")
        ratio, window = acceptance_ratio(rates)
        codes: dict[str, int] = {}
        if len(r):
            for code, cnt in r["status"].value_counts().items():
                if int(code) not in OK:
                    c = int(code)
                    codes[str(c) if c > 0 else ("connection error" if c < 0 else "not sent")] = int(cnt)
        entry: dict[str, Any] = {
            "phase": ph["name"],
            "requests": len(r),
            "created": ok,
            "target_qps": ph.get("target_qps"),
            "offered_qps": offered,
            "sent_qps": whole.get("sent"),
            "accepted_qps": accepted,
            # achieved = accepted (what the apiserver took), no longer the pacer's send rate
            "achieved_qps": accepted,
            "scheduled_qps": offered,
            "achieved_ratio": ratio,
            "achieved_ratio_window": window,
            "rates": rates,
            "connections": ph.get("connections"),
            "send_lateness_seconds": rates.get("send_lateness_seconds") or percentile_stats(np.zeros(0)),
            "latency_seconds": percentile_stats(r["latency"].to_numpy(dtype=np.float64) if len(r) else np.zeros(0)),
            "errors": codes,
            "throttled_429": codes.get("429", 0),
            # a create whose connection dropped after the apiserver took it made a pod the client counts as
            # failed (an apiserver restart does this): the watch's count of the phase's pods says how many
            "seen": seen,
            "made_unanswered": None if seen is None else max(0, seen - ok),
        }
        entry["not_accepted"] = verdict(entry)
        out.append(entry)
    return out


POD_COLUMNS: dict[str, type] = {"created": float, "scheduled": float, "running": float, "finished": float,
                                "from_list": bool}
REQUEST_COLUMNS: dict[str, type] = {"phase": str, "scheduled": float, "dispatched": float, "sent": float,
                                    "latency": float, "status": int}


def with_columns(df: pd.DataFrame, columns: dict[str, type]) -> pd.DataFrame:
    """A run stopped before anything was recorded has empty frames without columns."""
    missing = {c: pd.Series(dtype=t) for c, t in columns.items() if c not in df.columns}
    return df.assign(**missing) if missing else df


def summarize(pods: pd.DataFrame, requests: pd.DataFrame, phases: list[dict[str, Any]],
              expected_pods: int) -> dict[str, Any]:
    pods, requests = with_columns(pods, POD_COLUMNS), with_columns(normalise_requests(requests), REQUEST_COLUMNS)
    tp = throughput(pods)
    scheduled = int((~pods["scheduled"].isna()).sum()) if len(pods) else 0
    timed_out = [p["name"] for p in phases if p.get("timed_out")]
    return {
        "format_version": SUMMARY_FORMAT_VERSION,
        "pods_expected": expected_pods,
        "pods_seen": len(pods),
        "pods_scheduled": scheduled,
        "pods_running": int((~pods["running"].isna()).sum()) if len(pods) else 0,
        "pods_finished": int((~pods["finished"].isna()).sum()) if len(pods) else 0,
        "pods_unscheduled": max(0, expected_pods - scheduled),
        "throughput": tp,
        "latency": pod_latencies(pods, phases),
        "phases_timed_out": timed_out,
        "submit": request_stats(requests, phases, pods),
    }
