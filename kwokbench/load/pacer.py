"""Arrival schedules as pure functions: offsets (seconds after t0) at which object i is due.

Open loop: the schedule is fixed before the first request and never adapts to the server, so a slow
apiserver shows up as latency and lateness instead of silently lowering the offered load.
"""

from __future__ import annotations

import math

import numpy as np

from kwokbench.scenario import Arrival, PoissonArrival, QpsArrival, RampArrival


def schedule(arrival: Arrival, count: int, seed: int = 0) -> np.ndarray:
    """Due offsets in seconds, non-decreasing, first at 0 (or the first Poisson gap)."""
    i = np.arange(count, dtype=np.float64)
    if isinstance(arrival, QpsArrival):
        return i / arrival.qps
    if isinstance(arrival, PoissonArrival):
        gaps = np.random.default_rng(seed).exponential(1.0 / arrival.rate, size=count)
        return np.cumsum(gaps) - gaps[0] if count else gaps
    if isinstance(arrival, RampArrival):
        return _ramp(i, arrival.start_qps, arrival.end_qps, arrival.duration_seconds)
    raise TypeError(f"unknown arrival {arrival!r}")  # pragma: no cover


def _ramp(i: np.ndarray, a: float, b: float, dur: float) -> np.ndarray:
    """Invert N(t) = a·t + (b-a)·t²/(2·dur) for t <= dur, then a constant rate b."""
    n_ramp = (a + b) * dur / 2.0
    out = np.empty_like(i)
    in_ramp = i < n_ramp
    k = (b - a) / dur
    if math.isclose(k, 0.0):
        out[in_ramp] = i[in_ramp] / a
    else:
        out[in_ramp] = (-a + np.sqrt(a * a + 2.0 * k * i[in_ramp])) / k
    out[~in_ramp] = dur + (i[~in_ramp] - n_ramp) / b
    return out


def target_rate(arrival: Arrival) -> float:
    """The nominal offered rate, for achieved/target reporting (a ramp reports its end rate)."""
    if isinstance(arrival, QpsArrival):
        return arrival.qps
    if isinstance(arrival, PoissonArrival):
        return arrival.rate
    return arrival.end_qps


def peak_rate(arrival: Arrival) -> float:
    """The highest nominal rate of the schedule (a Poisson schedule's mean rate)."""
    if isinstance(arrival, RampArrival):
        return max(arrival.start_qps, arrival.end_qps)
    return target_rate(arrival)


def connection_cap(arrival: Arrival, requested: int | None = None) -> int:
    """How many connections the submitter may open: enough for 100 ms per request on the wire at the peak
    offered rate (Little's law), at least 64 and at most 1024, unless the scenario sets it."""
    if requested:
        return requested
    return int(min(1024, max(64, math.ceil(peak_rate(arrival) * 0.1))))
