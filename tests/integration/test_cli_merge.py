"""``kwokbench merge`` through the real CLI on stored shards (no cluster): joined, reported, or refused."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import assert_one_line_error, kwokbench
from tests.unit.fake_runs import fake_sweep


def test_merge_two_sweep_shards_then_report(tmp_path: Path) -> None:
    a, b = fake_sweep(tmp_path / "a", (1, 2)), fake_sweep(tmp_path / "b", (2, 2), host="other-host")
    res = kwokbench("merge", str(a), str(b), "-o", str(tmp_path / "m"), check=True)
    assert "merged from 2 shards" in res.stdout and "sustains 100 pods/s" in " ".join(res.stdout.split())
    assert "the shards ran on 2 different hosts" in res.stderr
    assert (tmp_path / "m" / "sweep.md").stat().st_size > 0
    kwokbench("report", str(tmp_path / "m"), "-o", str(tmp_path / "r"), check=True)
    assert (tmp_path / "r" / "report.html").stat().st_size > 0


def test_merge_the_out_folders_of_sweep_shards(tmp_path: Path) -> None:
    """`merge s1 s2` where s1 and s2 are what `sweep --shard i/2 --out s1|s2` wrote (a CI matrix's artefacts)."""
    sweeps = [fake_sweep(tmp_path / f"s{i}", (i, 2)) for i in (1, 2)]
    res = kwokbench("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "m"), check=True)
    assert "merged from 2 shards" in res.stdout
    for i, s in zip((1, 2), sweeps, strict=True):
        assert f"note: {tmp_path / f's{i}'} is not a sweep directory; merging the sweep inside it, {s}" in res.stderr
    assert "overlapping" not in res.stderr and (tmp_path / "m" / "sweep.json").is_file()


def test_merge_refusals_are_one_line(tmp_path: Path) -> None:
    a, b = fake_sweep(tmp_path / "a", (1, 2)), fake_sweep(tmp_path / "b", (2, 2), toolchain="v1.30.0")
    assert_one_line_error(kwokbench("merge", str(a), str(b), "-o", str(tmp_path / "m")),
                          "differ in toolchain versions")
    assert_one_line_error(kwokbench("merge", str(a), str(a), "-o", str(tmp_path / "m")), "given twice")
    (tmp_path / "f").write_text("x")
    assert_one_line_error(kwokbench("merge", str(a), "-o", str(tmp_path / "f")), "exists and is not an empty folder")
    assert not (tmp_path / "m").exists()
