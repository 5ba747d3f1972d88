"""A small sweep run as 2 shards and merged: the same grid, cell for cell, as the sweep run whole; and a
repeated run group sharded and merged reads as one group. (Written with the sharding feature; not yet run.)"""

from __future__ import annotations

import json
from pathlib import Path

from kwokbench.store import find_runs, load_run
from tests.conftest import REPO, kwokbench

GRID = ("--nodes", "20,40", "--qps", "20,800", "--duration", "3", "--slo-p99", "1s", "--no-stop-early")


def _sweep(out: Path, *extra: str) -> Path:
    kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), *GRID, "--out", str(out), *extra, check=True)
    [sweep_dir] = (out / "quickstart").glob("sweep-*")
    return sweep_dir


def test_two_sweep_shards_merge_into_the_unsharded_grid(tmp_path: Path) -> None:
    whole = json.loads((_sweep(tmp_path / "whole") / "sweep.json").read_text())
    shards = [_sweep(tmp_path / f"shard{i}", "--shard", f"{i}/2") for i in (1, 2)]
    docs = [json.loads((s / "sweep.json").read_text()) for s in shards]
    assert [d["shard"] for d in docs] == ["1/2", "2/2"] and all(len(d["points"]) == 2 for d in docs)
    res = kwokbench("merge", *map(str, shards), "-o", str(tmp_path / "merged"), check=True)
    assert "merged from 2 shards" in res.stdout
    merged = json.loads((tmp_path / "merged" / "sweep.json").read_text())
    cells = {(p["nodes"], p["qps"]): p for p in merged["points"]}
    assert set(cells) == {(p["nodes"], p["qps"]) for p in whole["points"]} == {(20, 20.0), (20, 800.0), (40, 20.0),
                                                                                (40, 800.0)}
    for p in whole["points"]:  # the same verdict per cell (the figures are new measurements)
        assert cells[(p["nodes"], p["qps"])]["holds"] == p["holds"], (p, cells[(p["nodes"], p["qps"])])
        assert load_run(Path(cells[(p["nodes"], p["qps"])]["run"])).meta["shard"] in ("1/2", "2/2")
    assert merged["knees"] == whole["knees"] and merged["status"] == "complete"
    assert len(find_runs([tmp_path / "merged"])) == 4
    kwokbench("report", str(tmp_path / "merged"), "-o", str(tmp_path / "report"), check=True)
    # what a CI matrix's artefacts hold: the --out folders themselves, each with its sweep below it
    res = kwokbench("merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "-o", str(tmp_path / "from-out"),
                    check=True)
    assert all(f"merging the sweep inside it, {s}" in res.stderr for s in shards), res.stderr
    from_out = json.loads((tmp_path / "from-out" / "sweep.json").read_text())
    assert {(p["nodes"], p["qps"]): p["holds"] for p in from_out["points"]} == \
        {(p["nodes"], p["qps"]): p["holds"] for p in merged["points"]}
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
