"""``kwokbench bisect``: between which two Kubernetes releases a figure changed.

The releases are a path: the tags a change passes through on its way from the first release to the last (its
patch releases when both share a minor; otherwise the first, then each later minor's pre-releases with
``--pre``, its ``.0``, and the last minor's patches up to the last). Patch releases of an older minor made after
the next minor's ``.0`` are branches beside that path, not on it, and are left out. Each tag is a variant of the
scenario's scheduler with that tag as its control plane's release (``kubernetes:``), built from Go modules on
first use (the build's time is recorded) and run on identical fresh clusters.

The search: the path's two ends first, interleaved (A B, B A, A B…) ``--repeat`` times and again until the gate's
test decides or ``--max-repeat`` runs are in; then the middle tag of the remaining range with both of its ends,
interleaved in the same way, and the half whose ends differ is kept, until the range is two adjacent tags
(log2 of the path's length rounds). Each round is compared on its own runs, paired by repeat, so the host's
drift between rounds does not move a verdict.

A step is *changed* when the gate's test finds the later tag worse than the allowed change, or better by more
than it (the test run the other way); *same* when neither and these runs could have detected the allowed change
(the minimum detectable change is within it); otherwise *undecided*. Worst-run metrics (pods left unscheduled,
gangs left partial) compare each side's worst run, as the gate does.

The pure part (:func:`release_path`, :func:`step`, :func:`search`) takes its runs from a ``measure`` callable;
:func:`run_bisect` gives it real runs and stores ``bisect.json``.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kwokbench import __version__
from kwokbench.compare.gate import METRICS, Metric, metric_named, parse_gate
from kwokbench.compare.stats import ALPHA, Comparison, compare, compare_worst
from kwokbench.errors import KwokbenchError, ScenarioError, StoreError
from kwokbench.progress import Reporter, Silent
from kwokbench.store import _atomic_write, digest, host_info, outcome, owner, read_versioned, settle_status
from kwokbench.toolchain import provenance, versions

if TYPE_CHECKING:
    from kwokbench.scenario import Scenario

BISECT, BISECT_FORMAT_VERSION = "bisect.json", 1
MAX_PATH = 64
"""Tags a path may hold (a patch or pre-release number beyond this is not probed)."""
PRE_KINDS = {"alpha": 5, "beta": 3, "rc": 4}
"""The pre-release numbers asked for (Kubernetes minors have had alpha.0–alpha.4, beta.0–beta.2, rc.0–rc.3)."""

Step = Literal["changed", "same", "undecided"]
Measure = Callable[[list[int], int], dict[int, list[float | None]]]
"""``measure(positions, repeats)``: runs the path's tags at ``positions`` ``repeats`` times, interleaved; each
position's values in repeat order (None for a run that failed or does not report the metric). Positions, not
tags: an A/A gives one tag twice."""


# ---- the path ------------------------------------------------------------------------------------------------


def parse_tags(text: str) -> tuple[list[str], bool]:
    """``A..B`` (a range: True) or ``A,B,C`` (the tags themselves: False), each a release tag kwokbench runs."""
    parts = text.split("..") if ".." in text else text.split(",")
    tags = [p.strip() for p in parts if p.strip()]
    is_range = ".." in text
    if (is_range and len(tags) != 2) or len(tags) < 2:
        raise ScenarioError(f"--kubernetes {text!r}: give a range FIRST..LAST or at least two tags A,B[,C…]")
    try:
        tags = [versions.kubernetes_tag(t) for t in tags]
    except ValueError as e:
        raise ScenarioError(f"--kubernetes: {e}") from None
    keys = [versions.tag_key(t) for t in tags]
    if is_range and keys[0] >= keys[1]:
        raise ScenarioError(f"--kubernetes {text!r}: the range's first release must be older than its last")
    if not is_range and any(a > b for a, b in itertools.pairwise(keys)):
        raise ScenarioError(f"--kubernetes {text!r}: list the tags oldest first")
    return tags, is_range


def release_path(first: str, last: str, pre: bool, exists: Callable[[str], bool]) -> list[str]:
    """The tags from ``first`` to ``last`` a change passes through (see the module's docstring), asking
    ``exists`` (the module proxy) for each candidate: patch numbers until the first missing one, every
    pre-release number of :data:`PRE_KINDS`."""
    fk, lk = versions.tag_key(first), versions.tag_key(last)
    out = [first]

    def patches(minor: int, start: int, stop_key: tuple[int, int, int, int]) -> None:
        for p in range(start, MAX_PATH):
            tag = f"v1.{minor}.{p}"
            if versions.tag_key(tag) > stop_key or not exists(tag):
                return
            out.append(tag)

    def pres(minor: int) -> None:
        for kind, most in PRE_KINDS.items():  # every number asked: the proxy may lack one and have the next
            for n in range(most + 1):
                tag = f"v1.{minor}.0-{kind}.{n}"
                if fk < versions.tag_key(tag) <= lk and exists(tag):
                    out.append(tag)

    if fk[0] == lk[0]:
        if pre and fk[2] < 3:  # a pre-release of the same minor: the rest of its pre-releases
            pres(fk[0])
        if lk[2] == 3:  # the last is a release: the patches up to it
            patches(fk[0], fk[1] + 1 if fk[2] == 3 else 0, lk)
    else:
        for minor in range(fk[0] + 1, lk[0] + 1):
            if pre:
                pres(minor)
            if versions.tag_key(f"v1.{minor}.0") <= lk:
                if minor < lk[0]:
                    if exists(f"v1.{minor}.0"):
                        out.append(f"v1.{minor}.0")
                else:
                    patches(minor, 0, lk)
    if out[-1] != last:
        if not exists(last):
            raise ScenarioError(f"Kubernetes {last} is not on the Go module proxy")
        out.append(last)
    if len(out) > MAX_PATH:
        raise ScenarioError(f"{first}..{last} holds {len(out)} tags; bisect takes at most {MAX_PATH}")
    return out


def slug(tag: str, seen: Sequence[str] = ()) -> str:
    """A variant name for ``tag`` (``v1.37.0-rc.1`` → ``k-v1-37-0-rc-1``); a tag given twice (an A/A) gets
    ``-b``, ``-c``… after its first."""
    name = "k-" + re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")
    n = sum(1 for s in seen if s == tag)
    return name if n == 0 else f"{name}-{chr(ord('a') + n)}"


# ---- deciding a step -------------------------------------------------------------------------------------------


def _paired(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[list[float], list[float]]:
    pairs = [(x, y) for x, y in zip(a, b, strict=False) if x is not None and y is not None]
    return [x for x, _ in pairs], [y for _, y in pairs]


def step(metric: Metric, allowed: float, before: Sequence[float | None],
         after: Sequence[float | None], alpha: float = ALPHA) -> tuple[Step, Comparison]:
    """Whether ``metric`` changed from the earlier tag's runs to the later one's (paired by repeat): *changed* when
    :func:`~kwokbench.compare.stats.decide` finds it worse or better beyond ``allowed``, *same* when it shows the change
    within it (two one-sided tests), else *undecided*."""
    if metric.worst_run:
        b = [v for v in before if v is not None]
        a = [v for v in after if v is not None]
        worse = compare_worst(metric.name, b, a)
        if not b or not a:
            return "undecided", worse
        if (max(b) > 0) != (max(a) > 0):  # a defect appeared, or went away
            return "changed", worse if max(a) > 0 else compare_worst(metric.name, a, b)
        if worse.decision in ("regression", "better"):
            return "changed", worse
        return ("same" if worse.decision == "same" else "undecided"), worse
    b, a = _paired(before, after)
    c = compare(metric.name, b, a, metric.higher_is_better, allowed, alpha=alpha, paired=True,
                noise_floor=metric.noise_floor)
    if c.decision in ("regression", "better"):
        return "changed", c
    return ("same" if c.decision == "same" else "undecided"), c


def describe(c: Comparison) -> dict[str, Any]:
    """A comparison as bisect.json keeps it (the later tag over the earlier)."""
    return {"ratio": c.ratio, "ci": list(c.ci) if c.ci else None, "method": c.method, "runs": c.runs,
            "mde": c.mde, "baseline": list(c.baseline), "candidate": list(c.candidate), "reason": c.reason,
            "decision": c.decision, "level": c.level}


# ---- the search ------------------------------------------------------------------------------------------------


@dataclass
class Search:
    """What the search did: its rounds (tags measured, values, steps) and where it ended."""

    tags: list[str]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Budget:
    """Wall time the search may take: no batch of runs is begun that would end beyond ``seconds`` after the
    search began (a batch taken to last as long as the one before it); the first batch always runs."""

    seconds: float | None = None
    clock: Callable[[], float] = time.monotonic
    start: float = 0.0
    spent_by: str = ""
    """Set when the budget stopped the search: what it could not do."""

    def begin(self) -> None:
        self.start = self.clock()

    def allows(self, batch_seconds: float) -> bool:
        return self.seconds is None or self.clock() + batch_seconds <= self.start + self.seconds

    def say(self) -> str:
        return f"the budget of {self.seconds / 60:g} min: {self.spent_by} would end beyond it" if self.seconds else ""


def _measure_until(idx: list[int], measure: Measure, metric: Metric, allowed: float, repeat: int,
                   max_repeat: int, budget: Budget | None = None
                   ) -> tuple[dict[int, list[float | None]], list[tuple[Step, Comparison]]]:
    """Runs the tags at ``idx`` interleaved, ``repeat`` at a time, until every adjacent step is decided,
    ``max_repeat`` runs of each are in or the next batch would end beyond the ``budget``. Tested after each batch,
    each test at alpha over the most batches (a sequential rule: more looks, more chances of a false "changed", so
    each look is stricter)."""
    values: dict[int, list[float | None]] = {i: [] for i in idx}
    alpha = ALPHA / max(1, math.ceil(max_repeat / repeat))
    budget = budget or Budget()
    while True:
        began = budget.clock()
        got = measure(idx, repeat)
        for i in idx:
            values[i].extend(got.get(i, [None] * repeat))
        steps = [step(metric, allowed, values[a], values[b], alpha) for a, b in itertools.pairwise(idx)]
        if all(s != "undecided" for s, _ in steps) or len(values[idx[0]]) + repeat > max_repeat:
            return values, steps
        if not budget.allows(budget.clock() - began):
            budget.spent_by = f"{repeat} more runs of each of {len(idx)} releases"
            return values, steps


def search(path: list[str], measure: Measure, metric: Metric, allowed: float, repeat: int = 3,
           max_repeat: int = 9, on_round: Callable[[Search], None] | None = None,
           budget: Budget | None = None) -> Search:
    """Bisects ``path`` for the step where ``metric`` changed by more than ``allowed`` (within ``budget``: a
    round the budget stopped undecided, or a narrowing it did not let finish, says so)."""
    if len(path) < 2:
        raise ScenarioError("bisect needs at least two releases")
    s = Search(tags=list(path))
    lo, hi = 0, len(path) - 1
    last: dict[str, Any] | None = None
    budget = budget or Budget()
    budget.begin()
    round_seconds = 0.0
    while True:
        idx = [lo, hi] if not s.rounds else [lo, (lo + hi) // 2, hi]
        if s.rounds and not budget.allows(round_seconds):
            budget.spent_by = "another round"
            s.result = {"found": False, "step": "undecided", "between": [path[lo], path[hi]],
                        "why": f"the change lies between {path[lo]} and {path[hi]}, not narrowed further: "
                               f"{budget.say()}"}
            return s
        began = budget.clock()
        values, steps = _measure_until(idx, measure, metric, allowed, repeat, max_repeat, budget)
        round_seconds = budget.clock() - began
        s.rounds.append({"tags": [path[i] for i in idx], "positions": idx,
                         "values": [values[i] for i in idx],
                         "steps": [{"from": path[a], "to": path[b], "step": st, **describe(c)}
                                   for (a, b), (st, c) in zip(itertools.pairwise(idx), steps,
                                                              strict=True)]})
        if on_round:
            on_round(s)
        kinds = [st for st, _ in steps]
        here = s.rounds[-1]["steps"]
        if len(idx) == 2:
            if kinds[0] != "changed":
                s.result = {"found": False, "step": kinds[0], "between": [path[lo], path[hi]],
                            "why": ("no change" if kinds[0] == "same" else "undecided")
                                   + f" from {path[lo]} to {path[hi]}" + _stopped(budget)}
                return s
            last = here[0]
        else:
            mid = idx[1]
            first, second = kinds[0] == "changed", kinds[1] == "changed"
            if first and second:  # two changes: follow the larger
                r0, r1 = (abs(math.log(st["ratio"])) if st.get("ratio") else 0.0 for st in here)
                s.rounds[-1]["note"] = "both halves changed: following the larger change"
                first = r0 >= r1
            elif not second and not first:
                undecided = "undecided" in kinds
                s.result = {"found": False, "step": "undecided" if undecided else "same",
                            "between": [path[lo], path[hi]],
                            "why": ("undecided between " if undecided else "the change did not show again between ")
                                   + f"{path[lo]}, {path[mid]} and {path[hi]}" + _stopped(budget)}
                return s
            lo, hi = (lo, mid) if first else (mid, hi)
            last = here[0] if first else here[1]
        if hi - lo == 1:
            assert last is not None
            s.result = {"found": True, "step": "changed", "between": [path[lo], path[hi]],
                        **{k: last.get(k) for k in ("ratio", "ci", "method", "runs", "reason", "decision", "level")}}
            return s


def _stopped(budget: Budget) -> str:
    return f" ({budget.say()})" if budget.spent_by else ""


def sentence(doc: dict[str, Any]) -> str:
    """The answer in one line."""
    r, metric = doc.get("result") or {}, doc.get("metric", "")
    if not r:
        return f"{metric}: the search did not finish ({doc.get('status')})"
    a, b = r["between"]
    if not r.get("found"):
        return f"{metric}: {r['why']}"
    ratio, ci = r.get("ratio"), r.get("ci")
    change = "" if ratio is None else f" by {(ratio - 1) * 100:+.1f}%" + (
        f" ({round(float(r.get('level') or 0.90) * 100)}% CI {(ci[0] - 1) * 100:+.1f}%..{(ci[1] - 1) * 100:+.1f}%)"
        if ci and ci[0] != ci[1] else "")
    how = {"regression": " (worse)", "better": " (better)"}.get(str(r.get("decision")), "")
    return f"{metric} changed{how} between {a} and {b}{change}, {r.get('runs')}"


def bisect_metric(spec: str) -> tuple[Metric, float]:
    """``NAME:MAX_CHANGE`` as the gate takes it, or ``NAME`` alone: a worst-run metric (pods left unscheduled…)
    changes with any difference; another with 10% or its noise floor, the larger."""
    if ":" in spec:
        return parse_gate(spec)
    m = metric_named(spec)
    if m is None:
        raise ScenarioError(f"--metric {spec!r}: unknown metric (known: {', '.join(METRICS)}; per phase: "
                            "latency_pNN@PHASE)")
    return m, 0.0 if m.worst_run else max(0.10, m.noise_floor)


# ---- the real runs ---------------------------------------------------------------------------------------------


@dataclass
class BisectOptions:
    kubernetes: str
    """``A..B`` or ``A,B[,C…]``."""
    metric: str = "throughput:10%"
    """``NAME:MAX_CHANGE`` or ``NAME`` (:func:`bisect_metric`)."""
    pre: bool = False
    repeat: int = 3
    max_repeat: int = 9
    variant: str | None = None
    ceiling: bool = False
    budget_minutes: float | None = None
    """Wall time the search may take (no batch begun that would end beyond it); None: ``max_repeat`` alone."""
    duet: bool = False
    """Each round's releases at the same time, each on its own cluster (a duet of two clusters; three at once in
    a round that has the middle release too), instead of one after the other."""
    out: Path = Path("reports")
    runs: Any = None
    """RunOptions for each round's runs (scrape interval, submitters, commit)."""


def save(bisect_dir: Path, doc: dict[str, Any]) -> None:
    import orjson

    _atomic_write(bisect_dir / BISECT, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))


def load(bisect_dir: Path) -> dict[str, Any]:
    return settle_status(read_versioned(bisect_dir, BISECT, BISECT_FORMAT_VERSION, "bisect"))


def pinned(path: list[str]) -> dict[str, Any]:
    """What stays the same across the releases of a bisect (each release's own components are in ``builds``):
    the Go toolchain that builds them all, and each component every release's toolchain pins alike (kwok,
    etcd, …); a component whose version differs between releases is named under ``differs``."""
    from kwokbench.toolchain.install import components, go_version

    try:
        raw = go_version()[2]
        go: str | None = next((w for w in raw.split() if w.startswith("go1")), raw.strip())
    except KwokbenchError:
        go = None
    per = [{c.name: c.version for c in components(tag) if not c.optional and c.name != "kubernetes"} for tag in path]
    names = sorted({n for p in per for n in p})
    same = {n: per[0].get(n) for n in names if len({p.get(n) for p in per}) == 1}
    return {"go": go, **same, "differs": sorted(set(names) - set(same))}


def run_bisect(scenario: Scenario, scenario_path: Path, opts: BisectOptions, reporter: Reporter | None = None) -> Path:
    """Runs the search on real clusters; ``bisect.json`` (and every run) under ``out/<scenario>/``."""
    from kwokbench.cluster import Kwokctl
    from kwokbench.plan import check_scenario
    from kwokbench.runner import RunOptions, run_scenario
    from kwokbench.toolchain.install import on_proxy, proxy_problem

    rep = reporter or Silent()
    metric, allowed = bisect_metric(opts.metric)
    phase = metric.name.partition("@")[2]
    if phase and phase not in (w.name for w in scenario.workloads):
        raise ScenarioError(f"--metric {opts.metric}: the scenario has no phase {phase!r} (its phases: "
                            f"{', '.join(w.name for w in scenario.workloads)})")
    if opts.repeat < 1 or opts.max_repeat < opts.repeat:
        raise ScenarioError("--repeat must be at least 1 and --max-repeat at least --repeat")
    if opts.budget_minutes is not None and not opts.budget_minutes > 0:
        raise ScenarioError(f"--budget-minutes {opts.budget_minutes:g}: expected minutes > 0 (the first round "
                            "always runs; the budget stops further ones)")
    if scenario.concurrent_schedulers:
        raise ScenarioError("bisect runs one scheduler variant per release; concurrent_schedulers does not apply")
    names = [v.name for v in scenario.schedulers]
    variant = next((v for v in scenario.schedulers if v.name == (opts.variant or names[0])), None)
    if variant is None:
        raise ScenarioError(f"unknown scheduler variant {opts.variant} (scenario has: {', '.join(names)})")
    if variant.kubernetes:
        raise ScenarioError(f"variant {variant.name} sets kubernetes: {variant.kubernetes}; bisect sets each "
                            "run's release itself (drop it, or pick another variant)")
    check_scenario(scenario, scenario_path.parent)
    tags, is_range = parse_tags(opts.kubernetes)
    probed: dict[str, bool] = {}

    def ask(tag: str) -> bool:
        probed[tag] = bool(on_proxy(tag))
        return probed[tag]

    if is_range:
        rep.info(f"asking the Go module proxy for the releases from {tags[0]} to {tags[1]}…")
        if (problem := proxy_problem(tags[1])) is not None:  # the range's end: why it cannot be built, exactly
            raise ScenarioError(f"Kubernetes {tags[1]} {problem}")
        path = release_path(tags[0], tags[1], opts.pre, ask)
    else:
        path = tags
    names = [slug(t, path[:i]) for i, t in enumerate(path)]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    bisect_dir = opts.out / scenario.name / f"bisect-{stamp}"
    try:
        bisect_dir.mkdir(parents=True)
    except OSError as e:
        raise StoreError(f"cannot create bisect directory {bisect_dir}: {e.strerror}") from e
    doc: dict[str, Any] = {"format_version": BISECT_FORMAT_VERSION, "scenario": scenario.name,
                           "scenario_digest": digest(scenario.model_dump(mode="json")),
                           "scenario_file": str(scenario_path), "variant": variant.name,
                           "kwokbench_version": __version__, "host": host_info(), "owner": owner(),
                           "status": "running", "started_at": datetime.now(UTC).isoformat(),
                           "metric": metric.name, "allowed": allowed, "repeat": opts.repeat,
                           "max_repeat": opts.max_repeat, "budget_minutes": opts.budget_minutes, "pre": opts.pre,
                           "duet": opts.duet, "path": path,
                           "builds": {},
                           "probed": probed, "pinned": pinned(path), "runs": {}, "rounds": [], "ceilings": {}}
    save(bisect_dir, doc)
    k = Kwokctl()
    base_runs = opts.runs or RunOptions()

    def build(tag: str) -> None:
        if tag in doc["builds"]:
            return
        tc = k.for_kubernetes(tag).toolchain
        cached = tc.mode() is not None
        t0 = time.monotonic()
        tc.install("auto", rep)
        doc["builds"][tag] = {"cached": cached, "seconds": round(time.monotonic() - t0, 1),
                              "components": {c.name: c.version for c in tc.components if not c.optional},
                              **({"departs": b} if (b := tc.build_record()) else {})}
        if b:
            rep.info(f"Kubernetes {tag} was built with {provenance.describe(b)}")
        rep.info(f"Kubernetes {tag}: " + ("cached" if cached else f"built in {doc['builds'][tag]['seconds']:.0f} s"))
        save(bisect_dir, doc)

    def measure(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        for i in idx:
            build(path[i])
        variants = [variant.model_copy(update={"name": names[i], "kubernetes": path[i]}) for i in idx]
        sc = scenario.model_copy(update={"schedulers": variants, "duet": opts.duet})
        ropts = RunOptions(out=opts.out, repeat=repeats, scrape_interval=base_runs.scrape_interval,
                           submit_workers=base_runs.submit_workers, commit=base_runs.commit, ref=base_runs.ref)
        results = run_scenario(sc, scenario_path, ropts, rep, k)
        out: dict[int, list[float | None]] = {i: [] for i in idx}
        for n, r in enumerate(results):  # repeat-major, the variants in order within a repeat (run in either)
            i = idx[n % len(idx)]
            v = metric.get(r.summary) if r.status == "complete" and r.summary else None
            out[i].append(v)
            doc["runs"].setdefault(path[i] if path.count(path[i]) == 1 else names[i], []).append(
                {"path": str(r.path), "status": r.status, "value": v})
        save(bisect_dir, doc)
        return out

    def on_round(s: Search) -> None:
        doc["rounds"] = s.rounds
        last = s.rounds[-1]
        for st in last["steps"]:
            rep.info(f"  {st['from']} → {st['to']}: {st['step']}" + (
                f" ({(st['ratio'] - 1) * 100:+.1f}%)" if st.get("ratio") else ""))
        save(bisect_dir, doc)

    try:
        with outcome(doc):
            s = search(path, measure, metric, allowed, opts.repeat, opts.max_repeat, on_round,
                       Budget(opts.budget_minutes * 60 if opts.budget_minutes is not None else None))
            doc["result"] = s.result
            if opts.ceiling:
                _ceilings(scenario, sorted({t for r in s.rounds for t in r["tags"]}, key=versions.tag_key), doc,
                          bisect_dir, rep)
    finally:
        doc["sentence"] = sentence(doc)
        doc["ended_at"] = datetime.now(UTC).isoformat()
        save(bisect_dir, doc)
    return bisect_dir


def _ceilings(scenario: Scenario, tags: list[str], doc: dict[str, Any], bisect_dir: Path, rep: Reporter) -> None:
    """scheduler_perf's in-process ceiling of each release measured, at the scenario's size (saved after each)."""
    from kwokbench.ceiling import measure_ceiling

    nodes = sum(g.count for g in scenario.cluster.node_groups)
    pods = sum(w.count for w in scenario.workloads)
    for tag in tags:
        where, c = measure_ceiling(nodes, pods, 1, 900.0, rep, kubernetes=tag)
        doc["ceilings"][tag] = {"pods_per_second": c.get("pods_per_second"), "workload": c.get("workload"),
                                "file": str(where)}
        save(bisect_dir, doc)
