"""The renderers of the results index's "at a glance" rows, on the data the page renders (each file measured on real
clusters on this project's 2-core machine, 2026-11-29; its command and commit are in the file): every figure quoted
is the median, range or ratio of the stored measurements it names, not a figure of the page's."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_scrape  # noqa: E402
import bench_submit  # noqa: E402
import bench_up  # noqa: E402

DATA = ROOT / "docs/results/data"


def _doc(name: str) -> dict:
    return dict(json.loads((DATA / f"{name}.json").read_text()))


def test_accepted_over_offered_is_each_rates_median_lowest_rate_first() -> None:
    doc = _doc("submit-2026-11-29")
    rates = sorted({r["rate"] for r in doc["runs"]["kwokbench"]})
    for client in ("kwokbench", "kubernetes"):
        want = [statistics.median(r["accepted"] / r["offered"] for r in doc["runs"][client] if r["rate"] == rate)
                for rate in rates]
        assert bench_submit.accepted(doc, client) == ", ".join(f"{x:.3f}" for x in want)
    assert bench_submit.rates(doc) == ", ".join(f"{r:g}" for r in rates)


def test_the_cpu_figure_names_each_rates_median_and_range() -> None:
    doc = _doc("submit-2026-11-29")
    top = max(r["rate"] for r in doc["runs"]["kwokbench"])
    xs = [r["cpu_ms_per_pod"] for r in doc["runs"]["kwokbench"] if r["rate"] == top]
    first = bench_submit.cpu(doc).split(", ")[0]
    assert first.startswith(f"{statistics.median(xs):.3f}") and first.endswith(f"ms at {top:g}/s")
    ours = statistics.median(xs)
    theirs = statistics.median(r["cpu_ms_per_pod"] for r in doc["runs"]["kubernetes"] if r["rate"] == top)
    assert f"{theirs / ours:.0f}x ({top:g}/s) more" in bench_submit.client_cpu(doc)


def test_ready_times_are_medians_of_the_interleaved_repeats() -> None:
    doc = _doc("up-2026-11-29")
    for method in bench_up.METHODS:
        sizes = sorted({r["nodes"] for r in doc["runs"][method]})
        text = bench_up.ready(doc, method).split(" / ")
        assert len(text) == len(sizes)
        for cell, n in zip(text, sizes, strict=True):
            xs = [r["ready"] for r in doc["runs"][method] if r["nodes"] == n]
            assert cell.startswith(f"{statistics.median(xs):.1f} s")


def test_scrape_costs_span_the_node_counts() -> None:
    doc = _doc("scrape-2026-11-29")
    ms = [r["components"]["kube-apiserver"]["cpu_ms"] for r in doc["runs"]]
    lo, hi = f"{min(ms):.1f}", f"{max(ms):.1f}"
    assert bench_scrape.cost(doc, "kube-apiserver").startswith(lo if lo == hi else f"{lo}–{hi}")
    ratios = [r["with"] / r["without"] for r in doc["runs"]]
    assert f"{min(ratios):.4f}" in bench_scrape.send_ratio(doc)
