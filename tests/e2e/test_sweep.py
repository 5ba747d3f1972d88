"""A 2×2 capacity-planning sweep on real clusters, run as 2 shards (as a CI matrix would) and merged: the merged
grid's table, knees, sentences, charts and stored runs, each cell as its shard measured it; and a repeated run group
sharded and merged reads as one group. (The grid is measured once: a whole sweep beside the shards cost CI minutes
and showed nothing more; merging stored shards is also checked in tests/integration/test_cli_merge.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from kwokbench.store import find_runs, load_run
from kwokbench.sweep import knees
from tests.conftest import REPO, kwokbench

GRID = ("--nodes", "20,40", "--qps", "20,600", "--duration", "3", "--slo-p99", "1s", "--no-stop-early")


class Sharded(NamedTuple):
    shards: list[Path]
    """Each shard's sweep directory."""
    merged: Path
    stdout: str
    """What `merge` printed."""


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Sharded:
    out = tmp_path_factory.mktemp("sweep")
    shards = []
    for i in (1, 2):
        kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), *GRID, "--shard", f"{i}/2",
                  "--out", str(out / f"shard{i}"), check=True)
        [sweep_dir] = (out / f"shard{i}" / "quickstart").glob("sweep-*")
        shards.append(sweep_dir)
    res = kwokbench("merge", *map(str, shards), "-o", str(out / "merged"), check=True)
    return Sharded(shards, out / "merged", res.stdout)


def test_sweep_2x2_finds_a_knee(grid: Sharded) -> None:
    doc = json.loads((grid.merged / "sweep.json").read_text())
    assert doc["status"] == "complete" and doc["nodes"] == [20, 40] and doc["qps"] == [20.0, 600.0]
    points = {(p["nodes"], p["qps"]): p for p in doc["points"]}
    assert set(points) == {(20, 20.0), (20, 600.0), (40, 20.0), (40, 600.0)}
    # 20 pods/s holds on both sizes; 600/s is beyond what this control plane binds: this 2-core host's apiserver
    # accepts ~270/s (2026-11-26), and 1800 pods fit the 20 nodes' 2200 slots, so the point ends when they are bound
    # instead of waiting out the phase's 30 s time-out (800/s overfilled 20 nodes and cost ~45 s more)
    for n in (20, 40):
        low = points[(n, 20.0)]
        assert low["holds"], low
        assert low["p99"] < 1.0 and low["ratio"] >= 0.95
        assert not points[(n, 600.0)]["holds"]
        assert doc["knees"][str(n)] == 20.0
        run = load_run(Path(low["run"]))  # every point is an ordinary stored run on the size's cluster
        assert run.meta["status"] == "complete" and run.meta["cluster"]["reused"]
        assert run.meta["cluster"]["nodes"] == n and run.summary is not None
        assert run.summary["pods_scheduled"] == 60  # max(50, 20/s × 3 s)
    # one cluster per size and shard (each shard brings up the sizes of its cells)
    clusters = {(p["shard"], p["nodes"]): load_run(Path(p["run"])).meta["cluster"]["name"] for p in doc["points"]}
    assert len(set(clusters.values())) == 4
    [sentence] = [x for x in doc["sentences"] if x.startswith("with 20 nodes this control plane sustains 20 pods/s "
                                                               "within a 1 s p99 (it failed at 600/s)")]
    assert "-bound" in sentence  # and says what limited the first point that failed
    assert "sustains 20 pods/s within a 1 s p99" in " ".join(grid.stdout.split())
    for f in ("sweep.md", "throughput_vs_qps.png", "latency_vs_qps.png", "control_plane_vs_nodes.png"):
        assert (grid.merged / f).stat().st_size > 0
    assert kwokbench("status", check=True).stdout.count("kb-sweep-") == 0  # clusters deleted


def test_two_sweep_shards_merge_into_the_whole_grid(grid: Sharded, tmp_path: Path) -> None:
    """Each shard measured its half of the grid; merged, each cell is as its shard measured it, the knees are
    recomputed over the whole grid, and merging the shards' --out folders gives the same."""
    docs = [json.loads((s / "sweep.json").read_text()) for s in grid.shards]
    assert [d["shard"] for d in docs] == ["1/2", "2/2"] and all(len(d["points"]) == 2 for d in docs)
    measured = {(p["nodes"], p["qps"]): p for d in docs for p in d["points"]}
    assert "merged from 2 shards" in grid.stdout
    merged = json.loads((grid.merged / "sweep.json").read_text())
    cells = {(p["nodes"], p["qps"]): p for p in merged["points"]}
    assert set(cells) == set(measured) == {(20, 20.0), (20, 600.0), (40, 20.0), (40, 600.0)}
    for key, p in measured.items():  # the same verdict per cell as its shard measured it
        assert cells[key]["holds"] == p["holds"], (p, cells[key])
        assert load_run(Path(cells[key]["run"])).meta["shard"] in ("1/2", "2/2")
    assert merged["knees"] == {str(n): v for n, v in knees(merged["points"]).items()}
    assert set(merged["knees"]) == {"20", "40"}  # over the whole grid: no shard alone has both rates of a size
    assert len(find_runs([grid.merged])) == 4
    kwokbench("report", str(grid.merged), "-o", str(tmp_path / "report"), check=True)
    # what a CI matrix's artefacts hold: the --out folders themselves, each with its sweep below it
    outs = [s.parent.parent for s in grid.shards]
    res = kwokbench("merge", *map(str, outs), "-o", str(tmp_path / "from-out"), check=True)
    assert all(f"merging the sweep inside it, {s}" in res.stderr for s in grid.shards), res.stderr
    from_out = json.loads((tmp_path / "from-out" / "sweep.json").read_text())
    assert {(p["nodes"], p["qps"]): p["holds"] for p in from_out["points"]} == \
        {(p["nodes"], p["qps"]): p["holds"] for p in merged["points"]}
    assert from_out["knees"] == merged["knees"]
    assert len(find_runs([tmp_path / "from-out"])) == 4


def test_repeats_sharded_and_merged_are_one_group(tmp_path: Path) -> None:
    for i in (1, 2):
        kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--set", "cluster.node_groups.0.count=20",
                  "--set", "workloads.0.count=60", "--repeat", "2", "--shard", f"{i}/2",
                  "--out", str(tmp_path / f"s{i}"), check=True)
    kwokbench("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "m"), check=True)
    runs = [load_run(p) for p in find_runs([tmp_path / "m"])]
    assert sorted(r.meta["group"]["repeat"] for r in runs) == [0, 1]
    assert {r.meta["shard"] for r in runs} == {"1/2", "2/2"} and len({r.meta["group"]["id"] for r in runs}) == 1
