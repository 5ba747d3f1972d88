"""Runs grouped by scheduler variant: the figures a comparison report leads with.

Two variants × 4 repeats are two things compared, not eight runs: per variant the mean of each figure
with a t-based 95% interval over its runs, and a sentence saying which variant is faster and by how much
(a Welch interval of the difference of means, so "not distinguishable" is said when it is so). Pure: from
stored summaries only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scipy.special import stdtrit  # Student's t quantile (scipy.stats.t's own, without importing scipy.stats)

from kwokbench.store import StoredRun

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """Mean of a figure over a variant's runs, with its t-based interval (None below 2 runs)."""

    values: tuple[float, ...]
    mean: float | None
    low: float | None = None
    high: float | None = None


def t_interval(values: Sequence[float | None], level: float = LEVEL) -> Estimate:
    v = tuple(float(x) for x in values if x is not None and math.isfinite(x))
    if not v:
        return Estimate(v, None)
    n, mean = len(v), sum(v) / len(v)
    if n < 2:
        return Estimate(v, mean)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
    half = float(stdtrit(n - 1, 0.5 + level / 2)) * sd / math.sqrt(n)
    return Estimate(v, mean, mean - half, mean + half)


def welch_interval(a: Estimate, b: Estimate, level: float = LEVEL) -> tuple[float, float] | None:
    """Interval of mean(a) − mean(b) (Welch's t, unequal variances); None below 2 runs a side."""
    na, nb = len(a.values), len(b.values)
    if na < 2 or nb < 2 or a.mean is None or b.mean is None:
        return None
    va = sum((x - a.mean) ** 2 for x in a.values) / (na - 1) / na
    vb = sum((x - b.mean) ** 2 for x in b.values) / (nb - 1) / nb
    d = a.mean - b.mean
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    half = float(stdtrit(df, 0.5 + level / 2)) * se
    return d - half, d + half


@dataclass(frozen=True)
class Variant:
    name: str
    runs: int
    """Complete runs, the ones the figures come from."""
    ignored: tuple[str, ...]
    """Statuses of the variant's runs that did not complete (left out)."""
    throughput: Estimate
    """Pods scheduled per second (summary throughput.average)."""
    p50: Estimate
    """Created → scheduled latency p50, seconds."""
    p99: Estimate
    """Created → scheduled latency p99, seconds."""
    unscheduled: tuple[int, ...]
    """Pods left unscheduled, per run."""
    cpu_per_pod: Estimate
    """The scheduler's CPU seconds per pod scheduled (summary scheduler.cpu_seconds_per_pod)."""
    writes_per_pod: Estimate
    """The apiserver's writes per pod scheduled, all resources (summary apiserver.writes)."""


def by_variant(runs: list[StoredRun]) -> list[Variant]:
    """One entry per variant (meta variant.name), in the order variants first appear."""
    groups: dict[str, list[StoredRun]] = {}
    for r in runs:
        groups.setdefault(str((r.meta.get("variant") or {}).get("name", "?")), []).append(r)
    out = []
    for name, members in groups.items():
        done = [r.summary or {} for r in members if r.meta.get("status") == "complete" and r.summary]
        lat = [(s.get("latency") or {}).get("created_to_scheduled") or {} for s in done]
        out.append(Variant(
            name, len(done),
            tuple(str(r.meta.get("status")) for r in members if r.meta.get("status") != "complete" or not r.summary),
            t_interval([(s.get("throughput") or {}).get("average") for s in done]),
            t_interval([x.get("p50") for x in lat]), t_interval([x.get("p99") for x in lat]),
            tuple(int(s.get("pods_unscheduled") or 0) for s in done),
            t_interval([(s.get("scheduler") or {}).get("cpu_seconds_per_pod") for s in done]),
            t_interval([_writes(s) for s in done])))
    return out


def _writes(summary: dict[str, Any]) -> float | None:
    per_pod = (((summary.get("apiserver") or {}).get("writes") or {}).get("per_pod") or {})
    return float(sum(per_pod.values())) if per_pod else None


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%".replace("-", "−")  # a minus sign, not a hyphen


@dataclass(frozen=True)
class _Difference:
    relative: float
    """mean(a) / mean(b) − 1."""
    interval: tuple[float, float] | None
    """Welch 95% interval of mean(a) − mean(b), relative to mean(b)."""

    @property
    def clear(self) -> bool:
        """The interval excludes no difference (or there is none: one run a side says nothing either way)."""
        return self.interval is not None and (self.interval[0] > 0 or self.interval[1] < 0)

    def interval_text(self) -> str:
        return "" if self.interval is None else f"95% interval {_pct(self.interval[0])} to {_pct(self.interval[1])}"

    def text(self) -> str:
        return _pct(self.relative) + (f", {self.interval_text()}" if self.interval else "")


def _difference(a: Estimate, b: Estimate) -> _Difference | None:
    if a.mean is None or b.mean is None or not b.mean:
        return None
    ci = welch_interval(a, b)
    return _Difference(a.mean / b.mean - 1, (ci[0] / b.mean, ci[1] / b.mean) if ci else None)


def headline(variants: list[Variant]) -> list[str]:
    """Which variant is faster and by how much: the fastest (by mean throughput) against each other one,
    throughput then p99 latency, each with the 95% interval of the difference."""
    ranked = sorted((v for v in variants if v.throughput.mean is not None), key=lambda v: -(v.throughput.mean or 0))
    if len(ranked) < 2:
        return []
    best, out = ranked[0], []
    for other in ranked[1:]:
        tp = _difference(best.throughput, other.throughput)
        assert tp is not None and best.throughput.mean is not None and other.throughput.mean is not None
        runs = (f"{best.runs} run{'s' if best.runs > 1 else ''} each" if best.runs == other.runs
                else f"{best.runs} and {other.runs} runs")
        figures = f"{best.throughput.mean:.1f} vs {other.throughput.mean:.1f} pods/s"
        more = f"{best.name} schedules {tp.relative * 100:.1f}% more pods/s than {other.name}"
        if tp.interval is None:
            line = f"{more} ({figures}, {runs}: no interval below 2 complete runs a variant; use --repeat 3 or more)"
        elif tp.clear:
            line = f"{more} ({figures}; {tp.interval_text()}; {runs})"
        else:
            line = (f"{best.name} and {other.name} are not distinguishable in throughput ({figures}; {tp.text()}; "
                    f"{runs})")
        p99 = _difference(best.p99, other.p99)
        if p99 is not None and best.p99.mean is not None and other.p99.mean is not None:
            line += (f"; p99 latency {best.p99.mean * 1000:.0f} vs {other.p99.mean * 1000:.0f} ms ({p99.text()}"
                     + ("" if p99.clear or p99.interval is None else ": not distinguishable") + ")")
        out.append(line + ".")
    return out


def _estimate(e: Estimate, unit: str, scale: float = 1.0, digits: int = 1) -> str:
    if e.mean is None:
        return "-"
    text = f"{e.mean * scale:.{digits}f}" + (f" {unit}" if unit else "")
    if e.low is not None and e.high is not None:
        text += f" ({e.low * scale:.{digits}f} – {e.high * scale:.{digits}f})"
    return text


def rows(variants: list[Variant]) -> tuple[list[str], list[list[str]]]:
    """The variant table: mean (95% interval) of each figure over a variant's complete runs."""
    columns = ["variant", "runs", "throughput, mean (95% interval)", "latency p50", "latency p99",
               "pods unscheduled", "scheduler CPU per pod", "apiserver writes per pod"]
    out = []
    for v in variants:
        runs = str(v.runs) + (f" ({len(v.ignored)} ignored: {', '.join(v.ignored)})" if v.ignored else "")
        u = v.unscheduled
        unscheduled = (f"{sum(u)} in {sum(1 for x in u if x)} of {len(u)} runs (max {max(u)})" if any(u)
                       else "0" if u else "-")
        out.append([v.name, runs, _estimate(v.throughput, "pods/s"), _estimate(v.p50, "ms", 1000, 0),
                    _estimate(v.p99, "ms", 1000, 0), unscheduled, _estimate(v.cpu_per_pod, "ms", 1000, 2),
                    _estimate(v.writes_per_pod, "", 1, 2)])
    return columns, out


def view(runs: list[StoredRun]) -> dict[str, Any]:
    """What the HTML report shows first: the table and the headline sentences."""
    variants = by_variant(runs)
    columns, table = rows(variants)
    return {"columns": columns, "rows": table, "headline": headline(variants)}
