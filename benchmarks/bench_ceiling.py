"""kwokbench's scheduler throughput against this host's in-process ceiling, in one run.

For each node count N: first the ceiling (`kwokbench ceiling`: scheduler_perf's SchedulingBasic workload
nearest N nodes and P pods, the same kube-scheduler with an in-process apiserver and etcd, `--runs` times:
median and spread), right after it a kwokbench run of the same size
(`kwokbench run scenarios/scheduler-throughput.yaml --set cluster.node_groups.0.count=N
--set workloads.0.count=P --set workloads.0.arrival.qps=1000`: pods offered faster than they bind), and
the ratio of the two; with where the host's cores went during the kwokbench run.
Targets (issue 21): the ceiling reproduces within 10% over three runs on an idle host; kwokbench
>= 0.6x the ceiling at 500, 1000 and 5000 nodes (0.35x at 5000 when the issue was filed).

    .venv/bin/python benchmarks/bench_ceiling.py [--nodes 500,1000,5000] [--runs 3] [--pods-per-node 2.2]
    .venv/bin/python benchmarks/bench_ceiling.py --data docs/results/data/ceiling-series-DATE.json

``--data FILE`` keeps each node count's row (the ceiling's runs, the kwokbench run's throughput and where the host's
cores went) with the command, this checkout's commit, the day and the host; the results page renders its table from
it (:func:`markdown`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stored import here, write  # a sibling: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parent.parent


def kwokbench_run(nodes: int, pods: int, out: Path) -> dict[str, Any]:
    """A real `kwokbench run` (what a user types); its stored summary."""
    cmd = [sys.executable, "-m", "kwokbench", "run", str(REPO / "scenarios/scheduler-throughput.yaml"),
           "--out", str(out), "--set", f"cluster.node_groups.0.count={nodes}", "--set", f"workloads.0.count={pods}",
           "--set", "workloads.0.arrival.qps=1000", "--set", "workloads.0.timeout_seconds=900"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        raise SystemExit(f"kwokbench run failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    runs = sorted((out / "scheduler-throughput").iterdir())
    return dict(json.loads((runs[-1] / "summary.json").read_text()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="500,1000,5000", help="node counts, comma-separated")
    ap.add_argument("--runs", type=int, default=3, help="ceiling runs per node count (their spread is printed)")
    ap.add_argument("--pods-per-node", type=float, default=2.2, help="pods per node (5000 nodes: 11000 pods)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a ceiling run may take")
    ap.add_argument("--data", type=Path, help="write each node count's row, the command, commit, day and host here "
                                              "(JSON)")
    args = ap.parse_args()

    from kwokbench.ceiling import measure_ceiling
    from kwokbench.cli import console
    from kwokbench.report.table import ceiling_rows

    lines, rows = [], []
    for n in [int(x) for x in args.nodes.split(",") if x.strip()]:
        pods = round(n * args.pods_per_node)
        t0 = time.monotonic()
        _path, doc = measure_ceiling(n, pods, args.runs, args.timeout, console.RichReporter())
        figures = [r["pods_per_second"] for r in doc["runs"]]
        sampled = [r["average"] for r in doc["runs"]]
        sp = doc.get("spread") or {}
        ceiling_s = time.monotonic() - t0
        with tempfile.TemporaryDirectory(prefix="bench-ceiling-") as out:
            s = kwokbench_run(n, pods, Path(out))
        tp = s["throughput"]["average"]
        c = s.get("ceiling") or {}
        shares = {k: v.get("cores_share") for k, v in (s.get("processes") or {}).items() if v.get("cores_share")}
        shares["kwokbench"] = (s.get("kwokbench_cpu") or {}).get("cores_share")
        lines.append(
            f"{n} nodes, {pods} pods: ceiling {doc['workload']} {doc['pods_per_second']:.1f} pods/s "
            f"(runs {', '.join(f'{a:.1f}' for a in figures)}; SchedulingThroughput average "
            f"{', '.join(f'{a:.1f}' for a in sampled)}; spread "
            + (f"{sp['relative_range'] * 100:.1f}%" if sp else "-")
            + f"; {ceiling_s:.0f} s); kwokbench {tp:.1f} pods/s = {tp / doc['pods_per_second']:.2f}x "
            f"(summary: {c.get('ratio', float('nan')):.2f}x of {c.get('pods_per_second', float('nan')):.1f}); "
            "host cores: " + ", ".join(f"{k} {v * 100:.0f}%" for k, v in sorted(shares.items(), key=lambda kv: -(
                kv[1] or 0)) if v is not None))
        print(lines[-1], flush=True)
        rows.append({"nodes": n, "pods": pods, "workload": doc["workload"], "ceiling": doc["pods_per_second"],
                     "ceiling_runs": figures, "sampled": sampled,
                     "spread": sp.get("relative_range") if sp else None, "ceiling_seconds": ceiling_s,
                     "throughput": tp, "bound": s.get("pods_scheduled"),
                     "limited_by": (s.get("limited_by") or {}).get("verdict"), "cores": shares})
        for label, value in ceiling_rows(s):  # the rows `kwokbench run` printed
            print(f"  {label}: {value}", flush=True)
    print("\n".join(["", "summary:", *lines]))
    if args.data:
        options = f"--nodes {args.nodes} --runs {args.runs} --pods-per-node {args.pods_per_node:g}"
        doc = here("each node count's in-process ceiling and a kwokbench run of its size right after it "
                   "(benchmarks/bench_ceiling.py)", "bench_ceiling.py", options)
        write(args.data, {**doc, "runs": rows})
        print(markdown(json.loads(args.data.read_text())))


def markdown(doc: dict[str, Any]) -> str:
    """The results page's table of ``--data``'s file: per node count, the ceiling's median and runs, their spread,
    scheduler_perf's own SchedulingThroughput average of each, the kwokbench run and its share of the ceiling."""
    out = ["| nodes (kwokbench pods) | ceiling workload | ceiling: median [runs] | spread | SchedulingThroughput mean "
           "of the same runs | kwokbench | ratio |", "|---" * 7 + "|"]
    for r in doc["runs"]:
        spread = f"{100 * r['spread']:.1f}%" if r["spread"] is not None else "–"
        out.append(f"| {r['nodes']} ({r['pods']}) | `{r['workload'].removeprefix('SchedulingBasic/')}` | "
                   f"{r['ceiling']:.1f} pods/s [{', '.join(f'{x:.1f}' for x in r['ceiling_runs'])}] | {spread} | "
                   f"{', '.join(f'{x:.1f}' for x in r['sampled'])} | {r['throughput']:.1f} pods/s | "
                   f"**{r['throughput'] / r['ceiling']:.2f}x** |")
    return "\n".join(out)


def cores(doc: dict[str, Any], nodes: int) -> str:
    """Where the host's cores went in the kwokbench run of ``nodes``: ``kube-scheduler 36%, kube-apiserver 34%, …``."""
    [r] = [r for r in doc["runs"] if r["nodes"] == nodes]
    shares = sorted(((k, v) for k, v in r["cores"].items() if v is not None), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares)


def sampled(doc: dict[str, Any], nodes: int) -> str:
    """scheduler_perf's SchedulingThroughput mean of the ``nodes`` ceiling's runs beside their pods/duration, each as
    the range of the runs: ``278.6–361.9 pods/s (pods/duration 219.3–294.2)``."""
    [r] = [r for r in doc["runs"] if r["nodes"] == nodes]
    return (f"{min(r['sampled']):.1f}–{max(r['sampled']):.1f} pods/s (pods/duration "
            f"{min(r['ceiling_runs']):.1f}–{max(r['ceiling_runs']):.1f})")


def ceiling(doc: dict[str, Any], nodes: int) -> str:
    """The in-process ceiling at ``nodes`` (its runs' median) and their spread: ``236.2 pods/s (spread 20.4%)``."""
    [r] = [r for r in doc["runs"] if r["nodes"] == nodes]
    spread = f" (spread {100 * r['spread']:.1f}%)" if r["spread"] is not None else ""
    return f"{r['ceiling']:.1f} pods/s{spread}"


def ratio(doc: dict[str, Any], nodes: int) -> str:
    """The kwokbench run of ``nodes`` over its ceiling: ``0.94x``."""
    [r] = [r for r in doc["runs"] if r["nodes"] == nodes]
    return f"{r['throughput'] / r['ceiling']:.2f}x"


def spreads(doc: dict[str, Any]) -> str:
    """The ceiling's spread over its runs at each node count, lowest to highest: ``7.5–11.6%``."""
    xs = sorted(100 * r["spread"] for r in doc["runs"] if r["spread"] is not None)
    return f"{xs[0]:.1f}%" if len(xs) == 1 or f"{xs[0]:.1f}" == f"{xs[-1]:.1f}" else f"{xs[0]:.1f}–{xs[-1]:.1f}%"


if __name__ == "__main__":
    main()
