"""Tables read cell by cell, so that every error names the file, the data row and the column.

A trace is a CSV or Parquet table. CSV cells are read as text (pandas without NA guessing: an empty
cell is ``""`` and a pod called ``NA`` keeps its name), Parquet cells as their Arrow values; the cell
parsers accept both. Rows are counted from 1 over the data rows in both formats (the header is not a
row): in a CSV without quoted line breaks, data row N is line N + 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kwokbench.errors import ScenarioError

T = TypeVar("T")
D = TypeVar("D")
SUFFIXES = (".csv", ".parquet")


class CellError(ValueError):
    """A cell's value is wrong; ``Table`` adds the file, row and column to the message."""


@dataclass(frozen=True)
class Table:
    path: Path
    columns: dict[str, list[Any]]
    """Cells by column name, each list ``rows`` long."""
    rows: int
    metadata: dict[str, str]
    """Key-value metadata of a Parquet file's schema (empty for CSV)."""

    def require(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.columns:
                raise ScenarioError(f"{self.path}: no column {name!r} (columns: {', '.join(self.columns)})")

    def reject_unknown(self, known: Sequence[str]) -> None:
        """A misspelt optional column would otherwise be dropped without a word."""
        extra = [c for c in self.columns if c not in known]
        if extra:
            raise ScenarioError(f"{self.path}: unknown column {extra[0]!r} (known: {', '.join(known)})")

    def error(self, row: int, column: str, message: str) -> ScenarioError:
        """The one-line error of a cell; ``row`` counts from 0 like the column lists."""
        return ScenarioError(f"{self.path}: data row {row + 1}, column {column}: {message}")

    def unique(self, row: int, column: str, key: Hashable, seen: dict[Hashable, int], what: str) -> None:
        """Record ``key`` as seen in ``row``; seen before is the error "duplicate WHAT (also data row N)"."""
        if key in seen:
            raise self.error(row, column, f"duplicate {what} (also data row {seen[key] + 1})")
        seen[key] = row

    def value(self, row: int, column: str, parse: Callable[[Any], T]) -> T:
        """A required cell."""
        raw = self.columns[column][row]
        if blank(raw):
            raise self.error(row, column, "empty")
        return self._parse(row, column, parse, raw)

    def optional(self, row: int, column: str, parse: Callable[[Any], T], default: D) -> T | D:
        """An optional cell: ``default`` when the column is absent or the cell empty."""
        cells = self.columns.get(column)
        if cells is None or blank(cells[row]):
            return default
        return self._parse(row, column, parse, cells[row])

    def _parse(self, row: int, column: str, parse: Callable[[Any], T], raw: Any) -> T:
        try:
            return parse(raw)
        except CellError as e:
            raise self.error(row, column, str(e)) from None


def read_table(path: Path, what: str) -> Table:
    """Read a .csv or .parquet file; no data rows is the error "no {what} in FILE"."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ScenarioError(f"{path}: expected a {' or '.join(SUFFIXES)} file")
    try:
        columns, rows, metadata = _read_csv(path) if suffix == ".csv" else _read_parquet(path)
    except OSError as e:
        raise ScenarioError(f"cannot read {path}: {e.strerror or e}") from e
    if rows == 0:
        raise ScenarioError(f"no {what} in {path}")
    return Table(path, columns, rows, metadata)


def _read_csv(path: Path) -> tuple[dict[str, list[Any]], int, dict[str, str]]:
    import pandas as pd  # here, not at the top: a scenario without a trace loads without pandas

    try:
        df = pd.read_csv(path, dtype=str, na_filter=False)
    except pd.errors.EmptyDataError:
        return {}, 0, {}
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{path}: invalid CSV: {_first_line(e)}") from e
    return {str(c).strip(): df[c].tolist() for c in df.columns}, len(df), {}


def _read_parquet(path: Path) -> tuple[dict[str, list[Any]], int, dict[str, str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except pa.ArrowException as e:
        raise ScenarioError(f"{path}: invalid Parquet: {_first_line(e)}") from e
    meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in (table.schema.metadata or {}).items()}
    return table.to_pydict(), table.num_rows, meta


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _show(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def blank(raw: Any) -> bool:
    """An empty cell: missing in Parquet, empty or spaces in CSV (pyarrow may also give NaN)."""
    return raw is None or (isinstance(raw, str) and not raw.strip()) or (isinstance(raw, float) and math.isnan(raw))


def number(raw: Any, lo: float = 0.0) -> float:
    """A finite number >= lo (times in seconds)."""
    if isinstance(raw, bool):
        raise CellError(f"not a number: {_show(raw)}")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise CellError(f"not a number: {_show(raw)}") from None
    if not math.isfinite(value):
        raise CellError(f"not a finite number: {_show(raw)}")
    if value < lo:
        raise CellError(f"must be >= {lo:g}, got {value:g}")
    return value


def whole(lo: int = 0, hi: int | None = None) -> Callable[[Any], int]:
    """A parser of whole numbers in lo..hi; ``2.0`` is accepted (a Parquet float column), ``2.5`` is not."""

    def parse(raw: Any) -> int:
        value = number(raw, lo=-math.inf)
        if not value.is_integer():
            raise CellError(f"not a whole number: {_show(raw)}")
        if value < lo or (hi is not None and value > hi):
            raise CellError(f"must be {'>= ' + str(lo) if hi is None else f'in {lo}..{hi}'}, got {value:g}")
        return int(value)

    return parse


def text(raw: Any) -> str:
    return str(raw).strip()


def json_text(raw: Any) -> Any:
    """A cell holding JSON text (Parquet files keep these columns as strings too)."""
    if not isinstance(raw, str):
        raise CellError(f"expected JSON text, got {_show(raw)}")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise CellError(f"invalid JSON ({e.msg} at character {e.pos + 1})") from None
