"""The seed experiment at scale: Apache YuniKorn v1.8.0 against the stock kube-scheduler (issue 25).

Every point is one `kwokbench run scenarios/yunikorn-vs-kube-scheduler.yaml --repeat R` through the real CLI
(the variants interleaved, each run on a fresh cluster), at a size given as nodes:pods:offered-rate. Printed
per variant and size (median over the repeats, min–max beside it when R > 1): pods bound, throughput over
the pending window, created → scheduled latency p50 / p99, the scheduler's CPU per pod, and the throughput as a
share of this host's in-process ceiling when one is stored (`kwokbench ceiling --nodes N` first).
`--shapes` adds YuniKorn's community's three application shapes at one size (few apps × many pods, balanced,
many apps × few pods) for one variant.

    python benchmarks/bench_yunikorn.py                                  # 1k:3000:500 and 5k:10000:1000
    python benchmarks/bench_yunikorn.py --points 10000:100000:1000 --repeat 1
    python benchmarks/bench_yunikorn.py --points 1000:3000:500 --shapes --repeat 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/yunikorn-vs-kube-scheduler.yaml"
SHAPES = {"few apps x many pods": 1000, "balanced": 100, "many apps x few pods": 10}


def run(nodes: int, pods: int, qps: float, repeat: int, variants: list[str], out: Path,
        sets: list[str] = ()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    cmd = [sys.executable, "-m", "kwokbench", "run", str(SCENARIO), "--out", str(out), "--repeat", str(repeat),
           "--set", f"cluster.node_groups.0.count={nodes}", "--set", f"workloads.0.count={pods}",
           "--set", f"workloads.0.arrival.qps={qps}", "--set", f"workloads.0.timeout_seconds={max(180, pods / 50)}",
           *[a for s in sets for a in ("--set", s)], *[a for v in variants for a in ("--variant", v)]]
    res = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[3:])} failed ({res.returncode}):\n{res.stderr[-2000:]}")
    rows = []
    for d in sorted((out / SCENARIO.stem).rglob("summary.json")):
        s, meta = json.loads(d.read_text()), json.loads((d.parent / "meta.json").read_text())
        lat = (s.get("latency") or {}).get("created_to_scheduled") or {}
        rows.append({"variant": meta["variant"]["name"], "bound": s.get("pods_scheduled"),
                     "throughput": (s.get("throughput") or {}).get("average"),
                     "p50": lat.get("p50"), "p99": lat.get("p99"),
                     "cpu_ms_per_pod": 1000 * ((s.get("scheduler") or {}).get("cpu_seconds_per_pod") or 0.0),
                     "ceiling": (s.get("ceiling") or {}).get("ratio"),
                     "limited_by": (s.get("limited_by") or {}).get("verdict")})
    return rows


def _fmt(values: list[float | None], fmt: str) -> str:
    vs = [v for v in values if v is not None]
    if not vs:
        return "-"
    med = fmt.format(statistics.median(vs))
    return med if len(vs) == 1 else f"{med} ({fmt.format(min(vs))}–{fmt.format(max(vs))})"


def table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print("| variant | bound | throughput pods/s | p50 s | p99 s | scheduler CPU ms/pod | x ceiling | limited by |")
    print("|---|---|---|---|---|---|---|---|")
    for v in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == v]
        print(f"| {v} | {_fmt([r['bound'] for r in rs], '{:.0f}')} | {_fmt([r['throughput'] for r in rs], '{:.1f}')}"
              f" | {_fmt([r['p50'] for r in rs], '{:.2f}')} | {_fmt([r['p99'] for r in rs], '{:.2f}')}"
              f" | {_fmt([r['cpu_ms_per_pod'] for r in rs], '{:.2f}')} | {_fmt([r['ceiling'] for r in rs], '{:.2f}')}"
              f" | {', '.join(sorted({str(r['limited_by']) for r in rs}))} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", default="1000:3000:500,5000:10000:1000", help="nodes:pods:qps,…")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default="kube-scheduler,yunikorn,yunikorn-100ms")
    ap.add_argument("--shapes", action="store_true", help="also the three application shapes (first point)")
    ap.add_argument("--shape-variant", default="yunikorn-100ms")
    ap.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder, removed)")
    args = ap.parse_args()
    variants = args.variants.split(",")
    points = [tuple(float(x) for x in p.split(":")) for p in args.points.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-yunikorn-") as scratch:
        tmp = args.out or scratch
        for i, (nodes, pods, qps) in enumerate(points):
            rows = run(int(nodes), int(pods), qps, args.repeat, variants, Path(tmp) / f"p{i}")
            table(f"{int(nodes)} nodes, {int(pods)} pods offered at {qps:g}/s, {args.repeat} interleaved repeats",
                  rows)
        if args.shapes:
            nodes, pods, qps = points[0]
            rows = []
            for j, (shape, per_app) in enumerate(SHAPES.items()):
                got = run(int(nodes), int(pods), qps, args.repeat, [args.shape_variant], Path(tmp) / f"s{j}",
                          [f"workloads.0.yunikorn.pods_per_app={per_app}"])
                rows += [{**r, "variant": f"{shape} ({int(pods) // per_app} apps x {per_app})"} for r in got]
            table(f"{args.shape_variant}: application shapes, {int(nodes)} nodes, {int(pods)} pods at {qps:g}/s",
                  rows)


if __name__ == "__main__":
    main()
