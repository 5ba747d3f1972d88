"""A change-point result as rows of a terminal table and as JSON (no chart library is imported here)."""

from __future__ import annotations

import json
from typing import Any

from kwokbench.compare.detect import MIN_POINTS, ChangePoint, DetectResult, Point


def _commit(p: Point) -> str:
    return (p.commit or f"run {p.runs[0]}")[:12]


def _figure(v: float) -> str:
    return f"{v:.4g}"


def detect_rows(result: DetectResult) -> tuple[list[str], list[list[str]]]:
    """One row per change point, or one per metric saying there is none (or too little history)."""
    rows = []
    for s in result.series:
        name = s.spec.spec
        if not s.enough:
            rows.append([name, "not enough history", "-", "-", "-",
                         f"{len(s.points)} commit(s), needs >= {MIN_POINTS}"])
            continue
        for c in s.changes:
            verdict = "acked" if c.acked else c.direction
            rows.append([name, verdict, f"{_commit(c.before)} → {_commit(c.after)}",
                         f"{c.magnitude * 100:+.1f}% ({_figure(c.median_before)} → {_figure(c.median_after)})",
                         f"{c.points_before} | {c.points_after}",
                         f"runs {', '.join(c.before.runs)} | {', '.join(c.after.runs)}"
                         + (f"; acked: {c.acked}" if c.acked else "")])
        if not s.changes:
            small = f"; {s.small} significant change(s) below {s.spec.threshold * 100:g}%" if s.small else ""
            rows.append([name, "no change", "-", "-", "-", f"over {len(s.points)} commits{small}"])
    return ["metric", "verdict", "commit before → after", "change (medians)", "commits each side", "detail"], rows


def _point(p: Point) -> dict[str, Any]:
    return {"commit": p.commit, "ref": p.ref, "started_at": p.started.isoformat(), "value": p.value, "runs": p.runs}


def _change(c: ChangePoint) -> dict[str, Any]:
    return {"metric": c.metric, "direction": c.direction, "new": c.new_regression, "acked": c.acked,
            "magnitude": c.magnitude, "median_before": c.median_before, "median_after": c.median_after,
            "before": _point(c.before), "after": _point(c.after), "commits_before": c.points_before,
            "commits_after": c.points_after}


def detect_json(result: DetectResult) -> str:
    doc = {"exit_code": result.exit_code, "warnings": result.warnings, "notes": result.notes,
           "metrics": [{"metric": s.spec.metric.name, "spec": s.spec.spec, "commits": len(s.points),
                        "enough_history": s.enough, "needs": MIN_POINTS, "normalised": s.normalised,
                        "small_changes": s.small, "changes": [_change(c) for c in s.changes]}
                       for s in result.series]}
    return json.dumps(doc, indent=1)
