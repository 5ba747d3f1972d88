"""A bisection's table, from its stored ``bisect.json`` (pure, offline): a row per step of each round."""

from __future__ import annotations

import statistics
from typing import Any


def _median(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    return "-" if not got else f"{statistics.median(got):.4g}"


def _change(st: dict[str, Any]) -> str:
    ratio, ci = st.get("ratio"), st.get("ci")
    if ratio is None:
        return "-"
    text = f"{(ratio - 1) * 100:+.1f}%"
    if ci and ci[0] != ci[1]:  # the interval tested: 90%, wider where a step was looked at more than once
        level = round(float(st.get("level") or 0.90) * 100)
        text += f" ({level}%: {(ci[0] - 1) * 100:+.1f}..{(ci[1] - 1) * 100:+.1f}%)"
    return text


def _build(doc: dict[str, Any], tag: str) -> str:
    b = (doc.get("builds") or {}).get(tag)
    return "" if not b else " (cached)" if b.get("cached") else f" (built {b['seconds']:.0f} s)"


def rows(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    ceilings = doc.get("ceilings") or {}
    columns = ["round", "from", "to", "runs", f"{doc['metric']} from", f"{doc['metric']} to", "change (CI)",
               "step"]
    if ceilings:
        columns += ["ceiling from", "ceiling to"]
    out = []
    for n, rnd in enumerate(doc.get("rounds") or [], 1):
        values = dict(zip(range(len(rnd["tags"])), rnd["values"], strict=True))
        for j, st in enumerate(rnd["steps"]):
            row = [str(n), st["from"] + _build(doc, st["from"]), st["to"] + _build(doc, st["to"]),
                   st.get("runs") or "-", _median(values[j]), _median(values[j + 1]), _change(st), st["step"]]
            if ceilings:
                row += [_ceiling(ceilings.get(st["from"])), _ceiling(ceilings.get(st["to"]))]
            out.append(row)
    return columns, out


def _ceiling(c: dict[str, Any] | None) -> str:
    return "-" if not c or c.get("pods_per_second") is None else f"{c['pods_per_second']:.0f} pods/s"
