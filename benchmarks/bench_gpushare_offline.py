"""The FGD paper's six policies of plugins/gpushare without a real scheduler (issue 41): the simulator's own pod list
for each seed (`trace.shuffle: simulator`: Go's math/rand, draw for draw) on the trace's 1213 GPU nodes, placed one
pod at a time by the plugin's own policy code as the simulator places them (every feasible node scored, the best
taken, a pod that fits nowhere dropped), by the Go test `TestOffline` in plugins/gpushare. Set beside the
simulator's published figures for the same seed (`../shared/traces/fgd-expected`), this separates the policy code
from what a real kube-scheduler adds (its queue, retries, binding, the order it takes equal nodes in).

Ties go to the first node in a fixed order: `--order simulator` (default) draws it as the simulator does
(`rand.Perm` over the nodes sorted by name, after the pod list, from the same generator), `--order plugin` is the
plugin's own seeded order (`Rank`, what the live runs use).

    .venv/bin/python benchmarks/bench_gpushare_offline.py                      # seeds 42-44, all six policies (~4 min)
    .venv/bin/python benchmarks/bench_gpushare_offline.py --seeds 42 --policies FGD,BestFit --order plugin

Printed: per policy and seed, the GPU allocation at 100% arrived and at the end (% of the 6212 GPUs) beside the
simulator's (its 100 and 130 columns), then the means and the ranking. ``--data OUT`` also stores each row (with the
simulator's figures for its seed, so the page renders without the trace files), the command, the commit, the day
and the host: docs/results/traces.md renders its table with :func:`markdown` and quotes :func:`mean` and :func:`cell`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_traces import PLUGIN_POLICY, TRACES, require_traces, simulator_per_seed  # noqa: E402
from stored import here, write  # noqa: E402

from kwokbench.toolchain.gorand import GoRand  # noqa: E402
from kwokbench.toolchain.install import _go_env  # noqa: E402
from kwokbench.trace import alibaba  # noqa: E402
from kwokbench.trace.fgd import typical_pods  # noqa: E402
from kwokbench.trace.inflate import capacity, simulator_list  # noqa: E402

POLICIES = ("Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")
SIM_NAME = {p: PLUGIN_POLICY[v] for v, p in zip(("random", "dot-product", "gpu-clustering", "gpu-packing",
                                                  "bestfit", "fgd"), POLICIES, strict=True)}
LINE = re.compile(r"offline (\w+): placed (\d+) dropped (\d+) allocation@100 ([\d.]+) allocation@end ([\d.]+)")


def write_inputs(dest: Path, seed: int, order: str) -> None:
    root = TRACES / "alibaba-gpu-2023"
    nodes = sorted(alibaba.read_openb_nodes(root / "openb_node_list_gpu_node.csv"), key=lambda n: n.name)
    original = alibaba.read_openb_pods(root / "openb_pod_list_default.csv")
    with GoRand(seed) as draws:
        pods = simulator_list(original, 1.3, capacity(nodes, "gpu"), draws)
        perm = draws.perm(len(nodes)) if order == "simulator" else [-1] * len(nodes)
    (dest / "nodes.csv").write_text("".join(f"{n.name},{n.cpu_milli},{n.memory_mib},{n.gpu},{n.gpu_model or ''},"
                                            f"{perm[i]}\n" for i, n in enumerate(nodes)))
    (dest / "pods.csv").write_text("".join(
        f"{p.name},{p.cpu_milli},{p.memory_mib},{p.gpu or (1 if p.gpu_milli else 0)},"
        f"{1000 if p.gpu else p.gpu_milli},{'|'.join(p.gpu_models)}\n" for p in pods))
    (dest / "workload.csv").write_text("".join(f"{t['cpu']},{t['gpuMilli']},{t['gpus']},{t['weight']}\n"
                                               for t in typical_pods(original)))


def run(dest: Path, policy: str, seed: int) -> tuple[float, float, int]:
    env = {**_go_env(), "GPUSHARE_OFFLINE": str(dest), "GPUSHARE_POLICY": policy, "GPUSHARE_SEED": str(seed)}
    res = subprocess.run(["go", "test", "-run", "^TestOffline$", "-count=1", "-v", "."], cwd=REPO / "plugins/gpushare",
                         env=env, capture_output=True, text=True, timeout=1800, check=False)
    m = LINE.search(res.stdout)
    if not m:
        raise SystemExit(f"TestOffline ({policy}, seed {seed}) printed no result:\n{res.stdout[-2000:]}{res.stderr}")
    return float(m.group(4)), float(m.group(5)), int(m.group(2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="42,43,44")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--order", choices=("simulator", "plugin"), default="simulator")
    ap.add_argument("--data", metavar="OUT", help="also store the rows and their provenance (docs/results/data/)")
    args = ap.parse_args()
    require_traces()
    sim = simulator_per_seed()
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory(prefix="gpushare-offline-") as tmp:
            write_inputs(Path(tmp), seed, args.order)
            for policy in args.policies.split(","):
                at100, end, placed = run(Path(tmp), policy, seed)
                s = sim.loc[(SIM_NAME[policy], seed)] if (SIM_NAME[policy], seed) in sim.index else None
                rows.append((policy, seed, at100, end, placed, s))
                ref = f"{s['100']:.1f} / {s['130']:.1f}, {end - s['130']:+.1f}" if s is not None else "-"
                print(f"{policy:<14} seed {seed}: placed {placed:>5}  allocation @100 {at100:.2f}  @end {end:.2f}"
                      f"   simulator {ref}", flush=True)
    print(f"\nmeans over seeds {args.seeds} (order: {args.order}), here against the simulator's same seeds:")
    means = {}
    for policy in args.policies.split(","):
        mine = [r for r in rows if r[0] == policy]
        ours = sum(r[3] for r in mine) / len(mine)
        theirs = [r[5]["130"] for r in mine if r[5] is not None]
        means[policy] = (ours, sum(theirs) / len(theirs) if theirs else float("nan"))
        print(f"  {policy:<14} {ours:.2f}  simulator {means[policy][1]:.2f}  ({ours - means[policy][1]:+.2f})")
    here = sorted(means, key=lambda p: -means[p][0])
    there = sorted(means, key=lambda p: -means[p][1])
    print(f"ranking: here {', '.join(here)}; simulator {', '.join(there)}{' (the same)' if here == there else ''}")
    os.environ.pop("GPUSHARE_OFFLINE", None)
    if args.data:
        store(args, rows)


def store(args: argparse.Namespace, rows: list[tuple[Any, ...]]) -> None:
    """``--data``: each policy and seed's row beside the simulator's, with the command, commit, day and host."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for policy, seed, at100, end, placed, s in rows:
        runs.setdefault(policy, []).append({
            "seed": seed, "at100": at100, "at_end": end, "placed": placed,
            "simulator_100": float(s["100"]) if s is not None else None,
            "simulator_130": float(s["130"]) if s is not None else None})
    what = ("the FGD paper's six policies of plugins/gpushare placing the simulator's pod list without a scheduler "
            f"(TestOffline), ties in the {args.order}'s order; the simulator's published figures for the same seeds "
            "(../shared/traces/fgd-expected) beside them")
    write(Path(args.data), {**here(what, "bench_gpushare_offline.py"), "order": args.order, "runs": runs})


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def mean(doc: dict[str, Any], policy: str, key: str = "at_end") -> str:
    """A policy's mean over the stored seeds (``at_end``, ``at100``, ``simulator_130``), two decimals."""
    return f"{_mean([r[key] for r in doc['runs'][policy]]):.2f}"


def cell(doc: dict[str, Any], policy: str, seed: int, key: str = "at_end") -> str:
    return f"{next(r[key] for r in doc['runs'][policy] if r['seed'] == seed):.2f}"


def widest(doc: dict[str, Any]) -> str:
    """The largest distance of a policy and seed from the simulator's same seed, in points."""
    return f"{max(abs(r['at_end'] - r['simulator_130']) for rs in doc['runs'].values() for r in rs):.1f}"


def markdown(doc: dict[str, Any], ceiling: float | None = None) -> str:
    """Per policy: each seed's allocation at the end (the simulator's same seed), the mean, the simulator's mean
    and the difference."""
    seeds = sorted({r["seed"] for rs in doc["runs"].values() for r in rs})
    lines = ["| policy | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | simulator, same seeds | difference |",
             "|---|" + "---|" * (len(seeds) + 3)]
    for policy, rs in doc["runs"].items():
        by = {r["seed"]: r for r in rs}
        ours, theirs = _mean([r["at_end"] for r in rs]), _mean([r["simulator_130"] for r in rs])
        cells = [f"{by[s]['at_end']:.2f} ({by[s]['simulator_130']:.1f})" if s in by else "" for s in seeds]
        diff = f"{ours - theirs:+.2f}".replace("-", "\u2212")
        lines.append(f"| {policy} | " + " | ".join(cells) + f" | {ours:.2f} | {theirs:.2f} | {diff} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
