"""Regression gates over groups of stored runs: verdicts as data, never printed here.

Exit codes (the CLI maps them): 0 every metric passes, 1 any regression, 3 otherwise inconclusive;
bad input is 2. Besides the verdicts, a gate says what makes its groups hard to compare: a run that
timed out, a host that was slower or stolen from, settings the scenario did not ask to differ.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kwokbench import scheduler_kinds
from kwokbench.compare.stats import ALPHA, Comparison, compare, compare_worst, inconclusive
from kwokbench.errors import ScenarioError
from kwokbench.figures.acceptance import ACCEPTED_MIN
from kwokbench.store import StoredRun

# Per metric: (noise floor, minimum pods scheduled per run). A relative change below the noise floor is
# never a regression, whatever --metric allows; a run with fewer pods makes the comparison inconclusive.
# Floors from benchmarks/data/noise.json (24 identical interleaved runs of scenarios/perf-gate.yaml on
# this project's 2-core machine; spread of the log ratio within interleaved pairs, CV across runs):
# - throughput / binding_rate: pair spread 10%, CV 7%. The default 10% allowed change is at that
#   spread already: floor 5% (a tighter --metric is raised to it).
# - scheduler_cpu_per_pod: pair spread 10%, CV 9%, but with 3 pairs its A/A false alarms reached 13%:
#   floor 15%.
# - latency_p50 / p90 / p99, attempt_p99: queueing delay moves with every hiccup of the host; pair
#   spreads 50-67%, CV 29-47%: floor 40%. The p90 / p99 also need >= 100 / >= 1000 pods per run (the
#   rank of the p99 of 1000 pods has a stdev of ~3 pods: it is decided by ~10 pods).
# - unscheduled: a count where any increase is a regression (worst run against worst run).
NOISE: dict[str, tuple[float, int]] = {
    "throughput": (0.05, 0),
    "binding_rate": (0.05, 0),
    "latency_p50": (0.40, 0),
    "latency_p90": (0.40, 100),
    "latency_p99": (0.40, 1000),
    "attempt_p99": (0.40, 1000),
    "scheduler_cpu_per_pod": (0.15, 0),
    "unscheduled": (0.0, 0),
    "claim_allocation_p50": (0.40, 0),
    "claim_allocation_p99": (0.40, 1000),
    "devices_given_twice": (0.0, 0),
    "bound_unallocated": (0.0, 0),
    "overbooked": (0.0, 0),
    # a duet's sides over the same instants: pair spread of the CPU-per-pod ratio 3.1% quiet, 3.4% beside a noisy
    # neighbour (benchmarks/data/verdicts-*.json, scenarios/cost-ab.yaml, 8 A/A duets each): floor 3%
    "duet_cpu_per_pod": (0.03, 0),
    "duet_throughput": (0.03, 0),
}
CALIBRATION_GROUPS_APART = 1.10
"""Median CPU calibrations of baseline and candidate further apart than this: warned."""
CALIBRATION_WITHIN_GROUP = 1.15
"""max/min CPU calibration inside one group above this: the host's speed moved during it."""
STEAL_WARN = 0.05


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    higher_is_better: bool
    get: Callable[[dict[str, Any]], float | None]
    tail: float | None = None
    """Fraction of pods beyond the percentile (0.01 for a p99), for saying why ``min_pods``."""
    worst_run: bool = False
    """Compared worst run against worst run, any increase a regression (counts), instead of by a t-test."""

    @property
    def noise_floor(self) -> float:
        return NOISE.get(self.name.split("@")[0], (0.0, 0))[0]

    @property
    def min_pods(self) -> int:
        return NOISE.get(self.name.split("@")[0], (0.0, 0))[1]


def _path(*keys: str) -> Callable[[dict[str, Any]], float | None]:
    def get(summary: dict[str, Any]) -> float | None:
        cur: Any = summary
        for k in keys:
            if not isinstance(cur, dict) or cur.get(k) is None:
                return None
            cur = cur[k]
        return float(cur)

    return get


def _unscheduled(summary: dict[str, Any]) -> float | None:
    """Pods expected but never scheduled (summaries before format 2 lack the key: derived)."""
    if summary.get("pods_unscheduled") is not None:
        return float(summary["pods_unscheduled"])
    if summary.get("pods_expected") is not None and summary.get("pods_scheduled") is not None:
        return float(max(0, summary["pods_expected"] - summary["pods_scheduled"]))
    return None


def _gangs(summary: dict[str, Any], get: Callable[[dict[str, Any]], Any],
           over: Callable[[list[float]], float]) -> float | None:
    """A figure of the run's gang phases (``placement.gangs``), taken over the phases that have it."""
    vals = [float(v) for g in ((summary.get("placement") or {}).get("gangs") or []) if (v := get(g)) is not None]
    return over(vals) if vals else None


def _devices_twice(summary: dict[str, Any]) -> float | None:
    claims = summary.get("claims")
    return None if claims is None else float(len(claims.get("devices_given_twice") or {}))


def _overbooked(summary: dict[str, Any]) -> float | None:
    """Capacity given beyond what there is: DRA counter sets overdrawn (``claims.counters``), shared devices consumed
    beyond a capacity (``claims.shared_overconsumed``), GPUs holding more
    than one GPU's worth by a GPU-aware scheduler's own records at some moment (``gpu_choices``), and nodes
    whose bound pods held more than their allocatable at some moment (``allocation.overbooked``); None when the run
    has none of these records."""
    counters = (summary.get("claims") or {}).get("counters")
    shared = (summary.get("claims") or {}).get("shared_overconsumed")
    gpus = summary.get("gpu_choices")
    nodes = (summary.get("allocation") or {}).get("overbooked")
    if counters is None and shared is None and gpus is None and nodes is None:
        return None
    return float(len((counters or {}).get("overcommitted") or {}) + len(shared or {})
                 + int((gpus or {}).get("overcommitted_gpus") or 0) + int((nodes or {}).get("nodes") or 0))


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("throughput", "pods scheduled per second over the pending window (watch)", True,
           _path("throughput", "average")),
    Metric("binding_rate", "apiserver binding POSTs per second over the pending window", True,
           _path("binding_rate", "average")),
    Metric("latency_p50", "p50 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p50")),
    Metric("latency_p90", "p90 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p90"),
           tail=0.10),
    Metric("latency_p99", "p99 created→scheduled seconds", False, _path("latency", "created_to_scheduled", "p99"),
           tail=0.01),
    Metric("attempt_p99", "p99 scheduling attempt duration (scheduler histogram)", False,
           _path("scheduler", "scheduling_attempt_duration_seconds", "p99"), tail=0.01),
    Metric("scheduler_cpu_per_pod", "kube-scheduler CPU seconds per pod scheduled (steady on a shared host)",
           False, _path("scheduler", "cpu_seconds_per_pod")),
    Metric("unscheduled", "pods expected but never scheduled (worst run; any increase is a regression)", False,
           _unscheduled, worst_run=True),
    Metric("claim_allocation_p50", "p50 seconds from a pod's creation to its DRA claim's allocation", False,
           _path("claims", "pod_stages", "created_to_allocated", "p50")),
    Metric("claim_allocation_p99", "p99 seconds from a pod's creation to its DRA claim's allocation", False,
           _path("claims", "pod_stages", "created_to_allocated", "p99"), tail=0.01),
    Metric("devices_given_twice", "DRA devices held by two claims at once (worst run; any is a regression)", False,
           _devices_twice, worst_run=True),
    Metric("bound_unallocated", "pods bound with a DRA claim never allocated (worst run; any is a regression)",
           False, _path("claims", "bound_unallocated"), worst_run=True),
    Metric("overbooked", "counter sets overdrawn, GPUs given beyond one GPU's worth and nodes given beyond their "
           "allocatable at some moment (worst run; any is a regression)", False, _overbooked, worst_run=True),
    Metric("gpu_allocation", "share of the cluster's GPUs allocated at the end of the run", True,
           _path("allocation", "final", "gpu")),
    Metric("cpu_allocation", "share of the cluster's CPU allocated at the end of the run", True,
           _path("allocation", "final", "cpu")),
    Metric("gpu_fragmentation", "mean share of the GPUs free but useless to every pending pod", False,
           _path("allocation", "gpu_fragmentation", "mean_share")),
    Metric("gangs_per_second", "gangs placed whole per second (the slowest gang phase)", True,
           lambda s: _gangs(s, lambda g: (g.get("time_to_place") or {}).get("per_second"), min)),
    Metric("gang_place_p90", "p90 seconds from a gang's last member created to the gang placed (worst phase)",
           False, lambda s: _gangs(s, lambda g: (g.get("time_to_place") or {}).get("p90"), max)),
    Metric("gangs_partial", "gangs left partly placed (worst run; any increase is a regression)", False,
           lambda s: _gangs(s, lambda g: g.get("partial"), sum), worst_run=True),
    Metric("duet_cpu_per_pod", "a duet's candidate side's scheduler CPU per pod over its baseline side's, both at "
           "the same instants (the host cancels out: runs of other runners and days join one history)", False,
           _path("duet", "ratios", "cpu_per_pod")),
    Metric("duet_throughput", "a duet's candidate side's throughput over its baseline side's, over the same window",
           True, _path("duet", "ratios", "throughput")),
]}
DEFAULT_GATES = ["throughput:10%", "latency_p99:10%"]
ALWAYS = "unscheduled"
"""Gated in every gate, whatever --metric or the scenario says: stranded pods must never improve a score."""


PHASE_SCOPED = {"latency_p50": "p50", "latency_p90": "p90", "latency_p99": "p99"}
"""Metrics that also exist per phase, as ``NAME@PHASE``: created→scheduled of that phase's pods only (a churn phase
behind a long fill, as clusterloader2 measures its churn's pod startup apart)."""


def metric_named(name: str) -> Metric | None:
    """A metric by name: one of :data:`METRICS`, or ``latency_pNN@PHASE`` (:data:`PHASE_SCOPED`), read from the
    summary's ``latency.by_phase``; None when there is no such metric."""
    if name in METRICS:
        return METRICS[name]
    base, sep, phase = name.partition("@")
    if not sep or base not in PHASE_SCOPED or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", phase):
        return None
    m = METRICS[base]
    return replace(m, name=name, description=f"{m.description} of phase {phase}'s pods",
                   get=_path("latency", "by_phase", phase, "created_to_scheduled", PHASE_SCOPED[base]))


def parse_gate(spec: str) -> tuple[Metric, float]:
    """``NAME:max-regression`` with the regression as ``10%`` or ``0.1``; NAME may be ``latency_pNN@PHASE``."""
    m = re.fullmatch(r"([a-z0-9_]+(?:@[-a-z0-9]+)?):(\d+(?:\.\d+)?)(%?)", spec.strip())
    if not m:
        raise ScenarioError(f"--metric {spec!r}: expected NAME:MAX_REGRESSION, e.g. throughput:10%")
    name, value, pct = m.groups()
    metric = metric_named(name)
    if metric is None:
        scoped = f"; per phase: {', '.join(f'{k}@PHASE' for k in PHASE_SCOPED)}"
        raise ScenarioError(f"--metric {spec!r}: unknown metric {name!r} (known: {', '.join(METRICS)}{scoped})")
    frac = float(value) / 100 if pct else float(value)
    if not 0 <= frac < 1:  # 0: no change allowed (a count's usual spec; a timing figure keeps its noise floor)
        raise ScenarioError(f"--metric {spec!r}: the allowed regression must be from 0 up to 100%")
    return metric, frac


def _complete(runs: list[StoredRun]) -> list[StoredRun]:
    return [r for r in runs if r.meta.get("status") == "complete"]


def value(run: StoredRun, metric: Metric) -> float | None:
    return metric.get(run.summary or {}) if run.meta.get("status") == "complete" else None


def values(runs: list[StoredRun], metric: Metric) -> list[float]:
    return [v for r in runs if (v := value(r, metric)) is not None]


def variant_name(run: StoredRun) -> str:
    return str((run.meta.get("variant") or {}).get("name", "default"))


def select_variant(runs: list[StoredRun], name: str | None, option: str) -> list[StoredRun]:
    """The runs of scheduler variant ``name`` (all runs when None); ScenarioError naming the variants present."""
    if name is None:
        return runs
    chosen = [r for r in runs if variant_name(r) == name]
    if not chosen:
        present = ", ".join(sorted({variant_name(r) for r in runs})) or "none"
        raise ScenarioError(f"{option} {name}: no run of that variant (variants present: {present})")
    return chosen


def _started(run: StoredRun) -> datetime | None:
    try:
        t = datetime.fromisoformat(str(run.meta["started_at"]))
    except (KeyError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def pair_runs(baseline: list[StoredRun], candidate: list[StoredRun]) -> tuple[
        list[tuple[StoredRun, StoredRun]] | None, str]:
    """Pairs of runs made close in time, so that drift of the host cancels within each pair, and how.

    By interleaved repeat (``meta.group`` id and repeat) when every run has exactly one partner; else by
    start time when the counts match and, in time order, each consecutive two holds one run of each
    group (A B A B…, or A B B A…, as base/head runs made alternately in CI); else None (unpaired)."""
    if not baseline or len(baseline) != len(candidate):
        return None, "unpaired: the groups have different numbers of runs"

    def key(r: StoredRun) -> tuple[str, int] | None:
        g = r.meta.get("group") or {}
        return (str(g["id"]), int(g["repeat"])) if g.get("id") is not None and g.get("repeat") is not None else None

    bkeys, ckeys = [key(r) for r in baseline], [key(r) for r in candidate]
    if None not in bkeys and None not in ckeys and len(set(bkeys)) == len(bkeys) and set(bkeys) == set(ckeys):
        by_key = {k: r for k, r in zip(ckeys, candidate, strict=True)}
        together = all((r.meta.get("group") or {}).get("simultaneous") for r in baseline + candidate)
        return sorted(((r, by_key[k]) for k, r in zip(bkeys, baseline, strict=True)),
                      key=lambda pair: key(pair[0]) or ("", 0)), (
            "paired by repeat, each pair run at the same time on two clusters (a duet)" if together
            else "paired by interleaved repeat")
    starts = [(t, side, r) for side, runs in ((0, baseline), (1, candidate)) for r in runs
              if (t := _started(r)) is not None]
    if len(starts) == 2 * len(baseline):
        ordered = sorted(starts, key=lambda x: (x[0], x[1]))
        chunks = [ordered[i:i + 2] for i in range(0, len(ordered), 2)]
        if all({s for _, s, _ in c} == {0, 1} for c in chunks):
            return [(next(r for _, s, r in c if s == 0), next(r for _, s, r in c if s == 1)) for c in chunks], \
                "paired by start order"
    return None, "unpaired: the runs neither share interleaved repeats nor alternate in time"


def _pods_scheduled(run: StoredRun) -> int | None:
    n = (run.summary or {}).get("pods_scheduled")
    return int(n) if n is not None else None


def compare_metric(metric: Metric, max_regression: float, baseline: list[StoredRun],
                   candidate: list[StoredRun], alpha: float = ALPHA) -> Comparison:
    """One metric of the complete runs that report it, paired when the runs pair."""
    b = [r for r in baseline if value(r, metric) is not None]
    c = [r for r in candidate if value(r, metric) is not None]
    if metric.worst_run:
        return compare_worst(metric.name, [value(r, metric) or 0.0 for r in b], [value(r, metric) or 0.0 for r in c])
    pairs, _ = pair_runs(b, c)
    if pairs is not None:
        b, c = [x for x, _ in pairs], [y for _, y in pairs]
    bv, cv = [value(r, metric) or 0.0 for r in b], [value(r, metric) or 0.0 for r in c]
    short = [f"{r.label} ({n})" for r in b + c if (n := _pods_scheduled(r)) is not None and n < metric.min_pods]
    if short:
        why = f" so that >= {round(metric.min_pods * metric.tail)} pods decide it" if metric.tail else ""
        return inconclusive(metric.name, bv, cv, metric.higher_is_better, max_regression,
                            noise_floor=metric.noise_floor, paired=pairs is not None,
                            reason=f"{metric.name} needs >= {metric.min_pods} pods scheduled per run{why}; "
                                   f"runs with fewer: {', '.join(short)}")
    return compare(metric.name, bv, cv, metric.higher_is_better, max_regression, alpha=alpha,
                   paired=pairs is not None, noise_floor=metric.noise_floor)


@dataclass(frozen=True)
class GateResult:
    comparisons: list[Comparison]
    warnings: list[str]
    notes: list[str] = field(default_factory=list)
    """How the runs were selected and paired (information, not a problem)."""
    runs: list[StoredRun] = field(default_factory=list)
    """The runs the gate selected (baseline first), each once."""

    @property
    def exit_code(self) -> int:
        verdicts = {c.verdict for c in self.comparisons}
        return 1 if "regression" in verdicts else 3 if "inconclusive" in verdicts else 0


# fairness-manifest field → the variant fields it comes from; runs whose variants differ there compare
# exactly that difference, so it is not a fairness problem (each scheduler kind adds its own: scheduler_kinds.Kind)
FROM_VARIANT: dict[str, tuple[str, ...]] = {
    "scheduler_binary": ("binary",),
    # another kind of scheduler has client limits of its own form: they vary with the binary
    "scheduler_client_qps": ("client_qps", "client_burst", "binary"),
    "scheduler_client_burst": ("client_qps", "client_burst", "binary"),
    "scheduler_name": ("scheduler_name", "binary"),  # a kind may serve a name of its own
    "kueue": ("kueue",),
}
UNDER_TEST = {"scheduler_binary_path", "scheduler_version", "component_versions"}
"""Fairness fields that identify the scheduler under test itself (a plugin's build differs between
base and head by design)."""


def from_variant() -> dict[str, tuple[str, ...]]:
    """:data:`FROM_VARIANT` with every scheduler kind's own fields (a field several kinds write: all sources)."""
    out = dict(FROM_VARIANT)
    for k in scheduler_kinds.registry().values():
        for key, sources in k.fairness_from.items():
            out[key] = tuple(dict.fromkeys([*out.get(key, ()), *sources]))
    return out


def under_test() -> set[str]:
    return UNDER_TEST.union(*(k.under_test for k in scheduler_kinds.registry().values()))


def _canonical(v: Any) -> str:
    """Equal settings give equal strings (5000 and 5000.0 alike; dict key order ignored)."""
    def norm(x: Any) -> Any:
        if isinstance(x, float) and x.is_integer():
            return int(x)
        if isinstance(x, dict):
            return {str(k): norm(y) for k, y in x.items()}
        if isinstance(x, list | tuple):
            return [norm(y) for y in x]
        return x

    return "absent" if v is None else json.dumps(norm(v), sort_keys=True, default=str)


def _differs(runs: list[StoredRun], what: str, get: Callable[[dict[str, Any]], Any]) -> str | None:
    seen: dict[str, list[StoredRun]] = {}
    for r in runs:
        seen.setdefault(_canonical(get(r.meta)), []).append(r)
    if len(seen) < 2:
        return None
    parts = []
    for val, rs in sorted(seen.items()):
        names = sorted({variant_name(r) for r in rs})
        parts.append(f"{val} in {', '.join(names)} ({len(rs)} run{'s' if len(rs) > 1 else ''})")
    return f"not comparable: runs differ in {what}: {'; '.join(parts)}"


def _field(section: str, key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda meta: (meta.get(section) or {}).get(key)


def comparability(runs: list[StoredRun]) -> list[str]:
    """Warnings naming each setting in which the runs differ although the scenario does not compare it:
    every fairness-manifest field (except those the compared variants set differently), toolchain
    versions, host CPU and cluster size."""
    warnings: list[str] = []
    varied = {k for k, sources in from_variant().items()
              if any(len({_canonical((r.meta.get("variant") or {}).get(s)) for r in runs}) > 1 for s in sources)}
    keys = sorted({k for r in runs for k in (r.meta.get("fairness") or {})} - varied - under_test())
    tool_keys = sorted({k for r in runs for k in (r.meta.get("toolchain") or {})})
    if len({_canonical((r.meta.get("variant") or {}).get("kubernetes")) for r in runs}) > 1:
        tool_keys = [k for k in tool_keys if k not in ("kubernetes", "kubernetes_build")]  # releases: the point
    fields = [*[("fairness", k) for k in keys], *[("toolchain", k) for k in tool_keys],
              ("host", "cpu_model"), ("host", "cpus"), ("cluster", "nodes")]
    for section, k in fields:
        w = _differs(runs, f"{section}.{k}", _field(section, k))
        if w:
            warnings.append(w)
    incomplete = [f"{r.path.name} ({r.meta.get('status')})" for r in runs if r.meta.get("status") != "complete"]
    if incomplete:
        warnings.append(f"ignored runs that did not complete: {', '.join(incomplete)}")
    return warnings


def _host(run: StoredRun) -> dict[str, Any]:
    h = (run.summary or {}).get("host")
    return h if isinstance(h, dict) else {}


def _calibrations(run: StoredRun) -> list[float]:
    cal = _host(run).get("calibration_seconds") or {}
    return [float(cal[k]) for k in ("before", "after")
            if isinstance(cal, dict) and isinstance(cal.get(k), int | float) and cal[k] > 0]


def host_shift(baseline: list[StoredRun], candidate: list[StoredRun]) -> tuple[float, float] | None:
    """The median CPU calibration of the baseline runs and of the candidate runs (seconds a fixed loop took: the
    candidate's host was slower when its figure is larger); None without calibrations on both sides."""
    medians = [statistics.median(per_run) for runs in (baseline, candidate)
               if (per_run := [statistics.fmean(cal) for r in runs if (cal := _calibrations(r))])]
    return (medians[0], medians[1]) if len(medians) == 2 else None


def host_warnings(baseline: list[StoredRun], candidate: list[StoredRun]) -> list[str]:
    """Evidence that the host, not the scheduler, made the groups differ: CPU calibration (seconds a fixed
    loop took: lower is faster) apart between or moving within groups, CPU steal, another machine."""
    out: list[str] = []
    for name, runs in (("baseline", baseline), ("candidate", candidate)):
        every = [x for r in runs for x in _calibrations(r)]
        if every and max(every) / min(every) > CALIBRATION_WITHIN_GROUP:
            out.append(f"host speed moved inside the {name} group: CPU calibration {min(every):.2f}–"
                       f"{max(every):.2f} s ({(max(every) / min(every) - 1) * 100:.0f}% apart)")
        steal = [float(s) for r in runs if (s := _host(r).get("cpu_steal_fraction")) is not None]
        if steal and statistics.fmean(steal) > STEAL_WARN:
            out.append(f"{name} runs lost {statistics.fmean(steal) * 100:.0f}% of CPU time to steal on average "
                       "(a busy hypervisor): their figures are noisy")
    if (shift := host_shift(baseline, candidate)) is not None:
        b, c = shift
        if c / b > CALIBRATION_GROUPS_APART:
            out.append(f"candidate ran on a host {(c / b - 1) * 100:.0f}% slower (CPU calibration {c:.2f} s vs "
                       f"{b:.2f} s)")
        elif b / c > CALIBRATION_GROUPS_APART:
            out.append(f"candidate ran on a host {(b / c - 1) * 100:.0f}% faster (CPU calibration {c:.2f} s vs "
                       f"{b:.2f} s)")
    hosts = [{str(h) for r in runs if (h := (r.meta.get("host") or {}).get("hostname"))}
             for runs in (baseline, candidate)]
    if all(hosts) and hosts[0] != hosts[1]:
        out.append(f"baseline and candidate ran on different hosts ({', '.join(sorted(hosts[0]))} vs "
                   f"{', '.join(sorted(hosts[1]))}): a stored baseline from another machine is not comparable")
    return out


def host_explains(comps: list[Comparison], baseline: list[StoredRun],
                  candidate: list[StoredRun]) -> list[Comparison]:
    """Host evidence counts, and never makes a regression by itself: a timing figure's regression whose
    worsening (the bound of its interval nearest to no change) is no larger than how much slower the candidate's
    host was (its CPU calibration, beyond :data:`CALIBRATION_GROUPS_APART`) is inconclusive. A count of defects
    (a worst-run metric) is not the host's to explain."""
    shift = host_shift(baseline, candidate)
    if shift is None or shift[1] / shift[0] <= CALIBRATION_GROUPS_APART:
        return comps
    slower = shift[1] / shift[0]
    out = []
    for x in comps:
        metric = metric_named(x.metric.split(" [")[0])
        if x.verdict != "regression" or x.ci is None or x.ratio is None or (metric and metric.worst_run):
            out.append(x)
            continue
        lo, hi = x.ci
        least = 1 / hi if x.higher_is_better else lo  # the smallest worsening the interval allows, as a factor
        if least > slower:
            out.append(x)
            continue
        out.append(replace(x, verdict="inconclusive", decision="inconclusive", more=None, reason=(
            f"{f'lower by {(1 - hi) * 100:.0f}%' if x.higher_is_better else f'higher by {(lo - 1) * 100:.0f}%'} at "
            f"least, but the candidate ran on a host {(slower - 1) * 100:.0f}% "
            f"slower (CPU calibration {shift[1]:.2f} s vs {shift[0]:.2f} s): the host can explain it; repeat on "
            "a steadier host, or run both sides at once (run --duet)")))
    return out


LOAD_APART = 0.05
"""Accepted shares of the offered load further apart than this between the groups: warned."""


def load_warnings(baseline: list[StoredRun], candidate: list[StoredRun]) -> list[str]:
    """The groups did not receive the same load when the apiserver accepted a different share of what was
    offered (a starved group's throughput is the apiserver's, not its scheduler's)."""
    def accepted(runs: list[StoredRun]) -> list[float]:
        return [float(ph["achieved_ratio"]) for r in runs for ph in (r.summary or {}).get("submit") or []
                if "offered_qps" in ph and ph.get("achieved_ratio") is not None]  # older runs: send rate only

    b, c = accepted(baseline), accepted(candidate)
    if not b or not c:
        return []
    mb, mc = statistics.fmean(b), statistics.fmean(c)
    if abs(mb - mc) <= LOAD_APART and min(b + c) >= ACCEPTED_MIN:
        return []
    return [f"the groups did not receive the same load: the apiserver accepted {mb * 100:.0f}% of the offered "
            f"rate in the baseline runs (lowest {min(b) * 100:.0f}%) and {mc * 100:.0f}% in the candidate runs "
            f"(lowest {min(c) * 100:.0f}%)"]


def timed_out_warnings(runs: list[StoredRun]) -> list[str]:
    out = []
    for r in runs:
        phases = [str(p.get("name")) for p in r.meta.get("phases") or [] if isinstance(p, dict) and p.get("timed_out")]
        if phases:
            out.append(f"run {r.label} timed out in phase {', '.join(phases)}: compared anyway, its unscheduled "
                       "pods count against it")
    return out


def scenario_gates(runs: list[StoredRun]) -> list[str]:
    """The gates the candidate runs' scenario declares (the same for all of them, or none)."""
    declared = {tuple(r.meta.get("scenario", {}).get("gates") or []) for r in runs}
    return list(declared.pop()) if len(declared) == 1 else []


def _refuse_overlap(baseline: list[StoredRun], candidate: list[StoredRun]) -> None:
    cand = {r.path.resolve() for r in candidate}
    both = [r for r in baseline if r.path.resolve() in cand]
    if not both:
        return
    shown = ", ".join(r.path.name + ("" if r.meta.get("status") == "complete" else f" ({r.meta.get('status')})")
                      for r in both[:3]) + (", …" if len(both) > 3 else "")
    variants = ", ".join(sorted({variant_name(r) for r in baseline + candidate}))
    raise ScenarioError(f"{len(both)} run(s) are both baseline and candidate ({shown}): a run compared with itself "
                        f"says nothing; pick other runs, or split one folder with --baseline-variant and "
                        f"--candidate-variant (variants present: {variants})")


def gates_of(specs: list[str], runs: list[StoredRun]) -> list[tuple[Metric, float]]:
    """The metrics gated: ``specs``, else the runs' scenario's gates, else the defaults; ``unscheduled`` always."""
    gates = [parse_gate(x) for x in specs or scenario_gates(runs) or DEFAULT_GATES]
    if all(m.name != ALWAYS for m, _ in gates):
        gates.append((METRICS[ALWAYS], 0.0))
    return gates


DUET_FIGURES = {"throughput": "throughput", "scheduler_cpu_per_pod": "cpu_per_pod", "latency_p50": "latency_p50",
                "latency_p90": "latency_p90", "latency_p99": "latency_p99", "unscheduled": "unscheduled"}
"""Gate metric → the figure each side of a duet has (summary ``duet.sides``)."""


def is_duet(runs: list[StoredRun]) -> bool:
    """Every complete run is a duet (its summary has a ``duet`` section), and there is one."""
    done = _complete(runs)
    return bool(done) and all("duet" in (r.summary or {}) for r in done)


def simultaneous_sides(runs: list[StoredRun]) -> tuple[str, str] | None:
    """The baseline and candidate variants of the runs of a duet of two clusters (every complete run made at the
    same time as its partner: ``meta.group.simultaneous``), in the scenario's order; None for other runs."""
    done = _complete(runs)
    if not done or not all((r.meta.get("group") or {}).get("simultaneous") for r in done):
        return None
    orders = {tuple(str(v.get("name")) for v in (r.meta.get("scenario") or {}).get("schedulers") or []) for r in done}
    if len(orders) != 1 or len(order := orders.pop()) != 2:
        return None
    return order[0], order[1]


def duet_variants(runs: list[StoredRun]) -> dict[str, list[StoredRun]]:
    """Duet runs by the variant each compared (``run --duet-with`` runs one duet per variant of the scenario);
    runs of a scenario's own duet are one group."""
    out: dict[str, list[StoredRun]] = {}
    for r in _complete(runs):
        out.setdefault(str(((r.summary or {}).get("duet") or {}).get("variant") or ""), []).append(r)
    return out


def gate_duet(runs: list[StoredRun], specs: list[str], baseline_variant: str | None = None,
              candidate_variant: str | None = None, looks: int = 1) -> GateResult:
    """The candidate side of duet runs against their baseline side, each run a pair: both sides ran at the same
    instants on one host, so what slowed the host slowed both and the pair's ratio keeps the variant's effect.
    The sides are the scenario's first and second variants unless named. No noise floor applies (the floors were
    measured on sequential runs; the test on the duet's own pairs measures its spread)."""
    done = _complete(runs)
    rec = (done[0].summary or {})["duet"]
    base_side, cand_side = baseline_variant or rec["baseline"], candidate_variant or rec["candidate"]
    for side, option in ((base_side, "--baseline-variant"), (cand_side, "--candidate-variant")):
        present = {str(v) for r in done for v in (r.summary or {})["duet"]["sides"]}
        if side not in present:
            raise ScenarioError(f"{option} {side}: no side of the duet runs is that variant (sides: "
                                f"{', '.join(sorted(present))})")
    if base_side == cand_side:
        raise ScenarioError(f"a duet's side compared with itself says nothing: name two sides ({base_side} twice)")
    gates = gates_of(specs, done)

    def figure(r: StoredRun, name: str, key: str) -> float | None:
        v = ((r.summary or {})["duet"]["sides"].get(name) or {}).get(key)
        return None if v is None else float(v)

    comps: list[Comparison] = []
    for m, allowed in gates:
        key = DUET_FIGURES.get(m.name)
        if key is None:
            comps.append(inconclusive(m.name, [], [], m.higher_is_better, allowed,
                                      reason=f"{m.name} is not measured per side in a duet (per side: "
                                             f"{', '.join(DUET_FIGURES)})"))
            continue
        pairs = [(b, c) for r in done if (b := figure(r, base_side, key)) is not None
                 and (c := figure(r, cand_side, key)) is not None]
        bv, cv = [b for b, _ in pairs], [c for _, c in pairs]
        comps.append(compare_worst(m.name, bv, cv) if m.worst_run else
                     compare(m.name, bv, cv, m.higher_is_better, allowed, alpha=ALPHA / looks, paired=True))
    warnings = [*comparability(done), *timed_out_warnings(done)]
    warnings += [f"{r.label}: {n}" for r in done for n in (r.summary or {})["duet"].get("notes") or []]
    warnings += [f"{x.metric}: noisy ({x.noise})" for x in comps if x.noisy]
    swapped = sum(1 for r in done if (r.summary or {})["duet"].get("started_first") == cand_side)
    notes = [f"{len(done)} duet run(s): {cand_side} against {base_side} at the same instants, each run a pair "
             f"({swapped} with {cand_side} started first and the pools swapped)"]
    return GateResult(comps, warnings, notes, done)


def gate(baseline: list[StoredRun], candidate: list[StoredRun], specs: list[str],
         baseline_variant: str | None = None, candidate_variant: str | None = None, looks: int = 1) -> GateResult:
    """The candidate runs gated against the baseline runs. When both sides hold the same two or more scheduler
    variants and none is chosen (a plugin beside the stock scheduler, base against head), each variant is gated
    against itself, its metrics named ``metric [variant]``: pooling them would compare a mix, and a slowed
    plugin would hide behind the stock scheduler's runs. Duet runs given as both baseline and candidate are gated
    side against side (:func:`gate_duet`). ``looks``: this gate is one of that many planned looks at growing runs
    (a sequential gate: pairs added until it decides), so each test is made at alpha / looks and the whole
    sequence's false alarms stay within alpha (Bonferroni; :func:`kwokbench.compare.stats.simulate_sequential`
    measures the real rates)."""
    if looks < 1:
        raise ScenarioError(f"--looks {looks}: expected the number of planned looks, 1 or more")
    same = {r.path for r in baseline} == {r.path for r in candidate}
    if same and baseline_variant is None and candidate_variant is None and (sides := simultaneous_sides(baseline)):
        baseline_variant, candidate_variant = sides  # a duet of two clusters: its second variant against its first
    if is_duet(baseline) and same:
        of = duet_variants(baseline)
        if len(of) > 1 and baseline_variant is None and candidate_variant is None:
            return _each_variant([(v, gate_duet(runs, specs, looks=looks)) for v, runs in of.items()])
        return gate_duet(baseline, specs, baseline_variant, candidate_variant, looks)
    if baseline_variant is None and candidate_variant is None:
        names = sorted({variant_name(r) for r in baseline})
        if len(names) > 1 and set(names) == {variant_name(r) for r in candidate}:
            return _each_variant([(v, gate(baseline, candidate, specs, v, v, looks)) for v in names])
    baseline = select_variant(baseline, baseline_variant, "--baseline-variant")
    candidate = select_variant(candidate, candidate_variant, "--candidate-variant")
    if not baseline or not candidate:
        raise ScenarioError("gate needs at least one baseline and one candidate run")
    _refuse_overlap(baseline, candidate)
    gates = gates_of(specs, candidate)
    b, c = _complete(baseline), _complete(candidate)
    comps = host_explains([compare_metric(m, max_reg, baseline, candidate, ALPHA / looks) for m, max_reg in gates],
                          b, c)
    warnings = [*comparability(baseline + candidate), *timed_out_warnings(b + c), *host_warnings(b, c),
                *load_warnings(b, c)]
    warnings += [f"{x.metric}: noisy ({x.noise})" for x in comps if x.noisy]
    _, how = pair_runs(b, c)
    notes = [f"{len(b)} baseline run(s) ({', '.join(sorted({variant_name(r) for r in b})) or '-'}) vs "
             f"{len(c)} candidate run(s) ({', '.join(sorted({variant_name(r) for r in c})) or '-'}), {how}"]
    selected = list({r.path: r for r in baseline + candidate}.values())
    return GateResult(comps, warnings, notes, selected)


def _each_variant(parts: list[tuple[str, GateResult]]) -> GateResult:
    """One result of the gates of several variants, each variant's metrics named ``metric [variant]``."""
    comps = [replace(c, metric=f"{c.metric} [{v}]") for v, r in parts for c in r.comparisons]
    warnings = list(dict.fromkeys(f"{v}: {w}" for v, r in parts for w in r.warnings))
    notes = [f"each variant gated against itself ({', '.join(v for v, _ in parts)}), not pooled",
             *(f"{v}: {n}" for v, r in parts for n in r.notes)]
    runs = list({run.path: run for _, r in parts for run in r.runs}.values())
    return GateResult(comps, warnings, notes, runs)
