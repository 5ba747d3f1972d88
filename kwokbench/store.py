"""Run directories: ``reports/<scenario>/<UTC time>-<id>[-<variant>]/`` with versioned files.

- ``meta.json``: format version, status (running → complete | interrupted | failed), versions, host,
  resolved scenario, scheduler variant and its client limits, phases.
- ``requests.parquet``: one row per create request (scheduled/sent time, latency, status).
- ``pods.parquet``: one row per pod of the timeline.
- ``summary.json``: figures derived from the above (recomputable offline by ``report``).

Every file is written to a temporary name and renamed, so a crash never leaves a torn file, and
``meta.json`` is written first with status ``running`` so an interrupted run is still recognisable.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from kwokbench import __version__
from kwokbench.errors import KwokbenchError, StoreError

FORMAT_VERSION = 1
META, SUMMARY, PODS, REQUESTS = "meta.json", "summary.json", "pods.parquet", "requests.parquet"
BINDING_RATE = "binding_rate.parquet"
METRICS = "metrics.parquet"
NODES = "nodes.parquet"
KUEUE_WORKLOADS = "kueue_workloads.parquet"
CLAIMS = "claims.parquet"
"""Kueue Workloads of the run: when each was seen, got quota, was admitted and finished."""
"""Nodes at the end of the run (allocatable CPU/GPUs/pods), for placement quality."""
SWEEP, SWEEP_FORMAT_VERSION = "sweep.json", 1
"""A sweep's own document (kwokbench.sweep), at the top of its folder, beside its cells' run directories."""
SCENARIO_SCHEMA_VERSION = 1
"""The scenario ``schema_version`` this kwokbench reads (:class:`kwokbench.scenario.Scenario`); a run stores
its resolved scenario in ``meta.json``, and one written by a newer kwokbench is refused, not half-read."""
WATCH, SCRAPE_STATS, HOST, CHAOS = "watch.json", "scrape_stats.json", "host.json", "chaos.json"
EXTENDER, FAILED_SCHEDULING, PROMETHEUS = "extender.json", "failed_scheduling.json", "prometheus.json"
PROFILES, PROFILE_INDEX, PROFILE_FORMAT_VERSION = "profiles", "profiles.json", 1
"""The run's folder of profiles (``<component>.pb.gz``) and its index (history: 1, the first)."""


def _identity(doc: Any) -> dict[str, Any]:
    return dict(doc)


# Versioned documents of a run: name → (current version, migrations from each older version to the next).
# Version 0 is a document written before it carried a ``format_version`` (its shape is given here).
# Summary history: 1 (no key) pacer send rates, stranded pods left out of latencies; 2 offered / sent /
# accepted rates, stranded pods censored at the phase timeout (kwokbench.figures.summary).
DOCS: dict[str, tuple[int, dict[int, Any]]] = {
    "summary.json": (2, {0: _identity, 1: _identity}),  # a v1 summary is read as it is: readers tolerate both
    CHAOS: (1, {0: lambda d: {"events": d}}),  # was a bare list of events
    FAILED_SCHEDULING: (1, {0: lambda d: {"messages": d}}),  # was the bare pod → message map
    PROMETHEUS: (1, {0: _identity}),
    EXTENDER: (1, {0: _identity}),
    WATCH: (1, {}),
    SCRAPE_STATS: (1, {}),
    HOST: (1, {}),
}


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def host_info() -> dict[str, Any]:
    import psutil

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": platform.node(), "cpu_model": cpu, "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total, "kernel": platform.release(),
            "python": platform.python_version()}


def digest(obj: Any) -> str:
    """A short stable fingerprint of a JSON-able object (keys sorted): whether two shards ran the same scenario."""
    import hashlib

    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def owner() -> dict[str, Any]:
    """Which process is writing a document: recorded while its status is ``running``, so a reader can
    tell a run in progress from one whose kwokbench was killed before it could say so."""
    import psutil

    return {"hostname": platform.node(), "pid": os.getpid(), "started": psutil.Process().create_time()}


@contextlib.contextmanager
def outcome(doc: dict[str, Any]) -> Iterator[None]:
    """The ``status`` of a document written while a long command runs (a sweep, a bisection): ``complete`` when
    the block ends, ``interrupted`` on Ctrl-C or SIGTERM, ``failed`` with its ``error`` on a kwokbench error
    (re-raised either way). The caller saves the document in its own ``finally``."""
    try:
        yield
        doc["status"] = "complete"
    except KeyboardInterrupt:
        doc["status"] = "interrupted"
        raise
    except KwokbenchError as e:
        doc["status"], doc["error"] = "failed", str(e)
        raise


def settle_status(doc: dict[str, Any]) -> dict[str, Any]:
    """A ``running`` document whose writer is gone (same host, process no longer alive) reads as
    ``interrupted``. In memory only: readers never write. Other hosts' documents are left as they are."""
    o = doc.get("owner")
    if doc.get("status") != "running" or not isinstance(o, dict) or o.get("hostname") != platform.node():
        return doc
    import psutil

    try:
        alive = abs(psutil.Process(int(o["pid"])).create_time() - float(o["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        alive = False
    if not alive:
        doc["status"] = "interrupted"
        doc.setdefault("error", f"kwokbench (pid {o.get('pid')}) ended without finishing it (killed?)")
    return doc


@dataclass
class RunDir:
    path: Path

    @classmethod
    def create(cls, root: Path, scenario: str, variant: str | None = None) -> RunDir:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        name = f"{stamp}-{secrets.token_hex(3)}" + (f"-{variant}" if variant else "")
        path = root / scenario / name
        try:
            path.mkdir(parents=True)
        except OSError as e:
            raise StoreError(f"cannot create run directory {path}: {e.strerror}") from e
        if not os.access(path, os.W_OK):
            raise StoreError(f"run directory {path} is not writable")
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def write_json(self, name: str, obj: Any) -> None:
        _atomic_write(self.path / name, orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
                                                     | orjson.OPT_NON_STR_KEYS))

    def write_frame(self, name: str, df: Any) -> None:
        import io

        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        _atomic_write(self.path / name, buf.getvalue())

    def write_doc(self, name: str, body: dict[str, Any]) -> None:
        """A versioned document of the run (see :data:`DOCS`)."""
        self.write_json(name, {"format_version": DOCS[name][0], **body})

    def write_meta(self, meta: dict[str, Any]) -> None:
        self.write_json(META, {"format_version": FORMAT_VERSION, "kwokbench_version": __version__, **meta})

    def update_meta(self, **fields: Any) -> dict[str, Any]:
        meta = read_meta(self.path)
        meta.update(fields)
        self.write_json(META, meta)
        return meta


def read_versioned(path: Path, name: str, version: int, what: str) -> dict[str, Any]:
    """A versioned JSON document of a stored folder; StoreError (one line) when missing, broken or from
    a format version this kwokbench does not read."""
    f = path / name
    try:
        doc = orjson.loads(f.read_bytes())
    except FileNotFoundError:
        raise StoreError(f"{path} is not a kwokbench {what} (no {name})") from None
    except (OSError, orjson.JSONDecodeError) as e:
        raise StoreError(f"{f}: unreadable: {e}") from e
    if not isinstance(doc, dict):
        raise StoreError(f"{f}: not a JSON object")
    found = doc.get("format_version")
    if found != version:
        raise StoreError(f"{f}: format version {found!r} is not supported by kwokbench {__version__} "
                         f"(it reads version {version})")
    return doc


def read_doc(path: Path, name: str) -> dict[str, Any] | None:
    """A versioned document of a run, migrated to the current version (None when the run has none).
    StoreError (one line) when it is unreadable or newer than this kwokbench."""
    f = path / name
    if not f.exists():
        return None
    try:
        doc = orjson.loads(f.read_bytes())
    except (OSError, orjson.JSONDecodeError) as e:
        raise StoreError(f"{f}: unreadable: {e}") from e
    current, migrations = DOCS[name]
    found = doc.get("format_version", 0) if isinstance(doc, dict) else 0
    if not isinstance(found, int) or found > current:
        raise StoreError(f"{f}: format version {found!r} is not supported by kwokbench {__version__} "
                         f"(it reads up to version {current})")
    original = found
    while found < current:
        if found not in migrations:
            raise StoreError(f"{f}: format version {found} can no longer be read (kwokbench reads {current})")
        doc = migrations[found](doc)
        found += 1
    if not isinstance(doc, dict):
        raise StoreError(f"{f}: not a JSON object")
    doc["format_version"] = current
    if original < current:
        doc["migrated_from"] = original
    return doc


def read_meta(path: Path) -> dict[str, Any]:
    meta = read_versioned(path, META, FORMAT_VERSION, "run")
    scenario = meta.get("scenario")
    found = scenario.get("schema_version") if isinstance(scenario, dict) else None
    if found is not None and found != SCENARIO_SCHEMA_VERSION:
        raise StoreError(f"{path / META}: scenario schema_version {found!r} is not supported by kwokbench "
                         f"{__version__} (it reads version {SCENARIO_SCHEMA_VERSION})")
    return meta


@dataclass
class StoredRun:
    path: Path
    meta: dict[str, Any]
    summary: dict[str, Any] | None
    pods: Any
    requests: Any

    @property
    def label(self) -> str:
        return f"{self.meta.get('variant', {}).get('name', '?')}:{self.path.name}"


def load_run(path: Path) -> StoredRun:
    import pandas as pd

    meta = settle_status(read_meta(path))
    summary = read_doc(path, SUMMARY)

    def frame(name: str) -> Any:
        try:
            return pd.read_parquet(path / name) if (path / name).exists() else pd.DataFrame()
        except (OSError, ValueError) as e:
            raise StoreError(f"{path / name}: unreadable parquet: {e}") from e

    return StoredRun(path, meta, summary, frame(PODS), frame(REQUESTS))


def find_runs(paths: list[Path]) -> list[Path]:
    """Run directories named directly, or every run below a folder (e.g. a scenario's folder)."""
    out: list[Path] = []
    for p in paths:
        if (p / META).exists():
            out.append(p)
        elif p.is_dir():
            # a sweep's own document says what its cells are: one of a newer format is refused, not skipped
            for s in sorted(p.rglob(SWEEP)):
                read_versioned(s.parent, SWEEP, SWEEP_FORMAT_VERSION, "sweep")
            found = sorted(m.parent for m in p.rglob(META))
            if not found:
                raise StoreError(f"{p}: no kwokbench runs below it")
            out += found
        else:
            raise StoreError(f"{p}: no such run directory")
    return out
