"""The batch schedulers compared, as shipped and as their projects tune them (issue 41):
`scenarios/batch-schedulers.yaml` (kube-scheduler; YuniKorn, Volcano and KAI each `-shipped` and `-tuned`;
Volcano's agent-scheduler) through the real CLI, one fresh cluster per variant, then one row per variant.

Printed per variant: pods bound, throughput (pods bound per second over the pending window) and, where a
`kwokbench ceiling` for this host and size is stored, its share of that in-process ceiling; created → bound
p50/p99; the scheduler's CPU per pod and its helpers' (every other process of the kind: binder, pod-grouper,
controllers); the apiserver's writes per pod (nodes' leases and statuses left out: kwok's heartbeats) and its
CPU; what limited the run (its verdict); the run's length. With several runs of a variant (`--repeat`), each
figure is their median and the throughput's range is printed beside it. Then each tuned variant against its
shipped one (medians), and whether their throughput ranges overlap.

    .venv/bin/python benchmarks/bench_batch.py                      # 1000 nodes, every variant (~4 min here)
    .venv/bin/python benchmarks/bench_batch.py --nodes 5000         # the 5000-node point (~12 min)
    .venv/bin/python benchmarks/bench_batch.py --variant kai-shipped --variant kai-tuned
    .venv/bin/python benchmarks/bench_batch.py --runs DIR           # only print, from runs stored in DIR
    .venv/bin/python benchmarks/bench_batch.py --runs DIR --data docs/results/data/batch-5000-DATE.json

``--data FILE`` keeps each run's row (not the runs) with the command that measured them, the commit they ran at (the
runs' own ``meta.json``), the day and the host: the results page renders its table from that file
(``{{ bench_table(...) }}``, docs/figures.py, with :func:`markdown` below), so the page and this script print the
same figures.

Measure the ceiling first (`kwokbench ceiling --scenario scenarios/batch-schedulers.yaml [--set
cluster.node_groups.0.count=5000]`) for the x ceiling column.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from stored import collect, provenance, run_options, runs_root, write  # a sibling: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/batch-schedulers.yaml"
CONTROL_PLANE = {"etcd", "kube-apiserver", "kube-controller-manager", "kwok-controller", "kube-scheduler"}
HEARTBEATS = {"leases", "nodes/status"}


def row(run: Path) -> dict[str, Any]:
    s, meta = json.loads((run / "summary.json").read_text()), json.loads((run / "meta.json").read_text())
    bound = s.get("pods_scheduled") or 0
    procs = s.get("processes") or {}
    cpu = {c: (p.get("cpu_seconds_window") or p.get("cpu_seconds") or 0.0) for c, p in procs.items()}
    helpers = {c: v for c, v in cpu.items() if c not in CONTROL_PLANE and c != "kwokbench"}
    writes = ((s.get("apiserver") or {}).get("writes") or {}).get("per_pod") or {}
    lat = (s.get("latency") or {}).get("created_to_scheduled") or {}
    ceiling = s.get("ceiling") or {}
    started, ended = meta.get("started_at"), meta.get("ended_at")
    return {"variant": meta["variant"]["name"], "bound": bound, "expected": s.get("pods_expected"),
            "throughput": (s.get("throughput") or {}).get("average"), "ceiling": ceiling.get("ratio"),
            "p50": lat.get("p50"), "p99": lat.get("p99"),
            "sched_ms": 1000 * cpu.get("kube-scheduler", 0.0) / bound if bound else None,
            "helpers_ms": 1000 * sum(helpers.values()) / bound if bound and helpers else None,
            "writes": sum(v for k, v in writes.items() if k not in HEARTBEATS),
            "apiserver_cpu": cpu.get("kube-apiserver"),
            "limited_by": (s.get("limited_by") or {}).get("verdict"),
            "seconds": _seconds(started, ended), "started": started}


def _seconds(a: str | None, b: str | None) -> float | None:
    from datetime import datetime

    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() if a and b else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    run_options(ap)
    args = ap.parse_args()
    root = runs_root(args, SCENARIO, [f"cluster.node_groups.0.count={args.nodes}"])
    runs = collect(root, row, ORDER)
    if args.data:
        write(args.data, data(root, runs))
    by = {v: median_row(rs) for v, rs in runs.items()}
    print(f"{'variant':<18} {'runs':>4} {'bound':>9}  {'pods/s (range)':>21} {'x ceil':>6}  {'p50 / p99 (s)':>13}  "
          f"{'sched ms/pod':>12}  {'helpers ms/pod':>14}  {'writes/pod':>10}  {'apiserver s':>11}  {'limited by':<10} "
          f"{'run':>5}")
    for name, r in by.items():
        ceil = f"{r['ceiling']:.2f}" if r["ceiling"] else "-"
        helpers = f"{r['helpers_ms']:.2f}" if r["helpers_ms"] is not None else "-"
        rng = f"{r['throughput']:7.1f} ({r['lo']:.1f}-{r['hi']:.1f})"
        print(f"{name:<18} {r['runs']:>4} {r['bound']:>4}/{r['expected'] or 0:<4}  {rng:>21} {ceil:>6}  "
              f"{r['p50'] or 0:6.2f} / {r['p99'] or 0:5.2f}  {r['sched_ms'] or 0:12.2f}  {helpers:>14}  "
              f"{r['writes']:10.2f}  {r['apiserver_cpu'] or 0:11.1f}  {r['limited_by'] or '-':<10} "
              f"{r['seconds'] or 0:4.0f}s")
    print("\ntuned against shipped, medians (throughput, p99, scheduler CPU per pod, helpers' CPU per pod):")
    for name, t in by.items():
        base = by.get(name.rsplit("-", 1)[0] + "-shipped")
        if (name.endswith("-tuned") or name == "volcano-agent") and base and base["throughput"] and t["throughput"]:
            helpers = (f", helpers {t['helpers_ms'] / base['helpers_ms']:.2f}x"
                       if t["helpers_ms"] and base["helpers_ms"] else "")
            apart = ("; throughput ranges apart" if t["lo"] > base["hi"] or t["hi"] < base["lo"]
                     else "; throughput ranges overlap")
            print(f"  {name:<16} {t['throughput'] / base['throughput']:.2f}x throughput, p99 "
                  f"{(t['p99'] or 0) / (base['p99'] or 1):.2f}x, scheduler CPU/pod "
                  f"{(t['sched_ms'] or 0) / (base['sched_ms'] or 1):.2f}x{helpers}{apart if t['runs'] > 1 else ''}")


ORDER = ["kube-scheduler", "yunikorn-shipped", "yunikorn-tuned", "volcano-shipped", "volcano-tuned", "volcano-agent",
         "kai-shipped", "kai-tuned"]


def data(root: Path, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``--data``'s file: the runs' rows and their provenance, the node count read back from the runs."""
    nodes = {int(json.loads(p.read_text())["cluster"]["nodes"]) for p in root.rglob("meta.json")}
    options = f" --nodes {nodes.pop()}" if nodes != {1000} else ""
    return provenance(root, runs, SCENARIO, "bench_batch.py", options, ORDER)


LIMITS = {"arrival": "the arrivals", "host": "the host (its CPUs busy)"}


def markdown(doc: dict[str, Any], ceiling: float | None = None) -> str:
    """The results page's table of ``--data``'s file: each figure the median of the variant's runs, the throughput's
    range beside it; *× ceiling* the median throughput over ``ceiling`` (pods/s) when one is given."""
    rows = {v: median_row(rs) for v, rs in doc["runs"].items()}
    n = {r["runs"] for r in rows.values()}
    runs = f"{n.pop()} runs" if len(n) == 1 else "runs"
    out = [f"| variant | throughput ({runs}) | × ceiling | latency p50 / p99 | scheduler CPU per pod | its helpers' "
           "CPU per pod | apiserver writes per pod | apiserver CPU | limited by |", "|---" * 9 + "|"]
    for i, (name, r) in enumerate(rows.items()):
        unit = " pods/s" if i == 0 else ""
        rng = f" ({r['lo']:.1f}–{r['hi']:.1f})" if r["runs"] > 1 else ""
        ratio = f"{r['throughput'] / ceiling:.2f}" if ceiling and r["throughput"] else "–"
        helpers = f"{r['helpers_ms']:.2f} ms" if r["helpers_ms"] is not None else "–"
        limit = r["limited_by"] or "–"
        out.append(f"| {name} | {r['throughput']:.1f}{unit}{rng} | {ratio} | {r['p50']:.2f} s / {r['p99']:.2f} s | "
                   f"{r['sched_ms']:.2f} ms | {helpers} | {r['writes']:.2f} | {r['apiserver_cpu']:.1f} s | "
                   f"{LIMITS.get(limit, 'the ' + limit)} |")
    return "\n".join(out)


def median_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's runs: the median of each figure, the throughput's range, the verdict most runs had."""
    out: dict[str, Any] = {"runs": len(rs), "expected": rs[0]["expected"],
                           "limited_by": statistics.mode(r["limited_by"] for r in rs)}
    for k in ("bound", "throughput", "ceiling", "p50", "p99", "sched_ms", "helpers_ms", "writes", "apiserver_cpu",
              "seconds"):
        xs = [r[k] for r in rs if r[k] is not None]
        out[k] = statistics.median(xs) if xs else None
    tp = [r["throughput"] or 0.0 for r in rs]
    out["lo"], out["hi"] = min(tp), max(tp)
    return out


if __name__ == "__main__":
    main()
