"""The store a team shares against a real PostgreSQL server started by the test session (no cluster):
concurrent writers lose nothing, a writer killed inside its transaction leaves no partial row, the CLI
pushes, lists and detects over the store, and a store that does not answer is one line and exit 2."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kwokbench.history.rows import ROW_COLUMNS, Filters, Row
from kwokbench.history.store import RUNS_TABLE, PostgresStore, open_store, parse_url, push_runs
from kwokbench.progress import Silent
from tests.conftest import Postgres, assert_one_line_error, free_port, kwokbench
from tests.integration.test_cli_history import STEP, _history
from tests.unit.fake_runs import run_dir

WRITERS, ROWS = 8, 50

# forked writers start at once from this process's imports (a spawned interpreter takes a second each)
FORK = multiprocessing.get_context("fork")


@pytest.fixture
def store_url(postgres: Postgres, request: pytest.FixtureRequest) -> str:
    """A new, empty database of the session's server: the store's schema is not there yet."""
    return postgres.create_db(request.node.name.lower()[:60])


def row(run_id: str, writer: int = 0, i: int = 0) -> Row:
    r: Row = dict.fromkeys(ROW_COLUMNS)
    r.update(run_id=run_id, path=f"/runs/{run_id}", scenario="perf", variant=f"w{writer}", status="complete",
             started_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i), throughput=100.0 + i,
             location=f"ci-{writer}:/runs/{run_id}", figures={"throughput.average": 100.0 + i})
    return r


def _ids(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(f"SELECT run_id FROM {RUNS_TABLE} ORDER BY run_id").fetchall()]


def _writer(url: str, writer: int, start: Any) -> None:
    """One CI runner: a run after another, each row its own connection and transaction (as `run` pushes),
    and every writer also replaces one row they all share."""
    store = PostgresStore(parse_url(url))
    start.wait()
    for i in range(ROWS):
        store.upsert([row(f"w{writer}-{i:03d}", writer, i)])
    store.upsert([row("shared", writer)])


def test_concurrent_writers_lose_no_row(store_url: str) -> None:
    start = FORK.Barrier(WRITERS + 1)
    procs = [FORK.Process(target=_writer, args=(store_url, w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.wait()  # all at once, on a database without the schema: its creation races too
    t0 = time.monotonic()
    for p in procs:
        p.join(60)
    took = time.monotonic() - t0
    assert [p.exitcode for p in procs] == [0] * WRITERS
    ids = _ids(store_url)
    assert len(ids) == WRITERS * ROWS + 1
    assert set(ids) == {f"w{w}-{i:03d}" for w in range(WRITERS) for i in range(ROWS)} | {"shared"}
    print(f"\n{WRITERS} writers x {ROWS} rows (a transaction each): {len(ids)} rows in {took:.2f} s")


def _victim(url: str, inside: Any) -> None:
    """A writer that sends 10 rows inside its transaction, then hangs there until it is killed."""
    store = PostgresStore(parse_url(url))

    def rows() -> Iterator[Row]:
        for i in range(10):
            yield row(f"victim-{i:02d}", 9, i)
        inside.set()
        time.sleep(120)
        yield row("victim-never", 9, 99)

    with store.connect() as conn, conn.transaction():
        store.write_rows(conn, rows())


def test_writer_killed_inside_its_transaction_leaves_no_row_and_blocks_nobody(store_url: str) -> None:
    open_store(store_url)
    inside = FORK.Event()
    victim = FORK.Process(target=_victim, args=(store_url, inside))
    victim.start()
    assert inside.wait(30), "the victim never got inside its transaction"
    start = FORK.Barrier(4)
    others = [FORK.Process(target=_writer, args=(store_url, w, start)) for w in range(3)]
    for p in others:
        p.start()
    start.wait()
    assert victim.pid is not None
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    for p in others:
        p.join(60)
    assert victim.exitcode == -signal.SIGKILL and [p.exitcode for p in others] == [0, 0, 0]
    ids = _ids(store_url)
    assert not [i for i in ids if i.startswith("victim")]
    assert len(ids) == 3 * ROWS + 1
    # the same runs pushed again (what the warning tells the user to do) go through: no lock left behind
    store = PostgresStore(parse_url(store_url))
    assert store.upsert([row(f"victim-{i:02d}", 9, i) for i in range(10)]) == 10
    assert len(_ids(store_url)) == 3 * ROWS + 11


def test_rows_come_back_as_the_index_has_them_and_an_upsert_replaces(store_url: str, tmp_path: Path) -> None:
    store = open_store(store_url)
    store.upsert([row("a", 1, 1), row("b", 2, 2)])
    store.upsert([{**row("a", 1, 1), "throughput": 42.0}])
    rows = store.rows(Filters())
    assert [r["run_id"] for r in rows] == ["a", "b"] and rows[0]["throughput"] == 42.0
    assert set(rows[0]) == {*ROW_COLUMNS, "location", "figures"}
    assert rows[0]["figures"] == {"throughput.average": 101.0} and rows[0]["started_at"].tzinfo is not None
    assert [r["run_id"] for r in store.rows(Filters(variant="w2"))] == ["b"]
    with pytest.raises(Exception, match=r"no run of variant w3 \(scenario/variant present: perf/w1, perf/w2\)"):
        store.rows(Filters(variant="w3"))


def test_cli_pushes_lists_and_detects_over_the_store(store_url: str, tmp_path: Path) -> None:
    runs = _history(tmp_path / "runs")
    push = kwokbench("history", str(tmp_path / "runs"), "--store", store_url)
    assert push.returncode == 0, push.stderr
    assert f"{len(STEP)} row(s) written to the store postgresql://kb:***@" in push.stdout
    again = kwokbench("history", str(runs[0]), "--store", store_url, "--location",
                      "https://ci.example/artifacts/{run_id}")
    assert again.returncode == 0 and "1 row(s) written" in again.stdout
    listed = kwokbench("history", "--store", store_url, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["run_id"] for r in rows] == [p.name for p in runs]  # pushed twice, listed once, in start order
    assert rows[0]["location"] == f"https://ci.example/artifacts/{runs[0].name}"
    assert rows[1]["location"].endswith(f":{runs[1].resolve()}") and rows[0]["throughput"] == STEP[0]
    res = kwokbench("detect", "--store", store_url, "--metric", "throughput:-10%", "--json")
    assert res.returncode == 1, (res.stdout, res.stderr)
    [change] = json.loads(res.stdout)["metrics"][0]["changes"]
    assert change["before"]["commit"].startswith("07") and change["after"]["commit"].startswith("08")
    both = kwokbench("detect", str(tmp_path / "runs"), "--store", store_url)
    assert_one_line_error(both, "detect reads either run directories or --store, not both")
    trend = kwokbench("report", "--history", "--store", store_url, "-o", str(tmp_path / "trend"))
    assert trend.returncode == 0, trend.stderr
    assert f"({len(STEP)} runs, 1 change point(s), 1 new regression(s))" in " ".join(trend.stdout.split())
    page = (tmp_path / "trend" / "trend.html").read_text()
    assert runs[0].name in page and runs[-1].name in page  # drawn from the store's rows


def test_a_store_that_does_not_answer_or_refuses_is_one_line_and_exit_2(postgres: Postgres, store_url: str,
                                                                        tmp_path: Path) -> None:
    dead = f"postgresql://kb@127.0.0.1:{free_port()}/db"
    t0 = time.monotonic()
    res = kwokbench("history", "--store", dead)
    assert_one_line_error(res, "store postgresql://kb@127.0.0.1:")
    assert "cannot connect" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    # `run` checks the store before anything else: no toolchain, no cluster
    res = kwokbench("run", "scenarios/quickstart.yaml", "--out", str(tmp_path / "out"), "--store", dead)
    assert_one_line_error(res, "cannot connect")
    assert time.monotonic() - t0 < 20 and not (tmp_path / "out").exists()
    wrong = kwokbench("history", "--store", postgres.url("postgres", password="wrong"))
    assert_one_line_error(wrong, 'password authentication failed for user "kb"')
    assert "wrong" not in wrong.stderr  # the password is never shown
    assert_one_line_error(kwokbench("history", "--store", "mysql://kb@127.0.0.1/db"), "mysql:// is not supported")
    with psycopg.connect(store_url) as conn:
        conn.execute("CREATE TABLE kwokbench_schema (id int PRIMARY KEY, version int NOT NULL, written_by text)")
        conn.execute("INSERT INTO kwokbench_schema VALUES (1, 99, 'a future kwokbench')")
    assert_one_line_error(kwokbench("history", "--store", store_url), "schema version 99 is newer than kwokbench")


class Warnings(Silent):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warn(self, msg: str) -> None:
        self.lines.append(msg)


def test_a_run_whose_row_is_not_taken_is_kept_with_one_warning_saying_how_to_push_it(tmp_path: Path) -> None:
    path = run_dir(tmp_path, 1, 200.0, commit="c" * 40)
    rep = Warnings()
    assert push_runs(PostgresStore(parse_url(f"postgresql://kb@127.0.0.1:{free_port()}/db")), [path], None, rep) == 0
    [line] = rep.lines
    assert "not written to the store" in line and f"kwokbench history {path} --store postgresql://kb@" in line
    assert (path / "meta.json").exists() and (path / "summary.json").exists()


def test_a_host_that_takes_the_connection_but_never_answers_fails_in_connect_timeout() -> None:
    import socket

    from kwokbench.errors import StoreError

    with socket.socket() as silent:  # the kernel completes the handshake; nothing ever replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"postgresql://kb@127.0.0.1:{silent.getsockname()[1]}/db?connect_timeout=2"
        t0 = time.monotonic()
        with pytest.raises(StoreError, match="cannot connect: connection timeout expired"):
            open_store(url)
        assert 1.5 < time.monotonic() - t0 < 6


def test_a_store_of_schema_1_is_migrated_and_keeps_its_rows(store_url: str) -> None:
    """A store written before the allocation metrics (schema 1) gets their columns, empty for its rows."""
    store = open_store(store_url)
    store.upsert([row("old", 1, 1)])
    with psycopg.connect(store_url) as conn:
        for name in ("gpu_allocation", "cpu_allocation", "gpu_fragmentation"):
            conn.execute(f'ALTER TABLE {RUNS_TABLE} DROP COLUMN "{name}"')
        conn.execute("UPDATE kwokbench_schema SET version = 1")
    again = open_store(store_url)
    again.upsert([{**row("new", 2, 2), "gpu_allocation": 0.93}])
    rows = {r["run_id"]: r for r in again.rows(Filters())}
    assert rows["old"]["gpu_allocation"] is None and rows["new"]["gpu_allocation"] == 0.93
    with psycopg.connect(store_url) as conn:
        assert conn.execute("SELECT version FROM kwokbench_schema").fetchone() == (2,)
