"""benchmarks/bench_kwok_controllers.py's table for the results page: a row per kwok controller count, each cell the
range of that count's runs (one figure where they print alike), the runs counted. Pure: rows as ``--data`` keeps
them, written here."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_kwok_controllers  # noqa: E402


def _run(ready: float, running: float, nodes: int = 10000) -> dict[str, float]:
    return {"nodes_ready_s": ready, "nodes_per_s": nodes / ready, "pods_created_s": 1.0, "pods_running_s": running,
            "pods_per_s": nodes / running}


def test_each_count_is_a_row_of_its_runs_ranges() -> None:
    doc = {"runs": {"1": [_run(55.0, 60.0), _run(57.0, 64.0)], "2": [_run(80.0, 90.0)]}}
    lines = bench_kwok_controllers.table(doc).splitlines()
    assert lines[0].startswith("| K (runs) | nodes Ready |") and len(lines) == 4
    assert lines[2] == "| 1 (2) | 55.0–57.0 s | 175–182 | 60.0–64.0 s | 156–167 |"
    assert lines[3] == "| 2 (1) | 80.0 s | 125 | 90.0 s | 111 |"


def test_the_page_quotes_a_counts_median() -> None:
    doc = {"runs": {"1": [_run(50.0, 100.0), _run(40.0, 80.0), _run(60.0, 125.0)]}}
    assert bench_kwok_controllers.median(doc, "1", "nodes_ready_s", ".1f") == "50.0"
    assert bench_kwok_controllers.median(doc, "1", "pods_per_s") == "100"
