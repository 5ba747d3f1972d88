"""What does a run cost kwokbench itself, set against the control plane it measures?

Brings up one cluster (`kwokbench up --nodes N`, in a temporary KWOKBENCH_HOME), then runs the quickstart scenario on
it (`--cluster`, `--set workloads.0.count=PODS`) R times. Every 50 ms it reads the CPU of each process of the run's
tree: the run's own process, its forkserver, the forkserver's children (the scraper, the pod watch, the submit
workers), and the binaries and helpers it starts; and, over the same run, the CPU of the cluster's components.
Prints min / median / max CPU-seconds a run per role, and the run's wall time.

    .venv/bin/python benchmarks/bench_harness.py [--nodes 20] [--pods 60] [--repeat 4]

A process sampled every 50 ms is read at most 50 ms before it ends: a role's CPU is a floor, short by at most what
its processes spent in their last 50 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
ROLES = ("run", "forkserver", "children", "binaries and helpers", "control plane")


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def _components(home: str) -> dict[int, float]:
    """The cluster's processes (their command lines name the temporary home), by pid, with their CPU so far."""
    out = {}
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if argv and home in " ".join(argv) and "python" not in Path(argv[0]).name:
            with contextlib.suppress(psutil.Error):
                out[p.pid] = _cpu(p)
    return out


def _role(p: psutil.Process, root: int, server: set[int]) -> str:
    argv = " ".join(p.cmdline())
    if p.pid == root:
        return "run"
    if "multiprocessing.forkserver" in argv and p.ppid() not in server:
        server.add(p.pid)
        return "forkserver"
    if p.ppid() in server or "spawn_main" in argv:
        return "children"
    return "binaries and helpers"


def one_run(env: dict[str, str], cluster: str, pods: int, out: Path) -> dict[str, float]:
    """One run on the live cluster: CPU-seconds by role, and its wall time."""
    before = _components(env["KWOKBENCH_HOME"])
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kwokbench", "run", str(REPO / "scenarios/quickstart.yaml"),
                             "--cluster", cluster, "--set", f"workloads.0.count={pods}", "--out", str(out)],
                            env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    root = psutil.Process(proc.pid)
    server: set[int] = set()
    seen: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            break
        for p in tree:
            with contextlib.suppress(psutil.Error):
                seen[p.pid] = (_role(p, proc.pid, server), _cpu(p))
        time.sleep(0.05)
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kwokbench run failed ({proc.returncode})")
    after = _components(env["KWOKBENCH_HOME"])
    row = dict.fromkeys(ROLES, 0.0)
    for role, cpu in seen.values():
        row[role] += cpu
    row["control plane"] = sum(after[p] - before.get(p, 0.0) for p in after)
    row["wall"] = wall
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--pods", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="bench-harness-")
    env = {**os.environ, "KWOKBENCH_HOME": home}
    kb = [sys.executable, "-m", "kwokbench"]
    subprocess.run([*kb, "up", "--name", "harness", "--nodes", str(args.nodes)], env=env, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        rows = [one_run(env, "harness", args.pods, Path(home) / "runs") for _ in range(args.repeat)]
    finally:
        subprocess.run([*kb, "down", "harness"], env=env, check=False, stdout=subprocess.DEVNULL)
    print(f"{args.repeat} runs of quickstart, {args.pods} pods on a live {args.nodes}-node cluster "
          f"(CPU-seconds a run: min / median / max)")
    for key in (*ROLES, "wall"):
        xs = [r[key] for r in rows]
        unit = " s" if key == "wall" else ""
        print(f"  {key:<22} {min(xs):6.2f} {statistics.median(xs):6.2f} {max(xs):6.2f}{unit}")
    own = [sum(r[k] for k in ROLES[:4]) for r in rows]
    print(f"  {'kwokbench in all':<22} {min(own):6.2f} {statistics.median(own):6.2f} {max(own):6.2f}")


if __name__ == "__main__":
    main()
