"""Scale on one box: nodes Ready at 1k/5k/10k, pods/s bound at each size with pods offered faster than
bound, peak RSS and CPU of every component and of kwokbench itself, and `report` seconds on the
100k-pod run (issue 16).

Every run goes through the real CLI (`kwokbench run scenarios/scale-10k.yaml --set ...`), so what is
measured is what a user gets. kwokbench's own memory is sampled from outside every 0.5 s: the RSS of the
`kwokbench run` process plus its Python children (watcher, scraper, submit workers), not the cluster's
components (those are in the summary's `processes`). Targets: 10k nodes Ready <= 60 s; the 100k-pod run
completes with kwokbench's peak RSS < 1 GiB and `report` < 60 s.

    .venv/bin/python benchmarks/bench_scale.py                       # 1k, 5k (10k pods each) and 10k nodes (100k pods)
    .venv/bin/python benchmarks/bench_scale.py --points 1000:10000    # one point: nodes:pods
    .venv/bin/python benchmarks/bench_scale.py --skip-kwokctl        # no `kwokctl scale` comparison (default: up to 5k)
    .venv/bin/python benchmarks/bench_scale.py --data docs/results/data/scale-DATE.json

``--data FILE`` keeps the Ready times, each point's figures (throughput, creates accepted, what limited it, every
component's CPU and peak RSS, kwokbench's own peak RSS, the wall time) and `report`'s seconds with the command, this
checkout's commit, the day and the host; the results pages quote them through :func:`ready`, :func:`bound`,
:func:`rss` and the other functions below.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from bench_up import kwokbench_up, kwokctl_scale
from stored import here, write

from kwokbench.cluster import Kwokctl
from kwokbench.toolchain import Toolchain

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios/scale-10k.yaml"


class TreeRss:
    """Peak summed RSS of a process and its Python descendants (kwokbench's own processes)."""

    def __init__(self, pid: int, every: float = 0.5) -> None:
        self.pid, self.every, self.peak, self._stop = pid, every, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                root = psutil.Process(self.pid)
                procs = [root, *(c for c in root.children(recursive=True) if "python" in c.name().lower())]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except psutil.Error:
                pass
            self._stop.wait(self.every)

    def stop(self) -> int:
        self._stop.set()
        self._t.join(5)
        return self.peak


def run_point(nodes: int, pods: int, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "kwokbench", "run", str(SCENARIO), "--out", str(out),
           "--set", f"cluster.node_groups.0.count={nodes}", "--set", f"workloads.0.count={pods}"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True)
    rss = TreeRss(proc.pid)
    output, _ = proc.communicate()
    peak = rss.stop()
    wall = time.monotonic() - t0
    runs = sorted((out / "scale-10k").iterdir())
    if proc.returncode != 0 or not runs:
        raise SystemExit(f"kwokbench run ({nodes} nodes, {pods} pods) failed ({proc.returncode}):\n{output[-3000:]}")
    run = runs[-1]
    summary = json.loads((run / "summary.json").read_text())
    return {"run": run, "wall": wall, "kwokbench_rss": peak, "summary": summary,
            "meta": json.loads((run / "meta.json").read_text())}


def report_seconds(run: Path, out: Path) -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "kwokbench", "report", str(run), "-o", str(out)], check=True,
                   capture_output=True, stdin=subprocess.DEVNULL)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="1000,5000,10000", help="node counts for the Ready-time part")
    ap.add_argument("--points", default="1000:10000,5000:10000,10000:100000", help="nodes:pods of the runs")
    ap.add_argument("--skip-kwokctl", action="store_true", help="skip the `kwokctl scale node` comparison")
    ap.add_argument("--kwokctl-max", type=int, default=5000,
                    help="compare with `kwokctl scale node` up to this many nodes (211 s at 10k here)")
    ap.add_argument("--skip-ready", action="store_true", help="skip the node-Ready part")
    ap.add_argument("--data", type=Path, help="write the figures, the command, commit, day and host here (JSON)")
    args = ap.parse_args()
    ready_rows: list[dict[str, Any]] = []
    point_rows: list[dict[str, Any]] = []
    tc = Toolchain()
    tc.install("auto")

    if not args.skip_ready:
        print("## nodes Ready (kwokbench up vs kwokctl scale node, fresh clusters)")
        print(f"{'nodes':>6} {'kwokbench ready s':>18} {'kwokctl scale ready s':>22} {'ratio':>6}")
        with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
            k = Kwokctl(tc, Path(home))
            for n in [int(x) for x in args.nodes.split(",")]:
                kb = kwokbench_up(k, n)
                kc = None if args.skip_kwokctl or n > args.kwokctl_max else kwokctl_scale(k, n)
                ratio = f"{kc['ready'] / kb['ready']:.2f}x" if kc else "-"
                kc_s = f"{kc['ready']:.1f}" if kc else "-"
                print(f"{n:>6} {kb['ready']:>18.1f} {kc_s:>22} {ratio:>6}", flush=True)
                ready_rows.append({"nodes": n, "kwokbench": kb["ready"], "kwokctl": kc["ready"] if kc else None})

    print("\n## pods offered at 1000/s (faster than bound), through `kwokbench run`")
    with tempfile.TemporaryDirectory(prefix="kb-scale-") as tmp:
        out = Path(tmp)
        results = []
        for point in args.points.split(","):
            nodes, pods = (int(x) for x in point.split(":"))
            r = run_point(nodes, pods, out / f"{nodes}-{pods}")
            results.append((nodes, pods, r))
            s = r["summary"]
            sub = (s.get("submit") or [{}])[0]
            tp = s.get("throughput") or {}
            median = (tp.get("per_second") or {}).get("p50") or 0
            print(f"\n{nodes} nodes, {pods} pods: {s['pods_scheduled']} scheduled in {r['wall']:.0f} s wall; "
                  f"bound {tp.get('average') or 0:.1f} pods/s (median second {median:.0f}); creates accepted "
                  f"{sub.get('accepted_qps') or 0:.0f}/s of {sub.get('offered_qps') or 0:.0f}/s offered", flush=True)
            print(f"  limited by: {(s.get('limited_by') or {}).get('sentence', '-')}")
            print(f"  kwokbench peak RSS (run + its Python children): {r['kwokbench_rss'] / 2**20:.0f} MiB")
            print(f"  {'component':<24} {'CPU s':>8} {'cores in window':>16} {'peak RSS MiB':>13}")
            for comp, p in sorted((s.get("processes") or {}).items()):
                cores = p.get("cores_window")
                print(f"  {comp:<24} {p['cpu_seconds']:>8.1f} {(f'{cores:.2f}' if cores is not None else '-'):>16} "
                      f"{p['rss_peak_bytes'] / 2**20:>13.0f}")
            if nodes == 5000 and (c := s.get("ceiling")):
                print(f"  vs this host's scheduler_perf ceiling: {json.dumps(c)[:300]}")
            evidence = (s.get("limited_by") or {}).get("evidence") or {}
            queue = evidence.get("queue_max")
            window_cores = {c: v.get("mean") for c, v in (evidence.get("cores") or {}).items()}
            point_rows.append({
                "nodes": nodes, "pods": pods, "scheduled": s["pods_scheduled"], "wall": r["wall"],
                "throughput": tp.get("average"), "accepted": sub.get("accepted_qps"), "offered": sub.get("offered_qps"),
                "limited_by": (s.get("limited_by") or {}).get("verdict"), "queue_max": queue,
                "kwokbench_rss_mib": r["kwokbench_rss"] / 2**20,
                "processes": {c: {"cpu_seconds": p["cpu_seconds"], "cores_window": window_cores.get(c),
                                  "rss_mib": p["rss_peak_bytes"] / 2**20}
                              for c, p in (s.get("processes") or {}).items()}})
        biggest = max(results, key=lambda x: x[1])
        secs = report_seconds(biggest[2]["run"], out / "report")
        print(f"\n`kwokbench report` on the {biggest[1]}-pod run: {secs:.1f} s")
    if args.data:
        options = " ".join(a for a in sys.argv[1:] if not a.startswith("--data") and a != str(args.data))
        write(args.data, {**here("nodes Ready at each size, then one `kwokbench run scenarios/scale-10k.yaml` per "
                                 "point and `kwokbench report` on the largest (benchmarks/bench_scale.py)",
                                 "bench_scale.py", options),
                          "runs": {"ready": ready_rows, "points": point_rows},
                          "report_seconds": secs, "report_pods": biggest[1]})


def _point(doc: dict[str, Any], nodes: int, pods: int | None = None) -> dict[str, Any]:
    return dict(next(r for r in doc["runs"]["points"] if r["nodes"] == nodes and pods in (None, r["pods"])))


def ready(doc: dict[str, Any], who: str = "kwokbench") -> str:
    """Seconds to every node Ready at each size (``who``: kwokbench or kwokctl): ``5.4 s / 19.9 s / 45.4 s``."""
    return " / ".join(f"{r[who]:.1f} s" for r in doc["runs"]["ready"] if r[who] is not None)


def slower(doc: dict[str, Any]) -> str:
    """``kwokctl scale node`` over kwokbench at each size both ran: ``2.4x / 3.3x``."""
    return " / ".join(f"{r['kwokctl'] / r['kwokbench']:.1f}x" for r in doc["runs"]["ready"] if r["kwokctl"])


def bound(doc: dict[str, Any]) -> str:
    """Pods bound per second at each point: ``378.6 / 296.6 / 338.6``."""
    return " / ".join(f"{r['throughput']:.1f}" for r in doc["runs"]["points"])


def bound_at(doc: dict[str, Any], nodes: int, pods: int | None = None) -> str:
    """One point's pods bound per second: ``338.6 pods/s``."""
    return f"{_point(doc, nodes, pods)['throughput']:.1f} pods/s"


def accepted(doc: dict[str, Any]) -> str:
    """Creates the apiserver accepted per second at each point: ``380 / 297 / 344``."""
    return " / ".join(f"{r['accepted']:.0f}" for r in doc["runs"]["points"])


def limits(doc: dict[str, Any]) -> str:
    """What limited each point: ``apiserver / apiserver / scheduler``."""
    return " / ".join(str(r["limited_by"]) for r in doc["runs"]["points"])


def scheduled(doc: dict[str, Any]) -> str:
    """Pods scheduled of those created, at each point: ``10000 of 10000 / …``."""
    return " / ".join(f"{r['scheduled']} of {r['pods']}" for r in doc["runs"]["points"])


def wall(doc: dict[str, Any], nodes: int, pods: int | None = None) -> str:
    """The wall time of a point's `kwokbench run`: ``374 s``."""
    return f"{_point(doc, nodes, pods)['wall']:.0f} s"


def cores(doc: dict[str, Any], nodes: int, component: str = "kube-scheduler") -> str:
    """The cores ``component`` used over the point's window, and the scheduler's queue at its longest."""
    r = _point(doc, nodes)
    c = r["processes"].get(component, {}).get("cores_window")
    q = f", queue up to {r['queue_max']:.0f}" if r.get("queue_max") is not None else ""
    return (f"{c:.2f} cores" if c is not None else "cores not measured") + q


def rss(doc: dict[str, Any], nodes: int, pods: int | None = None) -> str:
    """kwokbench's peak RSS and each component's at a point, largest first: ``kwokbench 549 MiB; kube-apiserver
    11.0 GiB, …``."""
    r = _point(doc, nodes, pods)

    def size(mib: float) -> str:
        return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"

    procs = sorted(r["processes"].items(), key=lambda kv: -kv[1]["rss_mib"])
    return f"**kwokbench {size(r['kwokbench_rss_mib'])}**; " + ", ".join(f"{c} {size(p['rss_mib'])}" for c, p in procs)


def cpu(doc: dict[str, Any], nodes: int, pods: int | None = None) -> str:
    """Each component's CPU seconds over a point's run, largest first: ``kube-scheduler 246 s, …``."""
    procs = sorted(_point(doc, nodes, pods)["processes"].items(), key=lambda kv: -kv[1]["cpu_seconds"])
    return ", ".join(f"{c} {p['cpu_seconds']:.0f} s" for c, p in procs)


def report(doc: dict[str, Any]) -> str:
    """`kwokbench report`'s seconds on the largest run: ``2.8 s``."""
    return f"{doc['report_seconds']:.1f} s"


if __name__ == "__main__":
    main()
