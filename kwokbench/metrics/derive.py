"""From raw snapshots to series and figures: pure functions over a stored run.

The binding rate is the apiserver's ``apiserver_request_total{resource="pods",subresource="binding",
verb="POST"}`` (code 201) differentiated between consecutive 1-second snapshots. Its steady-state
figures (average, per-second percentiles, peak) are taken over the window in which pods were pending
(first pod created → last pod scheduled), as clusterloader2's SchedulingThroughput and scheduler_perf
do. Histogram quantiles are computed from bucket increases over the run, as ``histogram_quantile``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prometheus_client.parser import text_string_to_metric_families

from kwokbench import scheduler_kinds
from kwokbench.metrics import writes
from kwokbench.metrics.parse import increase, prefilter
from kwokbench.metrics.scrape import PROCS, SCRAPES, read_snapshots

# family → predicate on labels deciding which samples are kept (keeps metrics.parquet small)
KEEP: dict[str, dict[str, Any]] = {
    "kube-apiserver": {
        "apiserver_request_total": writes.keep,  # every write: pod and Job creates, bindings, what else it cost
        "apiserver_request_duration_seconds": lambda lb: lb.get("resource") == "pods" and lb.get("verb") == "POST",
    },
    "kube-scheduler": {
        "scheduler_schedule_attempts_total": None,
        "scheduler_podgroup_schedule_attempts_total": None,  # native gangs (GenericWorkload, 1.37 on)
        "scheduler_scheduling_attempt_duration_seconds": None,
        "scheduler_scheduling_algorithm_duration_seconds": None,
        "scheduler_pod_scheduling_sli_duration_seconds": None,
        "scheduler_framework_extension_point_duration_seconds": None,
        "scheduler_pending_pods": None,
        "rest_client_rate_limiter_duration_seconds": None,
        "rest_client_requests_total": None,
    },
    "kube-controller-manager": {
        "rest_client_rate_limiter_duration_seconds": None,
    },
    "kwok-controller": {},
    "kueue": {
        "kueue_admission_attempts_total": None,
        "kueue_admission_attempt_duration_seconds": None,
        "kueue_admission_wait_time_seconds": None,
        "kueue_admitted_workloads_total": None,
        "kueue_pending_workloads": None,
    },
}
OWN_PREFIX = "scheduler-"
"""Components named so are schedulers kwokbench started itself when several share a cluster: their
metrics are kept like kube-scheduler's and summarised per scheduler."""
REQUEST_TOTAL = "apiserver_request_total"
SCRAPED = "__scraped__"


LINES: dict[str, Callable[[str], bool]] = {
    # the apiserver's payload is mostly these two families over every resource and verb: the parser only sees
    # the lines the predicates above keep (a looser test on the raw line; the predicates still decide)
    "apiserver_request_total": lambda line: any(f'verb="{v}"' in line for v in writes.WRITE_VERBS),
    "apiserver_request_duration_seconds": lambda line: 'resource="pods"' in line and 'verb="POST"' in line,
}
"""Raw-line tests :func:`parse_payload` applies before parsing (only ever a superset of what KEEP keeps)."""


def keep_of(component: str) -> dict[str, Any]:
    """What a scrape of ``component`` keeps. A scheduler component (``kube-scheduler``, or one of several) may be
    of any kind kwokbench starts in kube-scheduler's place: it keeps every kind's own families too."""
    if component == "kube-scheduler" or component.startswith(OWN_PREFIX):
        own = {f: p for k in scheduler_kinds.registry().values() for f, p in k.keep.items()}
        return {**KEEP["kube-scheduler"], **own}
    return KEEP.get(component) or {}


def parse_payload(text: str, keep: dict[str, Any]) -> list[tuple[str, dict[str, str], float]]:
    out: list[tuple[str, dict[str, str], float]] = []
    if not keep:
        return out
    for fam in text_string_to_metric_families(prefilter(text, keep, LINES)):
        # the parser strips "_total" from counter family names
        key = fam.name if fam.name in keep else f"{fam.name}_total"
        if key not in keep:
            continue
        pred = keep[key]
        for s in fam.samples:
            if pred is None or pred(s.labels):
                out.append((s.name, dict(s.labels), float(s.value)))
    return out


def load_series(run_dir: Path) -> pd.DataFrame:
    """Long frame (t, component, name, labels, value) of every kept sample of every snapshot."""
    rows: list[tuple[float, str, str, str, float]] = []
    own = sorted(f.name.removesuffix(".prom.zst") for f in (run_dir / SCRAPES).glob(f"{OWN_PREFIX}*.prom.zst"))
    for comp in [*KEEP, *own]:
        keep = keep_of(comp)
        f = run_dir / SCRAPES / f"{comp}.prom.zst"
        if not f.exists() or not keep:
            continue
        for snap in read_snapshots(f):
            if snap.status != 200:
                continue
            rows.append((snap.t, comp, SCRAPED, "{}", 1.0))  # a series absent from a snapshot is 0, not unknown
            for name, labels, value in parse_payload(snap.payload.decode(errors="replace"), keep):
                rows.append((snap.t, comp, name, json.dumps(labels, sort_keys=True), value))
    return pd.DataFrame(rows, columns=["t", "component", "name", "labels", "value"])


# ---- pure derivations ------------------------------------------------------------------------------


def _select(series: pd.DataFrame, component: str, name: str, **labels: str) -> pd.DataFrame:
    s = series[(series["component"] == component) & (series["name"] == name)]
    if labels and len(s):
        decoded = s["labels"].map(json.loads)
        mask = decoded.map(lambda lb: all(lb.get(k) == v for k, v in labels.items()))
        s = s[mask]
    return s


def scrape_times_of(series: pd.DataFrame, component: str) -> np.ndarray:
    return np.sort(series.loc[(series["component"] == component) & (series["name"] == SCRAPED), "t"].to_numpy())


def counter_total(series: pd.DataFrame, component: str, name: str, **labels: str) -> pd.Series:
    """Sum over matching label sets per snapshot time, as a time-indexed series; a snapshot without
    the series (a counter not yet incremented) counts 0."""
    s = _select(series, component, name, **labels)
    per_t = s.groupby("t")["value"].sum()
    return per_t.reindex(scrape_times_of(series, component), fill_value=0.0).sort_index()


def binding_rate(series: pd.DataFrame, window: tuple[float, float] | None) -> dict[str, Any]:
    c = counter_total(series, "kube-apiserver", REQUEST_TOTAL, verb="POST", subresource="binding", code="201")
    if len(c) < 2:
        return {"available": False, "reason": "fewer than two apiserver scrapes"}
    t, v = c.index.to_numpy(dtype=np.float64), c.to_numpy(dtype=np.float64)
    inc = increase(v)
    rate = inc / np.diff(t)
    mid = t[1:]
    total = float(inc.sum())
    out: dict[str, Any] = {"available": True, "total_bindings": total,
                           "series": {"t": mid.tolist(), "rate": rate.tolist()}}
    if window is None or window[1] <= window[0]:
        in_win = np.ones(len(rate), dtype=bool)
        w0, w1 = t[0], t[-1]
    else:
        w0, w1 = window
        # intervals that overlap the pending window (a 1 s scrape interval straddles its edges)
        in_win = (mid > w0) & (t[:-1] < w1)
    r, i = rate[in_win], inc[in_win]
    # bindings counted in the intervals overlapping the window, over the window itself: scrape
    # intervals straddling its edges would otherwise add idle time
    span = float(w1 - w0) if window else float(np.diff(t)[in_win].sum())
    out.update({
        "window": [float(w0), float(w1)],
        "average": float(i.sum() / span) if span > 0 else 0.0,
        "p50": float(np.percentile(r, 50)) if len(r) else None,
        "p90": float(np.percentile(r, 90)) if len(r) else None,
        "p99": float(np.percentile(r, 99)) if len(r) else None,
        "peak": float(rate.max()) if len(rate) else None,
    })
    return out


def histogram_quantiles(series: pd.DataFrame, component: str, family: str, qs: Iterable[float] = (0.5, 0.9, 0.99),
                        group_by: str | None = None, **labels: str) -> dict[str, Any]:
    """Quantiles of a histogram's increase between the first and last snapshot, optionally per label."""
    b = _select(series, component, f"{family}_bucket", **labels)
    if not len(b):
        return {}
    b = b.assign(lb=b["labels"].map(json.loads))
    b = b.assign(le=b["lb"].map(lambda d: float(d["le"])), group=b["lb"].map(lambda d: d.get(group_by, "") if
                                                                                 group_by else ""))
    times = scrape_times_of(series, component)
    t0, t1 = (times[0], times[-1]) if len(times) else (b["t"].min(), b["t"].max())
    sums = _select(series, component, f"{family}_sum", **labels)
    sums = sums.assign(group=sums["labels"].map(lambda x: json.loads(x).get(group_by, "") if group_by else ""))
    out: dict[str, Any] = {}
    for g, gdf in b.groupby("group"):
        first = gdf[gdf["t"] == t0].groupby("le")["value"].sum()
        last = gdf[gdf["t"] == t1].groupby("le")["value"].sum()
        inc = (last - first.reindex(last.index, fill_value=0)).sort_index()
        count = float(inc.iloc[-1]) if len(inc) else 0.0
        gs = sums[sums["group"] == g]
        total = float(gs[gs["t"] == t1]["value"].sum() - gs[gs["t"] == t0]["value"].sum())
        res: dict[str, Any] = {"count": count, "mean": total / count if count and len(gs) else None}
        for q in qs:
            res[f"p{round(q * 100)}"] = _bucket_quantile(q, inc.index.to_numpy(), inc.to_numpy()) if count else None
        out[str(g)] = res
    return out if group_by else out.get("", {})


def _bucket_quantile(q: float, le: np.ndarray, cum: np.ndarray) -> float | None:
    """Prometheus histogram_quantile: linear interpolation inside the bucket holding rank q·count."""
    total = cum[-1]
    if total <= 0:
        return None
    rank = q * total
    i = int(np.searchsorted(cum, rank, side="left"))
    if i >= len(le) - 1 and np.isinf(le[-1]):
        return float(le[-2]) if len(le) > 1 else None  # in the +Inf bucket: the highest finite bound
    lo_b = le[i - 1] if i > 0 else 0.0
    lo_c = cum[i - 1] if i > 0 else 0.0
    width = cum[i] - lo_c
    return float(lo_b + (le[i] - lo_b) * ((rank - lo_c) / width if width > 0 else 1.0))


def counter_increase(series: pd.DataFrame, component: str, name: str, by: str | None = None,
                     **labels: str) -> dict[str, float]:
    s = _select(series, component, name, **labels)
    if not len(s):
        return {}
    s = s.assign(key=s["labels"].map(lambda x: json.loads(x).get(by, "") if by else ""))
    out = {}
    times = scrape_times_of(series, component)
    for key, g in s.groupby("key"):
        per_t = g.groupby("t")["value"].sum().reindex(times, fill_value=0.0).sort_index().to_numpy(dtype=np.float64)
        out[str(key)] = float(increase(per_t).sum())
    return out


def process_usage(procs: pd.DataFrame, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """CPU seconds used and peak RSS of each control-plane process over the run; with the pending
    ``window`` (first pod created → last scheduled), also the CPU used inside it (interpolated between
    samples) and ``cores_window``, the cores it kept busy there on average."""
    out: dict[str, Any] = {}
    if not len(procs):
        return out
    for comp, g in procs.groupby("component"):
        g = g.sort_values("t")
        cpu = g["cpu_seconds"].to_numpy()
        span = float(g["t"].iloc[-1] - g["t"].iloc[0])
        used = float(increase(cpu).sum())
        out[str(comp)] = {"cpu_seconds": used, "cpu_cores_avg": used / span if span > 0 else None,
                          "rss_peak_bytes": int(g["rss_bytes"].max())}
        if window is not None and window[1] > window[0] and len(g) >= 2:
            cum = np.concatenate([[0.0], np.cumsum(increase(cpu.astype(np.float64)))])
            lo, hi = np.interp(window, g["t"].to_numpy(dtype=np.float64), cum)
            out[str(comp)].update(cpu_seconds_window=float(hi - lo),
                                  cores_window=float(hi - lo) / (window[1] - window[0]))
    return out


def create_rates(series: pd.DataFrame, submit: list[dict[str, Any]],
                 phases: list[dict[str, Any]]) -> list[dict[str, float | None]]:
    """Per phase, the apiserver's own count of successful creates of the phase's kind (pods or jobs) from
    the 1 s scrapes, as a rate over the whole phase and the steady window (the same windows as the
    submitter's rates): scrape intervals overlapping a window are counted, over the window itself."""
    out: list[dict[str, float | None]] = []
    kinds = {p["name"]: str(p.get("kind", "Pod")).lower() + "s" for p in phases}
    for ph in submit:
        r = ph.get("rates") or {}
        c = counter_total(series, "kube-apiserver", REQUEST_TOTAL, verb="POST", resource=kinds.get(ph["phase"], "pods"),
                          subresource="", code="201")
        if len(c) < 2 or not r.get("window") or r.get("last_answer") is None:
            out.append({"whole": None, "steady": None})
            continue
        t, inc = c.index.to_numpy(dtype=np.float64), increase(c.to_numpy(dtype=np.float64))
        start, end = float(r["window"][0]), float(r["last_answer"])
        counted = float(inc[(t[1:] > start) & (t[:-1] < end)].sum())
        s0, s1 = r["steady_window"]
        inside = (t[:-1] >= s0) & (t[1:] <= s1)
        dt = float(np.diff(t)[inside].sum())
        out.append({"whole": counted / (end - start + r.get("gap", 0.0)) if end > start else None,
                    "steady": float(inc[inside].sum()) / dt if dt > 0 else None})
    return out


def client_bound(series: pd.DataFrame, rate: dict[str, Any], client_qps: float | None,
                 window_seconds: float) -> list[str]:
    """Reasons the scheduler was held back by its own client-side rate limiter (empty: it was not)."""
    reasons = []
    waited = counter_increase(series, "kube-scheduler", "rest_client_rate_limiter_duration_seconds_sum")
    waits = counter_increase(series, "kube-scheduler", "rest_client_rate_limiter_duration_seconds_count")
    total_wait, n = sum(waited.values()), sum(waits.values())
    if n and window_seconds > 0 and total_wait / window_seconds > 0.05 and total_wait / n > 0.001:
        reasons.append(f"client-bound: the scheduler's client rate limiter delayed its requests {total_wait:.1f}s "
                       f"in total ({total_wait / n * 1000:.0f} ms on average over {int(n)} requests)")
    p50 = rate.get("p50")  # the median second: the initial burst allowance does not move it
    if client_qps and p50 and client_qps < 1000 and 0.85 * client_qps <= p50 <= 1.15 * client_qps:
        reasons.append(f"client-bound: the binding rate plateaus at {p50:.0f}/s, at the scheduler's client QPS "
                       f"limit of {client_qps:g}")
    return reasons


def derive(run_dir: Path, pods: pd.DataFrame,
           client_qps: float | None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(binding-rate series, every kept sample as a long frame, summary section)."""
    series = load_series(run_dir)
    window = None
    if len(pods) and pods["scheduled"].notna().any():
        window = (float(pods["created"].min()), float(pods["scheduled"].max()))
    rate = binding_rate(series, window)
    scheduled = int(pods["scheduled"].notna().sum()) if len(pods) else 0
    out: dict[str, Any] = {"binding_rate": {k: v for k, v in rate.items() if k != "series"}}
    if rate.get("available"):
        total = rate["total_bindings"]
        diff = abs(total - scheduled) / max(scheduled, 1)
        out["cross_check"] = {"bindings_from_metric": total, "pods_scheduled_in_timeline": scheduled,
                              "relative_difference": diff, "agrees": diff <= 0.01}
    out["scheduler"] = {
        "schedule_attempts": counter_increase(series, "kube-scheduler", "scheduler_schedule_attempts_total",
                                              by="result"),
        "podgroup_schedule_attempts": counter_increase(series, "kube-scheduler",
                                                       "scheduler_podgroup_schedule_attempts_total", by="result"),
        "scheduling_attempt_duration_seconds": histogram_quantiles(
            series, "kube-scheduler", "scheduler_scheduling_attempt_duration_seconds", result="scheduled"),
        "scheduling_algorithm_duration_seconds": histogram_quantiles(
            series, "kube-scheduler", "scheduler_scheduling_algorithm_duration_seconds"),
        "pod_scheduling_sli_duration_seconds": histogram_quantiles(
            series, "kube-scheduler", "scheduler_pod_scheduling_sli_duration_seconds"),
        "extension_point_duration_seconds": histogram_quantiles(
            series, "kube-scheduler", "scheduler_framework_extension_point_duration_seconds",
            group_by="extension_point"),
        "pending_pods_max": {q: float(v) for q, v in _select(series, "kube-scheduler", "scheduler_pending_pods")
                             .assign(q=lambda d: d["labels"].map(lambda x: json.loads(x).get("queue", "")))
                             .groupby("q")["value"].max().items()} if len(series) else {},
    }
    out["apiserver"] = {
        "create_pod_latency_seconds": histogram_quantiles(
            series, "kube-apiserver", "apiserver_request_duration_seconds", subresource=""),
        "binding_latency_seconds": histogram_quantiles(
            series, "kube-apiserver", "apiserver_request_duration_seconds", subresource="binding"),
        "create_pod_responses": counter_increase(series, "kube-apiserver", REQUEST_TOTAL, by="code", verb="POST",
                                                 resource="pods", subresource=""),
        "writes": writes.writes_section(_select(series, "kube-apiserver", REQUEST_TOTAL),
                                        scrape_times_of(series, "kube-apiserver"), window and window[0], scheduled),
    }
    out["apiserver"]["throttled_429"] = out["apiserver"]["create_pod_responses"].get("429", 0.0)
    procs = pd.read_parquet(run_dir / PROCS) if (run_dir / PROCS).exists() else pd.DataFrame()
    out["processes"] = process_usage(procs, window)
    sched_cpu = (out["processes"].get("kube-scheduler") or {}).get("cpu_seconds")
    # CPU time, unlike wall-clock figures, hardly moves when other work shares the host's cores: the
    # steadiest sign of a scheduler that does more work per pod
    out["scheduler"]["cpu_seconds_per_pod"] = sched_cpu / scheduled if sched_cpu is not None and scheduled else None
    own = sorted({str(c) for c in series["component"].unique() if str(c).startswith(OWN_PREFIX)}) if len(series) \
        else []
    own += sorted(c for c in out["processes"] if c.startswith(OWN_PREFIX) and c not in own)
    if own:
        out["schedulers"] = {c.removeprefix(OWN_PREFIX): {
            "schedule_attempts": counter_increase(series, c, "scheduler_schedule_attempts_total", by="result"),
            "scheduling_attempt_duration_seconds": histogram_quantiles(
                series, c, "scheduler_scheduling_attempt_duration_seconds", result="scheduled"),
            "cpu_seconds": (out["processes"].get(c) or {}).get("cpu_seconds"),
            "metrics": bool(len(series)) and bool((series["component"] == c).any())} for c in own}
    for comp in ["kube-scheduler", *own] if len(series) else []:
        for key, k in scheduler_kinds.with_sections().items():  # a scheduler kind's own account (its queues…)
            assert k.section is not None
            sec = k.section(series, comp, window, out["processes"].get(comp) or {})
            if sec is not None and comp == "kube-scheduler":
                out[key] = sec
            elif sec is not None:
                out["schedulers"][comp.removeprefix(OWN_PREFIX)][key] = sec
    if len(series) and (series["component"] == "kueue").any():
        out["kueue"] = kueue_section(series, out["processes"].get("kueue") or {})
    win_s = (window[1] - window[0]) if window else 0.0
    out["labels"] = client_bound(series, rate, client_qps, win_s)
    rate_frame = pd.DataFrame(rate.get("series", {"t": [], "rate": []}))
    return rate_frame, series, out


def kueue_section(series: pd.DataFrame, proc: dict[str, Any]) -> dict[str, Any]:
    """Kueue's own account of the run from its /metrics: admission cycles (each may admit several
    Workloads) and their duration, Workloads admitted and their wait (created or requeued → admitted)
    per ClusterQueue, the pending peak per ClusterQueue, and its CPU."""
    pending = _select(series, "kueue", "kueue_pending_workloads")
    pending_max: dict[str, float] = {}
    if len(pending):
        cq = pending["labels"].map(lambda x: json.loads(x).get("cluster_queue", ""))
        pending_max = {str(q): float(v) for q, v in pending.assign(cq=cq).groupby(["cq", "t"])["value"].sum()
                       .groupby(level=0).max().items()}
    return {
        "admission_attempts": counter_increase(series, "kueue", "kueue_admission_attempts_total", by="result"),
        "admission_attempt_duration_seconds": histogram_quantiles(
            series, "kueue", "kueue_admission_attempt_duration_seconds", result="success"),
        "admitted_workloads": counter_increase(series, "kueue", "kueue_admitted_workloads_total", by="cluster_queue"),
        "admission_wait_time_seconds": histogram_quantiles(
            series, "kueue", "kueue_admission_wait_time_seconds", group_by="cluster_queue"),
        "pending_workloads_max": pending_max,
        "cpu_seconds": proc.get("cpu_seconds"),
        "cpu_seconds_window": proc.get("cpu_seconds_window"),
    }
