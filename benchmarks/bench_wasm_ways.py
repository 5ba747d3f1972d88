"""One rule seven ways in the scheduler: `scenarios/wasm-upstream-vs-own.yaml` through the real CLI, interleaved.

The reference WASM extension's NodeNumber rule (a node scores 10 when its name ends in the pod's last digit) not at
all (stock), compiled in (native), on the reference's host with its own prebuilt guest (as shipped, and quiet:
logSeverity 3), on kwokbench's host with the ported guest (with and without the per-call deadline) and as the
builtin extender; 100 nodes, 2000 pods at 200/s, a fresh cluster per run.

Printed per way, over its runs (each cell the runs' range): throughput (pods bound per second over the pending
window), created → bound p50 / p99, the scheduler's own means per pod of its algorithm (filter + score), PreScore
and Score (`framework_extension_point_duration_seconds`), its CPU per pod, and where the rule says: the share of pods
bound to a node whose name ends in the pod's last digit (10% by chance). Then what the rule adds over stock (the
medians' difference in Score and CPU per pod); the results page decides each by the gate's paired test over the
interleaved runs (``bench_gate``).

    .venv/bin/python benchmarks/bench_wasm_ways.py --repeat 3                 # ~15 min here
    .venv/bin/python benchmarks/bench_wasm_ways.py --runs DIR --data docs/results/data/wasm-ways-DATE.json

``--data FILE`` keeps each run's row with the command, the commit the runs ran at, the day and the host; the results
page renders its table from it (:func:`markdown`, docs/figures.py). Needs the reference's scheduler built
(``kwokbench tools install wasm-extension``, from ``$KWOKBENCH_SOURCES``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import bench_scenario
from bench_scenario import ceiling_share as ceiling_share  # the results page asks these of this data
from bench_scenario import seconds_or_ms, span
from bench_scenario import throughput as throughput
from bench_scenario import times as times
from stored import collect, provenance, run_options, runs_root, write  # siblings: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/wasm-upstream-vs-own.yaml"
ORDER = ["stock", "native", "reference", "reference-quiet", "own", "own-trusted", "extender"]
LABELS = {"stock": "stock (no rule)", "native": "native plugin",
          "reference": "reference host + its guest, as shipped", "reference-quiet": "reference host + its guest, quiet",
          "own": "kwokbench host + the ported guest", "own-trusted": "kwokbench host + the ported guest, trusted",
          "extender": "builtin extender"}
SHORT = {"native": "the native plugin", "reference": "the reference's host as shipped", "reference-quiet": "quiet",
         "own": "kwokbench's host", "own-trusted": "trusted", "extender": "the extender"}
FIGURES = (*bench_scenario.FIGURES, "rule")


def _digit(name: str) -> str:
    return name.rstrip()[-1:]


def row(run: Path) -> dict[str, Any]:
    """:func:`bench_scenario.row`, and where the rule says: the share of bound pods on a node whose name ends in the
    pod's last digit."""
    import pandas as pd

    pods = pd.read_parquet(run / "pods.parquet", columns=["name", "node"]).dropna()
    rule = sum(_digit(p) == _digit(n) for p, n in zip(pods["name"], pods["node"], strict=True))
    return {**bench_scenario.row(run), "rule": rule / len(pods) if len(pods) else None}


def median_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """A way's runs: each figure's median, and its range as ``<figure>_lo``/``<figure>_hi``."""
    return bench_scenario.median_row(rs, FIGURES)


def markdown(doc: dict[str, Any]) -> str:
    """The results page's table of ``--data``'s file: each cell the range of the way's runs."""
    rows = {v: median_row(rs) for v, rs in doc["runs"].items()}
    n = {r["runs"] for r in rows.values()}
    runs = f"{n.pop()} runs" if len(n) == 1 else "runs"
    out = [f"| way | throughput ({runs}) | latency p50 / p99 | algorithm, mean | PreScore / Score, mean | "
           "scheduler CPU per pod | where the rule says |", "|---" * 7 + "|"]
    for i, (name, r) in enumerate(rows.items()):
        unit = " pods/s" if i == 0 else ""
        lat = f"{seconds_or_ms(r, 'p50')} / {seconds_or_ms(r, 'p99')}"
        out.append(f"| {LABELS.get(name, name)} | {span(r, 'throughput', '.1f')}{unit} | {lat} | "
                   f"{span(r, 'algorithm_ms', '.2f')} ms | {span(r, 'prescore_ms', '.2f')} / "
                   f"{span(r, 'score_ms', '.2f')} ms | {span(r, 'cpu_ms', '.1f')} ms | "
                   f"{span(r, 'rule', '.0%')} |")
    return "\n".join(out)


def over_stock(doc: dict[str, Any], key: str, digits: int = 2) -> str:
    """What the rule adds to ``key`` (a per-pod mean, ms) over stock, each way's median less stock's:
    ``the native plugin +0.07 ms, …``."""
    rows = {v: median_row(rs) for v, rs in doc["runs"].items()}
    base = rows["stock"][key]
    return ", ".join(f"{SHORT.get(v, v)} {r[key] - base:+.{digits}f} ms".replace("-", "\u2212")
                     for v, r in rows.items() if v != "stock" and r[key] is not None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    run_options(ap, "ways")
    args = ap.parse_args()
    root = runs_root(args, SCENARIO)
    runs = collect(root, row, ORDER)
    doc = provenance(root, runs, SCENARIO, "bench_wasm_ways.py", "", ORDER)
    if args.data:
        write(args.data, doc)
    print(markdown(doc))
    if "stock" in runs:
        print(f"\nover stock, Score per pod: {over_stock(doc, 'score_ms')}")
        print(f"over stock, scheduler CPU per pod: {over_stock(doc, 'cpu_ms', 1)}")


if __name__ == "__main__":
    main()
