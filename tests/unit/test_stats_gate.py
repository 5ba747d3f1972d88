from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kwokbench.compare.gate import METRICS, GateResult, comparability, gate, host_warnings, pair_runs, parse_gate
from kwokbench.compare.stats import compare, compare_worst
from kwokbench.errors import ScenarioError
from kwokbench.report.render import gate_markdown, github_annotations, junit, markdown
from kwokbench.store import StoredRun

RNG = np.random.default_rng(42)
BASE = (400 + 8 * RNG.standard_normal(8)).tolist()  # throughput samples, ~2% noise
SAME = (400 + 8 * RNG.standard_normal(8)).tolist()
SLOWER = (320 + 8 * RNG.standard_normal(8)).tolist()  # 20% lower throughput


def _noisy(n: int, seed: int, sd: float = 0.03, level: float = 400.0) -> np.ndarray:
    return level * np.exp(sd * np.random.default_rng(seed).standard_normal(n))


# -- statistics --

def test_same_distribution_passes() -> None:
    c = compare("throughput", BASE, SAME, higher_is_better=True, max_regression=0.10)
    assert c.verdict == "pass", c.reason
    assert c.ci is not None and c.ci[0] < 1.0 < c.ci[1] + 0.05
    assert not c.noisy and c.method == "Welch t-test" and c.mde is not None and c.mde < 0.05


def test_twenty_percent_slower_is_a_regression() -> None:
    c = compare("throughput", BASE, SLOWER, higher_is_better=True, max_regression=0.10)
    assert c.verdict == "regression", c.reason
    assert c.ratio == pytest.approx(0.8, abs=0.03)
    assert c.p_value is not None and c.p_value < 0.01


def test_latency_direction_is_respected() -> None:
    base = (np.array(BASE) / 1000).tolist()
    worse = (np.array(BASE) / 1000 * 1.3).tolist()  # 30% higher latency
    assert compare("latency_p50", base, worse, higher_is_better=False).verdict == "regression"
    assert compare("latency_p50", worse, base, higher_is_better=False).verdict == "pass"


def test_three_vs_three_can_be_a_regression() -> None:
    c = compare("throughput", [400.0, 405.0, 395.0], [320.0, 325.0, 318.0], True, 0.10)
    assert c.verdict == "regression", c.reason
    assert c.p_value is not None and c.p_value < 0.01 and c.runs == "3 vs 3"


def test_error_rates_at_five_runs_with_three_percent_noise() -> None:
    """A/A: false regressions <= 5% and passes >= 90%; a 20% throughput drop found >= 95% of the time."""
    aa = [compare("throughput", _noisy(5, s), _noisy(5, s + 10_000), True, 0.10).verdict for s in range(300)]
    ab = [compare("throughput", _noisy(5, s), 0.8 * _noisy(5, s + 10_000), True, 0.10).verdict for s in range(300)]
    assert aa.count("regression") / 300 <= 0.05
    assert aa.count("pass") / 300 >= 0.90
    assert ab.count("regression") / 300 >= 0.95


def test_paired_beats_unpaired_under_linear_drift() -> None:
    """Runs interleaved A B A B… while the host slows down steadily: pairs cancel the drift."""
    found = {True: 0, False: 0}
    mde = {True: 0.0, False: 0.0}
    for seed in range(100):
        t = np.arange(10)
        v = 400 * (1 + 0.05 * t) * np.exp(0.02 * np.random.default_rng(seed).standard_normal(10))
        base, cand = v[0::2], v[1::2] * 0.82  # 18% slower candidate
        for paired in (True, False):
            c = compare("throughput", base, cand, True, 0.10, paired=paired)
            found[paired] += c.verdict == "regression"
            mde[paired] += (c.mde or 0) / 100
    assert found[True] >= 95 and found[False] <= 80
    assert mde[True] < mde[False] / 3


def test_minimum_detectable_change_shrinks_with_runs() -> None:
    mdes = []
    for n in (3, 5, 10):
        signs = np.resize([1.0, -1.0, 0.5, -0.5], n)  # the same spread at every n
        c = compare("throughput", 400 * np.exp(0.03 * signs), 400 * np.exp(-0.03 * signs), True)
        assert c.mde is not None
        mdes.append(c.mde)
    assert mdes[0] > mdes[1] > mdes[2]


def test_students_t_from_scipy_special_is_scipy_stats_own() -> None:
    """The gate's quantiles and p-values come from scipy.special (scipy.stats, 0.7 CPU-seconds of import, is not
    loaded by a command): the same numbers as scipy.stats.t, to the last bit, over the degrees of freedom a gate
    meets (Welch's are fractional)."""
    from scipy import stats as sps
    from scipy.special import stdtr, stdtrit

    from kwokbench.compare.stats import ALPHA, POWER, _t, minimum_detectable_log

    for df in (1.0, 2.0, 2.7, 4.0, 9.3, 29.0, 200.0):
        for q in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999):
            assert stdtrit(df, q) == sps.t.ppf(q, df)
        for x in (-4.0, -1.0, 0.0, 0.3, 1.7, 6.0):
            assert stdtr(df, -x) == sps.t.sf(x, df)
        assert _t(0.01, df) == sps.t.ppf(0.99, df)
        assert minimum_detectable_log(0.02, df) == (sps.t.ppf(1 - ALPHA, df) + sps.t.ppf(POWER, df)) * 0.02


def test_tiny_samples_are_inconclusive() -> None:
    c = compare("throughput", BASE[:2], SLOWER[:2], higher_is_better=True)
    assert c.verdict == "inconclusive" and "too few samples" in c.reason
    c = compare("throughput", BASE[:1], SLOWER[:1], higher_is_better=True, paired=True)
    assert c.verdict == "inconclusive" and "too few samples (1 pair" in c.reason
    # two pairs are enough for a paired test
    assert compare("throughput", [400.0, 410.0], [300.0, 309.0], True, paired=True).verdict == "regression"


def test_beyond_the_limit_but_not_significant_is_inconclusive_and_says_why() -> None:
    c = compare("latency_p50", [0.1, 0.13, 0.08], [0.115, 0.15, 0.092], False, 0.10)
    assert c.verdict == "inconclusive"
    assert "beyond the allowed 10% but not significant" in c.reason and "90% CI" in c.reason
    assert c.more is not None and f"about {c.more} more pairs (or runs a side) would decide" in c.reason
    assert "minimum detectable change" in c.reason and "3 vs 3" in c.reason


def test_small_but_certain_change_within_threshold_passes() -> None:
    c = compare("throughput", [100.0, 100.1, 99.9, 100.0, 100.05], [97.0, 97.1, 96.9, 97.0, 97.05], True, 0.10)
    assert c.verdict == "pass"  # 3% worse and significant, but smaller than the 10% minimum effect


def test_noise_floor_raises_the_limit_and_says_so() -> None:
    base = [0.100, 0.101, 0.099, 0.100, 0.1005]
    cand = [x * 1.15 for x in base]  # p99 15% up, certain
    assert compare("latency_p99", base, cand, False, 0.10).verdict == "regression"
    c = compare("latency_p99", base, cand, False, 0.10, noise_floor=0.20)
    assert c.verdict == "pass" and "the same within ±20% (latency_p99's noise floor; 10% asked)" in c.reason
    assert compare("latency_p99", base, [x * 1.3 for x in base], False, 0.10, noise_floor=0.20).verdict == "regression"


def test_noise_is_reported_and_an_underpowered_pass_is_none() -> None:
    """Groups too noisy to see the allowed change cannot pass, even when their estimates agree exactly."""
    noisy = [100.0, 140.0, 70.0, 120.0, 90.0]
    c = compare("throughput", noisy, noisy, True)
    assert c.noisy and c.verdict == "inconclusive" and "noisy" in c.reason and c.more


def test_an_improvement_reads_as_one() -> None:
    base = [100.0, 101.0, 99.0, 100.0, 100.5]
    c = compare("throughput", base, [x * 1.3 for x in base], True, 0.10, paired=True)
    assert c.verdict == "pass" and c.decision == "better" and "better beyond 10%" in c.reason, c.reason


def test_non_positive_values_and_exact_pairs() -> None:
    c = compare("throughput", [400.0, 410.0, 405.0], [0.0, 300.0, 310.0], True)
    assert c.verdict == "inconclusive" and "<= 0" in c.reason
    same = compare("throughput", [100.0, 200.0, 300.0], [100.0, 200.0, 300.0], True, paired=True)
    assert same.verdict == "pass" and same.mde == 0.0 and same.ci == (1.0, 1.0)
    worse = compare("throughput", [100.0, 200.0, 300.0], [50.0, 100.0, 150.0], True, paired=True)
    assert worse.verdict == "regression" and worse.p_value == 0.0


def test_worst_run_rule_for_counts() -> None:
    """Where the scenario expects none, any is a defect; where pods stay pending by design, the count's own
    spread decides (the old worst-run rule failed two identical groups about half the time there)."""
    assert compare_worst("unscheduled", [0, 0, 0], [0, 1, 0]).verdict == "regression"
    assert compare_worst("unscheduled", [0, 0, 0], [0, 0, 0]).decision == "same"
    assert compare_worst("unscheduled", [0, 3, 0], [3, 0, 1]).verdict != "regression"
    assert compare_worst("unscheduled", [], [1]).verdict == "inconclusive"
    by_design = [300, 297, 303, 301, 299]
    same = compare_worst("unscheduled", by_design, [302, 298, 300, 304, 299])
    assert same.verdict == "pass" and "by design" in same.reason, same.reason
    assert compare_worst("unscheduled", by_design, [400, 390, 410, 405, 395]).verdict == "regression"
    # identical groups pending by design: the worst-run rule failed ~half of these; the test fails none
    rng = np.random.default_rng(3)
    draws = [compare_worst("unscheduled", rng.poisson(300, 5).astype(float), rng.poisson(300, 5).astype(float))
             for _ in range(200)]
    assert sum(c.verdict == "regression" for c in draws) <= 10


# -- the gate over stored runs --

def _run(tmp: Path, name: str, tp: float, status: str = "complete", variant: str = "default",
         unscheduled: int = 0, pods: int = 1000, group: dict[str, Any] | None = None, started: str | None = None,
         host: dict[str, Any] | None = None, hostname: str = "h1") -> StoredRun:
    meta: dict[str, Any] = {
        "status": status, "toolchain": {"kubernetes": "v1.36.4"},
        "host": {"cpu_model": "x", "cpus": 2, "hostname": hostname},
        "fairness": {"scheduler_client_qps": 5000, "scheduler_client_burst": 10000, "gogc_apiserver_etcd": 400},
        "cluster": {"nodes": 10}, "variant": {"name": variant, "binary": "kube-scheduler", "client_qps": None},
        "group": group or {}, "phases": [{"name": "pods", "timed_out": False}]}
    if started:
        meta["started_at"] = started
    summary: dict[str, Any] = {"throughput": {"average": tp}, "latency": {"created_to_scheduled": {"p99": 100 / tp}},
                               "pods_scheduled": pods, "pods_expected": pods + unscheduled,
                               "pods_unscheduled": unscheduled}
    if host is not None:
        summary["host"] = host
    return StoredRun(tmp / name, meta, summary, None, None)


def test_gate_exit_codes_and_junit(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    good = [_run(tmp_path, f"g{i}", v) for i, v in enumerate(SAME)]
    bad = [_run(tmp_path, f"s{i}", v) for i, v in enumerate(SLOWER)]
    ok = gate(base, good, [])
    assert ok.exit_code == 0, [c.reason for c in ok.comparisons]
    assert [c.metric for c in ok.comparisons] == ["throughput", "latency_p99", "unscheduled"]
    res = gate(base, bad, [])
    assert res.exit_code == 1
    assert gate(base[:2], bad[:2], []).exit_code == 3
    suite = ET.fromstring(junit(res))
    # throughput -20% fails; latency_p99 +25% stays within its 40% noise floor (measured spread)
    assert suite.get("failures") == "1" and len(suite.findall("testcase")) == 3
    props = {p.get("name"): p.get("value") for p in suite.findall("testcase")[0].iter("property")}
    assert props["verdict"] == "regression" and float(props["min_detectable_change"]) > 0
    failed = [_run(tmp_path, "f", 1.0, status="interrupted")]
    assert any("did not complete" in w for w in gate(base, good + failed, []).warnings)
    md = markdown(res.runs, res)
    assert "min. detectable" in md and "| throughput | **regression** |" in md


def test_unscheduled_is_always_gated(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    stranded = [_run(tmp_path, f"c{i}", v, unscheduled=5 if i == 3 else 0) for i, v in enumerate(SAME)]
    res = gate(base, stranded, ["throughput:10%"])
    assert [c.metric for c in res.comparisons] == ["throughput", "unscheduled"]
    assert res.comparisons[0].verdict == "pass" and res.comparisons[1].verdict == "regression"
    assert "worst candidate run 5 unscheduled, the baseline runs none" in res.comparisons[1].reason
    assert res.exit_code == 1


def test_timed_out_runs_are_compared_with_a_warning(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    cand = [_run(tmp_path, f"c{i}", v) for i, v in enumerate(SAME)]
    cand[0].meta["phases"][0]["timed_out"] = True
    res = gate(base, cand, [])
    assert len(res.comparisons[0].candidate) == 8
    assert any("default:c0 timed out in phase pods" in w for w in res.warnings)


def test_p99_needs_enough_pods(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v, pods=500) for i, v in enumerate(BASE)]
    cand = [_run(tmp_path, f"c{i}", v) for i, v in enumerate(SLOWER)]
    p99 = gate(base, cand, ["latency_p99:10%"]).comparisons[0]
    assert p99.verdict == "inconclusive"
    assert "needs >= 1000 pods scheduled per run so that >= 10 pods decide it" in p99.reason
    assert "default:b0 (500)" in p99.reason


def test_scenario_declared_gates_apply_without_metric_options(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    bad = [_run(tmp_path, f"s{i}", v) for i, v in enumerate(SLOWER)]
    for r in bad:
        r.meta["scenario"] = {"gates": ["throughput:25%"]}
    res = gate(base, bad, [])
    assert [c.metric for c in res.comparisons] == ["throughput", "unscheduled"]
    assert res.exit_code == 0  # 20% < 25% allowed
    assert gate(base, bad, ["throughput:10%"]).exit_code == 1  # --metric wins


def _interleaved(tmp: Path, a: list[float], b: list[float]) -> list[StoredRun]:
    runs = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        g = {"id": "20250101T000000Z", "repeat": i, "of": len(a)}
        runs += [_run(tmp, f"r{i}a", x, variant="a", group=g, started=f"2025-01-01T00:{2 * i:02d}:00+00:00"),
                 _run(tmp, f"r{i}b", y, variant="b", group=g, started=f"2025-01-01T00:{2 * i + 1:02d}:00+00:00")]
    return runs


def test_variants_of_one_folder_are_gated_paired(tmp_path: Path) -> None:
    runs = _interleaved(tmp_path, BASE[:5], SLOWER[:5])
    res = gate(runs, runs, [], baseline_variant="a", candidate_variant="b")
    tp = res.comparisons[0]
    assert tp.verdict == "regression" and tp.pairs == 5 and tp.method == "paired t-test"
    assert "paired by interleaved repeat" in res.notes[0] and len(res.runs) == 10
    with pytest.raises(ScenarioError, match=r"--candidate-variant c: no run of that variant \(variants present: a, b"):
        gate(runs, runs, [], baseline_variant="a", candidate_variant="c")
    with pytest.raises(ScenarioError, match=r"both baseline and candidate.*--baseline-variant"):
        gate(runs, runs, [])
    with pytest.raises(ScenarioError, match="both baseline and candidate"):
        gate(runs, runs, [], baseline_variant="a")  # the candidate side still holds a's runs


def test_the_same_variants_on_both_sides_are_gated_each_against_itself(tmp_path: Path) -> None:
    """A plugin beside the stock scheduler, base against head: pooled, the plugin's slowdown would be diluted by
    the stock runs; each variant is gated on its own instead, and the result names it."""
    base = [_run(tmp_path, f"b{v}{i}", x, variant=v) for v in ("plugin", "stock") for i, x in enumerate(BASE)]
    head = [*(_run(tmp_path, f"hplugin{i}", x, variant="plugin") for i, x in enumerate(SLOWER)),
            *(_run(tmp_path, f"hstock{i}", x, variant="stock") for i, x in enumerate(SAME))]
    res = gate(base, head, ["throughput:10%"])
    verdicts = {c.metric: c.verdict for c in res.comparisons}
    assert verdicts == {"throughput [plugin]": "regression", "unscheduled [plugin]": "pass",
                        "throughput [stock]": "pass", "unscheduled [stock]": "pass"}
    assert res.exit_code == 1 and len(res.runs) == len(base) + len(head)
    assert "each variant gated against itself (plugin, stock)" in res.notes[0]
    assert len(res.comparisons[0].candidate) == len(SLOWER)  # the plugin's runs only
    # a variant chosen on either side: as before, no split
    assert gate(base, head, [], "stock", "stock").comparisons[0].metric == "throughput"


def test_pairing_rules(tmp_path: Path) -> None:
    runs = _interleaved(tmp_path, BASE[:4], SAME[:4])
    a, b = [r for r in runs if r.label.startswith("a:")], [r for r in runs if r.label.startswith("b:")]
    pairs, how = pair_runs(a, list(reversed(b)))
    assert how == "paired by interleaved repeat" and pairs is not None
    assert all(x.meta["group"]["repeat"] == y.meta["group"]["repeat"] for x, y in pairs)
    # separate invocations (CI base/head made alternately): by start order, A B B A too
    for r in runs:
        r.meta["group"] = {}
    pairs, how = pair_runs(a, b)
    assert how == "paired by start order" and pairs is not None
    assert [x.path.name for x, _ in pairs][:2] == ["r0a", "r1a"]
    a[1].meta["started_at"], b[1].meta["started_at"] = b[1].meta["started_at"], a[1].meta["started_at"]
    assert pair_runs(a, b)[1] == "paired by start order"  # A B B A A B A B
    b[0].meta["started_at"], a[1].meta["started_at"] = a[1].meta["started_at"], b[0].meta["started_at"]
    assert pair_runs(a, b) == (None, "unpaired: the runs neither share interleaved repeats nor alternate in time")
    assert pair_runs(a, b[:3])[1].startswith("unpaired: the groups have different numbers")


def test_host_warnings(tmp_path: Path) -> None:
    def h(before: float, after: float, steal: float = 0.0) -> dict[str, Any]:
        return {"calibration_seconds": {"before": before, "after": after}, "cpu_steal_fraction": steal,
                "cpu_busy_fraction": 0.5, "load1_max": 1.0}

    base = [_run(tmp_path, f"b{i}", 400, host=h(0.45, 0.45)) for i in range(3)]
    cand = [_run(tmp_path, f"c{i}", 400, host=h(0.52, 0.52)) for i in range(3)]
    w = host_warnings(base, cand)
    assert w == ["candidate ran on a host 16% slower (CPU calibration 0.52 s vs 0.45 s)"]
    moving = [_run(tmp_path, f"m{i}", 400, host=h(0.45, 0.45 + 0.05 * i, steal=0.08), hostname="h2")
              for i in range(3)]
    w = host_warnings(base, moving)
    assert any("host speed moved inside the candidate group: CPU calibration 0.45–0.55 s" in x for x in w)
    assert any("candidate runs lost 8% of CPU time to steal" in x for x in w)
    assert any("different hosts (h1 vs h2): a stored baseline from another machine is not comparable" in x
               for x in w)
    old = [_run(tmp_path, f"o{i}", 400) for i in range(3)]  # runs from before host measurements
    assert host_warnings(old, old) == []



def test_a_regression_the_candidate_hosts_slowdown_can_explain_is_inconclusive(tmp_path: Path) -> None:
    """Host evidence never makes a regression by itself: 20% lower throughput on a host 30% slower (its CPU
    calibration) is inconclusive, saying why; on a host 5% slower, or with the same drop beyond what a 10%
    slower host explains, it stays a regression; a defect count is not the host's to explain."""
    def h(cal: float) -> dict[str, Any]:
        return {"calibration_seconds": {"before": cal, "after": cal}, "cpu_steal_fraction": 0.0}

    base = [_run(tmp_path, f"b{i}", v, host=h(0.40)) for i, v in enumerate(BASE)]
    for cal, verdict in ((0.52, "inconclusive"), (0.42, "regression"), (0.45, "regression")):
        cand = [_run(tmp_path / str(cal), f"c{i}", v, host=h(cal), unscheduled=3) for i, v in enumerate(SLOWER)]
        res = gate(base, cand, ["throughput:10%"])
        tp = res.comparisons[0]
        assert (tp.metric, tp.verdict, tp.decision) == ("throughput", verdict, verdict), (cal, tp.reason)
        unscheduled = next(x for x in res.comparisons if x.metric == "unscheduled")
        assert unscheduled.verdict == "regression"  # three pods left where none were: a defect, whatever the host
        if verdict == "inconclusive":
            assert tp.reason.startswith("lower by 1") and "host 30% slower (CPU calibration 0.52 s vs 0.40 s): " \
                "the host can explain it" in tp.reason and "run --duet" in tp.reason, tp.reason
            assert res.exit_code == 1  # the defect still fails the gate
    # a faster candidate host explains no regression away (nor does a host without calibrations)
    cand = [_run(tmp_path / "fast", f"c{i}", v, host=h(0.30)) for i, v in enumerate(SLOWER)]
    assert gate(base, cand, ["throughput:10%"]).comparisons[0].verdict == "regression"


def test_not_comparable_runs_name_each_field(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", 400, variant="a")
    b = _run(tmp_path, "b", 400, variant="b")
    b.meta["fairness"]["scheduler_client_qps"] = 50
    b.meta["fairness"]["gogc_apiserver_etcd"] = None
    b.meta["toolchain"]["kubernetes"] = "v1.35.0"
    w = comparability([a, b])
    assert "not comparable: runs differ in fairness.scheduler_client_qps: 50 in b (1 run); 5000 in a (1 run)" in w
    assert any("fairness.gogc_apiserver_etcd: 400 in a (1 run); absent in b" in x for x in w)
    assert any("toolchain.kubernetes" in x for x in w)
    assert isinstance(gate([a], [b], []), GateResult)
    # the variants themselves set different client QPS: that is what is compared, not a fairness problem
    b.meta["variant"]["client_qps"] = 50
    assert not any("scheduler_client_qps" in x for x in comparability([a, b]))
    # 5000 and 5000.0 are the same setting
    b.meta["fairness"].update(scheduler_client_qps=5000.0, gogc_apiserver_etcd=400)
    b.meta["toolchain"]["kubernetes"] = "v1.36.4"
    b.meta["variant"]["client_qps"] = None
    assert comparability([a, b]) == []


def test_runs_with_a_different_number_of_kwok_controllers_are_not_comparable(tmp_path: Path) -> None:
    from kwokbench.runner import cluster_options, fairness_manifest
    from kwokbench.scenario import parse_scenario

    metas = []
    for k in (1, 2):
        sc = parse_scenario(f"schema_version: 1\nname: s\ncluster: {{kwok_controllers: {k}, node_groups: "
                            "[{name: c, count: 1}]}\nworkloads: [{name: p, count: 1}]\n")
        metas.append(fairness_manifest(sc, sc.schedulers[0], cluster_options(sc, tmp_path, sc.schedulers[0], "x",
                                                                             None)))  # type: ignore[arg-type]
    assert [m["kwok_controllers"] for m in metas] == [1, 2]
    a, b = _run(tmp_path, "a", 400, variant="a"), _run(tmp_path, "b", 400, variant="b")
    a.meta["fairness"]["kwok_controllers"], b.meta["fairness"]["kwok_controllers"] = 1, 2
    assert "not comparable: runs differ in fairness.kwok_controllers: 1 in a (1 run); 2 in b (1 run)" in \
        comparability([a, b])


@pytest.mark.parametrize("spec", ["throughput", "nope:10%", "throughput:150%", "throughput:-1"])
def test_bad_gate_specs(spec: str) -> None:
    with pytest.raises(ScenarioError):
        parse_gate(spec)


def test_gate_spec_forms() -> None:
    assert parse_gate("latency_p99:5%")[1] == pytest.approx(0.05)
    assert parse_gate("throughput:0.2")[1] == pytest.approx(0.2)
    # a count with no change allowed, as scenarios/alibaba-gpu-2023-policies.yaml gates it (refused before)
    assert parse_gate("unscheduled:0") == (METRICS["unscheduled"], 0.0)


def test_every_shipped_scenarios_gates_parse() -> None:
    """What `kwokbench gate` reads from a scenario when it is given no --metric (validate does not load the gate)."""
    from kwokbench.scenario import load_scenario

    for path in sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml")):
        for spec in load_scenario(path).gates:
            parse_gate(spec)


def test_groups_that_did_not_receive_the_same_load_are_warned(tmp_path: Path) -> None:
    def with_load(r: StoredRun, accepted: float) -> StoredRun:
        assert r.summary is not None
        r.summary["submit"] = [{"phase": "pods", "offered_qps": 500.0, "accepted_qps": 500 * accepted,
                                "achieved_ratio": accepted}]
        return r

    base = [with_load(_run(tmp_path, f"b{i}", v), 0.99) for i, v in enumerate(BASE)]
    same = [with_load(_run(tmp_path, f"c{i}", v), 0.98) for i, v in enumerate(SAME)]
    starved = [with_load(_run(tmp_path, f"s{i}", v), 0.38) for i, v in enumerate(SAME)]
    assert not [w for w in gate(base, same, []).warnings if "same load" in w]
    [w] = [w for w in gate(base, starved, []).warnings if "same load" in w]
    assert "99% of the offered rate in the baseline runs" in w and "38% in the candidate runs" in w


def test_an_external_scheduler_variant_is_what_is_compared(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", 400, variant="stock")
    b = _run(tmp_path, "b", 400, variant="yk")
    a.meta["fairness"].update(scheduler_name="default-scheduler", scheduler_command=None)
    b.meta["fairness"].update(scheduler_name="yunikorn", scheduler_command=["/opt/yk", "-kubeConfig={kubeconfig}"],
                              scheduler_version={"yk": "v1.6"})
    assert any("fairness.scheduler_name" in x for x in comparability([a, b]))  # not set by the variants
    b.meta["variant"].update(scheduler_name="yunikorn", command=["/opt/yk", "-kubeConfig={kubeconfig}"])
    w = comparability([a, b])
    assert not any(f in x for x in w for f in ("scheduler_name", "scheduler_command", "scheduler_version")), w
    # binary: yunikorn serves the name "yunikorn" without the variant saying so: the kind is what is compared
    c = _run(tmp_path, "c", 400, variant="yunikorn")
    c.meta["variant"]["binary"] = "yunikorn"
    c.meta["fairness"].update(scheduler_name="yunikorn", scheduler_command=None)
    assert not any("scheduler_name" in x for x in comparability([a, c])), comparability([a, c])


def test_the_pull_requests_verdict_table_and_annotations(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    bad = [_run(tmp_path, f"s{i}", v) for i, v in enumerate(SLOWER)]
    res = gate(base, bad, ["throughput:10%", "latency_p99:10%"])
    md = gate_markdown(res)
    assert md.startswith("## kwokbench gate: ❌ regression\n")
    row = next(line for line in md.splitlines() if line.startswith("| throughput |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{statistics.median(BASE):.3g}" and cells[2] == f"{statistics.median(SLOWER):.3g}"
    assert cells[3].startswith("-") and "%.." in cells[3] and cells[4] == "❌ regression"
    # annotations: the regression only (latency_p99 passes within its noise floor, unscheduled passes)
    lines = github_annotations(res)
    assert len(lines) == 1 and lines[0].startswith("::error title=kwokbench gate::throughput regression: ")
    assert "\n" not in lines[0]
    few = gate(base[:2], bad[:2], ["throughput:10%"])
    assert few.exit_code == 3 and gate_markdown(few).startswith("## kwokbench gate: ⚠️ inconclusive")
    assert [a.split("::")[1] for a in github_annotations(few)] == ["warning title=kwokbench gate"]


def test_gang_metrics_read_every_gang_phase() -> None:
    from kwokbench.compare.gate import METRICS

    s = {"placement": {"gangs": [{"partial": 1, "time_to_place": {"per_second": 2.0, "p90": 3.0}},
                                 {"partial": 0, "time_to_place": {"per_second": 0.5, "p90": 1.0}},
                                 {"partial": 2, "time_to_place": None}]}}
    assert METRICS["gangs_per_second"].get(s) == 0.5  # the slowest phase
    assert METRICS["gang_place_p90"].get(s) == 3.0  # the worst phase
    assert METRICS["gangs_partial"].get(s) == 3.0 and METRICS["gangs_partial"].worst_run
    assert all(METRICS[m].get({"placement": {"gangs": []}}) is None
               for m in ("gangs_per_second", "gang_place_p90", "gangs_partial"))


def test_a_phase_latency_is_gated_on_that_phases_pods_alone(tmp_path: Path) -> None:
    """kubernetes#140877 slowed a churn behind a long fill: created → scheduled of every pod hides it (the fill's
    3600 pods set the p50), the churn phase's own figure (``latency_p50@churn``, from ``latency.by_phase``) shows
    it. Names not of the form latency_pNN@PHASE are refused in one line."""
    def with_phase(run: StoredRun, churn_p50: float) -> StoredRun:
        assert run.summary is not None
        run.summary["latency"]["created_to_scheduled"]["p50"] = 0.06  # the fill's, the same on both sides
        run.summary["latency"]["by_phase"] = {"churn": {"created_to_scheduled": {"p50": churn_p50}}}
        return run

    metric, allowed = parse_gate("latency_p50@churn:50%")
    assert (metric.name, allowed, metric.higher_is_better) == ("latency_p50@churn", 0.5, False)
    assert metric.noise_floor == METRICS["latency_p50"].noise_floor and "phase churn's pods" in metric.description
    base = [with_phase(_run(tmp_path, f"b{i}", v), 0.06 + i * 0.003) for i, v in enumerate(BASE)]
    slow = [with_phase(_run(tmp_path, f"s{i}", v), 0.56 + i * 0.02) for i, v in enumerate(BASE)]
    res = gate(base, slow, ["latency_p50@churn:50%", "latency_p50:50%"])
    verdicts = {c.metric: c.verdict for c in res.comparisons}
    assert verdicts["latency_p50@churn"] == "regression" and verdicts["latency_p50"] != "regression", verdicts
    for bad, why in [("latency_p50@Churn:5%", "expected NAME:MAX_REGRESSION"),
                     ("throughput@churn:5%", "unknown metric 'throughput@churn'"),
                     ("latency_p75@churn:5%", "per phase: latency_p50@PHASE")]:
        with pytest.raises(ScenarioError, match=why):
            parse_gate(bad)
