"""How figures read in the console table and the report (one place, so every row writes them alike)."""

from __future__ import annotations

from typing import Any


def fmt(v: Any, unit: str = "", digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}{unit}"
    return f"{v}{unit}"


def to_ms(v: float | None) -> float | None:
    return None if v is None else v * 1000


def ms(v: Any) -> str:
    return "-" if v is None else f"{v * 1000:.0f} ms"
