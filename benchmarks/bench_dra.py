"""What DRA costs: the slices' share of bring-up, and a pod claiming a GPU through DRA against the same pod asking
for an extended resource, on identical clusters in the same run.

1. Bring-up: N nodes with 8 devices each (one ResourceSlice per node, created with the nodes) against the same N
   nodes without devices; target (DRA issue): the slices do not double the bring-up at 10,000 nodes.
2. Per pod: `scenarios/dra.yaml` at N nodes, its pods filling half the GPUs at a rate the stock scheduler keeps up
   with on extended resources, once claiming one GPU by DRA (a ResourceClaimTemplate per pod) and once requesting
   `nvidia.com/gpu: 1` of nodes that advertise 8 (the same pod template, the same nodes otherwise). Printed per
   mode: pods bound per second, scheduler CPU per pod, attempt duration p50/p99, apiserver writes per pod,
   created → scheduled p50/p99 and, for DRA, created → claim allocated → bound → Running.

    .venv/bin/python benchmarks/bench_dra.py [--up-nodes 10000] [--nodes 500[,5000]] [--rate 100] [--repeat N] \\
        [--data OUT]

The machine is shared and noisy: read the ratios of one run, not the absolute figures. ``--repeat N`` runs the two
modes N times, interleaved (the i-th run of each is a pair for the gate's paired test); ``--data OUT`` keeps every
run's row with the command, commit, day and host (benchmarks/stored.py's ``provenance``; one ``--nodes`` size):
docs/results/dra.md renders its table with :func:`markdown` and compares the modes with docs/figures.py's
``bench_gate``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stored import here, provenance, write  # a sibling: benchmarks/ is on a script's path

from kwokbench.cluster import ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.manifests import resolve_template
from kwokbench.store import find_runs, load_run
from kwokbench.toolchain import Toolchain

ROOT = Path(__file__).resolve().parents[1]
GPU = {"driver": "gpu.kwokbench.io", "count": 8, "name": "gpu", "attributes": {"model": "H100"},
       "capacity": {"memory": "80Gi"}, "shared": False, "device_class": None}


def up(k: Kwokctl, n: int, devices: bool) -> dict[str, float]:
    name = f"bench-dra-{'dev' if devices else 'plain'}-{n}"
    t = time.monotonic()
    res = bring_up(k, ClusterOptions(name=name), [NodeGroup("gpu", n, resolve_template("node"), {"cpu": 64},
                                                            devices=(GPU,) if devices else ())])
    total = time.monotonic() - t
    k.delete(name)
    assert res.nodes is not None
    return {"created": res.timings["nodes created"], "ready": res.timings["nodes ready"], "total": total,
            "slices": res.nodes.slices}


UP_MODES = ["without devices", "with devices"]

MODES = ["extended resource", "DRA claim"]


def run(n: int, rate: float, dra: bool, out: Path) -> dict[str, Any]:
    pods = 4 * n  # half the GPUs
    sets = [f"cluster.node_groups.0.count={n}", f"workloads.0.count={pods}",
            f"workloads.0.arrival.qps={rate}", "workloads.0.timeout_seconds=900", "workloads.0.template=gpu-pod",
            "workloads.0.params={cpu: 100m, memory: 128Mi, gpus: " + ("0}" if dra else "1}")]
    if not dra:  # the same nodes advertising their 8 GPUs as an extended resource, no slices, no claims
        sets += ["cluster.node_groups.0.devices=[]", "workloads.0.claims=[]",
                 "cluster.node_groups.0.params={cpu: 64, memory: 512Gi, pods: 110, gpus: 8}"]
    cmd = [sys.executable, "-m", "kwokbench", "run", str(ROOT / "scenarios" / "dra.yaml"), "--out", str(out)]
    for setting in sets:
        cmd += ["--set", setting]
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.monotonic() - t
    [path] = find_runs([out])
    return {**row(path), "wall": wall}


def row(path: Path) -> dict[str, Any]:
    """A stored run's figures (what the table prints), its mode read back from its scenario."""
    r = load_run(path)
    s, meta = r.summary or {}, r.meta
    dra = bool((s.get("claims") or {}).get("pod_stages"))
    pods = int((meta.get("phases") or [{}])[0].get("pods_expected") or 0)
    sched = s.get("scheduler") or {}
    att = sched.get("scheduling_attempt_duration_seconds") or {}
    writes = ((s.get("apiserver") or {}).get("writes") or {}).get("per_pod") or {}
    lat = (s.get("latency") or {}).get("created_to_scheduled") or {}
    return {"mode": MODES[dra], "started": meta.get("started_at"), "pods": s.get("pods_scheduled"), "expected": pods,
            "throughput": (s.get("throughput") or {}).get("average"),
            "cpu_ms": (sched.get("cpu_seconds_per_pod") or 0) * 1000, "attempt_p50": att.get("p50"),
            "attempt_p99": att.get("p99"), "writes": sum(writes.values()), "writes_by": writes,
            "lat_p50": lat.get("p50"), "lat_p99": lat.get("p99"), "stages": (s.get("claims") or {}).get("pod_stages"),
            "limited_by": (s.get("limited_by") or {}).get("sentence", ""),
            "verdict": (s.get("limited_by") or {}).get("verdict"), "ceiling": s.get("ceiling")}


def _f(v: float | None, unit: str = "", scale: float = 1.0) -> str:
    return "-" if v is None else f"{v * scale:.1f}{unit}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--up-nodes", default="10000", help="bring-up sizes, comma-separated ('' to skip)")
    ap.add_argument("--nodes", default="500", help="cluster sizes of the per-pod comparison ('' to skip)")
    ap.add_argument("--rate", type=float, default=100.0, help="pods created per second")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each mode, interleaved")
    ap.add_argument("--data", type=Path, metavar="OUT", help="keep every run's row (docs/results/data/)")
    args = ap.parse_args()
    sizes, ups = [x for x in args.nodes.split(",") if x], [x for x in args.up_nodes.split(",") if x]
    if args.data and (len(sizes) != 1 if sizes else len(ups) != 1):
        raise SystemExit("error: --data keeps the runs of one --nodes size, or with --nodes '' of one --up-nodes size")
    tc = Toolchain()
    tc.install("auto")
    with tempfile.TemporaryDirectory(prefix="kb-bench-dra-") as home:
        k = Kwokctl(tc, Path(home))
        for n in [int(x) for x in ups]:
            brought: dict[str, list[dict[str, float]]] = {m: [] for m in UP_MODES}
            for rep in range(args.repeat):
                for mode in UP_MODES if rep % 2 == 0 else UP_MODES[::-1]:  # A B, B A, ...
                    brought[mode].append(up(k, n, mode == "with devices"))
                plain, dev = brought["without devices"][-1], brought["with devices"][-1]
                print(f"bring-up, {n} nodes: without devices {plain['ready']:.1f} s to all Ready "
                      f"({plain['created']:.1f} s created); with {dev['slices']} ResourceSlices of 8 devices "
                      f"{dev['ready']:.1f} s ({dev['created']:.1f} s created): {dev['ready'] / plain['ready']:.2f}x")
            if args.data and not sizes:
                write(args.data, {**here(f"{n} nodes brought up without and with a ResourceSlice of 8 devices each, "
                                         "a fresh cluster each, interleaved (benchmarks/bench_dra.py)",
                                         "bench_dra.py"), "nodes": n, "runs": brought})
        import os
        os.environ["KWOKBENCH_HOME"] = home
        for n in [int(x) for x in sizes]:
            every: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
            for rep in range(args.repeat):
                for i, mode in enumerate(MODES if rep % 2 == 0 else MODES[::-1]):  # A B, B A, ...
                    every[mode].append(run(n, args.rate, mode == "DRA claim",
                                           Path(home) / "runs" / f"{n}-{rep}-{i}"))
            if args.data:
                keep(Path(home) / "runs", every, n, args)
            rows = {m: every[m][-1] for m in MODES}
            print(f"\n{n} nodes × 8 GPUs, {4 * n} one-GPU pods at {args.rate:g}/s, kube-scheduler defaults"
                  + (f" (the last of {args.repeat} runs a mode)" if args.repeat > 1 else ""))
            print(f"{'mode':<18} {'bound':>11} {'pods/s':>7} {'CPU/pod':>8} {'attempt p50/p99':>16} "
                  f"{'writes/pod':>10} {'sched p50/p99':>14} {'wall':>6}")
            for mode, r in rows.items():
                print(f"{mode:<18} {r['pods']:>5}/{r['expected']:<5} {_f(r['throughput']):>7} "
                      f"{_f(r['cpu_ms'], ' ms'):>8} "
                      f"{_f(r['attempt_p50'], '', 1000) + '/' + _f(r['attempt_p99'], ' ms', 1000):>16} "
                      f"{_f(r['writes']):>10} {_f(r['lat_p50'], '') + '/' + _f(r['lat_p99'], ' s'):>14} "
                      f"{r['wall']:>5.0f}s")
            ext, dra = rows["extended resource"], rows["DRA claim"]
            if ext["throughput"] and dra["throughput"] and ext["cpu_ms"]:
                print(f"DRA / extended: throughput {dra['throughput'] / ext['throughput']:.2f}x, scheduler CPU per "
                      f"pod {dra['cpu_ms'] / ext['cpu_ms']:.2f}x, writes per pod {dra['writes'] / ext['writes']:.2f}x")
            if dra["stages"]:
                st = dra["stages"]
                print("DRA pod stages p50 / p99 (s): " + "; ".join(
                    f"{k} {_f(st[k]['p50'])} / {_f(st[k]['p99'])}"
                    for k in ("created_to_allocated", "allocated_to_bound", "bound_to_running")))
            for mode, r in rows.items():
                print(f"  {mode}: {r['limited_by']}")
                if c := r["ceiling"]:  # the stored in-process ceiling nearest in size (`kwokbench ceiling` first)
                    print(f"    {c['ratio']:.2f}x scheduler_perf's {c['test_case']}/{c['workload']} "
                          f"({c['pods_per_second']:.1f} pods/s at {c['nodes']} nodes)")
            flat = {m: {k: v for k, v in r.items() if k not in ("stages", "ceiling")} for m, r in rows.items()}
            print(json.dumps({"nodes": n, **flat}, default=str))


def keep(root: Path, every: dict[str, list[dict[str, Any]]], n: int, args: argparse.Namespace) -> None:
    """``--data``: every run's row by mode, in the order they started, with the provenance."""
    options = f" --up-nodes '' --nodes {n}" + (f" --rate {args.rate:g}" if args.rate != 100 else "")
    runs = {m: sorted(([{k: v for k, v in r.items() if k != "ceiling"} for r in rs]), key=lambda r: r["started"] or "")
            for m, rs in every.items()}
    write(args.data, provenance(root, runs, ROOT / "scenarios" / "dra.yaml", "bench_dra.py", options, MODES))


def _median(rs: list[dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def markdown(doc: dict[str, Any], ceiling: float | None = None) -> str:
    """The page's table of ``--data``'s file: per mode the runs' medians, the throughput's range beside it."""
    n = {len(rs) for rs in doc["runs"].values()}
    count = n.pop() if len(n) == 1 else None
    runs = f", {count} run{'s' if count > 1 else ''}" if count else ""
    out = [f"| mode | bound | pods/s bound{runs} | scheduler CPU / pod | attempt p50 / p99 | apiserver writes / pod | "
           "created → scheduled p50 / p99 | limited by |", "|---" * 8 + "|"]
    for mode, rs in doc["runs"].items():
        m = {k: _median(rs, k) for k in ("pods", "throughput", "cpu_ms", "attempt_p50", "attempt_p99", "writes",
                                         "lat_p50", "lat_p99")}
        tp = [r["throughput"] or 0.0 for r in rs]
        rng = f" ({min(tp):.1f}–{max(tp):.1f})" if len(rs) > 1 else ""
        verdict = statistics.mode(r["verdict"] or "–" for r in rs)
        bound = min(r["pods"] or 0 for r in rs)
        out.append(f"| {mode} | {bound}/{rs[0]['expected']}{' (fewest)' if len(rs) > 1 else ''} | "
                   f"{m['throughput']:.1f}{rng} | {m['cpu_ms']:.1f} ms | "
                   f"{1000 * (m['attempt_p50'] or 0):.1f} / {1000 * (m['attempt_p99'] or 0):.1f} ms | "
                   f"{m['writes']:.1f} | {m['lat_p50']:.1f} / {m['lat_p99']:.1f} s | {verdict}-bound |")
    return "\n".join(out)


def median_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """A mode's runs: the median of each figure (docs/figures.py's ``bench_cell``)."""
    return {k: _median(rs, k) for k in ("pods", "throughput", "cpu_ms", "attempt_p50", "attempt_p99", "writes",
                                        "lat_p50", "lat_p99")}


def writes_of(doc: dict[str, Any], mode: str, resource: str) -> str:
    """A mode's median apiserver writes per pod to one resource (``resourceclaims``, ``resourceclaims/status``)."""
    return f"{statistics.median((r.get('writes_by') or {}).get(resource, 0.0) for r in doc['runs'][mode]):.1f}"


def stage(doc: dict[str, Any], key: str, q: str) -> str:
    """The DRA runs' median of a pod stage's quantile (``created_to_allocated``, ``p50``), in seconds."""
    xs = [r["stages"][key][q] for r in doc["runs"]["DRA claim"] if r.get("stages")]
    return f"{statistics.median(xs):.1f}"


if __name__ == "__main__":
    main()


def up_sentence(doc: dict[str, Any]) -> str:
    """``--up-nodes N --nodes '' --data``'s file as the page's sentence: each mode's seconds to all nodes Ready (and
    to all created), the median of its runs and their range, and the ratio of the medians."""
    def said(mode: str, key: str) -> str:
        xs = [r[key] for r in doc["runs"][mode]]
        rng = f" ({min(xs):.1f}–{max(xs):.1f})" if len(xs) > 1 else ""
        return f"{statistics.median(xs):.1f} s{rng}"

    runs = {len(rs) for rs in doc["runs"].values()}
    without, with_ = (_median(doc["runs"][m], "ready") or 0.0 for m in UP_MODES)
    ratio = with_ / without
    return (f"{doc['nodes']:,} nodes without devices were all Ready in {said('without devices', 'ready')} (created in "
            f"{said('without devices', 'created')}); the same nodes with 8 devices each, one ResourceSlice per node "
            f"posted right after its node on the same connections, in {said('with devices', 'ready')} (created in "
            f"{said('with devices', 'created')}): **{ratio:.2f}x** (medians of {runs.pop()} runs a mode)")


def up_short(doc: dict[str, Any]) -> str:
    """The bring-up for a table's cell: ``64.3 s / 80.0 s (1.24x)``, each mode's median seconds to all Ready."""
    without, with_ = (_median(doc["runs"][m], "ready") or 0.0 for m in UP_MODES)
    return f"{without:.1f} s / {with_:.1f} s ({with_ / without:.2f}x)"
