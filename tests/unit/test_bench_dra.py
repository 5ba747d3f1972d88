"""benchmarks/bench_dra.py's bring-up, rendered from its stored runs (docs/results/data/dra-up-10000-2026-11-30.json:
10,000 nodes brought up twice without and twice with a ResourceSlice of 8 devices each, on real kwokctl clusters),
and bench_scenario.py's DRA columns on the partitionable devices' runs (dra-partitions-2026-11-29.json: the scenario,
its first phase alone and on plain devices, two runs each)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_dra  # noqa: E402
import bench_scenario  # noqa: E402

UP = json.loads((ROOT / "docs/results/data/dra-up-10000-2026-11-30.json").read_text())
PARTITIONS = json.loads((ROOT / "docs/results/data/dra-partitions-2026-11-29.json").read_text())


def test_the_bring_up_is_each_modes_median_with_its_range_and_their_ratio() -> None:
    ready = {m: [r["ready"] for r in UP["runs"][m]] for m in bench_dra.UP_MODES}
    assert all(len(xs) == 2 for xs in ready.values()) and UP["nodes"] == 10000
    ratio = statistics.median(ready["with devices"]) / statistics.median(ready["without devices"])
    text = bench_dra.up_sentence(UP)
    plain = ready["without devices"]
    assert text.startswith(f"10,000 nodes without devices were all Ready in {statistics.median(plain):.1f} s "
                           f"({min(plain):.1f}–{max(plain):.1f})")
    assert f"**{ratio:.2f}x** (medians of 2 runs a mode)" in text
    assert bench_dra.up_short(UP).endswith(f"({ratio:.2f}x)")
    assert all(r["slices"] == 10000 for r in UP["runs"]["with devices"])
    assert all(r["slices"] == 0 for r in UP["runs"]["without devices"])


def test_the_partitions_columns_are_the_runs_counters_and_first_available_choices() -> None:
    table = bench_scenario.table(PARTITIONS, "counters").splitlines()
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in table[2:]}
    assert rows["plain"] == "–"  # no counter sets on plain devices
    sets = [r["counter_sets"] for r in PARTITIONS["runs"]["partitions"]]
    assert rows["partitions"].startswith(f"{min(sets)}" if min(sets) == max(sets) else f"{min(sets)}–{max(sets)}")
    assert rows["partitions"].endswith(" / 0")  # none overcommitted, in any run
    whole = [r["first_available"]["gpu/whole"] for r in PARTITIONS["runs"]["partitions"]]
    text = bench_scenario.first_available(PARTITIONS, "partitions")
    lo, hi = min(whole), max(whole)
    assert f"gpu/whole {lo}" + ("" if lo == hi else f"–{hi}") in text and "gpu/3g-40gb " in text
    with pytest.raises(KeyError, match="no claim by a first-available alternative"):
        bench_scenario.first_available(PARTITIONS, "plain")
