"""Evidence of how fast the host was while a run measured: CPU steal and load over the window, and a
short fixed CPU calibration before and after it.

On a shared machine the same scenario reads p99 30 ms idle and 300 ms an hour later with the control
plane's CPU seconds unchanged: the host got slower, not the scheduler. A gate comparing two groups needs
to know that, so every run records it and ``gate`` warns when the groups ran on hosts of different speed.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

CALIBRATION_BYTES = 64 * 2**20
"""SHA-256 over this many bytes (one core, ~65 ms here): long enough to be measured with a monotonic
clock, short enough to run twice per run."""
CALIBRATION_ROUNDS = 3
"""Repeated, the fastest kept: a single round is easily hit by one preemption."""


def calibrate(rounds: int = CALIBRATION_ROUNDS) -> float:
    """Seconds the fixed CPU work took (the fastest of ``rounds``): lower is a faster host."""
    chunk = b"\x5a" * 2**22
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        h = hashlib.sha256()
        for _ in range(CALIBRATION_BYTES // len(chunk)):
            h.update(chunk)
        h.digest()
        best = min(best, time.perf_counter() - t)
    return best


def cpu_times(stat: Path = Path("/proc/stat")) -> dict[str, float] | None:
    """The aggregate ``cpu`` line of /proc/stat in clock ticks (None where there is none)."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    if first[0] != "cpu" or len(first) < 9:
        return None
    return {n: float(v) for n, v in zip(names, first[1:9], strict=True)}


def shares(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float | None]:
    """CPU steal and busy shares of the host between two /proc/stat readings (pure)."""
    if not before or not after:
        return {"cpu_steal_fraction": None, "cpu_busy_fraction": None}
    d = {k: after[k] - before[k] for k in before}
    total = sum(d.values())
    if total <= 0:
        return {"cpu_steal_fraction": None, "cpu_busy_fraction": None}
    return {"cpu_steal_fraction": d["steal"] / total,
            "cpu_busy_fraction": 1.0 - (d["idle"] + d["iowait"]) / total}


def load1(path: Path = Path("/proc/loadavg")) -> float | None:
    try:
        return float(path.read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


class HostNoise:
    """Start before the measured window, stop after it: ``stop()`` returns the run's ``host`` section."""

    def __init__(self, every: float = 1.0) -> None:
        self._every = every
        self._stop = threading.Event()
        self._load: list[float] = []
        self._thread = threading.Thread(target=self._sample, name="kwokbench-host-load", daemon=True)
        self._before_cal = 0.0
        self._before: dict[str, float] | None = None

    def start(self) -> HostNoise:
        self._before_cal = calibrate()
        self._before = cpu_times()
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            v = load1()
            if v is not None:
                self._load.append(v)
            self._stop.wait(self._every)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        after = cpu_times()
        return {"calibration_seconds": {"before": self._before_cal, "after": calibrate()},
                **shares(self._before, after), "load1_max": max(self._load) if self._load else None}
