"""A store a team shares: the history index's rows in a PostgreSQL database that many machines write.

The run directories stay the source of truth; a row is what :mod:`.index` derives from one, plus where
the directory is (``location``: the pushing machine's name and absolute path, or a URL the user gives,
e.g. where CI keeps its artefacts). Rows are keyed by run id, so pushing a run again replaces its row.

Why it holds up under many CI runners at once: a batch of rows is one transaction (``INSERT … ON CONFLICT
(run_id) DO UPDATE``), so a writer killed half-way leaves none of its rows; batches write in run-id order,
so two overlapping batches never deadlock; the schema is created under a transaction-scoped advisory lock,
so the first writers of a new database do not race each other; a host that does not answer fails in
``connect_timeout`` seconds (default :data:`CONNECT_TIMEOUT`, or the URL's own ``?connect_timeout=``).
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from kwokbench import __version__
from kwokbench.compare.gate import METRICS
from kwokbench.errors import ScenarioError, StoreError
from kwokbench.history.rows import COLUMNS, Filters, Row, read_row, select

if TYPE_CHECKING:
    import psycopg

    from kwokbench.progress import Reporter

STORE_VERSION = 2
"""Schema version history: 1 the first (tables kwokbench_schema, kwokbench_runs); 2 a column per gate metric added
since (the allocation metrics). A database of a newer version is refused; an older one is migrated under the
schema lock (its missing metric columns added, empty for the rows already there)."""
SCHEMA_TABLE, RUNS_TABLE = "kwokbench_schema", "kwokbench_runs"
SCHEMA_LOCK = 0x6B776F6B62656E63
"""pg_advisory_xact_lock key ('kwokbenc') that serialises schema creation and migration."""
CONNECT_TIMEOUT = 5
STATEMENT_TIMEOUT = "60s"
RETRIES = 3
"""Attempts of a batch the server aborted to break a deadlock or a serialisation conflict."""
SCHEMES = ("postgresql", "postgres")
_PG_TYPES = {"VARCHAR": "text", "TIMESTAMPTZ": "timestamptz", "BOOLEAN": "boolean", "BIGINT": "bigint",
             "DOUBLE": "double precision"}
STORE_COLUMNS: dict[str, str] = {**{c: _PG_TYPES[t] for c, t in COLUMNS.items()},
                                 **dict.fromkeys(METRICS, "double precision"), "location": "text",
                                 "figures": "jsonb"}
"""The row of a run in the store: the index's columns, then ``location`` and the figures as JSON."""


class Store(Protocol):
    """Where history rows live: the embedded index of one machine's runs or a database a team shares.

    Both hold the same row shape: :data:`~kwokbench.history.rows.ROW_COLUMNS` and ``figures``."""

    @property
    def where(self) -> str:
        """The store as a user names it (a file, or the URL without its password)."""

    def upsert(self, rows: Iterable[Row]) -> int:
        """Write these rows, replacing those of the same runs; how many were written."""

    def rows(self, filters: Filters) -> list[Row]:
        """The rows asked for, in start order; ScenarioError when a filter matches none of many."""


@dataclass(frozen=True)
class StoreURL:
    """A parsed ``--store`` URL: what libpq is given and what messages show (no password)."""

    conninfo: str
    shown: str
    params: dict[str, Any]


def parse_url(url: str) -> StoreURL:
    """``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?param=value]`` (libpq's URI form); StoreError, one
    line, for anything else (another scheme, no host, no database, a port that is not a number)."""
    from psycopg.conninfo import conninfo_to_dict

    usage = "expected postgresql://USER@HOST:PORT/DB"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise StoreError(f"--store {url!r}: {e} ({usage})") from e
    if parts.scheme not in SCHEMES:
        other = f" ({parts.scheme}:// is not supported: only PostgreSQL)" if parts.scheme else ""
        raise StoreError(f"--store {url!r}: {usage}{other}")
    try:
        params = conninfo_to_dict(url)
    except Exception as e:  # psycopg.ProgrammingError, or libpq's own parse error
        raise StoreError(f"--store {url!r}: {str(e).strip().splitlines()[0]} ({usage})") from e
    if not params.get("host") or not params.get("dbname"):
        raise StoreError(f"--store {url!r}: names no {'host' if not params.get('host') else 'database'} ({usage})")
    netloc = parts.hostname or ""
    if parts.username:
        netloc = f"{parts.username}{':***' if parts.password is not None else ''}@{netloc}"
    if port is not None:
        netloc += f":{port}"
    shown = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return StoreURL(url, shown, params)


def locate(row: Row, template: str | None = None) -> str:
    """Where a run's directory is: ``template`` with ``{run_id}`` filled in (a URL of CI artefacts), else
    ``HOST:/absolute/path`` on the machine pushing the row."""
    if template is not None:
        try:
            return template.format(run_id=row["run_id"])
        except (KeyError, IndexError, ValueError) as e:
            raise ScenarioError(f"--location {template!r}: only {{run_id}} can be filled in ({e})") from e
    return f"{platform.node()}:{row['path']}"


def _reason(e: Exception) -> str:
    """The first line of a driver error, which says what went wrong (refused, timeout, password…)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


@dataclass
class PostgresStore:
    """The rows in a PostgreSQL database; each operation opens its own short connection, so a run of many
    minutes holds nothing open and a restarted server is simply found again."""

    url: StoreURL
    _ready: bool = field(default=False, repr=False)

    @property
    def where(self) -> str:
        return self.url.shown

    def connect(self) -> psycopg.Connection[Any]:
        """A connection with the schema in place; StoreError (one line) when the server does not answer,
        refuses the login or holds a newer schema."""
        import psycopg

        kwargs: dict[str, Any] = {"application_name": f"kwokbench {__version__}"}
        if "connect_timeout" not in self.url.params:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT
        try:
            conn = psycopg.connect(self.url.conninfo, **kwargs)
        except psycopg.Error as e:
            raise StoreError(f"store {self.where}: cannot connect: {_reason(e)}") from e
        try:
            conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            conn.commit()
            if not self._ready:
                self._schema(conn)
                self._ready = True
        except BaseException as e:
            conn.close()
            if isinstance(e, psycopg.Error):
                raise StoreError(f"store {self.where}: {_reason(e)}") from e
            raise
        return conn

    def check(self) -> None:
        """Connect once (and create the schema): for a command to fail before it starts any work."""
        self.connect().close()

    def _schema(self, conn: psycopg.Connection[Any]) -> None:
        # fast path, which needs no right to create tables: the schema is there and current
        current = self._version(conn) == STORE_VERSION
        conn.commit()
        if current:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (id int PRIMARY KEY CHECK (id = 1), "
                         "version int NOT NULL, written_by text)")
            found = self._version(conn)
            if found is not None and found > STORE_VERSION:
                raise StoreError(f"store {self.where}: schema version {found} is newer than kwokbench "
                                 f"{__version__} reads ({STORE_VERSION}): upgrade kwokbench")
            cols = ", ".join(f'"{c}" {t}' + (" PRIMARY KEY" if c == "run_id" else "")
                             for c, t in STORE_COLUMNS.items())
            conn.execute(f"CREATE TABLE IF NOT EXISTS {RUNS_TABLE} ({cols}, "
                         "pushed_at timestamptz NOT NULL DEFAULT now())")
            conn.execute(f"CREATE INDEX IF NOT EXISTS {RUNS_TABLE}_history ON {RUNS_TABLE} "
                         "(scenario, variant, started_at)")
            if found is None:
                conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (1, %s, %s)",
                             [STORE_VERSION, f"kwokbench {__version__}"])
            elif found < STORE_VERSION:
                for name in METRICS:
                    conn.execute(f'ALTER TABLE {RUNS_TABLE} ADD COLUMN IF NOT EXISTS "{name}" double precision')
                conn.execute(f"UPDATE {SCHEMA_TABLE} SET version = %s, written_by = %s WHERE id = 1",
                             [STORE_VERSION, f"kwokbench {__version__}"])

    @staticmethod
    def _version(conn: psycopg.Connection[Any]) -> int | None:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [SCHEMA_TABLE]).fetchone()
        if not exists or not exists[0]:
            return None
        found = conn.execute(f"SELECT version FROM {SCHEMA_TABLE} WHERE id = 1").fetchone()
        return int(found[0]) if found else None

    @staticmethod
    def write_rows(conn: psycopg.Connection[Any], rows: Iterable[Row]) -> None:
        """Upsert ``rows`` inside the caller's transaction (read lazily, one statement each)."""
        from psycopg.types.json import Jsonb

        names = list(STORE_COLUMNS)
        cols = ", ".join(f'"{c}"' for c in names)
        sets = ", ".join(f'"{c}" = EXCLUDED."{c}"' for c in names if c != "run_id")
        query = (f"INSERT INTO {RUNS_TABLE} ({cols}) VALUES ({', '.join(['%s'] * len(names))}) "
                 f"ON CONFLICT (run_id) DO UPDATE SET {sets}, pushed_at = now()")
        with conn.cursor() as cur:
            cur.executemany(query, ([Jsonb(r.get("figures") or {}) if c == "figures" else r.get(c)
                                     for c in names] for r in rows))

    def upsert(self, rows: Iterable[Row]) -> int:
        import psycopg
        from psycopg import errors

        # one lock order for every writer: two batches holding the same runs never deadlock
        batch = sorted(rows, key=lambda r: str(r["run_id"]))
        if not batch:
            return 0
        for attempt in range(RETRIES):
            try:
                with self.connect() as conn, conn.transaction():
                    self.write_rows(conn, batch)
                return len(batch)
            except (errors.DeadlockDetected, errors.SerializationFailure) as e:
                if attempt == RETRIES - 1:
                    raise StoreError(f"store {self.where}: rows not written: {_reason(e)}") from e
            except psycopg.Error as e:
                raise StoreError(f"store {self.where}: rows not written: {_reason(e)}") from e
        return 0  # not reached: the last attempt returns or raises

    def rows(self, filters: Filters) -> list[Row]:
        import psycopg

        cols = ", ".join(f'"{c}"' for c in STORE_COLUMNS)
        try:
            with self.connect() as conn:
                found = conn.execute(
                    f"SELECT {cols} FROM {RUNS_TABLE} WHERE (%(s)s::text IS NULL OR scenario = %(s)s) "
                    "AND (%(v)s::text IS NULL OR variant = %(v)s) ORDER BY started_at, run_id",
                    {"s": filters.scenario, "v": filters.variant}).fetchall()
                present = [] if found or filters == Filters() else conn.execute(
                    f"SELECT DISTINCT scenario, variant FROM {RUNS_TABLE} ORDER BY 1, 2").fetchall()
        except psycopg.Error as e:
            raise StoreError(f"store {self.where}: {_reason(e)}") from e
        if present:
            select([{"scenario": s, "variant": v} for s, v in present], filters.scenario, filters.variant)
        names = list(STORE_COLUMNS)
        out = []
        for values in found:
            row = dict(zip(names, values, strict=True))
            row["figures"] = {k: float(v) for k, v in (row["figures"] or {}).items()}
            out.append(row)
        return out


def open_store(url: str) -> PostgresStore:
    """The store a ``--store`` URL names, connected once and its schema in place (fail before any work)."""
    store = PostgresStore(parse_url(url))
    store.check()
    return store


def check_location(template: str | None) -> None:
    """ScenarioError (one line) now for a ``--location`` that could not be filled in later."""
    if template is not None:
        locate({"run_id": "", "path": ""}, template)


def push_rows(store: Store, rows: Iterable[Row], location: str | None = None) -> int:
    """Upsert index rows with their ``location``; StoreError when the store does not take them."""
    return store.upsert({**r, "location": locate(r, location)} for r in rows)


def push_runs(store: Store, paths: list[Path], location: str | None, reporter: Reporter) -> int:
    """Upsert the rows of these freshly stored run directories; when the store does not take them, one
    warning saying how to push them later. The runs on disk are never touched: nothing is lost."""
    try:
        return push_rows(store, [read_row(p) for p in paths], location)
    except StoreError as e:
        where = " ".join(str(p) for p in paths)
        reporter.warn(f"row(s) of {where} not written to the store ({e}); the run is kept on disk: push it "
                      f"later with `kwokbench history {where} --store {store.where}`")
        return 0
