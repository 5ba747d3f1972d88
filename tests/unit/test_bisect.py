"""``kwokbench bisect``'s pure parts: the release path between two tags, one step's decision, and the search over
a path, given values from a seeded random measure (the runs on real clusters: tests/e2e/test_kubernetes_versions.py)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from kwokbench.bisection import Budget, bisect_metric, parse_tags, release_path, search, sentence, slug, step
from kwokbench.compare.gate import METRICS
from kwokbench.errors import ScenarioError
from kwokbench.report.bisect import rows

# what the module proxy had on 2026-11-26 for these minors (a subset: enough to walk every rule)
ON_PROXY = {
    "v1.35.0", "v1.35.1", "v1.35.2", "v1.35.3", "v1.35.4",
    "v1.36.0-alpha.0", "v1.36.0-alpha.1", "v1.36.0-alpha.3", "v1.36.0-beta.0", "v1.36.0-rc.0", "v1.36.0-rc.1",
    "v1.36.0", "v1.36.1", "v1.36.2", "v1.36.3", "v1.36.4", "v1.36.5",
    "v1.37.0-alpha.0", "v1.37.0-alpha.1", "v1.37.0-beta.0", "v1.37.0-rc.0", "v1.37.0", "v1.37.1", "v1.37.2",
}


def exists(tag: str) -> bool:
    return tag in ON_PROXY


def test_a_path_within_a_minor_is_its_patches() -> None:
    assert release_path("v1.36.1", "v1.36.4", False, exists) == ["v1.36.1", "v1.36.2", "v1.36.3", "v1.36.4"]


def test_a_path_across_minors_leaves_the_older_minors_later_patches_aside() -> None:
    # v1.36.5 came after v1.37.0 on the release-1.36 branch: not on the way from v1.36.4 to v1.37.2
    assert release_path("v1.36.4", "v1.37.2", False, exists) == ["v1.36.4", "v1.37.0", "v1.37.1", "v1.37.2"]
    assert release_path("v1.35.4", "v1.37.0", False, exists) == ["v1.35.4", "v1.36.0", "v1.37.0"]


def test_pre_releases_are_on_the_path_with_pre() -> None:
    assert release_path("v1.35.4", "v1.36.1", True, exists) == [
        "v1.35.4", "v1.36.0-alpha.0", "v1.36.0-alpha.1", "v1.36.0-alpha.3", "v1.36.0-beta.0", "v1.36.0-rc.0",
        "v1.36.0-rc.1", "v1.36.0", "v1.36.1"]
    # (alpha.2 missing, alpha.3 there: every number is asked)
    assert release_path("v1.36.0-alpha.1", "v1.36.0-rc.0", True, exists) == [
        "v1.36.0-alpha.1", "v1.36.0-alpha.3", "v1.36.0-beta.0", "v1.36.0-rc.0"]


def test_a_last_tag_the_proxy_lacks_is_one_line() -> None:
    with pytest.raises(ScenarioError, match=r"v1\.37\.9 is not on the Go module proxy"):
        release_path("v1.37.0", "v1.37.9", False, exists)


@pytest.mark.parametrize(("text", "error"), [
    ("v1.36.4", "at least two tags"),
    ("v1.37.2..v1.36.4", "older than its last"),
    ("v1.37.2,v1.36.4", "oldest first"),
    ("v1.34.2..v1.36.4", "older than v1.35.0"),
    ("1.36..1.37", "not a Kubernetes release tag"),
    ("v1.36.0..v1.36.2..v1.36.4", "a range FIRST..LAST"),
])
def test_bad_releases_are_one_line(text: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        parse_tags(text)


def test_the_same_tag_twice_is_an_a_a_with_two_names() -> None:
    assert parse_tags("v1.36.4,v1.36.4") == (["v1.36.4", "v1.36.4"], False)
    assert slug("v1.37.0-rc.1") == "k-v1-37-0-rc-1"
    assert [slug("v1.36.4", ["v1.36.4"] * n) for n in range(3)] == ["k-v1-36-4", "k-v1-36-4-b", "k-v1-36-4-c"]


THROUGHPUT = METRICS["throughput"]
UNSCHEDULED = METRICS["unscheduled"]


def test_a_step_is_changed_either_way_same_when_detectable_else_undecided() -> None:
    base = [100.0, 104.0, 98.0, 101.0]
    assert step(THROUGHPUT, 0.10, base, [v * 0.7 for v in base])[0] == "changed"  # slower
    assert step(THROUGHPUT, 0.10, base, [v * 1.4 for v in base])[0] == "changed"  # faster counts too
    assert step(THROUGHPUT, 0.10, base, [v * 1.01 for v in base])[0] == "same"
    # a 30% drop in two noisy pairs: beyond the allowed 10% but not significant
    assert step(THROUGHPUT, 0.10, [100.0, 60.0], [40.0, 80.0])[0] == "undecided"
    # within 10% but these runs could not have seen a 10% change: not "same"
    assert step(THROUGHPUT, 0.10, [100.0, 50.0, 120.0], [60.0, 80.0, 100.0])[0] == "undecided"
    # a failed run (None) drops its pair
    assert step(THROUGHPUT, 0.10, [100.0, None, 98.0, 101.0], [70.0, 71.0, None, 69.0])[1].pairs == 2


def test_worst_run_metrics_step_on_the_worst_run() -> None:
    assert step(UNSCHEDULED, 0.0, [0.0], [12.0])[0] == "changed"
    assert step(UNSCHEDULED, 0.0, [12.0, 12.0], [0.0])[0] == "changed"
    assert step(UNSCHEDULED, 0.0, [0.0, 0.0], [0.0])[0] == "same"
    assert step(UNSCHEDULED, 0.0, [None], [0.0])[0] == "undecided"


PATH = [f"v1.36.{p}" for p in range(9)]  # nine tags: a change located in log2 rounds


def measured(change_at: int | None, effect: float, cv: float, seed: int = 1) -> tuple[list[list[int]], object]:
    """A measure whose throughput is 100 before ``change_at`` and 100 × ``effect`` from it on, with a lognormal
    noise of ``cv`` per run and a drift shared by the runs of one repeat (what interleaving cancels)."""
    rng = np.random.default_rng(seed)
    calls: list[list[int]] = []

    def measure(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        calls.append(list(idx))
        out: dict[int, list[float | None]] = {i: [] for i in idx}
        for _ in range(repeats):
            drift = math.exp(rng.normal(0, 0.2))
            for i in idx:
                level = 100.0 * (effect if change_at is not None and i >= change_at else 1.0)
                out[i].append(level * drift * math.exp(rng.normal(0, cv)))
        return out

    return calls, measure


@pytest.mark.parametrize("change_at", [1, 4, 5, 8])
def test_the_search_finds_the_step_in_log2_rounds(change_at: int) -> None:
    calls, measure = measured(change_at, 0.6, 0.03)
    s = search(PATH, measure, THROUGHPUT, 0.10, repeat=3, max_repeat=9)  # type: ignore[arg-type]
    assert s.result["found"] and s.result["between"] == [PATH[change_at - 1], PATH[change_at]], s.result
    assert s.result["ratio"] == pytest.approx(0.6, rel=0.1)
    assert len(s.rounds) <= 1 + math.ceil(math.log2(len(PATH) - 1))
    assert calls[0] == [0, 8]  # the ends first, then a middle with both its ends each round
    assert all(len(c) == 3 for c in calls[1:])
    assert [r["positions"] for r in s.rounds] == [c for n, c in enumerate(calls) if n == 0 or calls[n - 1] != c]
    doc = {"metric": "throughput", "rounds": s.rounds, "result": s.result, "builds": {}, "path": PATH}
    # the interval printed is the one tested: 3 looks planned (9 runs at most, 3 a round), each at 0.05 / 3, so
    # a 97% interval (it read "90%" before, whatever the level)
    assert re.search(rf"changed \(worse\) between {PATH[change_at - 1]} and {PATH[change_at]} by -[34]\d\.\d% \(97% CI "
                     r"-\d+\.\d%\.\.-\d+\.\d%\), 3 pairs$", sentence(doc)), sentence(doc)
    assert "(97%: " in table_change(doc)
    columns, table = rows(doc)
    assert columns[4:7] == ["throughput from", "throughput to", "change (CI)"]
    assert len(table) == 1 + 2 * (len(s.rounds) - 1) and table[-1][-1] in {"changed", "same"}


def test_an_a_a_reports_no_change_and_runs_no_middle() -> None:
    calls, measure = measured(None, 1.0, 0.03)
    s = search(["v1.36.4", "v1.36.4"], measure, THROUGHPUT, 0.10, repeat=3)  # type: ignore[arg-type]
    assert s.result == {"found": False, "step": "same", "between": ["v1.36.4", "v1.36.4"],
                        "why": "no change from v1.36.4 to v1.36.4"}
    assert calls == [[0, 1]]


def test_noise_adds_repeats_up_to_the_maximum_then_stops_undecided() -> None:
    calls: list[list[int]] = []

    def measure(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        # pair ratios alternate 0.6 and 1/0.6: no change on average, but nothing under 10% can be shown
        calls.append(list(idx))
        return {i: [[100.0, 60.0][(r + n) % 2] for r in range(repeats)] for n, i in enumerate(idx)}

    s = search(PATH, measure, THROUGHPUT, 0.10, repeat=2, max_repeat=6)
    assert not s.result["found"] and s.result["step"] == "undecided"
    assert calls == [[0, 8]] * 3 and len(s.rounds[0]["values"][0]) == 6


class Clock:
    """A settable clock: the fake measures move it as their runs would take time."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_budget_stops_more_batches_and_rounds_and_says_so() -> None:
    """No batch is begun that would end beyond the budget (each taken as long as the one before), the first always
    runs; a round the budget stopped reads undecided with why, a narrowing it stopped names where the change is."""
    clock = Clock()

    def noisy(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        clock.t += 60.0 * repeats * len(idx)  # a minute a run
        return {i: [[100.0, 60.0][(r + n) % 2] for r in range(repeats)] for n, i in enumerate(idx)}

    s = search(PATH, noisy, THROUGHPUT, 0.10, repeat=2, max_repeat=6, budget=Budget(7 * 60, clock))
    # the first batch (4 runs, 4 min) ran; the next would end at 8 min, beyond 7: one batch, not three
    assert len(s.rounds[0]["values"][0]) == 2 and s.result["step"] == "undecided"
    assert s.result["why"] == (f"undecided from {PATH[0]} to {PATH[-1]} (the budget of 7 min: 2 more runs of each "
                               "of 2 releases would end beyond it)")
    clock.t = 0.0
    _, step_at_5 = measured(5, 0.6, 0.03)

    def timed(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        clock.t += 10.0 * repeats * len(idx)
        return step_at_5(idx, repeats)  # type: ignore[operator, no-any-return]

    s = search(PATH, timed, THROUGHPUT, 0.10, repeat=3, budget=Budget(100.0, clock))
    # round one (6 runs, 60 s) found the ends apart; round two would take about as long again, beyond 100 s
    assert len(s.rounds) == 1 and not s.result["found"] and s.result["between"] == [PATH[0], PATH[-1]]
    assert s.result["why"] == (f"the change lies between {PATH[0]} and {PATH[-1]}, not narrowed further: the budget "
                               "of 1.66667 min: another round would end beyond it")
    clock.t = 0.0
    s = search(PATH, timed, THROUGHPUT, 0.10, repeat=3, budget=Budget(None, clock))  # no budget: to the end
    assert s.result["found"] and s.result["between"] == [PATH[4], PATH[5]]


def test_a_change_that_does_not_show_again_stops_the_search() -> None:
    state = {"n": 0}

    def measure(idx: list[int], repeats: int) -> dict[int, list[float | None]]:
        state["n"] += 1  # the ends differ in the first round only (a transient on the host, not a release)
        return {i: [100.0 * (0.5 if state["n"] == 1 and i == idx[-1] else 1.0) + r for r in range(repeats)]
                for i in idx}

    s = search(PATH, measure, THROUGHPUT, 0.10, repeat=3)
    assert not s.result["found"] and "did not show again" in s.result["why"]


def test_a_metric_alone_takes_its_default_change() -> None:
    assert bisect_metric("unscheduled") == (UNSCHEDULED, 0.0)
    assert bisect_metric("throughput") == (THROUGHPUT, 0.10)
    assert bisect_metric("throughput:5%") == (THROUGHPUT, 0.05)
    with pytest.raises(ScenarioError, match="unknown metric"):
        bisect_metric("speed")
    scoped, allowed = bisect_metric("latency_p50@churn")  # one phase's pods: the base metric's noise floor
    assert scoped.name == "latency_p50@churn" and allowed == max(0.10, scoped.noise_floor) > 0.10


def test_an_unchanged_release_is_same_and_a_speed_up_reads_as_one() -> None:
    """Bisect's steps decide with the gate's procedure: an A/A within the allowed change is shown *same* (two
    one-sided tests), a speed-up is *changed* and says it got better (it was stored as "within the allowed 10%")."""
    before = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0]
    assert step(THROUGHPUT, 0.10, before, [x * 1.005 for x in before])[0] == "same"
    st, c = step(THROUGHPUT, 0.10, before, [x * 1.3 for x in before])
    assert st == "changed" and c.decision == "better" and "better beyond 10%" in c.reason, c.reason
    assert step(THROUGHPUT, 0.10, before[:2], [before[0] * 1.2, before[1] * 0.85])[0] == "undecided"


def test_a_bisect_records_what_it_pinned_across_its_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    """bisect.json says which Go built every release and which components every release's toolchain shares (kwok,
    etcd), and names a component whose version differs between the releases."""
    from kwokbench import bisection
    from kwokbench.toolchain import install

    monkeypatch.setattr(install, "go_version", lambda: (1, 26, "go version go1.26.8 linux/amd64"))
    doc = bisection.pinned(["v1.35.0", "v1.35.1", "v1.36.4"])
    assert doc["go"] == "go1.26.8" and doc["differs"] == [] and {"kwok", "etcd"} <= set(doc)
    real = install.components

    def components(tag: str = "v1.36.4") -> list[install.Component]:
        out = real(tag)
        return [c if c.name != "etcd" or tag != "v1.35.0" else dataclasses.replace(c, version="v3.5.0") for c in out]

    monkeypatch.setattr(install, "components", components)
    doc = bisection.pinned(["v1.35.0", "v1.36.4"])
    assert doc["differs"] == ["etcd"] and "etcd" not in {k for k in doc if k != "differs"}


def table_change(doc: dict[str, object]) -> str:
    """The change column of a bisect table's last row (the step found)."""
    return rows(doc)[1][-1][6]  # type: ignore[arg-type]
