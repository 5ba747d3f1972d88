"""What limited a run: one verdict, its evidence and a sentence a user can act on (pure).

A run's throughput is set by the tightest stage a pod passes through: the harness sending it, the
apiserver accepting it and delivering it to the scheduler, the scheduler's queue and its client, the
binding, and the kwok controller making it Running. The verdict follows that chain over the *pending
window* (first pod created → last pod scheduled), from per-second series:

- **did scheduling keep up?** The backlog (pods created, not yet scheduled, from the timeline) stayed
  within about a second of arrivals. Then the pace was set upstream: ``harness`` (the phase's
  ``not_accepted`` says so), ``apiserver``/``etcd`` (it did not accept the offered load; the busier of the
  two, or ``host`` when the host was full and neither was the busiest process nor slow to answer), ``kwok``
  (pods scheduled promptly but waiting to be Running, when a phase waited for that), or else ``arrival``:
  the offered rate itself.
- **it did not:** ``scheduler-client`` when the scheduler's client limiter held it back
  (:func:`kwokbench.metrics.derive.client_bound`). Pods waiting in the scheduler's own queue are
  ``scheduler`` when it worked (>= :data:`BUSY_CORES` cores, the largest CPU share, or at least
  :data:`SCHEDULER_SHARE` of the CPU the host spent) and ``host`` when it was starved on a full host.
  Pods waiting outside that queue (to be delivered by the watch, or bound) are ``host`` when the host was
  full and no process dominated it, else ``apiserver``/``etcd``, the busier of the two.

The figures behind the verdict are kept in ``evidence``, so a surprising verdict can be checked.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from kwokbench.figures.acceptance import verdict as acceptance_verdict

VERDICTS = ("arrival", "scheduler-client", "scheduler", "apiserver", "etcd", "host", "harness", "kwok")
BUSY_CORES = 0.8
"""A component at or above this many cores in a second was busy (the scheduling cycle runs one pod at a
time: kube-scheduler near one core is near its limit)."""
DOMINANT_SHARE = 0.4
"""A process using this share of all the CPU the host spent in the window dominates it."""
SCHEDULER_SHARE = 0.25
"""Pods waiting in its queue are the scheduler's when it got at least this share of the CPU the host spent (or
was busy): it was a main consumer, not a process starved by others."""
HOST_FULL = 0.95
"""Busy share of the host's CPUs from which the host itself is the limit."""
MEMORY_FULL = 0.9
"""Share of the host's memory held by the control plane from which memory is the host's limit."""
KEPT_PACE = 0.9
"""A scheduler client found limited counts when binding fell below this share of the arrival rate."""
BACKLOG_SECONDS = 1.0
BACKLOG_MIN = 50
"""Scheduling kept up while the pods created but not scheduled stayed within this many seconds of arrivals
(and at least this many pods)."""
QUEUE_SHARE = 0.5
"""Pods waited *in the scheduler* when its queue held at least this share of the backlog (window means: a
burst the watch delivered at once does not count)."""
SLOW_APISERVER = 0.5
"""Seconds of p99 create or binding latency from which the apiserver counts as slow."""
KWOK_LAG = 1.0
"""Seconds (p90) from scheduled to Running from which pods waited on the kwok controller."""
SATURATED = 0.9
"""The apiserver (or etcd) was saturated when it spent this share of the window at :data:`BUSY_CORES` or more
while answering slowly (:data:`SLOW_APISERVER`, p99 of creates, bindings or the submitter's time on the
wire): busy connections are then its doing, not the harness's."""
HARNESS = "kwokbench"
"""The submitter's cores in ``evidence["cores"]`` (a mean over its phases; it is sampled once per phase)."""


def window_of(pods: pd.DataFrame) -> tuple[float, float] | None:
    """First pod created → last pod scheduled (None: nothing was scheduled)."""
    if not len(pods) or "scheduled" not in pods or not pods["scheduled"].notna().any():
        return None
    return float(pods["created"].min()), float(pods["scheduled"].max())


def _grid(window: tuple[float, float]) -> np.ndarray:
    return np.arange(window[0], window[1] + 1.0, 1.0)


def backlog(pods: pd.DataFrame, window: tuple[float, float], start: str = "created",
            end: str = "scheduled") -> np.ndarray:
    """Pods past ``start`` but not yet at ``end``, each second of the window."""
    a = np.sort(pods[start].to_numpy(dtype=np.float64))
    b = np.sort(pods[end].to_numpy(dtype=np.float64))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    g = _grid(window)
    return (np.searchsorted(a, g, side="right") - np.searchsorted(b, g, side="right")).astype(np.float64)


def cores(procs: pd.DataFrame, window: tuple[float, float]) -> dict[str, dict[str, float]]:
    """Per component, CPU cores over the sampling intervals overlapping the window: the time-weighted
    mean, the busiest second, and the share of the window it spent at :data:`BUSY_CORES` or more."""
    out: dict[str, dict[str, float]] = {}
    if not len(procs):
        return out
    for comp, g in procs.groupby("component"):
        g = g.sort_values("t")
        t, cpu = g["t"].to_numpy(dtype=np.float64), g["cpu_seconds"].to_numpy(dtype=np.float64)
        if len(t) < 2:
            continue
        d = np.diff(cpu)
        used = np.where(d < 0, cpu[1:], d)  # a restarted process counts from 0
        dt = np.diff(t)
        # overlap of each interval with the window, so straddling intervals weigh by their part inside
        overlap = np.clip(np.minimum(t[1:], window[1]) - np.maximum(t[:-1], window[0]), 0.0, None)
        ok = (overlap > 0) & (dt > 0)
        if not ok.any():
            continue
        rate, w = used[ok] / dt[ok], overlap[ok]
        out[str(comp)] = {"mean": float((rate * w).sum() / w.sum()), "max": float(rate.max()),
                          "busy_share": float(w[rate >= BUSY_CORES].sum() / w.sum())}
    return out


def queue(series: pd.DataFrame, window: tuple[float, float]) -> np.ndarray:
    """The scheduler's pending pods (active and backoff queues; not unschedulable or gated pods, which
    wait for capacity, not for the scheduler) at each scrape in the window."""
    if not len(series):
        return np.zeros(0)
    s = series[(series["component"] == "kube-scheduler") & (series["name"] == "scheduler_pending_pods")]
    if not len(s):
        return np.zeros(0)
    s = s[s["labels"].map(lambda x: json.loads(x).get("queue") in ("active", "backoff"))]
    s = s[(s["t"] >= window[0]) & (s["t"] <= window[1] + 1.0)]
    out: np.ndarray = s.groupby("t")["value"].sum().sort_index().to_numpy(dtype=np.float64)
    return out


def memory_share(procs: pd.DataFrame, window: tuple[float, float], memory_bytes: float | None) -> float | None:
    """The most of the host's memory the control-plane processes held together at one sample in the window."""
    if not len(procs) or not memory_bytes:
        return None
    inside = procs[(procs["t"] >= window[0]) & (procs["t"] <= window[1] + 1.0)]
    if not len(inside):
        return None
    return float(inside.groupby("t")["rss_bytes"].sum().max()) / memory_bytes


def _harness_cores(meta: dict[str, Any], submit: list[dict[str, Any]]) -> float | None:
    """kwokbench's own submitter CPU over its phases' submission windows (setup before t0 left out)."""
    cpu = span = 0.0
    for ph, s in zip(meta.get("phases") or [], submit, strict=False):
        r = s.get("rates") or {}
        if ph.get("harness_cpu_seconds") is None or not r.get("window") or r.get("last_answer") is None:
            continue
        cpu += float(ph["harness_cpu_seconds"]) - float(ph.get("harness_setup_cpu_seconds") or 0.0)
        span += float(r["last_answer"]) - float(r["window"][0])
    return cpu / span if span > 0 else None


def _main_phase(submit: list[dict[str, Any]]) -> dict[str, Any]:
    """The phase that says most about acceptance: the first one flagged, else the one offered most."""
    flagged = [p for p in submit if p.get("not_accepted")]
    if flagged:
        return flagged[0]
    return max(submit, key=lambda p: p.get("offered_qps") or 0.0) if submit else {}


def evidence(summary: dict[str, Any], meta: dict[str, Any], series: pd.DataFrame, procs: pd.DataFrame,
             pods: pd.DataFrame) -> dict[str, Any] | None:
    """Every figure the verdict is decided on (None: no pod was scheduled, nothing to judge)."""
    window = window_of(pods)
    if window is None:
        return None
    submit = summary.get("submit") or []
    main = _main_phase(submit)
    accepted = max((p.get("accepted_qps") or 0.0 for p in submit), default=0.0) or None
    created = pods["created"].to_numpy(dtype=np.float64)
    created = created[np.isfinite(created)]
    span = float(created.max() - created.min()) if len(created) > 1 else 0.0
    # pods, whatever object created them (a Job creates several): the rate they arrived at the scheduler
    arrival = len(created) / span if span > 0 else None
    bl = backlog(pods, window)
    q = queue(series, window)
    cpu = cores(procs, window)
    harness = _harness_cores(meta, submit)
    total = sum(c["mean"] for c in cpu.values()) + (harness or 0.0)
    busiest = max(cpu, key=lambda c: cpu[c]["mean"]) if cpu else None
    host = summary.get("host") or {}
    cpus = float((meta.get("host") or {}).get("cpus") or 0) or None
    # what the host spent: the run's processes, or more when something else (kwokbench's watcher, other
    # work on the box) took CPU too
    spent = max(total, (host.get("cpu_busy_fraction") or 0.0) * (cpus or 0.0))
    api = summary.get("apiserver") or {}
    sched = summary.get("scheduler") or {}
    waits_running = any(p.get("wait_for") in ("running", "completed") for p in meta.get("phases") or [])
    lag = (pods["running"] - pods["scheduled"]).to_numpy(dtype=np.float64) if "running" in pods else np.zeros(0)
    lag = lag[np.isfinite(lag)]
    binding = summary.get("binding_rate") or {}
    wire = (main.get("rates") or {}).get("wire_seconds") or {}
    return {
        "window": [window[0], window[1]],
        "window_seconds": window[1] - window[0],
        "offered_qps": main.get("offered_qps"),
        "accepted_qps": accepted,
        "bound_qps": binding.get("average") if binding.get("available")
        else (summary.get("throughput") or {}).get("average"),
        "not_accepted": main.get("not_accepted"),
        "arrival_qps": arrival,
        "backlog_max": float(bl.max()) if len(bl) else 0.0,
        "backlog_allowance": max(BACKLOG_MIN, BACKLOG_SECONDS * (arrival or 0.0)),
        "queue_max": float(q.max()) if len(q) else None,
        "queue_share": float(q.mean() / bl.mean()) if len(q) and len(bl) and bl.mean() > 0 else None,
        "cores": {**cpu, **({HARNESS: {"mean": harness}} if harness is not None else {})},
        "cores_total": total,
        "cores_host": spent,
        "busiest": busiest,
        "busiest_share": cpu[busiest]["mean"] / spent if busiest and spent > 0 else None,
        "host_cpus": cpus,
        "host_busy": host.get("cpu_busy_fraction"),
        "host_used_share": total / cpus if cpus else None,
        "memory_share": memory_share(procs, window, (meta.get("host") or {}).get("memory_bytes")),
        "client_bound": list(summary.get("labels") or []),
        "create_latency_p99": (api.get("create_pod_latency_seconds") or {}).get("p99"),
        "binding_latency_p99": (api.get("binding_latency_seconds") or {}).get("p99"),
        "wire_p99": wire.get("p99"),
        "attempt_p99": (sched.get("scheduling_attempt_duration_seconds") or {}).get("p99"),
        "waits_for_running": waits_running,
        "running_lag_p90": float(np.percentile(lag, 90)) if len(lag) else None,
        "running_backlog_max": float(backlog(pods, window, "scheduled", "running").max())
        if waits_running and "running" in pods else None,
    }


def _f(v: float | None, fmt: str = ".0f") -> str:
    return "-" if v is None else format(v, fmt)


def _host_full(ev: dict[str, Any]) -> bool:
    return (max(ev["host_busy"] or 0.0, ev["host_used_share"] or 0.0) >= HOST_FULL
            or (ev["memory_share"] or 0.0) >= MEMORY_FULL)


def _dominant(ev: dict[str, Any], comp: str) -> bool:
    c = ev["cores"].get(comp)
    return bool(c and ev["cores_host"] > 0 and ev["busiest"] == comp and c["mean"] / ev["cores_host"]
                >= DOMINANT_SHARE)


def _store_busiest(ev: dict[str, Any]) -> bool:
    return ev["busiest"] in ("kube-apiserver", "etcd")


def _slow(ev: dict[str, Any]) -> bool:
    """The apiserver answered creates or bindings slowly (p99)."""
    return max(ev["create_latency_p99"] or 0.0, ev["binding_latency_p99"] or 0.0) >= SLOW_APISERVER


def _saturated(ev: dict[str, Any]) -> bool:
    """The busier of apiserver and etcd worked flat out for (nearly) the whole window and answered slowly."""
    comp = "kube-apiserver" if _store(ev) == "apiserver" else "etcd"
    busy = (ev["cores"].get(comp) or {}).get("busy_share", 0.0)
    slow = max(ev["create_latency_p99"] or 0.0, ev["binding_latency_p99"] or 0.0,
               ev.get("wire_p99") or 0.0) >= SLOW_APISERVER
    return busy >= SATURATED and slow


def _cpu(ev: dict[str, Any], comp: str) -> str:
    c = ev["cores"].get(comp) or {}
    share = c.get("mean", 0.0) / ev["cores_host"] if ev["cores_host"] else 0.0
    return (f"{comp} at {_f(c.get('mean'), '.2f')} cores ({share * 100:.0f}% of the CPU the host spent, >= "
            f"{BUSY_CORES:g} cores {c.get('busy_share', 0.0) * 100:.0f}% of the window)")


def _host(ev: dict[str, Any]) -> str:
    busy = max(ev["host_busy"] or 0.0, ev["host_used_share"] or 0.0)
    memory = ev["memory_share"] or 0.0
    cpus = ev["host_cpus"] or 0.0
    other = (ev["cores_host"] - ev["cores_total"]) / cpus if cpus else 0.0
    return (f"the host's {_f(cpus)} CPUs {busy * 100:.0f}% busy"
            + (f" ({other * 100:.0f}% by processes outside the control plane and the submitter)" if other >= 0.1
               else "")
            + (f", {memory * 100:.0f}% of its memory held by the control plane" if memory >= MEMORY_FULL else ""))


def _store(ev: dict[str, Any]) -> str:
    """apiserver or etcd: the busier of the two."""
    api, etcd = (ev["cores"].get(c, {}).get("mean", 0.0) for c in ("kube-apiserver", "etcd"))
    return "etcd" if etcd > api else "apiserver"


def decide(ev: dict[str, Any]) -> tuple[str, str]:
    """(verdict, sentence) from :func:`evidence`."""
    rates = (f"{_f(ev['bound_qps'])}/s bound of {_f(ev['accepted_qps'])}/s accepted, {_f(ev['offered_qps'])}/s "
             f"offered")
    waited = f"backlog up to {ev['backlog_max']:.0f} pods, scheduler queue up to {_f(ev['queue_max'])}"
    na = ev["not_accepted"] or ""
    kept_up = ev["backlog_max"] <= ev["backlog_allowance"]
    slower = bool(ev["bound_qps"] and ev["arrival_qps"] and ev["bound_qps"] < KEPT_PACE * ev["arrival_qps"])
    if ev["client_bound"] and (slower or not kept_up):
        return "scheduler-client", (f"scheduler-client-bound: {ev['client_bound'][0].removeprefix('client-bound: ')}"
                                    f" ({rates}); raise client_qps/client_burst or drop cluster.qps_limits")
    if kept_up:
        if na.startswith("harness-bound") and _saturated(ev):
            who = _store(ev)
            comp = "kube-apiserver" if who == "apiserver" else "etcd"
            return who, (f"{who}-bound: the offered load was not accepted ({rates}) with {_cpu(ev, comp)}, wire "
                         f"p99 {_f(_ms(ev.get('wire_p99')))} ms: every connection waited on its slow answers")
        if na.startswith("harness-bound"):
            return "harness", na
        if na:
            if _host_full(ev) and not (_store_busiest(ev) or _slow(ev)):
                return "host", (f"host-bound: the offered load was not accepted ({na}) with {_host(ev)}, the "
                                f"busiest process {ev['busiest']}; a bigger host would take more")
            who = _store(ev)
            comp = "kube-apiserver" if who == "apiserver" else "etcd"
            return who, (f"{who}-bound: {na}; {_cpu(ev, comp)}, create p99 "
                         f"{_f(_ms(ev['create_latency_p99']))} ms")
        if (ev["waits_for_running"] and (ev["running_lag_p90"] or 0.0) >= KWOK_LAG
                and (ev["running_backlog_max"] or 0.0) > ev["backlog_allowance"]):
            return "kwok", (f"kwok-bound: pods were scheduled as they arrived but waited {ev['running_lag_p90']:.1f} s "
                            f"(p90) to be Running, up to {ev['running_backlog_max']:.0f} at once, with "
                            f"{_cpu(ev, 'kwok-controller')}; raise the kwok controller's parallelism or slow the "
                            f"pods' stages")
        return "arrival", (f"arrival-bound: pods were scheduled as fast as they arrived ({rates}; {waited}); "
                           f"offer a higher rate to find the limit")
    in_queue = (ev["queue_share"] or 0.0) >= QUEUE_SHARE
    sched = ev["cores"].get("kube-scheduler") or {}
    host = f"; {_host(ev)}" if _host_full(ev) else ""
    working = (sched.get("mean", 0.0) >= BUSY_CORES or sched.get("busy_share", 0.0) >= 0.5
               or ev["busiest"] == "kube-scheduler"
               or (ev["cores_host"] > 0 and sched.get("mean", 0.0) / ev["cores_host"] >= SCHEDULER_SHARE))
    if in_queue and working:
        return "scheduler", (f"scheduler-bound: {_cpu(ev, 'kube-scheduler')} while its queue grew to "
                             f"{_f(ev['queue_max'])} pods ({rates}{host}); a cheaper scheduler configuration or "
                             f"plugin, or more CPU for it, would raise throughput")
    if _host_full(ev) and (in_queue or not any(_dominant(ev, c) for c in ev["cores"])):
        where = (f"in the scheduler's queue (up to {_f(ev['queue_max'])}) while {_cpu(ev, 'kube-scheduler')}"
                 if in_queue else
                 f"({waited}) with no process above {DOMINANT_SHARE * 100:.0f}% of the CPU the host spent")
        return "host", (f"host-bound: {_host(ev)}; pods waited {where}; {rates}; a bigger host, or a smaller run, "
                        f"would move it")
    if in_queue:
        return "scheduler", (f"scheduler-bound: its queue grew to {_f(ev['queue_max'])} pods with "
                             f"{_cpu(ev, 'kube-scheduler')} ({rates}): it waited on something other than CPU (an "
                             f"extender, a plugin, the API)")
    who = _store(ev)
    comp = "kube-apiserver" if who == "apiserver" else "etcd"
    return who, (f"{who}-bound: pods waited outside the scheduler's queue, to reach it or to be bound ({waited}; "
                 f"{rates}) with {_cpu(ev, comp)}, create p99 {_f(_ms(ev['create_latency_p99']))} ms, binding "
                 f"p99 {_f(_ms(ev['binding_latency_p99']))} ms{host}")


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1000


def limited_by(summary: dict[str, Any], meta: dict[str, Any], series: pd.DataFrame, procs: pd.DataFrame,
               pods: pd.DataFrame) -> dict[str, Any]:
    """``{"verdict", "sentence", "evidence"}`` for a stored run (verdict None when nothing was scheduled).

    When the verdict is the apiserver or etcd, the submission phases' ``not_accepted`` notes (written
    before, by :func:`kwokbench.figures.acceptance.verdict`) are rewritten to name it too: one cause per run."""
    ev = evidence(summary, meta, series, procs, pods)
    if ev is None:
        return {"verdict": None, "sentence": "undetermined: no pod was scheduled", "evidence": {}}
    verdict, sentence = decide(ev)
    assert verdict in VERDICTS
    if verdict in ("apiserver", "etcd"):
        for ph in summary.get("submit") or []:
            if ph.get("not_accepted"):
                ph["not_accepted"] = acceptance_verdict(ph, server=verdict)
        ev["not_accepted"] = _main_phase(summary.get("submit") or []).get("not_accepted")
    return {"verdict": verdict, "sentence": sentence, "evidence": ev}
