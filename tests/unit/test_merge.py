"""Shards joined by ``kwokbench merge``: one sweep (or run group) equal to the unsharded one, or a refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwokbench.compare.gate import gate
from kwokbench.errors import StoreError
from kwokbench.merge import GROUP, merge
from kwokbench.store import find_runs, load_run
from kwokbench.sweep import load
from tests.unit.fake_runs import fake_run, fake_sweep, stored

FIGURES = ("qps", "nodes", "holds", "why", "throughput", "ratio", "p99", "accepted", "limited_by")


def _cells(doc: dict[str, Any]) -> dict[tuple[int, float], dict[str, Any]]:
    return {(p["nodes"], p["qps"]): {k: p.get(k) for k in FIGURES} for p in doc["points"]}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shards_merge_into_the_unsharded_sweep(tmp_path: Path, n: int) -> None:
    whole = load(fake_sweep(tmp_path / "one-machine", None))
    shards = [fake_sweep(tmp_path / f"machine-{i}", (i, n)) for i in range(1, n + 1)]
    merged = merge(shards, tmp_path / "merged")
    assert merged.kind == "sweep" and merged.warnings == []
    doc = load(tmp_path / "merged")  # what report and gate read
    assert _cells(doc) == _cells(whole)
    assert doc["knees"] == whole["knees"] == {"20": 100.0, "40": 100.0}
    assert doc["sentences"] == whole["sentences"] and doc["status"] == "complete"
    assert {p["shard"] for p in doc["points"]} == {f"{i}/{n}" for i in range(1, n + 1)}
    # every point's run was copied under the merged folder and is an ordinary stored run
    runs = find_runs([tmp_path / "merged"])
    assert len(runs) == 6 and all(Path(p["run"]).parent == tmp_path / "merged" for p in doc["points"])
    assert all(load_run(Path(p["run"])).summary for p in doc["points"])
    assert [s["shard"] for s in doc["shards"]] == [f"{i}/{n}" for i in range(1, n + 1)]
    assert len(doc["hosts"]) == 1


def test_the_out_folders_of_sweep_shards_merge_through_the_sweep_inside(tmp_path: Path) -> None:
    """What a CI matrix artefact holds: the folder given to `sweep --shard i/2 --out DIR`, the sweep directory
    (DIR/<scenario>/sweep-…-shard-i-of-2) and its points' runs below it."""
    whole = load(fake_sweep(tmp_path / "one-machine", None))
    sweeps = [fake_sweep(tmp_path / f"out-{i}", (i, 2)) for i in (1, 2)]
    assert [s.relative_to(tmp_path).parts for s in sweeps] == [
        (f"out-{i}", "compare", f"sweep-20260101T000000Z-shard-{i}-of-2") for i in (1, 2)]
    merged = merge([tmp_path / "out-1", tmp_path / "out-2"], tmp_path / "merged")
    assert merged.kind == "sweep" and merged.warnings == []
    assert merged.notes == [f"{tmp_path / f'out-{i}'} is not a sweep directory; merging the sweep inside it, "
                            f"{s}" for i, s in zip((1, 2), sweeps, strict=True)]
    doc = load(tmp_path / "merged")
    assert _cells(doc) == _cells(whole) and doc["status"] == "complete"
    assert len(find_runs([tmp_path / "merged"])) == 6
    # a sweep directory and its --out folder mixed: still one sweep per shard
    assert merge([sweeps[0], tmp_path / "out-2"], tmp_path / "m2").doc["knees"] == whole["knees"]
    with pytest.raises(StoreError, match="two of the folders hold the same sweep"):
        merge([sweeps[0], tmp_path / "out-1"], tmp_path / "m3")


def test_a_folder_holding_several_sweeps_names_them(tmp_path: Path) -> None:
    first = fake_sweep(tmp_path / "out", (1, 2))
    second = first.parent / "sweep-20260102T000000Z-shard-1-of-2"
    fake_sweep(tmp_path / "again", (1, 2)).rename(second)  # the shard re-run into the same --out folder
    b = fake_sweep(tmp_path / "b", (2, 2))
    with pytest.raises(StoreError, match=f"{tmp_path / 'out'} holds 2 sweeps \\({first}, {second}\\): pass the "
                       "sweep directory of this shard instead"):
        merge([tmp_path / "out", b], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_folder_of_runs_outside_one_run_group_is_refused_clearly(tmp_path: Path) -> None:
    a = _group(tmp_path / "a", (1, 2))
    for r in (0, 1):  # a second `run --repeat 4 --shard 1/2` stored into the same folder
        stored(fake_run(a / "again", "default", r, 90.0), group={"id": "later", "repeat": r, "of": 4}, shard="1/2")
    with pytest.raises(StoreError, match=r"holds runs of 2 run groups \(group ids g1, later\): pass a folder"):
        merge([a, _group(tmp_path / "b", (2, 2))], tmp_path / "m")
    plain = tmp_path / "plain"
    stored(fake_run(plain, "default", 0, 100.0))
    with pytest.raises(StoreError, match=r"plain.* is not a run of a run group \(`run --repeat R --shard i/N`\)"):
        merge([plain, _group(tmp_path / "c", (2, 2))], tmp_path / "m")


def test_different_hosts_are_recorded_and_said(tmp_path: Path) -> None:
    a, b = fake_sweep(tmp_path / "a", (1, 2), host="ci-runner-1"), fake_sweep(tmp_path / "b", (2, 2), host="box-2")
    merged = merge([a, b], tmp_path / "m")
    assert {h["hostname"] for h in merged.doc["hosts"]} == {"ci-runner-1", "box-2"}
    [w] = merged.warnings
    assert w.startswith("the shards ran on 2 different hosts: ") and "as shares of each host's own ceiling" in w


def test_a_missing_shard_is_said_and_the_sweep_is_partial(tmp_path: Path) -> None:
    merged = merge([fake_sweep(tmp_path / "a", (1, 3)), fake_sweep(tmp_path / "b", (3, 3))], tmp_path / "m")
    assert merged.doc["status"] == "partial"
    assert merged.warnings[0].startswith("2 of 6 points are in none of the shards")


@pytest.mark.parametrize(("second", "needle"), [
    ({"scenario": "other"}, "differ in scenario"),
    ({"toolchain": "v1.35.0"}, "differ in toolchain versions"),
    ({"kwokbench_version": "9.9.9"}, "differ in kwokbench version"),
])
def test_shards_of_different_things_are_refused(tmp_path: Path, second: dict[str, Any], needle: str) -> None:
    a = fake_sweep(tmp_path / "a", (1, 2))
    b = fake_sweep(tmp_path / "b", (2, 2), **second)
    with pytest.raises(StoreError, match=f"cannot merge: .* {needle}"):
        merge([a, b], tmp_path / "m")
    assert not (tmp_path / "m").exists()  # refused before anything is written


def test_overlapping_shards_and_bad_folders_are_refused(tmp_path: Path) -> None:
    a, whole = fake_sweep(tmp_path / "a", (1, 2)), fake_sweep(tmp_path / "b", None)
    with pytest.raises(StoreError, match=r"the point 20 nodes × 50/s is in both .* \(overlapping shards\)"):
        merge([a, whole], tmp_path / "m")
    with pytest.raises(StoreError, match="given twice"):
        merge([a, a], tmp_path / "m")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="exists and is not an empty folder"):
        merge([a], tmp_path / "file")
    with pytest.raises(StoreError, match="must not be one of the shard folders"):
        merge([a], a / "inside")
    run_folder = tmp_path / "runs"
    stored(fake_run(run_folder, "default", 0, 100.0))
    with pytest.raises(StoreError, match="not a sweep directory"):
        merge([a, run_folder], tmp_path / "m")
    meta = json.loads((a / "sweep.json").read_text())
    (a / "sweep.json").write_text(json.dumps({**meta, "format_version": 5}))
    with pytest.raises(StoreError, match="format version 5 is not supported"):
        merge([a], tmp_path / "m")


def _group(folder: Path, shard: tuple[int, int], repeats: int = 4, **meta: Any) -> Path:
    """The runs ``run --repeat R --shard i/N`` leaves: its repeats, default and fast interleaved."""
    from kwokbench.shard import Shard, shard_cells

    for r in shard_cells(range(repeats), Shard(*shard)):
        for v, tp in (("default", 100.0), ("fast", 120.0)):
            stored(fake_run(folder, v, r, tp + r), group={"id": f"g{shard[0]}", "repeat": r, "of": repeats},
                   shard=f"{shard[0]}/{shard[1]}", **meta)
    return folder


def test_run_group_shards_merge_into_one_group_the_gate_pairs(tmp_path: Path) -> None:
    a, b = _group(tmp_path / "a", (1, 2)), _group(tmp_path / "b", (2, 2))
    merged = merge([a, b], tmp_path / "m")
    assert merged.kind == "runs" and merged.warnings == []
    runs = [load_run(p) for p in find_runs([tmp_path / "m"])]
    assert len(runs) == 8 and len({r.meta["group"]["id"] for r in runs}) == 1
    assert sorted((r.meta["group"]["repeat"], r.meta["variant"]["name"]) for r in runs) == \
        [(i, v) for i in range(4) for v in ("default", "fast")]
    doc = json.loads((tmp_path / "m" / GROUP).read_text())
    assert doc["format_version"] == 1 and doc["shards"] == ["1/2", "2/2"] and len(doc["cells"]) == 8
    base = [r for r in runs if r.meta["variant"]["name"] == "default"]
    cand = [r for r in runs if r.meta["variant"]["name"] == "fast"]
    assert "paired by interleaved repeat" in " ".join(gate(base, cand, ["throughput:10%"]).notes)


def test_run_group_overlap_and_mismatch_are_refused(tmp_path: Path) -> None:
    a = _group(tmp_path / "a", (1, 2))
    with pytest.raises(StoreError, match=r"repeat 1 of variant default is in both .* \(overlapping shards\)"):
        merge([a, _group(tmp_path / "b", (1, 2))], tmp_path / "m")
    with pytest.raises(StoreError, match="differ in toolchain versions"):
        merge([a, _group(tmp_path / "c", (2, 2), toolchain={"kubernetes": "v1.30.0"})], tmp_path / "m")
    with pytest.raises(StoreError, match="differ in number of repeats"):
        merge([a, _group(tmp_path / "d", (2, 2), repeats=6)], tmp_path / "m")
