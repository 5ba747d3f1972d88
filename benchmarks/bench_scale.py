"""Scale on one box: nodes Ready at 1k/5k/10k, pods/s bound at each size with pods offered faster than
bound, peak RSS and CPU of every component and of kwokbench itself, and `report` seconds on the
100k-pod run (issue 16).

Every run goes through the real CLI (`kwokbench run scenarios/scale-10k.yaml --set ...`), so what is
measured is what a user gets. kwokbench's own memory is sampled from outside every 0.5 s: the RSS of the
`kwokbench run` process plus its Python children (watcher, scraper, submit workers), not the cluster's
components (those are in the summary's `processes`). Targets: 10k nodes Ready <= 60 s; the 100k-pod run
completes with kwokbench's peak RSS < 1 GiB and `report` < 60 s.

    python benchmarks/bench_scale.py                       # 1k, 5k (10k pods each) and 10k nodes (100k pods)
    python benchmarks/bench_scale.py --points 1000:10000    # one point: nodes:pods
    python benchmarks/bench_scale.py --skip-kwokctl        # no `kwokctl scale` comparison (default: up to 5k)
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
    args = ap.parse_args()
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
        biggest = max(results, key=lambda x: x[1])
        secs = report_seconds(biggest[2]["run"], out / "report")
        print(f"\n`kwokbench report` on the {biggest[1]}-pod run: {secs:.1f} s")


if __name__ == "__main__":
    main()
