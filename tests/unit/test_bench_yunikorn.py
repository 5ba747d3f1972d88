"""benchmarks/bench_yunikorn.py's renderers of what a run cost, on the data docs/results/yunikorn.md renders
(docs/results/data/yunikorn-10k-2026-11-29.json: three runs at 10,000 nodes and 100,000 pods on real clusters,
2026-11-29; the command and commit are in the file): each row is one run's own figures, a span the range of the
runs it names, and data kept before these figures existed still gives its medians."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_yunikorn  # noqa: E402

DATA = ROOT / "docs/results/data"
DOC = json.loads((DATA / "yunikorn-10k-2026-11-29.json").read_text())


def test_the_costs_table_is_each_runs_own_figures() -> None:
    ceiling = 241.1
    lines = bench_yunikorn.costs_table(DOC, "10000 nodes", ceiling).splitlines()
    runs = [r for rs in DOC["runs"].values() for r in rs]
    assert len(lines) == 2 + len(runs) == 5
    for line, r in zip(lines[2:], runs, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == f"{r['throughput']:.1f} pods/s" and cells[2] == f"{r['throughput'] / ceiling:.2f}"
        assert cells[5] == f"{r['rss_gib']:.1f} GiB"
        assert cells[6] == f"{r['apiserver_cpu']:.0f} s / {r['etcd_cpu']:.0f} s"
        assert cells[7] == f"{r['writes']:.2f} ({r['writes_events']:.2f})" and cells[8] == f"{r['accepted']:.0f}/s"


def test_a_span_is_the_range_of_the_runs_it_names() -> None:
    yk = [r["writes_events"] for k, rs in DOC["runs"].items() if k.startswith("10000 nodes/yunikorn") for r in rs]
    assert len(yk) == 2
    lo, hi = f"{min(yk):.2f}", f"{max(yk):.2f}"
    assert bench_yunikorn.span(DOC, "10000 nodes/yunikorn", "writes_events", 2) == (lo if lo == hi else f"{lo}–{hi}")
    [ks] = DOC["runs"]["10000 nodes/kube-scheduler"]
    assert bench_yunikorn.span(DOC, "10000 nodes/kube-scheduler", "rss_gib", 1) == f"{ks['rss_gib']:.1f}"


def test_data_kept_before_the_costs_still_gives_its_medians() -> None:
    old = json.loads((DATA / "yunikorn-2026-11-29.json").read_text())
    row = bench_yunikorn.median_row(old["runs"]["1000 nodes/kube-scheduler"])
    assert row["throughput"] > 0 and row["rss_gib"] is None
