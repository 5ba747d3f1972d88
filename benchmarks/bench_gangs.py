"""Gangs six ways, repeated: `scenarios/gangs-six-ways.yaml` (40 gangs of 12 one-CPU pods on 400 CPUs, at most 33
fit) under kube-scheduler, Coscheduling, YuniKorn, Volcano and KAI (each shipped and tuned) and kube-scheduler's own
gangs, through the real CLI, one fresh cluster per run, the variants interleaved; then one row per variant.

Printed per variant, each run: gangs placed whole / partly / not at all, the pods stranded in partial gangs, the pods
bound; and the time to place a gang (from its last member created to its last needed member bound, over the gangs
placed whole): p50 / p90 / max, the median over the runs with the p50's range.

    .venv/bin/python benchmarks/bench_gangs.py --repeat 3  # every variant, three runs each (~14 min here)
    .venv/bin/python benchmarks/bench_gangs.py --repeat 3 --set cluster.kubernetes_version=v1.37.2   # one release
    .venv/bin/python benchmarks/bench_gangs.py --runs DIR                 # only print, from runs stored in DIR
    .venv/bin/python benchmarks/bench_gangs.py --runs DIR --data docs/results/data/gangs-DATE.json

``--data FILE`` keeps each run's row with the command, the commit the runs ran at, the day and the host; the results
page renders its table from that file with :func:`markdown` (``{{ bench_table(...) }}``, docs/figures.py).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
from pathlib import Path
from typing import Any

from stored import collect, provenance, run_options, runs_root, write  # a sibling: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/gangs-six-ways.yaml"
ORDER = ["kube-scheduler", "coscheduling", "yunikorn", "yunikorn-tuned", "volcano", "volcano-tuned", "kai",
         "kai-tuned", "native"]


def row(run: Path) -> dict[str, Any]:
    s, meta = json.loads((run / "summary.json").read_text()), json.loads((run / "meta.json").read_text())
    gangs = (s.get("placement") or {}).get("gangs") or []
    place = [g.get("time_to_place") or {} for g in gangs]
    return {"variant": meta["variant"]["name"], "kubernetes": (meta.get("toolchain") or {}).get("kubernetes"),
            "gangs": sum(g["gangs"] for g in gangs), "complete": sum(g["complete"] for g in gangs),
            "partial": sum(g["partial"] for g in gangs), "unplaced": sum(g["unplaced"] for g in gangs),
            "stranded": sum(g["pods_in_partial_gangs"] for g in gangs), "bound": s.get("pods_scheduled") or 0,
            "p50": max((p["p50"] for p in place if p.get("p50") is not None), default=None),
            "p90": max((p["p90"] for p in place if p.get("p90") is not None), default=None),
            "max": max((p["max"] for p in place if p.get("max") is not None), default=None),
            "started": meta.get("started_at")}


def median_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's runs: the median of each figure, the p50's range."""
    out: dict[str, Any] = {"runs": len(rs)}
    for k in ("gangs", "complete", "partial", "unplaced", "stranded", "bound", "p50", "p90", "max"):
        xs = [r[k] for r in rs if r[k] is not None]
        out[k] = statistics.median(xs) if xs else None
    p50 = [r["p50"] for r in rs if r["p50"] is not None]
    out["lo"], out["hi"] = (min(p50), max(p50)) if p50 else (None, None)
    return out


def _seconds(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f} s" if x < 1 else f"{x:.1f} s"


def markdown(doc: dict[str, Any], ceiling: float | None = None) -> str:
    """The results page's table of ``--data``'s file: each run's gangs whole / partly / not placed, stranded and
    bound pods; the time to place, medians over the runs (the p50's range beside it); each row's Kubernetes release
    where the variants ran on more than one. ``ceiling`` is not used (a
    gang's time has no in-process ceiling); it is accepted as every benchmark table's is."""
    del ceiling
    runs = doc["runs"]
    n = {len(rs) for rs in runs.values()}
    count = f"{n.pop()} runs" if len(n) == 1 else "runs"
    total = next(iter(runs.values()))[0]["gangs"]
    out = [f"| variant | gangs whole / partly / not placed (of {total}), each of the {count} | pods stranded in "
           f"partial gangs | pods bound | time to place p50 (range) / p90 / max, medians |", "|---" * 5 + "|"]
    mixed = len({rs[0].get("kubernetes") for rs in runs.values()}) > 1  # then each row names its release
    for name, rs in runs.items():
        m = median_row(rs)
        release = f" (Kubernetes {rs[0]['kubernetes']})" if mixed and rs[0].get("kubernetes") else ""
        placed = " · ".join(f"{r['complete']} / {r['partial']} / {r['unplaced']}" for r in rs)
        stranded = " · ".join(str(r["stranded"]) for r in rs)
        bound = " · ".join(str(r["bound"]) for r in rs)
        rng = f" ({_seconds(m['lo'])}–{_seconds(m['hi'])})" if m["runs"] > 1 and m["lo"] is not None else ""
        out.append(f"| {name}{release} | {placed} | {stranded} | {bound} | {_seconds(m['p50'])}{rng} / "
                   f"{_seconds(m['p90'])} / {_seconds(m['max'])} |")
    return "\n".join(out)


def data(root: Path, runs: dict[str, list[dict[str, Any]]], sets: list[str] | None = None) -> dict[str, Any]:
    """``--data``'s file: the runs' rows and their provenance (stored.provenance), with the ``--set``s they ran
    with."""
    options = "".join(f" --set {shlex.quote(s)}" for s in sets or [])
    return provenance(root, runs, SCENARIO, "bench_gangs.py", options, ORDER)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    run_options(ap)
    ap.add_argument("--set", action="append", default=[], dest="sets",
                    help="a scenario override, as `run --set` (every variant on one release: "
                         "`--set cluster.kubernetes_version=v1.37.2`)")
    args = ap.parse_args()
    root = runs_root(args, SCENARIO, args.sets)
    runs = collect(root, row, ORDER)
    if args.data:
        write(args.data, data(root, runs, args.sets))
    print(markdown({"runs": runs}))


if __name__ == "__main__":
    main()
