"""The same workload on two Kubernetes releases, interleaved on identical clusters: does the newer release schedule
it slower?

1. Each release's control plane is built from Go modules (`kwokbench tools install --kubernetes TAG`); its build
   time is printed (or "cached", with the time the cached build took when its log says).
2. scenarios/kubernetes-upgrade.yaml (100 nodes, 1000 pods offered at 300/s: scheduler-bound) and, with --dra,
   scenarios/dra.yaml (100 nodes × 8 GPUs, a claim per pod), each with one variant per release, `--repeat N`
   interleaved. Printed per release: pods bound per second, scheduler CPU per pod, attempt p50/p99, created →
   scheduled p50/p99; then `kwokbench gate` of the newer release against the older, with its intervals.

    .venv/bin/python benchmarks/bench_versions.py [--releases v1.36.4,v1.37.2] [--repeat 3] [--dra]

The machine is shared and noisy: read the gate's verdict and ratios of one run, not the absolute figures.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kwokbench.store import find_runs, load_run
from kwokbench.toolchain import Toolchain

ROOT = Path(__file__).resolve().parents[1]


def build(release: str) -> str:
    built = Toolchain(kubernetes=release).component("kubernetes")
    cached = all(s.ok for s in Toolchain(kubernetes=release).check(optional=False) if s.component == "kubernetes")
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "kwokbench", "tools", "install", "--core-only", "--kubernetes", release],
                   check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return f"cached ({built.dir(Toolchain().cache)})" if cached else f"built in {time.monotonic() - t:.0f} s"


def variant(release: str) -> str:
    return "v" + release.removeprefix("v").replace(".", "-")


def measure(scenario: str, releases: list[str], repeat: int, out: Path, sets: list[str]) -> dict[str, list[Any]]:
    schedulers = ", ".join(f"{{name: {variant(r)}, kubernetes: {r}}}" for r in releases)
    cmd = [sys.executable, "-m", "kwokbench", "run", str(ROOT / "scenarios" / scenario), "--out", str(out),
           "--repeat", str(repeat), "--set", f"schedulers=[{schedulers}]"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    by: dict[str, list[Any]] = {}
    for p in find_runs([out]):
        r = load_run(p)
        by.setdefault(r.meta["variant"]["name"], []).append(r)
    return by


def row(runs: list[Any]) -> dict[str, float]:
    def med(get: Any) -> float:
        vals = [v for r in runs if (v := get(r.summary or {})) is not None]
        return statistics.median(vals) if vals else float("nan")

    def sched(s: dict[str, Any]) -> dict[str, Any]:
        return s.get("scheduler") or {}

    def att(s: dict[str, Any]) -> dict[str, Any]:
        return sched(s).get("scheduling_attempt_duration_seconds") or {}

    def lat(s: dict[str, Any]) -> dict[str, Any]:
        return (s.get("latency") or {}).get("created_to_scheduled") or {}

    return {"throughput": med(lambda s: (s.get("throughput") or {}).get("average")),
            "cpu_ms": med(lambda s: (sched(s).get("cpu_seconds_per_pod") or 0) * 1000),
            "attempt_p50_ms": med(lambda s: (att(s).get("p50") or 0) * 1000),
            "attempt_p99_ms": med(lambda s: (att(s).get("p99") or 0) * 1000),
            "sched_p50_s": med(lambda s: lat(s).get("p50")), "sched_p99_s": med(lambda s: lat(s).get("p99"))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--releases", default="v1.36.4,v1.37.2", help="two or more Kubernetes release tags, oldest first")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved runs per release")
    ap.add_argument("--dra", action="store_true", help="also scenarios/dra.yaml")
    args = ap.parse_args()
    releases = args.releases.split(",")
    for r in releases:
        print(f"Kubernetes {r}: {build(r)}")
    cases: list[tuple[str, list[str]]] = [("kubernetes-upgrade.yaml", [])]
    if args.dra:
        cases.append(("dra.yaml", []))
    with tempfile.TemporaryDirectory(prefix="kb-bench-versions-") as tmp:
        for scenario, sets in cases:
            out = Path(tmp) / scenario.removesuffix(".yaml")
            by = measure(scenario, releases, args.repeat, out, sets)
            print(f"\n{scenario}, {args.repeat} interleaved runs per release (medians)")
            print(f"{'release':<10} {'runs':>4} {'pods/s':>7} {'CPU/pod':>8} {'attempt p50/p99':>16} "
                  f"{'sched p50/p99':>14}")
            rows = {r: row(by.get(variant(r), [])) for r in releases}
            for r, x in rows.items():
                print(f"{r:<10} {len(by.get(variant(r), [])):>4} {x['throughput']:>7.1f} {x['cpu_ms']:>6.1f}ms "
                      f"{x['attempt_p50_ms']:>7.0f}/{x['attempt_p99_ms']:.0f} ms "
                      f"{x['sched_p50_s']:>6.2f}/{x['sched_p99_s']:.2f} s")
            old, new = rows[releases[0]], rows[releases[-1]]
            print(f"{releases[-1]} / {releases[0]}: throughput {new['throughput'] / old['throughput']:.2f}x, "
                  f"scheduler CPU per pod {new['cpu_ms'] / old['cpu_ms']:.2f}x")
            res = subprocess.run([sys.executable, "-m", "kwokbench", "gate", "--baseline", str(out), "--candidate",
                                  str(out), "--baseline-variant", variant(releases[0]), "--candidate-variant",
                                  variant(releases[-1])], capture_output=True, text=True, cwd=ROOT)
            print(res.stdout.rstrip())
            print(f"gate exit {res.returncode}")


if __name__ == "__main__":
    main()
