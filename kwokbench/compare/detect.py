"""Change points in a metric's history across commits: verdicts as data, never printed here.

E-divisive means (Matteson & James 2014) as MongoDB runs it in CI, from its library
``signal-processing-algorithms``: the series is split where the energy statistic between the two sides is
largest, kept when a permutation test finds it significant, and split again on each side. A change point
is then reported only when the medians of the segments on its two sides differ by at least the metric's
minimum magnitude (``--metric throughput:-10%``), and never by less than the gate's noise floor: a
significant but small step is noise for a regression history.

The series is in commit order: each commit's runs are one point (their median) placed where the first
of them started; a run that recorded no commit is a point of its own. Runs from different hosts are made
comparable by the host's ceiling (scheduler_perf on that machine): rates become shares of it, times are
multiplied by it.

Exit codes (the CLI maps them): 0 no change point that is new, 1 a new (not acknowledged) regression,
3 a metric has too little history; bad input is 2.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kwokbench.compare.gate import METRICS, Metric
from kwokbench.errors import ScenarioError, ToolchainError

MIN_POINTS = 7
"""Commits a metric needs: on 6 or fewer even a clean 30% step is never significant at p <= 0.05 (too
few distinct orders for the permutation test). A change is seen once >= 2 commits lie on each side."""
MIN_SEGMENT = 2
"""Commits a change needs on each side: one commit apart from its neighbours is an outlier (as the first,
cold run of benchmarks/data/noise.json is), not a change; scheduler_perf waits for three in a row."""
SIGNAL_PROCESSING = "signal-processing-algorithms==2.1.6"
"""The E-divisive means library and version (installed by ``make install`` without its declared dependencies)."""
PVALUE = 0.05
PERMUTATIONS = 100
"""The permutation test's significance and size (the library's defaults, as MongoDB's CI uses them)."""
DEFAULT_SPECS = ["throughput:-10%", "latency_p99:+40%"]
NORMALISE = ("auto", "ceiling", "none")
RATES = {"throughput", "binding_rate", "gangs_per_second"}
"""Per second: divided by the ceiling."""
TIMES = {"latency_p50", "latency_p90", "latency_p99", "attempt_p99", "scheduler_cpu_per_pod", "claim_allocation_p50",
         "claim_allocation_p99", "gang_place_p90"}
"""Seconds (per pod): multiplied by the ceiling. Every other metric (counts, shares, a duet's ratios, which the
host cancels out of already) is taken as it is."""


@dataclass(frozen=True)
class MetricSpec:
    metric: Metric
    threshold: float
    """The minimum relative change reported (the larger of the asked one and the metric's noise floor)."""
    worse_up: bool
    """A rise is a regression (``+``), else a drop (``-``)."""

    @property
    def spec(self) -> str:
        return f"{self.metric.name}:{'+' if self.worse_up else '-'}{self.threshold * 100:g}%"


def parse_spec(text: str) -> MetricSpec:
    """``NAME:+20%`` / ``NAME:-10%`` (or ``0.1``): the sign says which way is a regression (without one: the
    gate's direction of the metric), the size the smallest change worth reporting."""
    m = re.fullmatch(r"([a-z0-9_]+):([+-]?)(\d+(?:\.\d+)?)(%?)", text.strip())
    if not m:
        raise ScenarioError(f"--metric {text!r}: expected NAME:+MIN% or NAME:-MIN%, e.g. throughput:-10%")
    name, sign, number, pct = m.groups()
    if name not in METRICS:
        raise ScenarioError(f"--metric {text!r}: unknown metric {name!r} (known: {', '.join(METRICS)})")
    frac = float(number) / 100 if pct else float(number)
    if not 0 < frac < 10:
        raise ScenarioError(f"--metric {text!r}: the minimum change must be above 0 and below 1000%")
    metric = METRICS[name]
    worse_up = sign == "+" if sign else not metric.higher_is_better
    return MetricSpec(metric, max(frac, metric.noise_floor), worse_up)


@dataclass(frozen=True)
class Ack:
    metric: str
    commit: str
    reason: str

    def mutes(self, metric: str, commit: str | None) -> bool:
        """The same metric and the commit after the change (a prefix of at least 7 characters, as git
        abbreviates, or the whole commit)."""
        return metric == self.metric and commit is not None and commit.startswith(self.commit)


def load_acks(path: Path) -> list[Ack]:
    """An ack file: YAML, a list (or ``ack:`` holding one) of ``{metric, commit, reason}``. ScenarioError
    naming the file and entry when it is unreadable or names an unknown metric."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ScenarioError(f"--ack {path}: cannot read it: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ScenarioError(f"--ack {path}: invalid YAML: {' '.join(str(e).split())}") from e
    if isinstance(doc, dict) and set(doc) == {"ack"}:
        doc = doc["ack"]
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise ScenarioError(f"--ack {path}: expected a list of {{metric, commit, reason}}")
    acks = []
    for i, entry in enumerate(doc):
        where = f"--ack {path}: entry {i + 1}"
        if not isinstance(entry, dict):
            raise ScenarioError(f"{where}: expected a mapping with metric, commit and reason")
        extra = sorted(set(entry) - {"metric", "commit", "reason"})
        missing = [k for k in ("metric", "commit", "reason") if not entry.get(k)]
        if extra:
            raise ScenarioError(f"{where}: unknown key {extra[0]!r} (an ack has metric, commit and reason)")
        if missing:
            raise ScenarioError(f"{where}: {missing[0]} is missing")
        if entry["metric"] not in METRICS:
            raise ScenarioError(f"{where}: unknown metric {entry['metric']!r} (known: {', '.join(METRICS)})")
        commit = str(entry["commit"])
        if len(commit) < 7:
            raise ScenarioError(f"{where}: commit {commit!r} is too short to name one (>= 7 characters)")
        acks.append(Ack(str(entry["metric"]), commit, str(entry["reason"])))
    return acks


@dataclass(frozen=True)
class Point:
    """One commit of a history (or one run that recorded none)."""

    commit: str | None
    ref: str | None
    started: datetime
    value: float
    runs: list[str]

    @property
    def label(self) -> str:
        return self.commit or f"(no commit) {self.runs[0]}"


@dataclass(frozen=True)
class ChangePoint:
    metric: str
    index: int
    """The position of the first point after the change in the series."""
    before: Point
    """The last commit before the change."""
    after: Point
    """The first commit after it."""
    median_before: float
    median_after: float
    magnitude: float
    """Relative change of the median of the segment after over the one before."""
    direction: str
    """``regression`` or ``improvement``."""
    points_before: int
    points_after: int
    acked: str | None = None
    """The reason of the ack that mutes it."""

    @property
    def new_regression(self) -> bool:
        return self.direction == "regression" and self.acked is None


@dataclass(frozen=True)
class SeriesResult:
    spec: MetricSpec
    points: list[Point]
    normalised: bool
    changes: list[ChangePoint] = field(default_factory=list)
    """Change points larger than the minimum magnitude, in order."""
    small: int = 0
    """Significant change points smaller than the minimum magnitude or with a single commit on one side
    (noise for this history)."""

    @property
    def enough(self) -> bool:
        return len(self.points) >= MIN_POINTS


@dataclass(frozen=True)
class DetectResult:
    series: list[SeriesResult]
    warnings: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if any(c.new_regression for s in self.series for c in s.changes):
            return 1
        return 3 if any(not s.enough for s in self.series) else 0


def _utc(t: Any) -> datetime:
    if isinstance(t, datetime):
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return datetime.min.replace(tzinfo=UTC)


def normalised_value(row: dict[str, Any], metric: Metric, by_ceiling: bool) -> float | None:
    """The row's figure, as a share of (rates) or in units of (times per pod) its host's ceiling."""
    v = row.get(metric.name)
    if v is None or v != v:
        return None
    if not by_ceiling or metric.name not in RATES | TIMES:
        return float(v)
    ceiling = float(row.get("ceiling_pods_per_second") or 0.0)
    if not ceiling > 0:  # absent, zero or NaN
        return None
    return float(v) / ceiling if metric.name in RATES else float(v) * ceiling


def points(rows: list[dict[str, Any]], metric: Metric, by_ceiling: bool = False) -> list[Point]:
    """The commits of the complete runs that have the metric, in the order they were first measured;
    each the median of its runs."""
    groups: dict[str, list[tuple[datetime, float, dict[str, Any]]]] = {}
    for r in rows:
        if r.get("status") != "complete" or (v := normalised_value(r, metric, by_ceiling)) is None:
            continue
        key = f"commit:{r['commit']}" if r.get("commit") else f"run:{r['run_id']}"
        groups.setdefault(key, []).append((_utc(r.get("started_at")), v, r))
    out = []
    for members in groups.values():
        members.sort(key=lambda m: (m[0], m[2]["run_id"]))
        first = members[0][2]
        out.append(Point(first.get("commit"), first.get("ref"), members[0][0],
                         statistics.median(v for _, v, _ in members), [m[2]["run_id"] for m in members]))
    return sorted(out, key=lambda p: (p.started, p.runs[0]))


def change_points(values: list[float], seed: int = 0) -> list[int]:
    """E-divisive means' change points (each the index of the first value after a change), sorted.
    The library's permutation test draws from numpy's global generator: seeded here, and restored."""
    import numpy as np

    try:
        from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive
    except ImportError as e:
        raise ToolchainError(f"detect needs MongoDB's signal-processing-algorithms ({e}): pip install --no-deps "
                            f"'{SIGNAL_PROCESSING}' (make install does; its declared numpy<2 would break pyarrow)"
                            ) from e

    state = np.random.get_state()
    np.random.seed(seed)
    try:
        return sorted(int(i) for i in e_divisive(np.asarray(values, dtype=float), pvalue=PVALUE,
                                                 permutations=PERMUTATIONS))
    finally:
        np.random.set_state(state)


def detect_series(spec: MetricSpec, series: list[Point], normalised: bool = False, acks: list[Ack] | None = None,
                  seed: int = 0) -> SeriesResult:
    """The change points of one metric's history larger than its minimum magnitude."""
    if len(series) < MIN_POINTS:
        return SeriesResult(spec, series, normalised)
    values = [p.value for p in series]
    cuts = change_points(values, seed)
    bounds = [0, *cuts, len(values)]
    changes, small = [], 0
    for j, i in enumerate(cuts):
        before = statistics.median(values[bounds[j]:i])
        after = statistics.median(values[i:bounds[j + 2]])
        if before == 0:
            continue
        magnitude = after / before - 1
        if abs(magnitude) < spec.threshold or min(i - bounds[j], bounds[j + 2] - i) < MIN_SEGMENT:
            small += 1
            continue
        worse = magnitude > 0 if spec.worse_up else magnitude < 0
        ack = next((a for a in acks or [] if a.mutes(spec.metric.name, series[i].commit)), None)
        changes.append(ChangePoint(spec.metric.name, i, series[i - 1], series[i], before, after, magnitude,
                                   "regression" if worse else "improvement", i - bounds[j], bounds[j + 2] - i,
                                   ack.reason if ack else None))
    return SeriesResult(spec, series, normalised, changes, small)


def _comparable(rows: list[dict[str, Any]]) -> None:
    """A history is one scenario and one variant: refuse a mix, naming what is there."""
    kinds = sorted({f"{r.get('scenario')}/{r.get('variant')}" for r in rows})
    if len(kinds) > 1:
        raise ScenarioError(f"the runs hold several histories ({', '.join(kinds)}): pick one with --scenario "
                            "and --variant")


def detect(rows: list[dict[str, Any]], specs: list[str], lookback: int | None = None, normalise: str = "auto",
           acks: list[Ack] | None = None, seed: int = 0) -> DetectResult:
    """Change points of each metric of ``specs`` over the history of ``rows`` (index rows of one scenario
    and variant), the last ``lookback`` commits of it."""
    if normalise not in NORMALISE:
        raise ScenarioError(f"--normalise {normalise!r}: expected one of {', '.join(NORMALISE)}")
    if lookback is not None and lookback < 1:
        raise ScenarioError(f"--lookback {lookback}: expected a number of commits >= 1")
    parsed = [parse_spec(s) for s in specs or DEFAULT_SPECS]
    _comparable(rows)
    complete = [r for r in rows if r.get("status") == "complete"]
    warnings, notes = [], []
    skipped = len(rows) - len(complete)
    if skipped:
        warnings.append(f"left out {skipped} run(s) that did not complete")
    hosts = {r.get("host") for r in complete}
    # a count, a share or a duet's ratio is taken as it is: only rates and times are the host's to normalise
    by_ceiling = (normalise == "ceiling" or (normalise == "auto" and len(hosts) > 1)) and any(
        s.metric.name in RATES | TIMES for s in parsed)
    if by_ceiling:
        without = [r["run_id"] for r in complete if not r.get("ceiling_pods_per_second")]
        why = "asked" if normalise == "ceiling" else f"the runs come from {len(hosts)} hosts"
        notes.append(f"figures normalised by each host's ceiling ({why})")
        if without:
            warnings.append(f"left out {len(without)} run(s) without a stored ceiling of their host (measure one "
                            f"with `kwokbench ceiling`, then `kwokbench analyse` them): {', '.join(without[:3])}"
                            + (", …" if len(without) > 3 else ""))
    if not any(r.get("commit") for r in complete) and complete:
        notes.append("no run recorded its commit: each run is a point, in start order")
    out = []
    for spec in parsed:
        scaled = by_ceiling and spec.metric.name in RATES | TIMES
        series = points(complete, spec.metric, scaled)
        if lookback is not None:
            series = series[-lookback:]
        out.append(detect_series(spec, series, scaled, acks, seed))
    return DetectResult(out, warnings, notes)
