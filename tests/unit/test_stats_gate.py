from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.gate import GateResult, gate, parse_gate
from kwokbench.report.render import junit
from kwokbench.stats import compare
from kwokbench.store import StoredRun

RNG = np.random.default_rng(42)
BASE = (400 + 8 * RNG.standard_normal(8)).tolist()  # throughput samples, ~2% noise
SAME = (400 + 8 * RNG.standard_normal(8)).tolist()
SLOWER = (320 + 8 * RNG.standard_normal(8)).tolist()  # 20% lower throughput


def test_same_distribution_passes() -> None:
    c = compare("throughput", BASE, SAME, higher_is_better=True, max_regression=0.10)
    assert c.verdict == "pass", c.reason
    assert c.ci is not None and c.ci[0] < 1.0 < c.ci[1] + 0.05
    assert not c.noisy


def test_twenty_percent_slower_is_a_regression() -> None:
    c = compare("throughput", BASE, SLOWER, higher_is_better=True, max_regression=0.10)
    assert c.verdict == "regression", c.reason
    assert c.ratio == pytest.approx(0.8, abs=0.03)
    assert c.p_value is not None and c.p_value < 0.01


def test_latency_direction_is_respected() -> None:
    base = (np.array(BASE) / 1000).tolist()
    worse = (np.array(BASE) / 1000 * 1.3).tolist()  # 30% higher latency
    assert compare("latency_p99", base, worse, higher_is_better=False).verdict == "regression"
    assert compare("latency_p99", worse, base, higher_is_better=False).verdict == "pass"


def test_tiny_samples_are_inconclusive() -> None:
    c = compare("throughput", BASE[:2], SLOWER[:2], higher_is_better=True)
    assert c.verdict == "inconclusive" and "too few samples" in c.reason


def test_small_but_certain_change_within_threshold_passes() -> None:
    c = compare("throughput", [100.0, 100.1, 99.9, 100.0, 100.05], [97.0, 97.1, 96.9, 97.0, 97.05], True, 0.10)
    assert c.verdict == "pass"  # 3% worse and significant, but smaller than the 10% minimum effect


def test_noise_is_reported() -> None:
    noisy = [100.0, 140.0, 70.0, 120.0, 90.0]
    assert compare("throughput", noisy, noisy, True).noisy


def _run(tmp: Path, name: str, tp: float, status: str = "complete") -> StoredRun:
    meta = {"status": status, "toolchain": {"kubernetes": "v1.36.4"}, "host": {"cpu_model": "x", "cpus": 2},
            "fairness": {"scheduler_client_qps": 5000, "scheduler_client_burst": 10000}, "cluster": {"nodes": 10}}
    summary = {"throughput": {"average": tp}, "latency": {"created_to_scheduled": {"p99": 100 / tp}}}
    return StoredRun(tmp / name, meta, summary, None, None)


def test_gate_exit_codes_and_junit(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    good = [_run(tmp_path, f"g{i}", v) for i, v in enumerate(SAME)]
    bad = [_run(tmp_path, f"s{i}", v) for i, v in enumerate(SLOWER)]
    assert gate(base, good, []).exit_code == 0
    res = gate(base, bad, [])
    assert res.exit_code == 1
    assert gate(base[:2], bad[:2], []).exit_code == 3
    suite = ET.fromstring(junit(res))
    assert suite.get("failures") == "2" and len(suite.findall("testcase")) == 2
    failed = [_run(tmp_path, "f", 1.0, status="interrupted")]
    assert any("did not complete" in w for w in gate(base, good + failed, []).warnings)


def test_scenario_declared_gates_apply_without_metric_options(tmp_path: Path) -> None:
    base = [_run(tmp_path, f"b{i}", v) for i, v in enumerate(BASE)]
    bad = [_run(tmp_path, f"s{i}", v) for i, v in enumerate(SLOWER)]
    for r in bad:
        r.meta["scenario"] = {"gates": ["throughput:25%"]}
    res = gate(base, bad, [])
    assert [c.metric for c in res.comparisons] == ["throughput"] and res.exit_code == 0  # 20% < 25% allowed
    assert gate(base, bad, ["throughput:10%"]).exit_code == 1  # --metric wins


def test_not_comparable_runs_are_flagged(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", 400)
    b = _run(tmp_path, "b", 400)
    b.meta["fairness"]["scheduler_client_qps"] = 50
    res = gate([a], [b], [])
    assert isinstance(res, GateResult)
    assert any("scheduler client QPS" in w for w in res.warnings)


@pytest.mark.parametrize("spec", ["throughput", "nope:10%", "throughput:150%", "throughput:-1"])
def test_bad_gate_specs(spec: str) -> None:
    with pytest.raises(ScenarioError):
        parse_gate(spec)


def test_gate_spec_forms() -> None:
    assert parse_gate("latency_p99:5%")[1] == pytest.approx(0.05)
    assert parse_gate("throughput:0.2")[1] == pytest.approx(0.2)
