"""Offered is not accepted: the rates of a submission phase measured where each one happens.

Per request the submitter keeps when it was due (``scheduled``), when the pacer handed it to the
connection pool (``dispatched``), when a connection carried it (``sent``) and when its answer came
(``dispatched + latency``). From them, per phase:

- *offered*: the schedule's own rate (what the scenario asked for);
- *sent*: requests on the wire per second;
- *accepted*: 2xx answers per second, from their completion times (what the apiserver took);
- the apiserver's own view as cross-checks: pods first seen by the watch (ms resolution), their
  ``creationTimestamp`` (1 s resolution), and the create counter of the 1 s scrapes (added by
  :func:`kwokbench.metrics.derive.create_rates`).

Each rate is given over the **whole phase** (events / time from the first due request to the last
event, plus one schedule gap, so a perfect server reads ~100%) and over the **steady window** (the
middle 80% of the schedule: events inside it / its length, so warm-up and the tail do not blur a
server that fell behind). ``achieved_ratio`` is accepted / offered in the steady window when it is long
enough to judge (:data:`STEADY_MIN_SECONDS`, :data:`STEADY_MIN_EVENTS`), else over the whole phase (where
the last answers' latency counts against a short phase); below :data:`ACCEPTED_MIN` the phase is flagged
with a sentence saying where requests waited: for a connection (harness side), on the wire (server
side), or in the pacer (kwokbench's own CPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

ACCEPTED_MIN = 0.95
"""A phase whose accepted rate is below this share of the offered rate did not get its load."""
STEADY_TRIM = 0.10
"""Share of the schedule cut at each end for the steady window."""
SLOW_WIRE = 0.1
"""Seconds on the wire (median) from which the server, not the connection cap, is the limit."""
LATE_PACER = 0.1
"""Seconds of median pacer lateness from which kwokbench itself fell behind its schedule."""
STEADY_MIN_SECONDS = 1.0
STEADY_MIN_EVENTS = 50
OK = (200, 201, 202)


def _pct(values: np.ndarray) -> dict[str, float | None]:
    v = values[np.isfinite(values)]
    if not len(v):
        return {"p50": None, "p99": None, "max": None}
    return {"p50": float(np.percentile(v, 50)), "p99": float(np.percentile(v, 99)), "max": float(v.max())}


def normalise_requests(req: pd.DataFrame) -> pd.DataFrame:
    """Requests of any stored version as the current columns. Runs before the split (request log v1)
    stamped ``sent`` when the pacer handed a request over: that is ``dispatched``; when it reached a
    connection was not recorded (NaN)."""
    if "dispatched" in req.columns or not len(req.columns):
        return req
    return req.assign(dispatched=req["sent"], sent=np.nan)


def whole_rate(times: np.ndarray, start: float, gap: float) -> float | None:
    """Events per second from ``start`` to the last event (plus one schedule gap)."""
    t = times[np.isfinite(times)]
    if not len(t):
        return None
    span = float(t.max() - start) + gap
    return len(t) / span if span > 0 else None


def window_rate(times: np.ndarray, window: tuple[float, float]) -> float | None:
    lo, hi = window
    if hi <= lo:
        return None
    t = times[np.isfinite(times)]
    return float(((t >= lo) & (t < hi)).sum()) / (hi - lo)


def phase_rates(r: pd.DataFrame, created: np.ndarray | None = None,
                creation_timestamps: np.ndarray | None = None) -> dict[str, Any]:
    """The figures of one phase's requests (and, when known, its pods as the apiserver saw them)."""
    sched = r["scheduled"].to_numpy(dtype=np.float64)
    dispatched = r["dispatched"].to_numpy(dtype=np.float64)
    sent = r["sent"].to_numpy(dtype=np.float64)
    answered = dispatched + r["latency"].to_numpy(dtype=np.float64)
    status = r["status"].to_numpy()
    ok = np.isin(status, OK)
    s = sched[np.isfinite(sched)]
    if not len(s):
        return {}
    start, last = float(s.min()), float(s.max())
    offered = (len(s) - 1) / (last - start) if len(s) > 1 and last > start else None
    gap = 1.0 / offered if offered else 0.0
    trim = (last - start) * STEADY_TRIM
    window = (start + trim, last - trim)
    times = {"offered": sched, "sent": sent, "accepted": np.where(ok, answered, np.nan)}
    if created is not None:
        times["apiserver_watch"] = created
    whole = {k: (offered if k == "offered" else whole_rate(v, start, gap)) for k, v in times.items()}
    steady = {k: window_rate(v, window) for k, v in times.items()}
    if creation_timestamps is not None:
        ct = creation_timestamps[np.isfinite(creation_timestamps)]
        # 1 s resolution: the span between the first and the last whole second seen
        whole["apiserver_creation_timestamp"] = ((len(ct) - 1) / float(ct.max() - ct.min())
                                                 if len(ct) > 1 and ct.max() > ct.min() else None)
    fin = answered[np.isfinite(answered)]
    return {"window": [start, last], "steady_window": list(window), "whole": whole, "steady": steady,
            "last_answer": float(fin.max()) if len(fin) else None, "gap": gap,
            "send_lateness_seconds": _pct(dispatched - sched),
            "connection_wait_seconds": _pct(sent - dispatched),
            "wire_seconds": _pct(answered - sent)}


def acceptance_ratio(rates: dict[str, Any]) -> tuple[float | None, str]:
    """accepted / offered, and the window it was judged over (``steady`` or ``whole``)."""
    steady, whole = rates.get("steady") or {}, rates.get("whole") or {}
    lo, hi = rates.get("steady_window") or (0.0, 0.0)
    if (steady.get("offered") and steady.get("accepted") is not None and hi - lo >= STEADY_MIN_SECONDS
            and steady["offered"] * (hi - lo) >= STEADY_MIN_EVENTS):
        return steady["accepted"] / steady["offered"], "steady"
    if whole.get("offered") and whole.get("accepted") is not None:
        return whole["accepted"] / whole["offered"], "whole"
    return None, "whole"


def verdict(ph: dict[str, Any], server: str | None = None) -> str | None:
    """Why a phase did not get its offered load, as one sentence with the evidence (None: it did).

    ``server`` ("apiserver" or "etcd") is the run's own verdict (:mod:`kwokbench.figures.bottleneck`) when it found
    that component saturated: then busy connections and a lagging pacer are the server's doing (its slow
    answers held every connection), and the sentence says so instead of blaming the harness, so a run has
    one cause wherever it is printed."""
    ratio = ph.get("achieved_ratio")
    if ratio is None or ratio >= ACCEPTED_MIN:
        return None
    window = ph.get("achieved_ratio_window", "whole")
    rates = ph.get("rates", {}).get(window, {})
    acc, off = rates.get("accepted") or 0.0, rates.get("offered") or 0.0
    head = (f"accepted {acc:.0f}/s of {off:.0f}/s offered ({ratio * 100:.0f}%"
            + (", steady window)" if window == "steady" else ")"))
    requests, created = ph.get("requests") or 0, ph.get("created") or 0
    if requests and (requests - created) / requests > 1 - ACCEPTED_MIN:
        errors = ", ".join(f"{k}: {v}" for k, v in (ph.get("errors") or {}).items())
        made = ph.get("made_unanswered") or 0
        made_s = f"; {made} of them made their pod all the same (answer lost)" if made else ""
        return f"creates failed: {head}; {requests - created} of {requests} requests failed ({errors}){made_s}"
    wait = ph.get("rates", {}).get("connection_wait_seconds", {})
    wire = ph.get("rates", {}).get("wire_seconds", {})
    late = ph.get("rates", {}).get("send_lateness_seconds", {})
    conns = ph.get("connections") or {}
    cap, at_cap = conns.get("cap"), conns.get("waited_at_cap", 0)
    wire50 = wire.get("p50")
    if server:
        tail = f", p99 {wire['p99']:.2f} s" if wire.get("p99") is not None else ""
        held = (f" while all {cap} connections were busy ({at_cap} requests waited up to "
                f"{wait.get('max') or 0:.2f} s for one)" if cap and at_cap else "")
        return (f"submission overloaded the {server}: {head}; requests took "
                + (f"{wire50:.2f} s on the wire (p50{tail})" if wire50 is not None else "an unrecorded time")
                + f"{held}; the {server} was saturated, so raising workloads[].connections would not help")
    if (late.get("p50") or 0.0) > LATE_PACER:
        return (f"harness-bound: {head}; kwokbench's pacer fell behind its schedule (lateness p50 "
                f"{late['p50']:.2f} s, max {late.get('max') or 0:.1f} s)")
    if cap and at_cap and wire50 is not None and wire50 < SLOW_WIRE:
        return (f"harness-bound: {head}; all {cap} connections were busy ({at_cap} requests waited up to "
                f"{wait.get('max') or 0:.2f} s for one) while the server answered in {wire50 * 1000:.0f} ms "
                f"(raise workloads[].connections)")
    waited = (f"requests waited up to {wait['max']:.1f} s for one of {cap} connections while each took "
              f"{wire50:.2f} s on the wire" if cap and at_cap and wire50 is not None and wait.get("max")
              else f"requests took {wire50:.2f} s on the wire (p50)" if wire50 is not None
              else "when requests reached a connection was not recorded (older run)")
    return f"submission overloaded the apiserver: {head}; {waited}"


def add_counter_rates(submit: list[dict[str, Any]], counter: list[dict[str, float | None]]) -> None:
    """Put the apiserver counter's rates (:func:`kwokbench.metrics.derive.create_rates`) beside the others."""
    for ph, c in zip(submit, counter, strict=True):
        for window in ("whole", "steady"):
            if ph.get("rates", {}).get(window) is not None:
                ph["rates"][window]["apiserver_counter"] = c[window]
