"""The trace benchmarks read files kwokbench does not ship: their pins match the guide, and without the files they
stop in one line (exit 2), not a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_traces  # noqa: E402


def test_the_guide_lists_every_pinned_file_with_its_sha256() -> None:
    guide = (ROOT / "docs" / "guides" / "traces.md").read_text()
    listed = dict((name, sha) for sha, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", guide, flags=re.M))
    assert listed == bench_traces.TRACE_FILES


def test_the_pins_are_the_shipped_checksums_where_the_files_are_here() -> None:
    sums = Path(os.environ.get("KWOKBENCH_TRACES") or ROOT.parent / "shared" / "traces") / "SHA256SUMS"
    if not sums.is_file():
        pytest.skip(f"no trace files here ({sums.parent}): the pins are checked where they are")
    shipped = dict((name, sha) for sha, name in (line.split() for line in sums.read_text().splitlines() if line))
    assert {n: shipped.get(n) for n in bench_traces.TRACE_FILES} == bench_traces.TRACE_FILES


@pytest.mark.parametrize("bench", ["bench_traces.py", "bench_gpushare_offline.py"])
def test_without_the_trace_files_a_benchmark_says_so_in_one_line(bench: str, tmp_path: Path) -> None:
    (tmp_path / "alibaba-gpu-2023").mkdir()
    (tmp_path / "alibaba-gpu-2023" / "openb_node_list_all_node.csv").write_text("sn,cpu_milli\n")
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench)], capture_output=True, text=True,
                         env={**os.environ, "KWOKBENCH_TRACES": str(tmp_path)}, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith(f"error: {tmp_path}/alibaba-gpu-2023/openb_node_list_all_node.csv: sha256 is not the "
                           "pinned 5a85c2af79c66a1e…"), line
    (tmp_path / "alibaba-gpu-2023" / "openb_node_list_all_node.csv").unlink()
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench)], capture_output=True, text=True,
                         env={**os.environ, "KWOKBENCH_TRACES": str(tmp_path)}, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "is not here: the trace files are not shipped" in res.stderr, res.stderr


SEEDS = ROOT / "docs/results/data/fgd-seeds-2026-11-29.json"
"""The paper's six policies live, a run per seed 42, 43 and 44 (bench_traces.py --policies --seeds, 2026-11-29: 18
runs on real clusters) and the simulator's own figures for those seeds."""


def _seeds() -> dict[str, Any]:
    return dict(json.loads(SEEDS.read_text()))


def test_the_per_seed_table_is_each_runs_figure_beside_the_simulators_same_seed() -> None:
    doc = _seeds()
    lines = bench_traces.seeds_table(doc).splitlines()
    assert len(lines) == 2 + len(bench_traces.SEED_ORDER)
    for line, variant in zip(lines[2:], bench_traces.SEED_ORDER, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        runs = sorted(doc["runs"][variant], key=lambda r: r["seed"])
        sim = doc["simulator_seeds"][bench_traces.PLUGIN_POLICY[variant]]
        assert cells[1:1 + len(runs)] == [f"{r['at130']:.1f} ({sim[str(r['seed'])]['130']:.1f})" for r in runs]
        mean = sum(r["at130"] for r in runs) / len(runs)
        assert cells[1 + len(runs)] == f"{mean:.1f}" == bench_traces.seeds_mean(doc, variant)


def test_a_lead_says_whether_every_seed_agrees() -> None:
    doc = _seeds()
    by_seed = {v: {r["seed"]: r["at130"] for r in doc["runs"][v]} for v in ("fgd", "bestfit")}
    gaps = [by_seed["fgd"][s] - by_seed["bestfit"][s] for s in by_seed["fgd"]]
    assert bench_traces.seeds_lead(doc, "fgd", "bestfit").endswith(
        "in every seed" if min(gaps) > 0 else f"ahead in {sum(g > 0 for g in gaps)} of {len(gaps)} seeds")
    # a policy against itself (an A/A) is ahead in no seed
    assert bench_traces.seeds_lead(doc, "fgd", "fgd").endswith(f"ahead in 0 of {len(gaps)} seeds")
    # a seed where the order turns is counted as such
    turned = _seeds()
    first = min(turned["runs"]["bestfit"], key=lambda r: r["seed"])
    first["at130"] = max(r["at130"] for r in turned["runs"]["fgd"]) + 1
    still = sum(by_seed["fgd"][s] > by_seed["bestfit"][s] for s in by_seed["fgd"] if s != first["seed"])
    assert bench_traces.seeds_lead(turned, "fgd", "bestfit").endswith(f"ahead in {still} of {len(gaps)} seeds")


def test_a_seed_run_twice_is_refused_by_the_per_seed_table() -> None:
    doc = _seeds()
    doc["runs"]["fgd"].append(dict(doc["runs"]["fgd"][0]))
    with pytest.raises(ValueError, match="run twice"):
        bench_traces.seeds_table(doc)


MORE = ROOT / "docs/results/data/fgd-seeds-more-2026-11-29.json"
"""GpuPacking and GpuClustering twice more at each seed (bench_traces.py --policies --seeds 42,42,43,43,44,44,
2026-11-29: 12 runs on real clusters), set beside the per-seed table's run of each."""


def test_the_close_pair_three_runs_a_seed_ordered_by_the_gates_paired_test() -> None:
    import math

    more = json.loads(MORE.read_text())
    table = bench_traces.more_runs_table(more, SEEDS.stem).splitlines()
    assert table[0] == "| policy | seed 42 | seed 43 | seed 44 | mean of every run |"
    every: dict[str, dict[int, list[float]]] = {}
    for line, v in zip(table[2:], ("gpu-clustering", "gpu-packing"), strict=True):
        runs = [*_seeds()["runs"][v], *more["runs"][v]]
        every[v] = {s: [r["at130"] for r in runs if r["seed"] == s] for s in (42, 43, 44)}
        cells = [c.strip() for c in line.strip("|").split("|")][1:4]
        assert cells == [", ".join(f"{x:.1f}" for x in every[v][s]) for s in (42, 43, 44)]  # the table's run first
        assert all(len(every[v][s]) == 3 for s in (42, 43, 44))
    logs = [math.log(a / b) for s in (42, 43, 44)
            for a, b in zip(every["gpu-packing"][s], every["gpu-clustering"][s], strict=True)]
    text = bench_traces.more_runs_test(more, SEEDS.stem, "gpu-packing", "gpu-clustering")
    assert text.startswith(f"{100 * (math.exp(sum(logs) / len(logs)) - 1):+.1f}% (90% CI ")
    assert "9 pairs): ordered;" in text
    clear = sum(min(every["gpu-packing"][s]) > max(every["gpu-clustering"][s]) for s in (42, 43, 44))
    assert text.endswith(f"in {clear} of 3 seeds")
    assert "ordered the other way" in bench_traces.more_runs_test(more, SEEDS.stem, "gpu-clustering", "gpu-packing")
    # the A/A: a policy against itself is not ordered
    assert "not told apart" in bench_traces.more_runs_test(more, SEEDS.stem, "gpu-packing", "gpu-packing")


REST = ROOT / "docs/results/data/fgd-seeds-rest-2026-11-30.json"
"""FGD, BestFit, DotProduct and Random once more at each seed (bench_traces.py --policies --seeds 42,43,44,
2026-11-30: 12 runs on real clusters, as two processes of two policies), set beside the per-seed table's run of each
and the close pair's reruns."""


def test_every_step_of_the_ranking_is_the_gates_paired_test_over_every_run() -> None:
    rest = json.loads(REST.read_text())
    first = f"{SEEDS.stem},{MORE.stem}"
    table = bench_traces.more_runs_table(rest, first).splitlines()
    assert len(table) == 2 + 6  # every policy: four rerun here, the close pair in the earlier file
    fgd = next(line for line in table if line.startswith("| FGD |"))
    runs = [*_seeds()["runs"]["fgd"], *rest["runs"]["fgd"]]
    assert fgd.split("|")[2].strip() == ", ".join(f"{r['at130']:.1f}" for r in runs if r["seed"] == 42)
    ranking = bench_traces.ranking_table(rest, first).splitlines()[2:]
    pairs = [tuple(c.strip() for c in line.strip("|").split("|")[:3]) for line in ranking]
    assert pairs == [("FGD", "BestFit", "2"), ("BestFit", "GpuPacking", "2"), ("GpuPacking", "GpuClustering", "3"),
                     ("GpuClustering", "DotProduct", "2"), ("DotProduct", "Random", "2")]
    for line, (above, below) in zip(ranking, [("fgd", "bestfit"), ("bestfit", "gpu-packing"),
                                              ("gpu-packing", "gpu-clustering"), ("gpu-clustering", "dot-product"),
                                              ("dot-product", "random")], strict=True):
        assert line.endswith(f"| {bench_traces.more_runs_test(rest, first, above, below)} |")
    # the runs order every step (what the page says); the A/A and a step read upside down are not ordered so
    assert all("): ordered;" in line for line in ranking)
    assert "not told apart" in bench_traces.more_runs_test(rest, first, "fgd", "fgd")
    assert "ordered the other way" in bench_traces.more_runs_test(rest, first, "random", "dot-product")


@pytest.mark.parametrize(("args", "says"), [
    (["--slice", "300:60"], "error: --slice cuts the timed trace: give --timed too"),
    (["--timed", "--slice", "300"], "error: --slice 300: give PODS:SECONDS, two positive whole numbers (e.g. 300:60)"),
    (["--timed", "--slice", "0:60"], "error: --slice 0:60: give PODS:SECONDS"),
    (["--dra", "--policies"], "error: --dra is the experiment's per-GPU form (the default scenario): not with"),
])
def test_a_form_the_scenario_does_not_take_is_refused_in_one_line(args: list[str], says: str) -> None:
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_traces.py"), *args], capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith(says), line


def test_the_forms_are_the_sets_the_guide_documents() -> None:
    """--dra is the guide's per-GPU form (the sets tests/e2e/test_trace.py runs), --slice the timed trace cut."""
    assert bench_traces.form_sets(True, None, False, False) == [
        "cluster.node_groups.0.from_trace.gpus=dra", "workloads.0.trace.gpus=dra", "cluster.controller_manager=true"]
    assert bench_traces.form_sets(False, "300:60", False, True) == [
        "workloads.0.trace.limit=300", "workloads.0.trace.duration_seconds=60"]
    assert bench_traces.form_sets(False, None, True, False) == []
    e2e = (ROOT / "tests" / "e2e" / "test_trace.py").read_text()
    assert all(f'"{s}"' in e2e for s in bench_traces.DRA_SETS)


THIRD = ROOT / "docs/results/data/fgd-seeds-third-2026-11-30.json"
"""FGD, BestFit, DotProduct and Random a third time at each seed (bench_traces.py --policies --seeds 42,43,44,
2026-11-30: 12 runs on real clusters at 9cb7e71, as two processes of two policies): with the earlier files, every
policy three times at every seed."""


def test_three_runs_a_seed_of_every_policy_order_every_step_of_the_ranking() -> None:
    third = json.loads(THIRD.read_text())
    first = f"{SEEDS.stem},{MORE.stem},{REST.stem}"
    every = bench_traces._every_run(third, first)
    assert sorted(every) == sorted(bench_traces.SEED_ORDER)
    assert all(len(runs) == 3 for seeds in every.values() for runs in seeds.values())
    # the third round's runs come last in each cell, in the order they ran
    assert [every["fgd"][s][-1] for s in (42, 43, 44)] == [r["at130"] for r in third["runs"]["fgd"]]
    ranking = bench_traces.ranking_table(third, first).splitlines()[2:]
    assert [tuple(c.strip() for c in line.strip("|").split("|")[:3]) for line in ranking] == [
        ("FGD", "BestFit", "3"), ("BestFit", "GpuPacking", "3"), ("GpuPacking", "GpuClustering", "3"),
        ("GpuClustering", "DotProduct", "3"), ("DotProduct", "Random", "3")]
    assert all("9 pairs): ordered;" in line for line in ranking)


def test_the_timed_replays_lifetimes_are_the_traces_scaled_as_its_arrivals(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--lifetimes`` on the stand-in's twelve pods (tests/support/traces): each pod's deletion less its creation,
    times what puts the last arrival at the scenario's 600 s, as ``numpy.percentile`` of those computed here."""
    import csv

    import numpy as np

    from tests.support.traces import STAND_IN

    monkeypatch.setenv("KWOKBENCH_TRACES", str(STAND_IN))
    with (STAND_IN / "alibaba-gpu-2023/openb_pod_list_default.csv").open() as f:
        rows = [r for r in csv.DictReader(f)]
    created = [float(r["creation_time"]) for r in rows]
    scale = 600 / (max(created) - min(created))
    lives = [scale * (float(r["deletion_time"]) - float(r["creation_time"])) for r in rows if r["deletion_time"]]
    got = bench_traces.lifetimes(bench_traces.TIMED_SCENARIO)
    assert got["pods"] == len(lives) > 0
    assert got["p50"] == pytest.approx(float(np.percentile(lives, 50)))
    assert got["max"] == pytest.approx(max(lives))
    assert bench_traces.lifetime({"runs": {"timed": got}}, "p99", 1) == f"{np.percentile(lives, 99):.1f}"
