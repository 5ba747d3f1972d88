"""benchmarks/bench_action.py's reading of a job: the verdict of each row of the job's summary, the jobs that caught
the slower plugin, the pairs the sequential gate took, and the summary set below a page's headings, its warnings
counted. The table has the columns of a real job's summary (docs/results/data/action-2026-11-30.json)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_action  # noqa: E402

SUMMARY = """## kwokbench gate: ❌ regression

| metric | base (median) | head (median) | change (interval tested) | verdict | min. detectable | detail |
|---|---|---|---|---|---|---|
| scheduler_cpu_per_pod [plugin] | 0.00178 | 0.0207 | +1061.1% (+589%..+1858%) | ❌ regression | 35% | … |
| scheduler_cpu_per_pod [stock] | 0.00178 | 0.00192 | +7.4% (-30%..+66%) | ✅ pass | 49% | … |

### Smallest change these runs could detect

> ⚠️ plugin: throughput: noisy
> ⚠️ stock: throughput: noisy
"""


def _job(code: int, pairs: int | None, plugin: str) -> dict[str, object]:
    return {"code": code, "pairs": pairs, "minutes": 2.5,
            "summary": SUMMARY.replace("| ❌ regression |\n| scheduler_cpu_per_pod [stock]",
                                       f"| {plugin} |\n| scheduler_cpu_per_pod [stock]")}


def test_a_jobs_rows_are_read_and_only_a_failed_regression_counts_as_caught() -> None:
    doc = {"runs": {"slow": [_job(1, 3, "❌ regression"), _job(1, 4, "❌ regression"), _job(0, 12, "❔ inconclusive")]}}
    got = bench_action.rows(str(doc["runs"]["slow"][0]["summary"]))
    assert got == {"scheduler_cpu_per_pod [plugin]": ("+1061.1% (+589%..+1858%)", "❌ regression"),
                   "scheduler_cpu_per_pod [stock]": ("+7.4% (-30%..+66%)", "✅ pass")}
    assert bench_action.caught(doc) == "2 of 3"
    assert bench_action.caught(doc, "scheduler_cpu_per_pod [stock]") == "0 of 3"
    assert bench_action.pairs(doc) == "3–12"
    assert bench_action.pairs({"runs": {"slow": [_job(1, 3, "x")]}}) == "3"
    assert bench_action.change(doc) == "+1061.1%"
    assert bench_action.change(doc, "scheduler_cpu_per_pod [stock]") == "+7.4%"
    table = bench_action.table(doc).splitlines()
    assert table[2] == "| 1 | 1 | +1061.1% (+589%..+1858%) ❌ regression | +7.4% (-30%..+66%) ✅ pass | 3 | 2.5 |"


def test_a_summary_is_set_below_the_pages_headings() -> None:
    text = bench_action.summary({"runs": {"slow": [_job(1, 3, "x")]}})
    assert text.startswith("#### kwokbench gate: ❌ regression")
    assert "\n##### Smallest change these runs could detect" in text and "\n## " not in text
    assert "noisy" not in text and text.endswith("_(and 2 warnings, one per run or metric that needs one)_")
