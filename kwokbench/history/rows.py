"""The row of a stored run, as the embedded index (:mod:`.index`) and a shared store (:mod:`.store`) hold it.

Both stores hold the same row shape and read it from a run directory the same way, so its columns, how a
row is read and how rows are selected live here, below both: the dependency runs one way (index and store
import rows; rows imports neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kwokbench.ceiling import host_fingerprint
from kwokbench.compare.gate import METRICS
from kwokbench.errors import ScenarioError
from kwokbench.store import SUMMARY, read_doc, read_meta, settle_status

Row = dict[str, Any]

# the row of a run: name → DuckDB type (then one DOUBLE column per gate metric; the store maps the types)
COLUMNS: dict[str, str] = {
    "run_id": "VARCHAR", "path": "VARCHAR", "scenario": "VARCHAR", "variant": "VARCHAR", "status": "VARCHAR",
    "started_at": "TIMESTAMPTZ", "kwokbench_version": "VARCHAR", "commit": "VARCHAR", "ref": "VARCHAR",
    "dirty": "BOOLEAN", "code_source": "VARCHAR", "hostname": "VARCHAR", "host": "VARCHAR",
    "kubernetes": "VARCHAR", "nodes": "BIGINT", "ceiling_pods_per_second": "DOUBLE", "ceiling_ratio": "DOUBLE",
    "pods_scheduled": "BIGINT",
}
ROW_COLUMNS = [*COLUMNS, *METRICS]


@dataclass(frozen=True)
class Filters:
    """Which rows to read: one scenario and/or variant (None: all)."""

    scenario: str | None = None
    variant: str | None = None


def flatten(doc: Any, prefix: str = "") -> dict[str, float]:
    """Every number of a nested document by dotted path (lists and the format bookkeeping left out)."""
    out: dict[str, float] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            if prefix == "" and k in ("format_version", "migrated_from"):
                continue
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        out[prefix[:-1]] = float(doc)
    return out


def _started(meta: dict[str, Any], path: Path) -> datetime | None:
    """``started_at``, else the UTC time a run directory's name starts with (runs of any kwokbench)."""
    for text, fmt in ((meta.get("started_at"), None), (path.name.split("-")[0], "%Y%m%dT%H%M%SZ")):
        if not isinstance(text, str):
            continue
        try:
            t = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
        except ValueError:
            continue
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return None


def run_row(path: Path, meta: dict[str, Any], summary: dict[str, Any] | None) -> dict[str, Any]:
    """A run's row (without the ``figures``) from its documents, older runs' included (absent: None)."""
    s = summary or {}
    code: dict[str, Any] = meta["code"] if isinstance(meta.get("code"), dict) else {}
    host: dict[str, Any] = meta["host"] if isinstance(meta.get("host"), dict) else {}
    ceiling: dict[str, Any] = s["ceiling"] if isinstance(s.get("ceiling"), dict) else {}
    nodes = (meta.get("cluster") or {}).get("nodes")
    scheduled = s.get("pods_scheduled")
    row: dict[str, Any] = {
        "run_id": str(meta.get("run_id") or path.name), "path": str(path.resolve()),
        "scenario": (meta.get("scenario") or {}).get("name"), "variant": (meta.get("variant") or {}).get("name"),
        "status": meta.get("status"), "started_at": _started(meta, path),
        "kwokbench_version": meta.get("kwokbench_version"), "commit": code.get("commit"), "ref": code.get("ref"),
        "dirty": code.get("dirty"), "code_source": code.get("source"), "hostname": host.get("hostname"),
        "host": host_fingerprint(host) if host else None, "kubernetes": (meta.get("toolchain") or {}).get("kubernetes"),
        "nodes": int(nodes) if isinstance(nodes, int | float) else None,
        "ceiling_pods_per_second": ceiling.get("pods_per_second"), "ceiling_ratio": ceiling.get("ratio"),
        "pods_scheduled": int(scheduled) if isinstance(scheduled, int | float) else None,
    }
    for name, m in METRICS.items():
        row[name] = m.get(s) if summary is not None else None
    return row


def read_row(path: Path) -> dict[str, Any]:
    """A run's row and its ``figures``, read from its directory; StoreError when it is unreadable."""
    meta = settle_status(read_meta(path))
    summary = read_doc(path, SUMMARY)
    return {**run_row(path, meta, summary), "figures": flatten(summary or {})}


def select(rows: list[dict[str, Any]], scenario: str | None = None,
           variant: str | None = None) -> list[dict[str, Any]]:
    """The rows of one scenario and/or variant; ScenarioError naming those present when none match."""
    out = [r for r in rows if (scenario is None or r["scenario"] == scenario)
           and (variant is None or r["variant"] == variant)]
    if rows and not out:
        present = ", ".join(sorted({f"{r['scenario']}/{r['variant']}" for r in rows}))
        raise ScenarioError(f"no run of {'scenario ' + scenario if scenario else ''}"
                            f"{' and ' if scenario and variant else ''}{'variant ' + variant if variant else ''} "
                            f"(scenario/variant present: {present})")
    return out
