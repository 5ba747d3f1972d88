"""Change points over a history in commit order, on figures measured on this project's machine.

``benchmarks/data/noise.json`` holds 24 identical runs of scenarios/perf-gate.yaml (bench_noise.py, a quiet
host): in start order they are an A/A history; the same with the last runs' throughput lowered by 15%
is a history with one regression.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kwokbench.compare.detect import MIN_POINTS, Ack, detect, load_acks, parse_spec, points
from kwokbench.errors import ScenarioError
from kwokbench.history.index import build_index
from tests.unit.fake_runs import run_dir

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "noise.json"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _measured() -> list[dict[str, Any]]:
    doc = json.loads(DATA.read_text())
    return sorted((r for r in doc["runs"] if r["status"] == "complete"), key=lambda r: r["order"])


def _rows(step_at: int | None = None, step: float = -0.15, runs_per_commit: int = 1,
          host: str = "h") -> list[dict[str, Any]]:
    """Index rows of a history: commit ``c<i>`` measured by consecutive runs of the recorded data."""
    measured = _measured()
    rows = []
    for j, r in enumerate(measured):
        i = j // runs_per_commit
        factor = 1 + step if step_at is not None and i >= step_at else 1.0
        rows.append({"run_id": r["run"], "scenario": "perf-gate", "variant": "default", "status": "complete",
                     "commit": f"c{i:02d}" + "0" * 38, "ref": "main", "started_at": T0 + timedelta(minutes=j),
                     "host": host, "ceiling_pods_per_second": None,
                     **{k: v * (factor if k == "throughput" else 1.0) for k, v in r["metrics"].items()}})
    return rows


def test_aa_history_of_measured_runs_has_no_change() -> None:
    result = detect(_rows(), ["throughput:-10%", "latency_p99:+40%"])
    assert [len(s.points) for s in result.series] == [24, 24]
    assert [c for s in result.series for c in s.changes] == []
    assert result.exit_code == 0


def test_a_15_percent_drop_is_found_at_its_commits() -> None:
    result = detect(_rows(step_at=14), ["throughput:-10%"])
    [change] = result.series[0].changes
    assert change.before.commit is not None and change.before.commit.startswith("c13")
    assert change.after.commit is not None and change.after.commit.startswith("c14")
    assert change.direction == "regression" and change.new_regression
    assert -0.20 < change.magnitude < -0.10
    assert (change.points_before, change.points_after) == (14, 10)
    assert change.after.runs == [_measured()[14]["run"]]
    assert result.exit_code == 1


def test_an_improvement_is_reported_and_does_not_fail() -> None:
    result = detect(_rows(step_at=12, step=0.20), ["throughput:-10%"])
    assert [c.direction for c in result.series[0].changes] == ["improvement"]
    assert result.exit_code == 0


def test_a_change_below_the_minimum_magnitude_is_not_reported() -> None:
    result = detect(_rows(step_at=12, step=-0.15), ["throughput:-30%"])
    assert result.series[0].changes == [] and result.exit_code == 0


def test_an_ack_mutes_the_change_it_names() -> None:
    rows = _rows(step_at=14)
    acks = [Ack("throughput", "c14" + "0" * 4, "accepted: a slower but fairer queue sort")]
    result = detect(rows, ["throughput:-10%"], acks=acks)
    [change] = result.series[0].changes
    assert change.acked == "accepted: a slower but fairer queue sort" and not change.new_regression
    assert result.exit_code == 0
    # another metric's or another commit's ack does not
    for other in (Ack("latency_p99", "c14" + "0" * 4, "x"), Ack("throughput", "c13" + "0" * 4, "x")):
        assert detect(rows, ["throughput:-10%"], acks=[other]).exit_code == 1


def test_runs_of_one_commit_are_one_point_their_median() -> None:
    rows = _rows(runs_per_commit=3)
    series = points(rows, parse_spec("throughput:-10%").metric)
    assert len(series) == 8 and [len(p.runs) for p in series] == [3] * 8
    first = sorted(r["throughput"] for r in rows[:3])[1]
    assert series[0].value == first


def test_runs_without_a_commit_are_points_in_start_order() -> None:
    rows = [{**r, "commit": None} for r in _rows()]
    rows.reverse()
    series = points(rows, parse_spec("throughput:10%").metric)
    assert [p.runs[0] for p in series] == [r["run"] for r in _measured()]
    assert "no run recorded its commit" in detect(rows, ["throughput:-10%"]).notes[0]


def test_lookback_keeps_the_last_commits() -> None:
    result = detect(_rows(step_at=3), ["throughput:-10%"], lookback=18)
    assert len(result.series[0].points) == 18 and result.series[0].changes == []


def test_too_little_history_is_exit_3_and_says_how_much_it_needs() -> None:
    result = detect(_rows()[:MIN_POINTS - 1], ["throughput:-10%"])
    assert not result.series[0].enough and result.exit_code == 3


def test_hosts_differing_normalise_by_their_ceiling() -> None:
    """The second half ran on a host twice as fast: raw throughput doubles, its share of the ceiling not."""
    rows = _rows()
    for i, r in enumerate(rows):
        fast = i >= 12
        r.update(host="fast" if fast else "slow", ceiling_pods_per_second=800.0 if fast else 400.0,
                 throughput=r["throughput"] * (2 if fast else 1), latency_p99=r["latency_p99"] / (2 if fast else 1))
    assert detect(rows, ["throughput:-10%"], normalise="none").series[0].changes != []
    result = detect(rows, ["throughput:-10%", "latency_p99:+40%"])
    assert result.series[0].normalised and [c for s in result.series for c in s.changes] == []
    assert "normalised by each host's ceiling" in result.notes[0]
    # a run without a stored ceiling cannot be placed: left out, said once
    rows[0]["ceiling_pods_per_second"] = None
    result = detect(rows, ["throughput:-10%"])
    assert len(result.series[0].points) == 23 and "left out 1 run(s) without a stored ceiling" in result.warnings[0]


@pytest.mark.parametrize(("spec", "needle"), [
    ("throughput", r"expected NAME:\+MIN% or NAME:-MIN%"),
    ("speed:-10%", "unknown metric 'speed'"),
    ("throughput:-0%", "the minimum change must be above 0"),
])
def test_bad_metric_specs(spec: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=needle):
        parse_spec(spec)


def test_spec_sign_and_noise_floor() -> None:
    assert parse_spec("latency_p99:+20%").spec == "latency_p99:+40%"  # raised to the gate's noise floor
    assert not parse_spec("throughput:10%").worse_up and parse_spec("attempt_p99:50%").worse_up


def test_a_history_of_several_scenarios_is_refused() -> None:
    rows = _rows()
    rows[0]["variant"] = "other"
    with pytest.raises(ScenarioError, match=r"several histories \(perf-gate/default, perf-gate/other\)"):
        detect(rows, [])


def test_ack_file(tmp_path: Path) -> None:
    f = tmp_path / "ack.yaml"
    f.write_text("ack:\n  - metric: throughput\n    commit: c14000000\n    reason: accepted\n")
    assert load_acks(f) == [Ack("throughput", "c14000000", "accepted")]
    f.write_text("- metric: throughput\n  commit: abcdef1\n  reason: ok\n- metric: speed\n  commit: abcdef1\n"
                 "  reason: x\n")
    with pytest.raises(ScenarioError, match=r"^--ack .*ack.yaml: entry 2: unknown metric 'speed' \(known: "):
        load_acks(f)
    for text, needle in (("- metric: throughput\n  commit: abcdef1\n", "entry 1: reason is missing"),
                         ("- {metric: throughput, commit: abc, reason: x}\n", "too short"),
                         ("- {metric: throughput, commit: abcdef1, reason: x, uuid: y}\n", "unknown key 'uuid'"),
                         ("metric: [\n", "invalid YAML")):
        f.write_text(text)
        with pytest.raises(ScenarioError, match=needle):
            load_acks(f)


def test_detect_over_an_index_of_run_directories(tmp_path: Path) -> None:
    """From stored runs to a change point: the index's rows are what detect reads."""
    for i, r in enumerate(_measured()):
        run_dir(tmp_path, i, r["metrics"]["throughput"] * (0.85 if i >= 12 else 1.0), commit=f"{i:02d}" + "a" * 38)
    rows = build_index([tmp_path]).rows
    [change] = detect(rows, ["throughput:-10%"]).series[0].changes
    assert change.after.commit == "12" + "a" * 38 and change.before.commit == "11" + "a" * 38


DUETS = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def _duet_rows(step_at: int | None) -> list[dict[str, Any]]:
    """A history whose every commit is one duet against a pinned reference (the candidate side over the baseline
    side, CPU per pod): the measured A/A duets of benchmarks/data/verdicts-duet-{quiet,noisy}-0.json (a quiet host,
    then the same host beside a noisy neighbour: two "runners" whose raw figures differ), the candidate side 10%
    costlier from commit ``step_at`` on."""
    rows = []
    pairs = [(host, p) for host in ("quiet", "noisy")
             for p in json.loads((DUETS / f"verdicts-duet-{host}-0.json").read_text())["pairs"]]
    for i, (host, p) in enumerate(pairs):
        factor = 1.10 if step_at is not None and i >= step_at else 1.0
        ratio = p["head"]["cpu_per_pod"] * factor / p["base"]["cpu_per_pod"]
        rows.append({"run_id": f"r{i}", "scenario": "plugin-gate", "variant": "together", "status": "complete",
                     "commit": f"c{i:02d}" + "0" * 38, "ref": "main", "started_at": T0 + timedelta(minutes=i),
                     "host": host, "ceiling_pods_per_second": None, "duet_cpu_per_pod": ratio,
                     "scheduler_cpu_per_pod": p["head"]["cpu_per_pod"] * factor})
    return rows


def test_a_history_of_duets_against_a_pinned_reference_joins_runners() -> None:
    """Stored as the ratio to a reference run at the same instants, commits measured on two runners join one
    history: no change where the plugin did not change, and a 10% step found at its commit."""
    rows = _duet_rows(None)
    assert len(rows) == 16 and detect(rows, ["duet_cpu_per_pod:+5%"]).exit_code == 0
    result = detect(_duet_rows(10), ["duet_cpu_per_pod:+5%"])
    [change] = result.series[0].changes
    assert change.after.commit is not None and change.after.commit.startswith("c10")
    assert change.direction == "regression" and 0.05 < change.magnitude < 0.15
    # a ratio is not normalised by a host's ceiling: the host is already out of it
    assert not result.series[0].normalised
