"""Regression gates over groups of stored runs: verdicts as data, never printed here.

Exit codes (the CLI maps them): 0 every metric passes, 1 any regression, 3 otherwise inconclusive;
bad input is 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kwokbench.errors import ScenarioError
from kwokbench.stats import Comparison, compare
from kwokbench.store import StoredRun


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    higher_is_better: bool
    get: Callable[[dict[str, Any]], float | None]


def _path(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    def get(summary: dict[str, Any]) -> float | None:
        cur: Any = summary
        for k in keys:
            if not isinstance(cur, dict) or cur.get(k) is None:
                return None
            cur = cur[k]
        return float(cur)

    return get


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("throughput", "pods scheduled per second over the pending window (watch)", True,
           _path("throughput", "average")),
    Metric("binding_rate", "apiserver binding POSTs per second over the pending window", True,
           _path("binding_rate", "average")),
    Metric("latency_p50", "p50 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p50")),
    Metric("latency_p90", "p90 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p90")),
    Metric("latency_p99", "p99 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p99")),
    Metric("attempt_p99", "p99 scheduling attempt duration (scheduler histogram)", False,
           _path("scheduler", "scheduling_attempt_duration_seconds", "p99")),
]}
DEFAULT_GATES = ["throughput:10%", "latency_p99:10%"]


def parse_gate(spec: str) -> tuple[Metric, float]:
    """``NAME:max-regression`` with the regression as ``10%`` or ``0.1``."""
    m = re.fullmatch(r"([a-z0-9_]+):(\d+(?:\.\d+)?)(%?)", spec.strip())
    if not m:
        raise ScenarioError(f"--metric {spec!r}: expected NAME:MAX_REGRESSION, e.g. throughput:10%")
    name, value, pct = m.groups()
    if name not in METRICS:
        raise ScenarioError(f"--metric {spec!r}: unknown metric {name!r} (known: {', '.join(METRICS)})")
    frac = float(value) / 100 if pct else float(value)
    if not 0 < frac < 1:
        raise ScenarioError(f"--metric {spec!r}: the allowed regression must be between 0 and 100%")
    return METRICS[name], frac


def values(runs: list[StoredRun], metric: Metric) -> list[float]:
    out = []
    for r in runs:
        v = metric.get(r.summary or {}) if r.meta.get("status") == "complete" else None
        if v is not None:
            out.append(v)
    return out


@dataclass(frozen=True)
class GateResult:
    comparisons: list[Comparison]
    warnings: list[str]

    @property
    def exit_code(self) -> int:
        verdicts = {c.verdict for c in self.comparisons}
        return 1 if "regression" in verdicts else 3 if "inconclusive" in verdicts else 0


def comparability(runs: list[StoredRun]) -> list[str]:
    """Warnings for runs that differ in anything but what is being compared."""
    warnings = []
    for what, key in (("toolchain versions", lambda m: m.get("toolchain")),
                      ("host CPU", lambda m: (m.get("host", {}).get("cpu_model"), m.get("host", {}).get("cpus"))),
                      ("scheduler client QPS/burst", lambda m: (m.get("fairness", {}).get("scheduler_client_qps"),
                                                                m.get("fairness", {}).get("scheduler_client_burst"))),
                      ("cluster size", lambda m: m.get("cluster", {}).get("nodes"))):
        seen = {repr(key(r.meta)) for r in runs}
        if len(seen) > 1:
            warnings.append(f"not comparable: runs differ in {what} ({'; '.join(sorted(seen))})")
    incomplete = [f"{r.path.name} ({r.meta.get('status')})" for r in runs if r.meta.get("status") != "complete"]
    if incomplete:
        warnings.append(f"ignored runs that did not complete: {', '.join(incomplete)}")
    return warnings


def scenario_gates(runs: list[StoredRun]) -> list[str]:
    """The gates the candidate runs' scenario declares (the same for all of them, or none)."""
    declared = {tuple(r.meta.get("scenario", {}).get("gates") or []) for r in runs}
    return list(declared.pop()) if len(declared) == 1 else []


def gate(baseline: list[StoredRun], candidate: list[StoredRun], specs: list[str]) -> GateResult:
    if not baseline or not candidate:
        raise ScenarioError("gate needs at least one baseline and one candidate run")
    comps = []
    for spec in specs or scenario_gates(candidate) or DEFAULT_GATES:
        metric, max_reg = parse_gate(spec)
        comps.append(compare(metric.name, values(baseline, metric), values(candidate, metric),
                             metric.higher_is_better, max_reg))
    warnings = comparability(baseline + candidate)
    for c in comps:
        if c.noisy:
            warnings.append(f"{c.metric}: noisy results (stdev >= 10% of the mean in a group)")
    return GateResult(comps, warnings)
