"""benchmarks/bench_noise.py: the gate's error rates drawn from stored identical runs, and the gate page's table of
them (docs/results/data/noise-rates-*.json)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_noise  # noqa: E402


def _runs(values: list[float]) -> dict[str, Any]:
    return {"origin": "constructed", "runs": [{"status": "complete", "order": i,
                                               "metrics": {"throughput": v, "scheduler_cpu_per_pod": 0.01}}
                                              for i, v in enumerate(values)]}


def test_steady_runs_pass_their_aa_and_a_wide_spread_hides_a_drop() -> None:
    rng = np.random.default_rng(3)
    steady = bench_noise.error_rates(_runs(list(100 * (1 + rng.normal(0, 0.01, 20)))), ("throughput",), trials=200)
    wide = bench_noise.error_rates(_runs(list(100 * (1 + rng.normal(0, 0.3, 20)))), ("throughput",), trials=200)
    s, w = steady["rates"]["throughput"], wide["rates"]["throughput"]
    assert list(s) == ["3", "5", "10"] and s["10"]["aa_regression"] == 0
    # runs 1% apart: an A/A of ten pairs passes, and a 15% drop (past the 10% allowed) is found at every size
    assert s["10"]["aa_pass"] > 0.9 and all(s[n]["found"] is not None and s[n]["found"] <= 0.15 for n in s)
    # runs 30% apart: no size passes its A/A as often, and three pairs cannot find even a 50% drop
    assert w["10"]["aa_pass"] < s["10"]["aa_pass"] and w["3"]["found"] is None
    assert steady["runs"] == 20 and steady["throughput_apart"] < wide["throughput_apart"]


def test_the_table_has_a_row_per_gated_metric_and_the_busy_hosts_throughput() -> None:
    def rates(found: float | None) -> dict[str, Any]:
        return {n: {"aa_regression": 0.032 if n == "3" else 0.0, "aa_pass": 0.447, "found": found}
                for n in ("3", "5", "10")}

    doc = {"runs": {"noise.json": {"rates": {m: rates(0.25) for m in bench_noise.GATED}},
                    "noise-busy.json": {"rates": {"throughput": rates(None)}, "throughput_apart": 2.43}}}
    rows = bench_noise.rates_table(doc).splitlines()
    assert len(rows) == 2 + len(bench_noise.GATED) + 1
    assert rows[2] == ("| throughput (floor 5%) | 3 / 5 / 10 | 3.2% / 0% / 0% | 45% / 45% / 45% | "
                       "a 25% / 25% / 25% drop |")
    assert rows[3].startswith("| scheduler CPU per pod (floor 15%) |") and rows[3].endswith("rise |")
    assert rows[-1] == ("| throughput, busy host | 3 / 5 / 10 | 3.2% / 0% / 0% | 45% / 45% / 45% | "
                        "> 50% / > 50% / > 50% drop |")
    assert bench_noise.apart(doc, "noise-busy.json") == "2.4"
