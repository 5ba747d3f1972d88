"""The history index: one row per stored run in a DuckDB file next to the runs, rebuilt incrementally."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kwokbench.errors import ScenarioError, StoreError
from kwokbench.history import index as index_module
from kwokbench.history.index import INDEX_NAME, build_index, export, wait_for_lock
from kwokbench.history.rows import select
from kwokbench.store import META, SUMMARY
from tests.unit.fake_runs import run_dir


def _history(root: Path, n: int = 4) -> list[Path]:
    return [run_dir(root, i, 100.0 + i, commit=f"{i:07d}abc") for i in range(n)]


def test_one_row_per_run_in_start_order_with_commit_host_and_figures(tmp_path: Path) -> None:
    runs = _history(tmp_path / "reports")
    h = build_index([tmp_path / "reports"])
    assert h.index == (tmp_path / "reports" / INDEX_NAME).resolve() and h.index.exists()
    assert [r["run_id"] for r in h.rows] == [p.name for p in runs]
    first = h.rows[0]
    assert (first["scenario"], first["variant"], first["status"], first["commit"], first["ref"]) == \
        ("perf", "default", "complete", "0000000abc", "main")
    assert first["throughput"] == 100.0 and first["latency_p99"] == 1.0 and first["unscheduled"] == 0.0
    assert first["host"].startswith("h1-") and first["started_at"].isoformat().startswith("2026-01-01T00:00:00")
    assert first["figures"]["processes.etcd.cpu_seconds"] == 1.5
    assert "format_version" not in first["figures"]


def test_incremental_only_changed_runs_are_read_and_removed_runs_leave(tmp_path: Path) -> None:
    runs = _history(tmp_path)
    assert build_index([tmp_path]).read == 4
    assert build_index([tmp_path]).read == 0
    # analyse rewrote one summary: only that run is read again, with its new figure
    summary = json.loads((runs[1] / SUMMARY).read_text())
    summary["throughput"]["average"] = 150.0
    (runs[1] / SUMMARY).write_text(json.dumps(summary))
    os.utime(runs[1] / SUMMARY, ns=(1, 1))
    h = build_index([tmp_path])
    assert h.read == 1 and h.rows[1]["throughput"] == 150.0
    # a run deleted from disk is gone from the index too (the directories are the truth)
    (runs[2] / META).unlink()
    (runs[2] / SUMMARY).unlink()
    runs[2].rmdir()
    h = build_index([tmp_path])
    assert h.read == 0 and [r["run_id"] for r in h.rows] == [runs[0].name, runs[1].name, runs[3].name]
    # one run named: rows of that run only, from the index of its folder
    assert [r["run_id"] for r in build_index([runs[3]]).rows] == [runs[3].name]


def test_an_index_of_another_version_is_rebuilt(tmp_path: Path) -> None:
    import duckdb

    _history(tmp_path)
    build_index([tmp_path])
    con = duckdb.connect(str(tmp_path / INDEX_NAME))
    con.execute("UPDATE info SET value = '0' WHERE key = 'version'")
    con.close()
    assert build_index([tmp_path]).read == 4


def test_a_run_of_an_older_kwokbench_still_indexes(tmp_path: Path) -> None:
    """Before commits were recorded, before summaries had a format version and ``pods_unscheduled``, and
    a meta.json without ``started_at``: the row has what the run has; the start comes from its name."""
    d = tmp_path / "old" / "20251201T101500Z-0ld000"
    d.mkdir(parents=True)
    (d / META).write_text(json.dumps({"format_version": 1, "status": "complete", "scenario": {"name": "old"},
                                      "variant": {"name": "default"}}))
    (d / SUMMARY).write_text(json.dumps({"throughput": {"average": 80.0}, "pods_expected": 100,
                                         "pods_scheduled": 98}))
    run_dir(tmp_path, 0, 100.0, commit="1234567")
    rows = build_index([tmp_path]).rows
    old = next(r for r in rows if r["scenario"] == "old")
    assert old["commit"] is None and old["host"] is None and old["throughput"] == 80.0
    assert old["unscheduled"] == 2.0 and old["started_at"].isoformat().startswith("2025-12-01T10:15:00")


def test_an_unreadable_run_among_many_is_skipped_with_one_warning(tmp_path: Path) -> None:
    runs = _history(tmp_path, 5)
    (runs[2] / SUMMARY).write_text("{not json")
    (runs[3] / META).write_text(json.dumps({"format_version": 99}))
    h = build_index([tmp_path])
    assert [r["run_id"] for r in h.rows] == [runs[0].name, runs[1].name, runs[4].name]
    assert len(h.warnings) == 2
    assert all(w.startswith("skipped an unreadable run: ") and "\n" not in w for w in h.warnings)
    assert str(runs[2]) in h.warnings[0] and "format version 99" in h.warnings[1]
    # still skipped the next time (never cached), and indexed once repaired
    assert len(build_index([tmp_path]).warnings) == 2
    (runs[2] / SUMMARY).write_text(json.dumps({"format_version": 2, "throughput": {"average": 1.0}}))
    assert len(build_index([tmp_path]).rows) == 4


def test_select_by_scenario_and_variant_names_what_is_present(tmp_path: Path) -> None:
    run_dir(tmp_path, 0, 100.0, variant="a")
    run_dir(tmp_path, 1, 100.0, variant="b")
    rows = build_index([tmp_path]).rows
    assert [r["variant"] for r in select(rows, "perf", "b")] == ["b"]
    with pytest.raises(ScenarioError, match=r"no run of variant c \(scenario/variant present: perf/a, perf/b\)"):
        select(rows, variant="c")


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_exports_one_row_per_run_with_every_figure(tmp_path: Path, fmt: str) -> None:
    _history(tmp_path / "runs", 3)
    rows = build_index([tmp_path / "runs"]).rows
    out = tmp_path / f"h.{fmt}"
    assert export(rows, fmt, out) is None
    df = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}[fmt](out)
    assert len(df) == 3
    assert {"run_id", "scenario", "variant", "commit", "ref", "host", "ceiling_ratio", "throughput",
            "latency_p99", "processes.etcd.cpu_seconds"} <= set(df.columns)
    assert list(df["throughput"]) == [100.0, 101.0, 102.0]
    # only the figures asked for
    assert export(rows, "csv", None, ["throughput"]).splitlines()[0].endswith(",throughput")  # type: ignore[union-attr]


def test_export_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    _history(tmp_path, 1)
    rows = build_index([tmp_path]).rows
    with pytest.raises(ScenarioError, match="--format parquet needs --output FILE"):
        export(rows, "parquet", None)
    with pytest.raises(ScenarioError, match="--metric nope: neither a gate metric"):
        export(rows, "csv", None, ["nope"])


class _Locked(Exception):
    """What DuckDB raises while another process holds the file."""

    def __init__(self) -> None:
        super().__init__('IO Error: Could not set lock on file "x.duckdb": Conflicting lock is held in python '
                         "(PID 4242). See also https://duckdb.org/docs/current/connect/concurrency")


def test_the_lock_wait_retries_until_the_other_process_lets_go(tmp_path: Path) -> None:
    now = [0.0]
    tries: list[float] = []

    def attempt() -> str:
        tries.append(now[0])
        if now[0] < 1.0:
            raise _Locked
        return "connection"

    def sleep(s: float) -> None:
        now[0] += s

    assert wait_for_lock(attempt, tmp_path / "i.duckdb", 5.0, clock=lambda: now[0], sleep=sleep) == "connection"
    assert tries[0] == 0.0 and 1.0 <= tries[-1] < 2.0  # backing off, never more than a second between tries
    assert all(0 < b - a <= 1.0 for a, b in itertools.pairwise(tries))


def test_the_lock_wait_is_bounded_and_says_who_holds_the_index(tmp_path: Path) -> None:
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    def attempt() -> str:
        raise _Locked

    with pytest.raises(StoreError) as e:
        wait_for_lock(attempt, tmp_path / "i.duckdb", 3.0, clock=lambda: now[0], sleep=sleep)
    assert str(e.value) == (f"history index {tmp_path / 'i.duckdb'}: another kwokbench (pid 4242) held it for 3s; "
                            "run this again when it is done, or give another file with --index")
    assert 3.0 <= now[0] < 3.01  # it gave up at the bound, not later

    def broken() -> str:
        raise ValueError("not a lock")

    with pytest.raises(ValueError, match="not a lock"):  # anything else is not waited for
        wait_for_lock(broken, tmp_path / "i.duckdb", 3.0, clock=lambda: now[0], sleep=sleep)


HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "read")
print("holding", time.time(), flush=True)
time.sleep(float(sys.argv[3]))
con.close()
"""


class _Holder(subprocess.Popen[str]):
    since: float
    """When (time.time()) it took the file."""


def _hold(index: Path, mode: str, seconds: float) -> _Holder:
    """Another process holding the index file (DuckDB's lock is per process), once it says so."""
    p = _Holder([sys.executable, "-c", HOLD, str(index), mode, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    said, since = p.stdout.readline().split()
    assert said == "holding"
    p.since = float(since)
    return p


def _changed(run: Path) -> None:
    """The run's summary rewritten (as `analyse` does): the index must write its row again."""
    st = (run / SUMMARY).stat()
    os.utime(run / SUMMARY, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_a_writer_waits_for_another_process_and_readers_share_the_index(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _history(tmp_path)
    index = build_index([tmp_path]).index
    with _hold(index, "read", 60) as reader:  # an up-to-date index is read beside another reader
        h = build_index([tmp_path])
        assert len(h.rows) == 4 and h.read == 0 and reader.poll() is None
        reader.kill()
    _changed(runs[0])
    with _hold(index, "write", 3) as writer:  # a changed run must be written: wait for the other writer
        h = build_index([tmp_path])
        assert h.read == 1 and len(h.rows) == 4 and time.time() >= writer.since + 3
    monkeypatch.setattr(index_module, "LOCK_WAIT_SECONDS", 0.3)
    _changed(runs[1])
    with _hold(index, "write", 60) as writer:
        with pytest.raises(StoreError, match=rf"another kwokbench \(pid {writer.pid}\) held it for 0.3s; run this"):
            build_index([tmp_path])
        writer.kill()
