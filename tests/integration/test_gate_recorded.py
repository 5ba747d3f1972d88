"""The gate's verdicts on runs recorded from real clusters: an interleaved A/A passes, a slowed scheduler and a
scheduler that strands pods fail.

The runs (tests/integration/data/gate-e2e: each run's meta.json and summary.json, as `kwokbench run` stored them)
are the 12 that tests/e2e/test_gate.py used to make live in every suite run (~6 min): 3 interleaved repeats of four
variants of 800 pods offered at 250/s to 50 nodes — a and b identical, `slow` with its client at 50 QPS, `stuck`
serving another schedulerName — recorded on 2026-11-26 on this project's 2-core machine by that test. The gate is a
pure function of stored runs, so its verdicts on them are checked here in seconds; what it reads is still produced
live elsewhere: a slowed plugin gated base against head on real runs (tests/e2e/test_action.py), the gate on two
real runs (tests/e2e/test_report.py), stranded pods counted and censored (tests/e2e/test_schedulers.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kwokbench.store import find_runs, load_run
from tests.conftest import kwokbench

DATA = Path(__file__).parent / "data" / "gate-e2e"
REPEAT = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy: the gate's --junit files are written beside the runs."""
    d = tmp_path_factory.mktemp("gate") / "gate-e2e"
    shutil.copytree(DATA, d)
    return d


def _gate(runs: Path, candidate: str, *metrics: str) -> tuple[int, str]:
    res = kwokbench("gate", "--baseline", str(runs), "--candidate", str(runs), "--baseline-variant", "a",
                    "--candidate-variant", candidate, *[f"--metric={m}" for m in metrics], "--junit",
                    str(runs.parent / f"{candidate}.xml"))
    assert "Traceback" not in res.stderr + res.stdout
    return res.returncode, res.stdout + res.stderr


def test_the_recorded_runs_are_the_interleaved_runs(runs: Path) -> None:
    stored = [load_run(p) for p in find_runs([runs])]
    assert len(stored) == 4 * REPEAT
    by_variant = {v: [r for r in stored if r.meta["variant"]["name"] == v] for v in ("a", "b", "slow", "stuck")}
    assert all(r.meta["status"] == "complete" for r in stored)
    assert sorted(r.meta["group"]["repeat"] for r in by_variant["a"]) == list(range(REPEAT))
    assert all(r.summary and r.summary["pods_unscheduled"] == 0 for v in ("a", "b", "slow") for r in by_variant[v])
    # the stranded pods count: the phase timed out and says so, and they weigh on the latency percentiles
    for r in by_variant["stuck"]:
        assert r.summary and r.summary["pods_unscheduled"] == 800 and r.summary["phases_timed_out"] == ["pods"]
        assert r.summary["latency"]["created_to_scheduled"]["censored"] == 800


def test_aa_is_never_a_regression(runs: Path) -> None:
    """Identical variants pass; on runs too noisy to tell (another tenant's load moved the CPU calibration), the
    gate may say inconclusive instead, and then it must say that the host was the reason."""
    code, out = _gate(runs, "b", "throughput:10%")
    assert code in (0, 3), out  # 1 would be a regression, 2 an error
    if code == 3:
        assert "inconclusive" in out and any(w in out for w in ("noisy", "host speed moved", "slower")), out
    assert f"{REPEAT} pairs" in out  # paired by interleaved repeat: drift of the host cancels within a pair


def test_a_slowed_scheduler_is_a_regression(runs: Path) -> None:
    code, out = _gate(runs, "slow", "throughput:10%")
    assert code == 1, out
    assert "regression" in out


def test_stranded_pods_are_a_regression(runs: Path) -> None:
    code, out = _gate(runs, "stuck", "throughput:10%")
    assert code == 1, out
    assert "unscheduled" in out and "regression" in out
