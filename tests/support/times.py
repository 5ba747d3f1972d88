"""The test suite's time table, from the file ``pytest --times PATH`` writes (``make test`` writes
``.pytest_cache/kwokbench-times.json``): ``python -m tests.support.times PATH [--top N]`` prints, as Markdown, the
time per tier and per file (setup, where a file pays for the clusters and builds it is the first to use, apart from its
tests' own calls) and the slowest tests. docs/development/tests.md keeps one such table with its date."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def load_times(path: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(path.read_text())
    if doc.get("version") != 1:
        raise SystemExit(f"error: {path}: not a time file of version 1 (written by pytest --times)")
    tests: dict[str, dict[str, Any]] = doc["tests"]
    return tests


def _total(row: dict[str, Any]) -> float:
    return float(row["setup"]) + float(row["call"]) + float(row["teardown"])


def by_file(tests: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per test file, slowest first: tests, setup (fixtures), call and teardown seconds."""
    files: dict[str, dict[str, Any]] = defaultdict(lambda: {"tests": 0, "setup": 0.0, "call": 0.0, "teardown": 0.0})
    for nodeid, row in tests.items():
        f = files[nodeid.split("::", 1)[0]]
        f["tests"] += 1
        for phase in ("setup", "call", "teardown"):
            f[phase] += float(row[phase])
    rows = [{"file": name, **f, "total": f["setup"] + f["call"] + f["teardown"]} for name, f in files.items()]
    return sorted(rows, key=lambda r: -r["total"])


def by_tier(tests: dict[str, dict[str, Any]]) -> dict[str, tuple[int, float]]:
    tiers: dict[str, list[float]] = defaultdict(list)
    for nodeid, row in tests.items():
        parts = nodeid.split("/")
        tiers[parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"].append(_total(row))
    return {t: (len(v), sum(v)) for t, v in sorted(tiers.items())}


def table(tests: dict[str, dict[str, Any]], top: int = 15) -> str:
    lines = ["| tier | tests | minutes |", "|---|---|---|"]
    tiers = by_tier(tests)
    for tier, (n, secs) in tiers.items():
        lines.append(f"| {tier} | {n} | {secs / 60:.1f} |")
    n_all, secs_all = sum(n for n, _ in tiers.values()), sum(s for _, s in tiers.values())
    lines += [f"| all | {n_all} | {secs_all / 60:.1f} |", "",
              "| file | tests | setup s | call s | total min |", "|---|---|---|---|---|"]
    for r in by_file(tests):
        if r["total"] >= 30:  # files under half a minute would only lengthen the table
            lines.append(f"| `{r['file']}` | {r['tests']} | {r['setup']:.0f} | {r['call']:.0f} | "
                         f"{r['total'] / 60:.1f} |")
    lines += ["", "| slowest tests | setup s | call s |", "|---|---|---|"]
    for nodeid, row in sorted(tests.items(), key=lambda kv: -_total(kv[1]))[:top]:
        lines.append(f"| `{nodeid}` | {float(row['setup']):.0f} | {float(row['call']):.0f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", type=Path)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    print(table(load_times(args.path), args.top))


if __name__ == "__main__":
    main()
