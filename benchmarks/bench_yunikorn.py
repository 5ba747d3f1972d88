"""The seed experiment at scale: Apache YuniKorn v1.8.0 against the stock kube-scheduler (issue 25).

Every point is one `kwokbench run scenarios/yunikorn-vs-kube-scheduler.yaml --repeat R` through the real CLI
(the variants interleaved, each run on a fresh cluster), at a size given as nodes:pods:offered-rate. Printed
per variant and size (median over the repeats, min–max beside it when R > 1): pods bound, throughput over
the pending window, created → scheduled latency p50 / p99, the scheduler's CPU per pod, and the throughput as a
share of this host's in-process ceiling when one is stored (`kwokbench ceiling --nodes N` first).
`--shapes` adds YuniKorn's community's three application shapes at one size (few apps × many pods, balanced,
many apps × few pods) for one variant.

    .venv/bin/python benchmarks/bench_yunikorn.py                                  # 1k:3000:500 and 5k:10000:1000
    .venv/bin/python benchmarks/bench_yunikorn.py --points 10000:100000:1000 --repeat 1
    .venv/bin/python benchmarks/bench_yunikorn.py --points 1000:3000:500 --shapes --repeat 2
    .venv/bin/python benchmarks/bench_yunikorn.py --repeat 3 --shapes --out DIR \\
        --data docs/results/data/yunikorn-DATE.json

``--data FILE`` keeps each run's row by point (``1000 nodes/yunikorn``) and shape with the command, the commit the
runs ran at, the day and the host; the results page renders its tables from it (:func:`points_table`,
:func:`shapes_table`) and decides its comparisons with the gate's paired test over the interleaved runs
(``bench_gate``). ``--runs DIR`` prints (and stores) what an earlier ``--out DIR`` kept, without running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from stored import (  # a sibling: benchmarks/ is on a script's path
    collect,
    pod_writes,
    provenance,
    ranged,
    run_scenario,
    write,
)

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/yunikorn-vs-kube-scheduler.yaml"
SHAPES = {"few apps x many pods": 1000, "balanced": 100, "many apps x few pods": 10}


def row(run: Path) -> dict[str, Any]:
    """One run's figures. Beside the rates, what the run cost the control plane: the scheduler's peak RSS (YuniKorn
    runs in kube-scheduler's slot), the apiserver's and etcd's CPU seconds over the run, its writes per pod bound by
    resource (leases left out: they are the nodes', not the pods') and what the apiserver accepted of the offer."""
    s, meta = json.loads((run / "summary.json").read_text()), json.loads((run / "meta.json").read_text())
    lat = (s.get("latency") or {}).get("created_to_scheduled") or {}
    procs = s.get("processes") or {}
    evidence = (s.get("limited_by") or {}).get("evidence") or {}
    per_pod = pod_writes(s)
    rss = (procs.get("kube-scheduler") or {}).get("rss_peak_bytes")
    return {"variant": meta["variant"]["name"], "bound": s.get("pods_scheduled"),
            "throughput": (s.get("throughput") or {}).get("average"),
            "p50": lat.get("p50"), "p99": lat.get("p99"),
            "cpu_ms_per_pod": 1000 * ((s.get("scheduler") or {}).get("cpu_seconds_per_pod") or 0.0),
            "ceiling": (s.get("ceiling") or {}).get("ratio"),
            "limited_by": (s.get("limited_by") or {}).get("verdict"), "started": meta.get("started_at"),
            "rss_gib": rss / 2**30 if rss else None,
            "apiserver_cpu": (procs.get("kube-apiserver") or {}).get("cpu_seconds"),
            "etcd_cpu": (procs.get("etcd") or {}).get("cpu_seconds"),
            "apiserver_cores": ((evidence.get("cores") or {}).get("kube-apiserver") or {}).get("mean"),
            "accepted": evidence.get("accepted_qps"),
            "writes": sum(per_pod.values()) if per_pod else None,
            **{f"writes_{k.replace('pods/', '')}": v for k, v in per_pod.items()}}


def run(nodes: int, pods: int, qps: float, repeat: int, variants: list[str], out: Path,
        sets: list[str] = ()) -> None:  # type: ignore[assignment]
    run_scenario(SCENARIO, out, variants, repeat,
                 [f"cluster.node_groups.0.count={nodes}", f"workloads.0.count={pods}", f"workloads.0.arrival.qps={qps}",
                  f"workloads.0.timeout_seconds={max(180, pods / 50)}", *sets])


def rows_of(out: Path) -> list[dict[str, Any]]:
    return [r for rs in collect(out, row, []).values() for r in rs]


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


def _point_label(nodes: int) -> str:
    return f"{nodes} nodes"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", default="1000:3000:500,5000:10000:1000", help="nodes:pods:qps,…")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default="kube-scheduler,yunikorn,yunikorn-100ms")
    ap.add_argument("--shapes", action="store_true", help="also the three application shapes (first point)")
    ap.add_argument("--shape-variant", default="yunikorn-100ms")
    ap.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder, removed)")
    ap.add_argument("--runs", type=Path, help="print from the runs an earlier --out kept here instead of running")
    ap.add_argument("--data", type=Path, help="write each run's row, the command, commit, day and host here (JSON)")
    args = ap.parse_args()
    variants = args.variants.split(",")
    points = [tuple(float(x) for x in p.split(":")) for p in args.points.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-yunikorn-") as scratch:
        tmp = Path(args.runs or args.out or scratch)
        by_point: dict[str, list[dict[str, Any]]] = {}
        for i, (nodes, pods, qps) in enumerate(points):
            if args.runs is None:
                run(int(nodes), int(pods), qps, args.repeat, variants, tmp / f"p{i}")
            rows = rows_of(tmp / f"p{i}")
            by_point[_point_label(int(nodes))] = rows
            table(f"{int(nodes)} nodes, {int(pods)} pods offered at {qps:g}/s, {args.repeat} interleaved repeats",
                  rows)
        shapes: dict[str, list[dict[str, Any]]] = {}
        if args.shapes:
            nodes, pods, qps = points[0]
            for j, (shape, per_app) in enumerate(SHAPES.items()):
                if args.runs is None:
                    run(int(nodes), int(pods), qps, args.repeat, [args.shape_variant], tmp / f"s{j}",
                        [f"workloads.0.yunikorn.pods_per_app={per_app}"])
                shapes[f"{shape} ({int(pods) // per_app} apps x {per_app})"] = rows_of(tmp / f"s{j}")
            table(f"{args.shape_variant}: application shapes, {int(nodes)} nodes, {int(pods)} pods at {qps:g}/s",
                  [{**r, "variant": shape} for shape, rs in shapes.items() for r in rs])
        if args.data:
            write(args.data, data(tmp, args, points, by_point, shapes))


def data(root: Path, args: argparse.Namespace, points: list[tuple[float, ...]],
         by_point: dict[str, list[dict[str, Any]]], shapes: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``--data``'s file: every run's row under ``<point>/<variant>`` and ``shape/<shape>``, each point's size."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for label, rows in by_point.items():
        for r in rows:
            runs.setdefault(f"{label}/{r['variant']}", []).append(r)
    for shape, rows in shapes.items():
        runs[f"shape/{shape}"] = rows
    options = f" --points {args.points} --variants {args.variants}" + (
        f" --shapes --shape-variant {args.shape_variant}" if shapes else "")
    doc = provenance(root, runs, SCENARIO, "bench_yunikorn.py", options, list(runs))
    doc["points"] = [{"label": _point_label(int(n)), "nodes": int(n), "pods": int(p), "qps": q}
                     for n, p, q in points]
    doc["shape_variant"] = args.shape_variant if shapes else None
    return doc


COSTS = ("rss_gib", "apiserver_cpu", "etcd_cpu", "writes", "writes_events")
"""What a run cost the control plane, kept by :func:`row` since 2026-11-29 (a median of None in older data)."""


def median_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """A variant's runs at one point: each figure's median, the throughput's range."""
    out: dict[str, Any] = {"runs": len(rs)}
    for k in ("bound", "throughput", "p50", "p99", "cpu_ms_per_pod", *COSTS):
        xs = [r[k] for r in rs if r.get(k) is not None]
        out[k] = statistics.median(xs) if xs else None
    tp = [r["throughput"] or 0.0 for r in rs]
    out["lo"], out["hi"] = min(tp), max(tp)
    out["limited_by"] = ", ".join(sorted({str(r["limited_by"]) for r in rs}))
    return out


LABELS = {"kube-scheduler": "kube-scheduler", "yunikorn": "yunikorn (schedulingInterval 1 s, its default)",
          "yunikorn-100ms": "yunikorn-100ms"}


def points_table(doc: dict[str, Any], *ceilings: float) -> str:
    """The results page's table of the points: each variant's medians (the throughput's range beside it) and, where
    the page gives each point's ceiling (pods/s, in the points' order), the median throughput's share of it."""
    out = ["| nodes, pods offered | variant | throughput | × ceiling | latency p50 / p99 | scheduler CPU per pod |",
           "|---|---|---|---|---|---|"]
    for i, point in enumerate(doc["points"]):
        size = f"{point['nodes']}, {point['pods']} at {point['qps']:g}/s"
        for j, (key, rs) in enumerate((k, v) for k, v in doc["runs"].items() if k.startswith(point["label"] + "/")):
            r = median_row(rs)
            variant = key.split("/", 1)[1]
            unit = " pods/s" if i == j == 0 else ""
            rng = f" ({r['lo']:.1f}–{r['hi']:.1f})" if r["runs"] > 1 else ""
            ratio = f"{r['throughput'] / ceilings[i]:.2f}" if i < len(ceilings) else "–"
            out.append(f"| {size if j == 0 else ''} | {LABELS.get(variant, variant)} | {r['throughput']:.1f}{unit}{rng}"
                       f" | {ratio} | {r['p50']:.2f} s / {r['p99']:.2f} s | {r['cpu_ms_per_pod']:.2f} ms |")
    return "\n".join(out)


def costs_table(doc: dict[str, Any], label: str, ceiling: float) -> str:
    """One point's runs with what each cost (a run a variant: its own figures, no median): throughput and its share
    of ``ceiling``, latency, the scheduler's CPU per pod and peak RSS, the apiserver's and etcd's CPU seconds, the
    apiserver's writes per pod bound (leases left out) with the events among them, and what it accepted of the offer."""
    out = ["| variant | throughput | × ceiling | latency p50 / p99 | scheduler CPU per pod | scheduler peak RSS | "
           "apiserver / etcd CPU | writes per pod (events) | accepted |", "|---|---|---|---|---|---|---|---|---|"]
    for key, rs in doc["runs"].items():
        if not key.startswith(label + "/"):
            continue
        for r in rs:
            out.append(f"| {LABELS.get(r['variant'], r['variant'])} | {r['throughput']:.1f} pods/s | "
                       f"{r['throughput'] / ceiling:.2f} | {r['p50']:.2f} s / {r['p99']:.2f} s | "
                       f"{r['cpu_ms_per_pod']:.2f} ms | {r['rss_gib']:.1f} GiB | "
                       f"{r['apiserver_cpu']:.0f} s / {r['etcd_cpu']:.0f} s | "
                       f"{r['writes']:.2f} ({r['writes_events']:.2f}) | {r['accepted']:.0f}/s |")
    return "\n".join(out)


def span(doc: dict[str, Any], prefix: str, key: str, digits: int = 0, scale: float = 1.0) -> str:
    """``key`` over every run whose key starts with ``prefix``, as ``171–185`` (one figure where they agree)."""
    xs = [r[key] for k, rs in doc["runs"].items() if k.startswith(prefix) for r in rs if r.get(key) is not None]
    return ranged(xs, f".{digits}f", scale)


def verdicts(doc: dict[str, Any], prefix: str = "") -> str:
    """What limited the runs whose key starts with ``prefix``: ``the apiserver in 18 of 18 runs``."""
    got = [str(r["limited_by"]) for k, rs in doc["runs"].items() if k.startswith(prefix) for r in rs]
    counts = {v: got.count(v) for v in sorted(set(got), key=lambda v: -got.count(v))}
    return ", ".join(f"the {v} in {n} of {len(got)} runs" for v, n in counts.items())


def ratio(doc: dict[str, Any], key: str, variant: str, base: str, digits: int = 1) -> str:
    """``variant``'s median ``key`` over ``base``'s at each point, as ``1.9–2.6x`` (one figure where they agree)."""
    xs = [median_row(doc["runs"][f"{p['label']}/{variant}"])[key] / median_row(doc["runs"][f"{p['label']}/{base}"])[key]
          for p in doc["points"]]
    lo, hi = f"{min(xs):.{digits}f}", f"{max(xs):.{digits}f}"
    return f"{lo}x" if lo == hi else f"{lo}–{hi}x"


def shapes_table(doc: dict[str, Any]) -> str:
    """The application shapes' table: medians, the throughput's range beside."""
    out = ["| shape | throughput | latency p50 / p99 | scheduler CPU per pod |", "|---|---|---|---|"]
    for key, rs in doc["runs"].items():
        if key.startswith("shape/"):
            r = median_row(rs)
            rng = f" ({r['lo']:.1f}–{r['hi']:.1f})" if r["runs"] > 1 else ""
            out.append(f"| {key.removeprefix('shape/').replace(' x ', ' × ')} | {r['throughput']:.1f} pods/s{rng} | "
                       f"{r['p50']:.2f} s / {r['p99']:.2f} s | {r['cpu_ms_per_pod']:.2f} ms |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
