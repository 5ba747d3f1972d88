"""An embedded index of stored runs: one row per run, in a DuckDB file next to the runs.

The run directories are the source of truth. The index only saves reading every ``meta.json`` and
``summary.json`` again: a run whose two files have the same size and modification time as when it was
indexed is not read, a changed one is read again (``kwokbench analyse`` rewrites summaries), a removed one
leaves the index, and an index of another format version is rebuilt. Deleting the file loses nothing.

Each row holds what orders and selects a history (scenario, variant, the code under test's commit and
ref, start time, host, ceiling) and every gate metric as a column; every numeric figure of the summary,
flattened to a dotted name, is kept beside it (table ``figures``) for export.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kwokbench.compare.gate import METRICS
from kwokbench.errors import ScenarioError, StoreError
from kwokbench.history.rows import COLUMNS, ROW_COLUMNS, Filters, read_row, select
from kwokbench.store import META, SUMMARY, find_runs

INDEX_NAME = ".kwokbench-history.duckdb"
INDEX_VERSION = 4
"""Version history: 1 the first; 2 the allocation metrics (gpu_allocation, cpu_allocation, gpu_fragmentation);
3 the DRA metrics (claim_allocation_p50, claim_allocation_p99, devices_given_twice, bound_unallocated); 4 the gang
metrics (gangs_per_second, gang_place_p90, gangs_partial).
Another version in a file: the index is dropped and rebuilt."""

FORMATS = ("table", "csv", "json", "parquet")
LOCK_WAIT_SECONDS = 60.0
"""How long a command waits for another kwokbench that holds the index file before it gives up with one
line: a writer holds it for one transaction of rows, a reader while it selects rows."""
T = TypeVar("T")


@dataclass
class History:
    """The indexed runs that were asked for, in start order, and what could not be indexed."""

    index: Path
    rows: list[dict[str, Any]]
    """One per run: :data:`ROW_COLUMNS` and ``figures`` (every numeric summary figure by dotted name)."""
    warnings: list[str] = field(default_factory=list)
    read: int = 0
    """Runs read from their directories this time (the others came from the index unchanged)."""


def default_index(paths: list[Path]) -> Path:
    """The index file in the folder the paths share (a run's parent when one run is named)."""
    root = Path(os.path.commonpath([p.resolve() for p in paths]))
    if (root / META).exists():
        root = root.parent
    return root / INDEX_NAME


def sources(paths: list[Path], index: Path | None = None) -> tuple[list[Path], Path | None]:
    """The run folders and index file a command reads: an index file named among the paths stands for the
    folder it indexes (its keys are relative to it), as if that folder were named with ``--index FILE``."""
    files = [p for p in paths if p.is_file() and p.suffix == ".duckdb"]
    if not files:
        return paths, index
    if len({f.resolve() for f in files}) > 1 or (index is not None and index.resolve() != files[0].resolve()):
        raise ScenarioError(f"{files[0]}: one history index at a time (also given: "
                            f"{next(str(f) for f in [*files[1:], index] if f is not None)})")
    return [p.parent if p in files else p for p in paths], files[0]


def _stamp(path: Path) -> str:
    """Size and modification time of the two documents a row comes from: unchanged, not read again."""
    parts = []
    for name in (META, SUMMARY):
        try:
            st = (path / name).stat()
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _locked(e: Exception) -> bool:
    """Whether DuckDB refused a file because another process holds a conflicting lock on it."""
    return "Could not set lock" in str(e)


def _holder(e: Exception) -> str:
    """Which process holds the lock, as DuckDB names it (``PID 1234``), for the message."""
    found = re.search(r"\(PID (\d+)\)", str(e))
    return f" (pid {found.group(1)})" if found else ""


def wait_for_lock(attempt: Callable[[], T], index: Path, seconds: float | None = None,
                  clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """``attempt()`` (open the index file), tried again while another process holds the file, for at most
    ``seconds`` (default :data:`LOCK_WAIT_SECONDS`); then StoreError, one line, naming the holder.

    DuckDB lets one process write a file or many read it, and refuses the others at once; another
    kwokbench holds it only while it writes a batch of rows, so waiting a little is all it takes."""
    wait = LOCK_WAIT_SECONDS if seconds is None else seconds
    deadline, delay = clock() + wait, 0.05
    while True:
        try:
            return attempt()
        except Exception as e:
            if not _locked(e):
                raise
            left = deadline - clock()
            if left <= 0:
                raise StoreError(f"history index {index}: another kwokbench{_holder(e)} held it for {wait:g}s; "
                                 "run this again when it is done, or give another file with --index") from e
        sleep(min(delay, left))
        delay = min(delay * 2, 1.0)


def _open(index: Path, read_only: bool) -> Any:
    """A connection to the index file (waiting for another process's lock); StoreError, one line, when it
    cannot be opened."""
    import duckdb

    try:
        return wait_for_lock(lambda: duckdb.connect(str(index), read_only=read_only), index)
    except duckdb.Error as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise StoreError(f"history index {index}: cannot open it ({first}); the folder may not be writable "
                         "(choose another file with --index)") from e


def _current(con: Any) -> bool:
    """Whether an index file holds this version's tables (else it is rebuilt by the next writer)."""
    import duckdb

    try:
        found = con.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
        con.execute("SELECT key FROM runs LIMIT 0")
        con.execute("SELECT key FROM figures LIMIT 0")
    except duckdb.CatalogException:
        return False
    return found is not None and found[0] == str(INDEX_VERSION)


def _connect(index: Path) -> Any:
    """A writing connection with this version's tables in place (those of another version dropped)."""
    con = _open(index, read_only=False)
    if not _current(con):
        con.execute("CREATE TABLE IF NOT EXISTS info (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute("DROP TABLE IF EXISTS runs")
        con.execute("DROP TABLE IF EXISTS figures")
        con.execute("INSERT OR REPLACE INTO info VALUES ('version', ?)", [str(INDEX_VERSION)])
        cols = ", ".join(f'"{c}" {t}' for c, t in {**COLUMNS, **dict.fromkeys(METRICS, "DOUBLE")}.items())
        con.execute(f"CREATE TABLE runs (key VARCHAR PRIMARY KEY, stamp VARCHAR, {cols})")
        con.execute("CREATE TABLE figures (key VARCHAR, name VARCHAR, value DOUBLE)")
    return con


def _key(path: Path, root: Path) -> str:
    """A run's key: its path relative to the index's folder (a copied folder keeps its index), else absolute."""
    p = path.resolve()
    return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)


def build_index(paths: list[Path], index: Path | None = None) -> History:
    """Index the runs in ``paths`` (run directories or folders of runs) incrementally and return their rows.

    Several kwokbench processes may use one index at once (``history`` while ``detect`` runs): the file is
    read through a read-only connection, which readers share; the changed runs are read with no lock held,
    and the file is opened for writing only for the one transaction that stores their rows.

    An unreadable run (a broken or newer ``meta.json`` / ``summary.json``) is left out with one warning;
    StoreError when the paths hold no run at all or the index cannot be opened."""
    run_paths = find_runs(paths)
    index = (index or default_index(paths)).resolve()
    root = index.parent
    current, stamps = _stamps(index)
    warnings: list[str] = []
    wanted: list[str] = []
    rows: list[dict[str, Any]] = []
    figures: list[tuple[str, str, float]] = []
    stale: list[str] = []
    for path in run_paths:
        key, stamp = _key(path, root), _stamp(path)
        if stamps.get(key) == stamp:
            wanted.append(key)
            continue
        stale.append(key)
        try:
            row = read_row(path)
        except StoreError as e:
            warnings.append(f"skipped an unreadable run: {e}")
            continue
        wanted.append(key)
        figures += [(key, name, v) for name, v in row.pop("figures").items()]
        rows.append({"key": key, "stamp": stamp, **row})
    gone = [k for k in stamps if not ((root / k) / META).exists()]
    # most commands find the index as they left it: they only read, and readers share the file
    writes = not current or bool(rows) or bool(gone) or any(k in stamps for k in stale)
    con = _connect(index) if writes else _open(index, read_only=True)
    try:
        out = _write(con, root, rows, figures, stale, wanted) if writes else _select(con, wanted)
    finally:
        con.close()
    return History(index, out, warnings, len(rows))


def _stamps(index: Path) -> tuple[bool, dict[str, str]]:
    """Whether the index file is of this version, and the stamp of every run it holds (read-only)."""
    if not index.exists():
        return False, {}
    con = _open(index, read_only=True)
    try:
        if not _current(con):
            return False, {}
        return True, dict(con.execute("SELECT key, stamp FROM runs").fetchall())
    finally:
        con.close()


def _write(con: Any, root: Path, rows: list[dict[str, Any]], figures: list[tuple[str, str, float]],
           stale: list[str], wanted: list[str]) -> list[dict[str, Any]]:
    """Store the rows read (replacing those of their runs) in one transaction, and select the wanted ones."""
    import pandas as pd

    # runs removed from disk leave the index (wherever they were, as the directories are the truth); the
    # index is read again here, as another process may have written it since
    gone = [k for (k,) in con.execute("SELECT key FROM runs").fetchall() if not ((root / k) / META).exists()]
    con.execute("BEGIN")
    for table in ("runs", "figures"):
        for k in stale + gone:
            con.execute(f"DELETE FROM {table} WHERE key = ?", [k])
    if rows:
        con.register("new_runs", pd.DataFrame(rows, columns=["key", "stamp", *ROW_COLUMNS]))
        con.execute("INSERT INTO runs SELECT * FROM new_runs")
        con.unregister("new_runs")
    if figures:
        con.register("new_figures", pd.DataFrame(figures, columns=["key", "name", "value"]))
        con.execute("INSERT INTO figures SELECT * FROM new_figures")
        con.unregister("new_figures")
    con.execute("COMMIT")
    return _select(con, wanted)


def _select(con: Any, keys: list[str]) -> list[dict[str, Any]]:
    import pandas as pd

    con.register("wanted", pd.DataFrame({"key": keys}, dtype=object))
    cols = ", ".join(f'r."{c}"' for c in ROW_COLUMNS)
    cur = con.execute(f"SELECT r.key, {cols} FROM runs r JOIN wanted w USING (key) ORDER BY r.started_at, r.run_id")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, values, strict=True)) for values in cur.fetchall()]
    by_key: dict[str, dict[str, float]] = {r["key"]: {} for r in rows}
    for key, name, value in con.execute("SELECT f.key, f.name, f.value FROM figures f JOIN wanted w USING (key)"
                                        ).fetchall():
        by_key[key][name] = value
    con.unregister("wanted")
    for r in rows:
        r["figures"] = by_key[r.pop("key")]
    return rows


@dataclass
class LocalIndex:
    """The embedded index as a :class:`~kwokbench.history.store.Store`: the runs below ``paths``, indexed in
    ``index`` (default: :func:`default_index`). Upserting rows re-reads their run directories, which stay
    the truth; ``history`` is the last build (its warnings, how many runs were read)."""

    paths: list[Path]
    index: Path | None = None
    history: History | None = None

    @property
    def where(self) -> str:
        return str(self.index or default_index(self.paths))

    def upsert(self, rows: Iterable[dict[str, Any]]) -> int:
        return build_index([Path(r["path"]) for r in rows], self.index or default_index(self.paths)).read

    def rows(self, filters: Filters) -> list[dict[str, Any]]:
        self.history = build_index(self.paths, self.index)
        return select(self.history.rows, filters.scenario, filters.variant)


def figure_columns(rows: list[dict[str, Any]], metrics: list[str] | None) -> list[str]:
    """The figure columns to show or export: ``metrics`` (gate metrics or dotted summary figures), else
    every gate metric that any row has, then (``metrics is None`` only) every other figure."""
    known = {n for r in rows for n in r["figures"]}
    if metrics:
        unknown = [m for m in metrics if m not in METRICS and m not in known]
        if unknown:
            raise ScenarioError(f"--metric {unknown[0]}: neither a gate metric ({', '.join(METRICS)}) nor a "
                                "summary figure of these runs (dotted, e.g. processes.kube-scheduler.cpu_seconds)")
        return list(dict.fromkeys(metrics))
    return [m for m in METRICS if any(r.get(m) is not None for r in rows)]


def frame(rows: list[dict[str, Any]], metrics: list[str] | None = None, every_figure: bool = True) -> Any:
    """The rows as a pandas DataFrame: the run's columns, then the figures asked for (``every_figure``
    without ``metrics``: every numeric summary figure too, sorted by name)."""
    import pandas as pd

    cols = figure_columns(rows, metrics)
    extra = [] if metrics or not every_figure else sorted({n for r in rows for n in r["figures"]})
    # rows from a shared store also say where each run directory is
    base = [*COLUMNS, "location"] if any("location" in r for r in rows) else list(COLUMNS)
    data = []
    for r in rows:
        d = {c: r.get(c) for c in base}
        d.update({c: r[c] if c in METRICS else r["figures"].get(c) for c in cols})
        d.update({c: r["figures"].get(c) for c in extra if c not in d})
        data.append(d)
    return pd.DataFrame(data, columns=list(dict.fromkeys([*base, *cols, *extra])))


def export(rows: list[dict[str, Any]], fmt: str, output: Path | None, metrics: list[str] | None = None) -> str | None:
    """CSV / JSON / parquet of the rows, written to ``output`` (parquet needs one); the text when
    ``output`` is None."""
    if fmt not in FORMATS[1:]:
        raise ScenarioError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    df = frame(rows, metrics)
    df["started_at"] = df["started_at"].map(lambda t: t.isoformat() if t is not None and t == t else None)
    if fmt == "parquet":
        if output is None:
            raise ScenarioError("--format parquet needs --output FILE")
        df.to_parquet(output, index=False)
        return None
    text = df.to_csv(index=False) if fmt == "csv" else df.to_json(orient="records", indent=1) + "\n"
    if output is None:
        return str(text)
    output.write_text(str(text))
    return None
