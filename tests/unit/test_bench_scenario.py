"""benchmarks/bench_scenario.py's tables, on data the results pages render (docs/results/data/wasm-ways-2026-11-29.json:
21 runs of scenarios/wasm-upstream-vs-own.yaml measured on real clusters, 2026-11-29): each cell is the range of the
variant's stored runs, a page's labels choose and order the rows, and a column no one defined is refused by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_scenario  # noqa: E402

DOC = json.loads((ROOT / "docs/results/data/wasm-ways-2026-11-29.json").read_text())


def test_each_cell_is_the_range_of_the_variants_runs() -> None:
    rows = bench_scenario.table(DOC, "throughput,cpu").splitlines()[2:]
    assert len(rows) == len(DOC["runs"]) == 7
    for line, (variant, runs) in zip(rows, DOC["runs"].items(), strict=True):
        tp = [r["throughput"] for r in runs]
        cpu = [r["cpu_ms"] for r in runs]
        lo, hi = f"{min(tp):.1f}", f"{max(tp):.1f}"
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == variant
        assert cells[1] == (f"{lo} pods/s" if lo == hi else f"{lo}–{hi} pods/s")
        lo, hi = f"{min(cpu):.1f}", f"{max(cpu):.1f}"
        assert cells[2] == (f"{lo} ms" if lo == hi else f"{lo}–{hi} ms")


def test_a_pages_labels_choose_and_order_the_rows() -> None:
    text = bench_scenario.table(DOC, "throughput", {"extender": "the extender", "stock": "stock"})
    assert [line.split("|")[1].strip() for line in text.splitlines()[2:]] == ["the extender", "stock"]
    assert text.splitlines()[0].startswith("| variant (3 runs) | throughput |")


def test_a_column_no_one_defined_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="no column 'speed'"):
        bench_scenario.table(DOC, "throughput,speed")


def test_times_and_more_read_the_medians() -> None:
    ext, stock = (bench_scenario.median_row(DOC["runs"][v]) for v in ("extender", "stock"))
    assert bench_scenario.times(DOC, "extender", "algorithm_ms", "stock").startswith(
        f"{ext['algorithm_ms'] / stock['algorithm_ms']:.1f}x (")
    both = ext["prescore_ms"] + ext["score_ms"] - stock["prescore_ms"] - stock["score_ms"]
    assert bench_scenario.more(DOC, "extender", "prescore_ms+score_ms", "stock", 2) == f"{both:+.2f} ms".replace(
        "-", "\u2212")
