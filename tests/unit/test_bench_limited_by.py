"""benchmarks/bench_limited_by.py: its constructed cases are valid scenarios, and the results page's table is each
stored run's verdict and sentence."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kwokbench.figures.bottleneck import VERDICTS
from kwokbench.scenario.loading import load_scenario

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_limited_by  # noqa: E402


@pytest.mark.parametrize("case", list(bench_limited_by.CASES))
def test_each_case_is_quickstart_with_its_overrides_and_names_a_verdict(case: str, tmp_path: Path) -> None:
    config = tmp_path / "all-nodes-scored.yaml"
    config.write_text(bench_limited_by.ALL_NODES_SCORED)
    _, sets = bench_limited_by.CASES[case]
    sc = load_scenario(bench_limited_by.SCENARIO, [s.format(config=config) for s in sets])
    assert case in VERDICTS
    counts = {s.split("=")[0]: s.split("=")[1] for s in sets}
    assert sc.workloads[0].count == int(counts["workloads.0.count"])


def test_the_table_is_each_runs_verdict_and_sentence_bold_where_the_case_constructs_it() -> None:
    doc = {"cases": {"arrival": {"what": "100 nodes"}, "harness": {"what": "two connections"}},
           "runs": {"arrival": [{"verdict": "arrival", "sentence": "arrival-bound: 50/s bound of 50/s"}],
                    "harness": [{"verdict": "host", "sentence": "host-bound: the host's CPUs were busy"}]}}
    lines = bench_limited_by.table(doc).splitlines()
    assert lines[2] == "| 100 nodes | `arrival` | **`arrival`**: 50/s bound of 50/s |"
    assert lines[3] == "| two connections | `harness` | `host`: the host's CPUs were busy |"
    assert bench_limited_by.verdicts(doc) == "1 of 2"


def test_the_stored_runs_are_of_the_cases_the_benchmark_makes() -> None:
    """docs/results/index.md renders the newest stored file: its cases are the benchmark's (what and overrides), and
    every run has a verdict kwokbench gives and the sentence that states it."""
    import json

    stored = max((ROOT / "docs" / "results" / "data").glob("limited-by-*.json"))
    doc = json.loads(stored.read_text())
    assert {c: (v["what"], tuple(v["sets"])) for c, v in doc["cases"].items()} == {
        c: bench_limited_by.CASES[c] for c in doc["cases"]}
    assert all(r["verdict"] in VERDICTS and str(r["sentence"]).startswith(f"{r['verdict']}-bound")
               for rs in doc["runs"].values() for r in rs)
    assert len(bench_limited_by.table(doc).splitlines()) == 2 + sum(len(rs) for rs in doc["runs"].values())
