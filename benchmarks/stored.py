"""What the benchmarks' ``--data OUT`` files share: running a scenario through the real CLI, reading its stored runs
by variant, where the figures came from (the command, the commit, whether the checkout was dirty, the day, the host),
writing the file, and reading a figure back from it for the results pages (docs/figures.py's ``bench`` macros).

Not a benchmark: the scripts beside it import it (benchmarks/ is on the path of a script run, and docs/figures.py puts
it there when it loads one).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run_scenario(scenario: Path, out: Path, variants: list[str], repeat: int = 1,
                 sets: list[str] | None = None) -> None:
    """``kwokbench run`` of ``scenario`` into ``out`` (``--repeat``, ``--variant``, ``--set`` each); exit 1 (a gate or
    a phase said so) keeps the runs, any other failure stops the benchmark."""
    cmd = [sys.executable, "-m", "kwokbench", "run", str(scenario), "--out", str(out), "--repeat", str(repeat),
           *[a for v in variants for a in ("--variant", v)], *[a for s in sets or [] for a in ("--set", s)]]
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, check=False)
    if res.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[3:])} failed ({res.returncode})")


def run_options(ap: argparse.ArgumentParser, what: str = "variants") -> None:
    """The options every scenario benchmark takes: ``--variant``, ``--runs``, ``--out``, ``--repeat``, ``--data``."""
    ap.add_argument("--variant", action="append", default=[], help=f"only these {what} (default: all)")
    ap.add_argument("--runs", type=Path, help="print from runs stored here instead of running")
    ap.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=1, help=f"runs per {what.rstrip('s')}, interleaved")
    ap.add_argument("--data", type=Path, help="write each run's row, the command, commit, day and host here (JSON)")


def runs_root(args: argparse.Namespace, scenario: Path, sets: list[str] | None = None) -> Path:
    """Where the runs are: ``--runs`` as given, or ``--out`` (else a temporary folder) after running ``scenario``
    (:func:`run_scenario` with ``--variant``, ``--repeat`` and ``sets``)."""
    if args.runs is not None:
        return Path(args.runs)
    root = args.out or Path(tempfile.mkdtemp(prefix=f"bench-{scenario.stem}-"))
    run_scenario(scenario, root, args.variant, args.repeat, sets)
    return Path(root)


def collect(root: Path, row: Callable[[Path], dict[str, Any]], order: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every stored run under ``root`` as ``row`` reads it, by variant in ``order``; each variant's runs in the
    order they started, so that the i-th run of each is the i-th (interleaved) repeat: the gate's pairs."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(root.rglob("summary.json")):
        r = row(p.parent)
        runs.setdefault(r["variant"], []).append(r)
    if not runs:
        raise SystemExit(f"no runs in {root}")
    for rs in runs.values():
        rs.sort(key=lambda r: r["started"] or "")
    return dict(sorted(runs.items(), key=lambda kv: [*order, kv[0]].index(kv[0])))


def host_text(host: dict[str, Any]) -> str:
    return f"{host.get('cpu_model')}, {host.get('cpus')} CPUs"


def provenance(root: Path, runs: dict[str, list[dict[str, Any]]], scenario: Path, script: str, options: str,
               order: list[str], repeat: int | None = None) -> dict[str, Any]:
    """What a benchmark's ``--data`` keeps of stored runs: every run's row, and what a reader needs to trust them —
    the command that measured them (``options``, read back from the runs, with ``--repeat`` — ``repeat``, else the
    most runs of a variant — and ``--variant`` added here), the commit they ran at (their ``meta.json``; runs of two
    commits refused; a dirty checkout recorded), the day and the host."""
    metas = [json.loads(p.read_text()) for p in sorted(root.rglob("meta.json"))]
    commits = sorted({str((m.get("code") or {}).get("commit")) for m in metas})
    if len(commits) != 1:
        raise SystemExit(f"the runs in {root} are not of one commit ({', '.join(commits)})")
    dirty = any((m.get("code") or {}).get("dirty") for m in metas)
    if dirty:
        print(f"note: the runs in {root} ran with uncommitted changes beside {commits[0][:10]} (kept as dirty: true)")
    repeat = repeat or max(len(rs) for rs in runs.values())
    cmd = f".venv/bin/python benchmarks/{script}{options}" + (f" --repeat {repeat}" if repeat > 1 else "")
    cmd += "".join(f" --variant {v}" for v in runs) if set(runs) != set(order) else ""
    return {"what": f"scenarios/{scenario.name}, each run of each variant (benchmarks/{script})",
            "command": cmd, "commit": commits[0], "date": min(m["started_at"] for m in metas)[:10],
            "dirty": dirty, "host": host_text(metas[0].get("host") or {}), "runs": runs}


def here(what: str, script: str, args: str | None = None) -> dict[str, Any]:
    """The provenance of figures computed here and now rather than read from runs (an analysis of stored data): the
    command (``args``, else as it was given, less where ``--data`` wrote it: a path of the machine that ran it), this
    checkout's commit and whether it is dirty (:mod:`kwokbench.code_version`), the day and this host
    (:func:`kwokbench.store.host_info`)."""
    from kwokbench.code_version import from_git
    from kwokbench.store import host_info

    code = from_git(REPO) or {}
    given = shlex.join(_without_data(sys.argv[1:])) if args is None else args
    return {"what": what, "command": f".venv/bin/python benchmarks/{script} {given}".rstrip(),
            "commit": code.get("commit"), "dirty": bool(code.get("dirty")),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"), "host": host_text(host_info())}


def _without_data(argv: list[str]) -> list[str]:
    """``argv`` less ``--data FILE`` (or ``--data=FILE``)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--data":
            skip = True
        elif not a.startswith("--data="):
            out.append(a)
    return out


def write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"stored in {path}")


def at(node: Any, path: str) -> Any:
    """The value at a dotted ``path`` (``errors.3-12.normal.0.05.regression``, ``curve.9.allocated``): a key may
    hold a dot (an effect, ``0.05``), a number indexes a list; KeyError or IndexError where the data lacks it."""
    parts = path.split(".")
    i = 0
    while i < len(parts):
        k = parts[i]
        if isinstance(node, list):
            node = node[int(k)]
        else:
            if i + 1 < len(parts) and f"{k}.{parts[i + 1]}" in node:
                k, i = f"{k}.{parts[i + 1]}", i + 1
            node = node[k]
        i += 1
    return node


def pod_writes(summary: dict[str, Any]) -> dict[str, float]:
    """A run's apiserver writes per pod bound by resource, the nodes' lease renewals left out (they are the nodes',
    not the pods')."""
    per_pod = ((summary.get("apiserver") or {}).get("writes") or {}).get("per_pod") or {}
    return {k: v for k, v in per_pod.items() if k != "leases"}


def ranged(xs: list[float], fmt: str, scale: float = 1.0, unit: str = "") -> str:
    """The range of ``xs`` (times ``scale``) as the pages print it, one figure where its ends print alike:
    ``6.0–6.2 ms``, ``11 ms``."""
    lo, hi = format(scale * min(xs), fmt), format(scale * max(xs), fmt)
    return (lo if lo == hi else f"{lo}–{hi}") + unit


def pct(x: float, digits: int = 1) -> str:
    """A share as a percentage: ``3.1%``, ``100%``."""
    t = f"{100 * x:.{digits}f}"
    return ("100" if float(t) == 100 else t) + "%"


def both(a: float, b: float) -> str:
    """A rate by resampled draws and by normal ones: ``91.0% / 87.9%``, or one figure when they read the same."""
    return pct(a) if pct(a) == pct(b) else f"{pct(a)} / {pct(b)}"
