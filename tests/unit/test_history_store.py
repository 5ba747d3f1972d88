"""The shared store's pure parts: --store URLs, locations, the row shape it shares with the index."""

from __future__ import annotations

import platform
import re
from pathlib import Path

import pytest

from kwokbench.errors import ScenarioError, StoreError
from kwokbench.history.index import LocalIndex, frame
from kwokbench.history.rows import COLUMNS, ROW_COLUMNS, Filters
from kwokbench.history.store import STORE_COLUMNS, Store, check_location, locate, parse_url
from tests.unit.fake_runs import run_dir


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://kb@db.example:5433/bench", "postgresql://kb@db.example:5433/bench"),
    ("postgres://kb:s3cret@10.0.0.1/bench?connect_timeout=2", "postgres://kb:***@10.0.0.1/bench"),
])
def test_a_store_url_is_parsed_and_shown_without_its_password(url: str, shown: str) -> None:
    parsed = parse_url(url)
    assert parsed.shown == shown and parsed.conninfo == url and parsed.params["dbname"] == "bench"
    assert "s3cret" not in parsed.shown


@pytest.mark.parametrize(("url", "needle"), [
    ("opensearch://es.example:9200/kwokbench", "opensearch:// is not supported: only PostgreSQL"),
    ("db.example:5432/bench", "expected postgresql://USER@HOST:PORT/DB"),
    ("postgresql://kb@db.example:port/bench", "Port could not be cast to integer"),
    ("postgresql://kb@db.example:5432", "names no database"),
    ("postgresql:///bench", "names no host"),
])
def test_a_malformed_store_url_is_one_line(url: str, needle: str) -> None:
    with pytest.raises(StoreError, match=needle) as e:
        parse_url(url)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"--store {url!r}")


def test_a_run_is_located_by_this_host_and_its_path_or_a_given_url() -> None:
    row = {"run_id": "20260101T000000Z-abc", "path": "/srv/runs/perf/20260101T000000Z-abc"}
    assert locate(row) == f"{platform.node()}:/srv/runs/perf/20260101T000000Z-abc"
    assert locate(row, "https://ci.example/a/{run_id}") == "https://ci.example/a/20260101T000000Z-abc"
    check_location(None)
    with pytest.raises(ScenarioError, match=re.escape("only {run_id} can be filled in")):
        check_location("https://ci.example/{job}/{run_id}")


def test_the_store_holds_the_index_row_and_where_the_run_is() -> None:
    assert list(STORE_COLUMNS) == [*ROW_COLUMNS, "location", "figures"]
    assert STORE_COLUMNS["started_at"] == "timestamptz" and STORE_COLUMNS["throughput"] == "double precision"


def test_the_local_index_is_a_store_too(tmp_path: Path) -> None:
    for i, v in enumerate([200.0, 210.0]):
        run_dir(tmp_path, i, v, commit=f"{i:02d}" + "c" * 38, variant=f"v{i}")
    local: Store = LocalIndex([tmp_path])
    assert [r["throughput"] for r in local.rows(Filters(variant="v1"))] == [210.0]
    assert local.where.endswith(".kwokbench-history.duckdb")
    rows = local.rows(Filters())
    assert local.upsert(rows) == 0  # unchanged on disk: nothing read again
    df = frame([{**r, "location": "h:/x"} for r in rows], ["throughput"])
    assert list(df.columns) == [*COLUMNS, "location", "throughput"] and list(df["location"]) == ["h:/x"] * 2
    assert "location" not in frame(rows, ["throughput"]).columns


def test_the_history_modules_import_one_way() -> None:
    """index and store both read rows; neither imports the other, anywhere (a function-local import too)."""
    import ast

    from kwokbench import history

    def imports(module: str) -> set[str]:
        tree = ast.parse((Path(history.__file__).parent / f"{module}.py").read_text())
        return {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
            {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}

    ours = {m: {i for i in imports(m) if i.startswith("kwokbench.history")} for m in ("rows", "index", "store")}
    assert ours == {"rows": set(), "index": {"kwokbench.history.rows"}, "store": {"kwokbench.history.rows"}}
