"""Any scenario's variants side by side, as stored data: `kwokbench run SCENARIO --repeat R` through the real CLI (the
variants interleaved, a fresh cluster per run), then one row per run of what the results pages quote.

Each run's row: pods bound, throughput (pods bound per second over the pending window), created → bound p50 / p99 (and
the last phase's p50: a scenario that ends on a probe pod, as the YuniKorn stall's does), the first phase's submission
(creates offered, sent and accepted a second, the longest wait for a connection, the p50 on the wire), the scheduler's
attempt p50 / p99, its own means per pod of its algorithm (filter + score) and of PreFilter, Filter, PreScore, Score
and Permit (`framework_extension_point_duration_seconds`), its CPU per pod (and all its processes': a batch
scheduler's binder and controllers too), the apiserver's CPU per pod, Volcano's mean session, the scheduler's setup
and ready seconds (`meta.json`), pods placed against the gpufilter rule, the first phase's gangs (whole, partly
placed, unplaced), the builtin extender's own handling per pod and calls, the first phase's Jobs (makespan, submit →
admitted and admitted → all pods scheduled p50 / p99, the queue's depth) and Kueue's own account (admission attempts,
their mean, its wait mean, its CPU), each chaos event's recovery (``recovery_0``, ``recovery_1``, …: seconds until the
binding rate was back; a restart's graceful stop and time down, a NotReady event's patches and the control plane's
reaction: ``stop_0``, ``down_0``, ``patched_0``, ``reacted_0``), the pods lost (accepted, never bound), each of
kwokbench's watches' gaps (``gaps_pod``, ``gap_pod`` seconds in all, ``gap_resourceclaim``…), the DRA claims
(allocated of all, pods bound with a claim never allocated, created → claim allocated p50), the apiserver's writes
per pod, and what limited the run.
Printed per variant over its runs (each cell the runs' range).

    .venv/bin/python benchmarks/bench_scenario.py scenarios/extender-vs-plugin.yaml --repeat 3
    .venv/bin/python benchmarks/bench_scenario.py scenarios/coscheduling-vs-default.yaml --repeat 3 \\
        --data docs/results/data/coscheduling-DATE.json
    .venv/bin/python benchmarks/bench_scenario.py scenarios/X.yaml --runs DIR --data OUT    # rows of runs kept in DIR
    .venv/bin/python benchmarks/bench_scenario.py scenarios/scheduler-throughput.yaml --repeat 3 \\
        --arm stock= --arm trimmed='cluster.controller_manager=false;cluster.pin_scheduler=true'

``--arm NAME=SET;SET`` (repeatable) runs the scenario once per arm in each repeat, interleaved, the arm's ``--set``
overrides added to the common ones: settings a scenario's variants cannot vary (the cluster's) compared as variants
are; each arm's runs are kept under ``OUT/NAME`` and its rows named after it (``NAME/VARIANT`` where the scenario has
more than one variant).

``--data FILE`` keeps each run's row with the command, the commit the runs ran at, the day and the host; a results
page renders its table from it (``bench("NAME", "table", "throughput,latency,…")``, :func:`table`) and decides a
comparison with the gate's paired test over the interleaved runs (``bench_gate``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stored import (  # a sibling: on a script's path
    collect,
    pod_writes,
    provenance,
    ranged,
    run_options,
    run_scenario,
    runs_root,
    write,
)

REPO = Path(__file__).resolve().parents[1]
POINTS = ("PreFilter", "Filter", "PreScore", "Score", "Permit")
HELD = 4
"""The workloads (in the scenario's order) whose CPUs held, peak and at the end, a row keeps: ``held_peak_0``."""
CONTROL_PLANE = frozenset({"etcd", "kube-apiserver", "kube-controller-manager", "kwok-controller"})
"""The processes of the cluster, not of the scheduler compared: every other one is the scheduler kind's (kube-scheduler,
or a batch scheduler's scheduler, binder and controllers), summed in ``kind_cpu_ms``."""
SUBMIT = ("offered", "sent", "accepted", "steady", "wait_max", "wire_p50")
"""The first phase's submission: creates offered, sent and accepted a second over the phase and accepted in its steady
window, the longest wait for a connection and the p50 on the wire (``submit_offered``, …)."""
FIGURES = ("bound", "throughput", "p50", "p99", "last_p50", *(f"submit_{k}" for k in SUBMIT),
           "attempt_p50", "attempt_p99", "algorithm_ms",
           *(f"{p.lower()}_ms" for p in POINTS), "cpu_ms", "kind_cpu_ms", "apiserver_ms", "session_mean",
           "setup_seconds", "ready_seconds",
           "violations", "gangs_complete", "gangs_partial", "gangs_unplaced", "extender_ms", "extender_calls",
           "makespan", "admitted_p50", "admitted_p99", "to_scheduled_p50", "to_scheduled_p99", "queue_max",
           "queue_mean", "kueue_admitted", "kueue_inadmissible", "kueue_attempt_ms", "kueue_wait", "kueue_cpu", "lost",
           "claims", "claims_allocated", "bound_unallocated", "claim_p50", "writes", "pod_writes", "events",
           "seconds", "shared_allocations", "given_twice", "counter_sets", "counters_peak", "overcommitted",
           *(f"held_{end}_{i}" for i in range(HELD) for end in ("peak", "final")))


def _chaos_times(run: Path) -> dict[str, float]:
    """Each chaos event's own times (chaos.json), in seconds: a restart's graceful stop (``stop_i``: the event to
    the process gone) and its time down (``down_i``: gone to answering /healthz again); a NotReady event's patches
    (``patched_i``: the event to the last node patched) and the control plane's reaction (``reacted_i``: the last
    patch to every node tainted)."""
    f = run / "chaos.json"
    events = json.loads(f.read_text()).get("events") or [] if f.is_file() else []
    out = {}
    for i, e in enumerate(events):
        pairs = (("stop", "t", "stopped"), ("down", "stopped", "ready")) if "stopped" in e else (
            ("patched", "t", "ended"), ("reacted", "ended", "tainted")) if "tainted" in e else ()
        for key, start, end in pairs:
            if isinstance(e.get(start), (int, float)) and isinstance(e.get(end), (int, float)):
                out[f"{key}_{i}"] = float(e[end]) - float(e[start])
    return out


def _ms(d: dict[str, Any] | None) -> float | None:
    return 1000 * d["mean"] if d and d.get("mean") is not None else None


def row(run: Path) -> dict[str, Any]:
    s, meta = json.loads((run / "summary.json").read_text()), json.loads((run / "meta.json").read_text())
    sched = s.get("scheduler") or {}
    points = sched.get("extension_point_duration_seconds") or {}
    lat = (s.get("latency") or {}).get("created_to_scheduled") or {}
    attempt = sched.get("scheduling_attempt_duration_seconds") or {}
    place = s.get("placement") or {}
    gangs = (place.get("gangs") or [{}])[0]
    bound = s.get("pods_scheduled") or 0
    cpu = sched.get("cpu_seconds_per_pod")
    ext = json.loads((run / "extender.json").read_text()) if (run / "extender.json").is_file() else {}
    handling = sum((ext.get("handling_seconds") or {}).values())
    jobs = (s.get("jobs") or [{}])[0]
    kueue = s.get("kueue") or {}
    waits = list((kueue.get("admission_wait_time_seconds") or {}).values())
    claims = s.get("claims") or {}
    per_pod = ((s.get("apiserver") or {}).get("writes") or {}).get("per_pod") or {}
    workloads = list(((s.get("allocation") or {}).get("by_workload") or {}).values())
    phases = list((((s.get("latency") or {}).get("by_phase")) or {}).values())
    sub = (s.get("submit") or [{}])[0]
    procs = s.get("processes") or {}
    kind_cpu = sum(float(p.get("cpu_seconds") or 0) for n, p in procs.items() if n not in CONTROL_PLANE)
    rates = sub.get("rates") or {}
    return {"variant": meta["variant"]["name"], "bound": bound, "expected": s.get("pods_expected"),
            "throughput": (s.get("throughput") or {}).get("average"), "p50": lat.get("p50"), "p99": lat.get("p99"),
            "last_p50": (phases[-1].get("created_to_scheduled") or {}).get("p50") if phases else None,
            "submit_offered": sub.get("offered_qps"), "submit_sent": sub.get("sent_qps"),
            "submit_accepted": sub.get("accepted_qps"), "submit_steady": (rates.get("steady") or {}).get("accepted"),
            "submit_wait_max": (rates.get("connection_wait_seconds") or {}).get("max"),
            "submit_wire_p50": (rates.get("wire_seconds") or {}).get("p50"),
            "attempt_p50": attempt.get("p50"), "attempt_p99": attempt.get("p99"),
            "algorithm_ms": _ms(sched.get("scheduling_algorithm_duration_seconds")),
            **{f"{p.lower()}_ms": _ms(points.get(p)) for p in POINTS},
            "cpu_ms": 1000 * cpu if cpu is not None else None,
            "kind_cpu_ms": 1000 * kind_cpu / bound if procs and bound else None,
            "session_mean": (((s.get("volcano") or {}).get("session_seconds")) or {}).get("mean"),
            **{k: ((meta.get("schedulers") or [{}])[0]).get(k) for k in ("setup_seconds", "ready_seconds")},
            "apiserver_ms": 1000 * float(procs["kube-apiserver"].get("cpu_seconds") or 0) / bound
            if bound and "kube-apiserver" in procs else None,
            "violations": (place.get("rule_violations") or {}).get("violations"),
            "gangs_complete": gangs.get("complete"), "gangs_partial": gangs.get("partial"),
            "gangs_unplaced": gangs.get("unplaced"),
            "extender_ms": 1000 * handling / bound if ext and bound else None,
            "extender_calls": sum((ext.get("calls") or {}).values()) if ext else None,
            "makespan": jobs.get("makespan_seconds"),
            **{f"{k}_{q}": (jobs.get(f) or {}).get(q) for k, f in (("admitted", "submit_to_admitted_seconds"), (
                "to_scheduled", "admitted_to_all_scheduled_seconds")) for q in ("p50", "p99")},
            "queue_max": jobs.get("queue_depth_max"), "queue_mean": jobs.get("queue_depth_mean"),
            "kueue_admitted": (kueue.get("admission_attempts") or {}).get("success"),
            "kueue_inadmissible": (kueue.get("admission_attempts") or {}).get("inadmissible"),
            "kueue_attempt_ms": _ms(kueue.get("admission_attempt_duration_seconds")),
            "kueue_wait": waits[0].get("mean") if len(waits) == 1 else None, "kueue_cpu": kueue.get("cpu_seconds"),
            **{f"recovery_{i}": e.get("recovery_seconds") for i, e in enumerate((s.get("chaos") or {}).get("events")
                                                                               or [])},
            "lost": (s.get("chaos") or {}).get("pods_lost"),
            **_chaos_times(run),
            **{f"{k}_{w.lower()}": g.get(f) for w, g in (s.get("watch_gaps") or {}).items()
               for k, f in (("gaps", "gaps"), ("gap", "gap_seconds"))},
            "claims": claims.get("claims"), "claims_allocated": claims.get("allocated"),
            "bound_unallocated": claims.get("bound_unallocated"),
            "shared_allocations": claims.get("shared_allocations"),
            "given_twice": len(claims.get("devices_given_twice") or {}) if claims else None,
            "claim_p50": ((claims.get("pod_stages") or {}).get("created_to_allocated") or {}).get("p50"),
            "first_available": claims.get("first_available"),
            "counter_sets": (claims.get("counters") or {}).get("counter_sets_drawn"),
            "counters_peak": 100 * claims["counters"]["peak_share"] if claims.get("counters") else None,
            "overcommitted": len(claims["counters"].get("overcommitted") or {}) if claims.get("counters") else None,
            "writes": sum(per_pod.values()) if per_pod else None,
            "pod_writes": sum(pod_writes(s).values()) if per_pod else None,
            "events": per_pod.get("events"),
            **{f"held_{end}_{i}": (workloads[i] if i < len(workloads) else {}).get(f"{end}_cores") for i in range(HELD)
               for end in ("peak", "final")},
            "seconds": _seconds(meta),
            "limited_by": (s.get("limited_by") or {}).get("verdict"), "started": meta.get("started_at")}


def _seconds(meta: dict[str, Any]) -> float | None:
    """The run end to end (bring-up to teardown), from its meta.json."""
    from datetime import datetime

    if not meta.get("started_at") or not meta.get("ended_at"):
        return None
    return (datetime.fromisoformat(meta["ended_at"]) - datetime.fromisoformat(meta["started_at"])).total_seconds()


def median_row(rs: list[dict[str, Any]], figures: tuple[str, ...] = FIGURES) -> dict[str, Any]:
    """A variant's runs: each figure's median, its range as ``<figure>_lo``/``<figure>_hi``, the verdicts."""
    out: dict[str, Any] = {"runs": len(rs), "expected": rs[0].get("expected"),
                           "limited_by": ", ".join(sorted({str(r.get("limited_by")) for r in rs}))}
    for k in figures:
        xs = [r[k] for r in rs if r.get(k) is not None]
        out[k] = statistics.median(xs) if xs else None
        out[f"{k}_lo"], out[f"{k}_hi"] = (min(xs), max(xs)) if xs else (None, None)
    return out


def span(r: dict[str, Any], key: str, fmt: str, scale: float = 1.0, unit: str = "") -> str:
    """The runs' range of ``key`` (one value where they print alike) and ``unit``, ``–`` where no run has it."""
    if r[key] is None:
        return "–"
    lo, hi = (format(scale * r[f"{key}_{e}"], fmt) for e in ("lo", "hi"))
    return (lo if lo == hi else f"{lo.removesuffix('%')}–{hi}") + unit


def seconds_or_ms(r: dict[str, Any], key: str) -> str:
    """A latency's range in milliseconds, or seconds from 1 s up."""
    if r[key] is not None and r[f"{key}_lo"] >= 1:
        return span(r, key, ".1f", unit=" s")
    return span(r, key, ".0f", 1000, " ms")


def _point_cell(point: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: span(r, f"{point.lower()}_ms", ".2f", unit=" ms")


COLUMNS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "bound": ("pods bound", lambda r: f"{span(r, 'bound', '.0f')} of {r['expected']}"),
    "throughput": ("throughput", lambda r: span(r, "throughput", ".1f", unit=" pods/s")),
    "latency": ("latency p50 / p99", lambda r: f"{seconds_or_ms(r, 'p50')} / {seconds_or_ms(r, 'p99')}"),
    "last": ("the last phase's created → scheduled p50", lambda r: seconds_or_ms(r, "last_p50")),
    "submit": ("creates offered / sent / accepted (steady window); longest wait for a connection, p50 on the wire",
               lambda r: "–" if r["submit_offered"] is None else
               f"{span(r, 'submit_offered', '.0f')} / {span(r, 'submit_sent', '.0f')} / "
               f"{span(r, 'submit_accepted', '.0f')} ({span(r, 'submit_steady', '.0f')}) per s; "
               f"{seconds_or_ms(r, 'submit_wait_max')}, {seconds_or_ms(r, 'submit_wire_p50')}"),
    "attempt": ("scheduling attempt p50 / p99",
                lambda r: f"{seconds_or_ms(r, 'attempt_p50')} / {seconds_or_ms(r, 'attempt_p99')}"),
    "algorithm": ("scheduling algorithm, mean", lambda r: span(r, "algorithm_ms", ".2f", unit=" ms")),
    **{p: (f"{p}, mean", _point_cell(p)) for p in POINTS},
    "cpu": ("scheduler CPU per pod", lambda r: span(r, "cpu_ms", ".1f", unit=" ms")),
    "kind_cpu": ("CPU per pod of all the scheduler's processes", lambda r: span(r, "kind_cpu_ms", ".1f", unit=" ms")),
    "apiserver": ("apiserver CPU per pod", lambda r: span(r, "apiserver_ms", ".1f", unit=" ms")),
    "session": ("Volcano's sessions, mean", lambda r: seconds_or_ms(r, "session_mean")),
    "start": ("the scheduler's setup / ready", lambda r: f"{seconds_or_ms(r, 'setup_seconds')} / "
                                                         f"{seconds_or_ms(r, 'ready_seconds')}"),
    "violations": ("rule violations", lambda r: f"{span(r, 'violations', '.0f')} of {r['expected']}"),
    "gangs": ("gangs whole / partly placed / unplaced", lambda r: " / ".join(
        span(r, f"gangs_{k}", ".0f") for k in ("complete", "partial", "unplaced"))),
    "extender": ("the extender's own handling per pod", lambda r: span(r, "extender_ms", ".1f", unit=" ms")),
    "makespan": ("makespan", lambda r: span(r, "makespan", ".1f", unit=" s")),
    "admitted": ("submit → admitted p50 / p99", lambda r: f"{seconds_or_ms(r, 'admitted_p50')} / "
                                                           f"{seconds_or_ms(r, 'admitted_p99')}"),
    "to_scheduled": ("admitted (created) → all pods scheduled p50 / p99",
                     lambda r: f"{seconds_or_ms(r, 'to_scheduled_p50')} / {seconds_or_ms(r, 'to_scheduled_p99')}"),
    "queue": ("queue depth max / mean", lambda r: "–" if r["queue_max"] is None else
              f"{span(r, 'queue_max', '.0f')} / {span(r, 'queue_mean', '.1f')} workloads"),
    "claims": ("claims allocated", lambda r: "–" if r["claims"] is None else
               f"{span(r, 'claims_allocated', '.0f')} / {span(r, 'claims', '.0f')}"),
    "claim_latency": ("created → claim allocated p50", lambda r: seconds_or_ms(r, "claim_p50")
                      if r["claim_p50"] is not None else "never"),
    "writes": ("apiserver writes per pod", lambda r: span(r, "writes", ".1f")),
    "pod_writes": ("apiserver writes per pod bound, leases left out (events among them)",
                   lambda r: f"{span(r, 'pod_writes', '.1f')} ({span(r, 'events', '.1f')})"),
    "unallocated": ("pods bound, their claim never allocated", lambda r: span(r, "bound_unallocated", ".0f")),
    "counters": ("counter sets drawn on / the fullest / overcommitted", lambda r: "–" if r["counter_sets"] is None
                 else f"{span(r, 'counter_sets', '.0f')} / {span(r, 'counters_peak', '.0f', unit='%')} / "
                      f"{span(r, 'overcommitted', '.0f')}"),
    "seconds": ("end to end", lambda r: span(r, "seconds", ".1f", unit=" s")),
    "limited": ("limited by", lambda r: str(r["limited_by"])),
}
"""What a page may ask of :func:`table`: a column's header and its cell from a variant's :func:`median_row`."""


def table(doc: dict[str, Any], columns: str = "throughput,latency,algorithm,cpu,limited",
          labels: dict[str, str] | None = None) -> str:
    """A results page's table of ``--data``'s file: a row per variant, ``columns`` (names of :data:`COLUMNS`, comma
    separated) each the range of the variant's runs; ``labels`` names the variants as the page does, and when given,
    the rows are its variants, in its order."""
    names = [c.strip() for c in columns.split(",")]
    unknown = [c for c in names if c not in COLUMNS]
    if unknown:
        raise KeyError(f"no column {unknown[0]!r} (columns: {', '.join(COLUMNS)})")
    rows = {v: median_row(doc["runs"][v]) for v in (labels or doc["runs"])}
    n = {r["runs"] for r in rows.values()}
    k = n.pop() if len(n) == 1 else None
    runs = "runs" if k is None else f"{k} run" if k == 1 else f"{k} runs"
    out = [f"| variant ({runs}) | " + " | ".join(COLUMNS[c][0] for c in names) + " |", "|---" * (len(names) + 1) + "|"]
    for v, r in rows.items():
        out.append(f"| {(labels or {}).get(v, v)} | " + " | ".join(COLUMNS[c][1](r) for c in names) + " |")
    return "\n".join(out)


def markdown(doc: dict[str, Any]) -> str:
    return table(doc)


def _figure(r: dict[str, Any], key: str, end: str = "") -> float:
    """A median (``end`` ``_lo``/``_hi``: an extreme) of ``key``, or of a sum of them: ``filter_ms+score_ms``."""
    return float(sum(r[f"{k}{end}"] for k in key.split("+")))


def cell(doc: dict[str, Any], variant: str, key: str, fmt: str = ".1f") -> str:
    """One variant's range of ``key`` as :func:`table` prints it (``111.7–113.1``)."""
    return span(median_row(doc["runs"][variant]), key, fmt)


def wait(doc: dict[str, Any], variant: str, key: str) -> str:
    """A latency of ``variant``'s runs as :func:`table` prints it, in milliseconds below 1 s: ``3–8 ms``,
    ``30.1–32.4 s``."""
    return seconds_or_ms(median_row(doc["runs"][variant]), key)


def held(doc: dict[str, Any], variant: str, workload: int) -> str:
    """The CPUs workload ``workload`` (0: the scenario's first) held at its peak and at the end, each the range of
    ``variant``'s runs: ``100 / 80``, ``100 / 80–90``."""
    r = median_row(doc["runs"][variant])
    if r.get(f"held_peak_{workload}") is None:
        raise KeyError(f"{variant}'s runs hold no CPUs for workload {workload}")
    return f"{span(r, f'held_peak_{workload}', '.0f')} / {span(r, f'held_final_{workload}', '.0f')}"


def times(doc: dict[str, Any], variant: str, key: str, base: str, digits: int = 1) -> str:
    """``variant``'s median ``key`` (or sum of keys, ``filter_ms+score_ms``) over ``base``'s, as ``0.45x``, the runs'
    extremes beside it where they differ (one run a side: none)."""
    a, b = median_row(doc["runs"][variant]), median_row(doc["runs"][base])
    mid, lo, hi = (format(_figure(a, key, e) / _figure(b, key, f), f".{digits}f")
                   for e, f in (("", ""), ("_lo", "_hi"), ("_hi", "_lo")))
    return f"{mid}x" if lo == hi else f"{mid}x ({lo}–{hi}x)"


def more(doc: dict[str, Any], variant: str, key: str, base: str, digits: int = 1) -> str:
    """What ``variant`` adds to ``key`` (or a sum of keys) over ``base``, medians: ``+1.1 ms``."""
    a, b = median_row(doc["runs"][variant]), median_row(doc["runs"][base])
    return f"{_figure(a, key) - _figure(b, key):+.{digits}f} ms".replace("-", "\u2212")


def ceiling_share(doc: dict[str, Any], ceiling: float, *variants: str) -> str:
    """The throughput of ``variants``' runs over ``ceiling`` (pods/s), lowest to highest: ``0.41–0.49``."""
    xs = sorted(r["throughput"] / ceiling for v in variants for r in doc["runs"][v] if r["throughput"] is not None)
    lo, hi = f"{xs[0]:.2f}", f"{xs[-1]:.2f}"
    return lo if lo == hi else f"{lo}–{hi}"


def limited(doc: dict[str, Any], variant: str) -> str:
    """What limited ``variant``'s runs, each verdict once: ``apiserver``, ``apiserver, host``."""
    return str(median_row(doc["runs"][variant])["limited_by"])


def recovery(doc: dict[str, Any], variant: str, event: int) -> str:
    """Seconds until the binding rate was back after chaos event ``event`` (0: the scenario's first), the range of
    ``variant``'s runs: ``8.8 s``, ``4.1–4.6 s``; ``not back`` where a run's never was."""
    if not any(f"recovery_{event}" in r for r in doc["runs"][variant]):
        raise KeyError(f"{variant}'s runs have no chaos event {event}")
    xs = [r.get(f"recovery_{event}") for r in doc["runs"][variant]]
    if any(x is None for x in xs):
        return "not back in every run"
    return ranged(xs, ".1f", unit=" s")


def seconds(doc: dict[str, Any], variant: str, key: str) -> str:
    """A per-run time in seconds (``stop_0``, ``down_0``, ``reacted_0``, ``gap_pod``…), the range of ``variant``'s
    runs: ``3.3 s``, ``3.1–3.6 s`` (two decimals when every run's is under a second)."""
    xs = [r[key] for r in doc["runs"][variant] if r.get(key) is not None]
    if not xs:
        raise KeyError(f"{variant}'s runs have no {key}")
    return ranged(xs, ".2f" if max(xs) < 1 else ".1f", unit=" s")


def run_seconds(doc: dict[str, Any]) -> str:
    """Every run of every variant end to end, as a range: ``10.8–19.6 s a run``."""
    xs = [r["seconds"] for rs in doc["runs"].values() for r in rs if r.get("seconds") is not None]
    if not xs:
        raise KeyError("no run has its seconds end to end")
    return ranged(xs, ".1f", unit=" s") + " a run"


def first_available(doc: dict[str, Any], variant: str) -> str:
    """The claims by the alternative allocated (a ``first_available`` request), the range of ``variant``'s runs:
    ``whole 244–245, 3g-40gb 47–49``."""
    rs = [r.get("first_available") or {} for r in doc["runs"][variant]]
    names = sorted({k for r in rs for k in r})
    if not names:
        raise KeyError(f"{variant}'s runs allocated no claim by a first-available alternative")
    cells = []
    for k in names:
        lo, hi = min(r.get(k, 0) for r in rs), max(r.get(k, 0) for r in rs)
        cells.append(f"{k} {lo}" if lo == hi else f"{k} {lo}–{hi}")
    return ", ".join(cells)


def throughput(doc: dict[str, Any], *variants: str) -> str:
    """The range of ``variants``' runs' throughput: ``166.8–198.4 pods/s``."""
    xs = sorted(r["throughput"] for v in variants for r in doc["runs"][v] if r["throughput"] is not None)
    return f"{xs[0]:.1f}–{xs[-1]:.1f} pods/s"


def arms(given: list[str]) -> dict[str, list[str]]:
    """``--arm NAME=SET;SET`` as ``{NAME: [SET, SET]}`` (an empty list after ``NAME=``: the scenario as written)."""
    out: dict[str, list[str]] = {}
    for a in given:
        name, eq, sets = a.partition("=")
        if not eq or not name or "/" in name:
            raise SystemExit(f"--arm {a!r}: expected NAME=SET;SET (a name without '/', then --set overrides)")
        out[name] = [x.strip() for x in sets.split(";") if x.strip()]
    return out


def refuse_folded_arms(root: Path) -> None:
    """Runs kept by ``--arm`` (``ROOT/NAME/<scenario>/<run>``) read without their arms would fold every arm's runs of a
    variant into one row: refused in one line, naming the arms."""
    kept = [p.relative_to(root).parts for p in root.rglob("summary.json")]
    named = sorted({parts[0] for parts in kept if len(parts) == 4})
    if named:
        raise SystemExit(f"{root} holds the runs of arms ({', '.join(named)}): give their --arm again, or each "
                         "variant's runs of every arm fold into one row")


def run_arms(args: argparse.Namespace, scenario: Path, sets: list[str], arm: dict[str, list[str]]) -> Path:
    """Each repeat runs every arm once, in the order given (interleaved), into ``OUT/NAME``; ``--runs`` reads them."""
    if args.runs is not None:
        return Path(args.runs)
    import tempfile

    root = Path(args.out or tempfile.mkdtemp(prefix=f"bench-{scenario.stem}-"))
    for _ in range(args.repeat):
        for name, extra in arm.items():
            run_scenario(scenario, root / name, args.variant, 1, [*sets, *extra])
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", type=Path)
    run_options(ap)
    ap.add_argument("--set", action="append", default=[], dest="sets", help="a scenario override, as `run --set`")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=SET;SET",
                    help="an arm of --set overrides, run once per repeat beside the others (repeatable)")
    ap.add_argument("--columns", default="throughput,latency,algorithm,cpu,limited",
                    help=f"the table's columns, of: {', '.join(COLUMNS)}")
    args = ap.parse_args()
    arm = arms(args.arm)
    if args.runs is not None and not arm:
        refuse_folded_arms(Path(args.runs))
    root = run_arms(args, args.scenario, args.sets, arm) if arm else runs_root(args, args.scenario, args.sets)
    from kwokbench.scenario.loading import load_scenario

    scenario = args.scenario.resolve()
    order = [v.name for v in load_scenario(scenario, args.sets).schedulers]
    options = f" {scenario.relative_to(REPO)}" + "".join(f" --set {shlex.quote(s)}" for s in args.sets)
    if arm:
        runs: dict[str, list[dict[str, Any]]] = {}
        for name in arm:
            for v, rs in collect(root / name, row, order).items():
                runs[name if len(order) == 1 else f"{name}/{v}"] = rs
        options += "".join(f" --arm {shlex.quote(f'{n}=' + ';'.join(x))}" for n, x in arm.items())
        doc = provenance(root, runs, scenario, "bench_scenario.py", options, list(runs))
    else:
        runs = collect(root, row, order)
        doc = provenance(root, runs, scenario, "bench_scenario.py", options, order)
    if args.data:
        write(args.data, doc)
    print(table(doc, args.columns))


if __name__ == "__main__":
    main()
