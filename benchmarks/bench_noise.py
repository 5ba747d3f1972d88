"""Run-to-run spread of every gate metric on this machine: the data the gate's error rates are checked on.

Runs the gate scenario (default ``scenarios/perf-gate.yaml``) as two identical stock variants ``a`` and
``b`` interleaved (a b a b …, ``--pairs`` of each) on fresh clusters, exactly as ``kwokbench run --repeat``
does, and stores each run's gate metrics, in start order, with the host evidence, in
``benchmarks/data/noise.json``. Prints per metric: mean, coefficient of variation across runs, and the
spread of the log ratio within interleaved pairs (what a paired comparison sees).

``tests/unit/test_gate_noise.py`` draws A/A and A/B groups from the stored file to check the gate's
false-alarm and detection rates.

    python benchmarks/bench_noise.py [--pairs 12] [--scenario scenarios/perf-gate.yaml] [--out FILE]
    python benchmarks/bench_noise.py --from-data benchmarks/data/noise.json   # the figures of stored data

Then, from the data, the gate's own rule on groups drawn as ``run --repeat`` makes them (2n consecutive
runs split alternately, compared paired), with each metric's noise floor: A/A false regressions and
passes, and the smallest drop of throughput (rise of the others) found in >= 95% of draws, at n = 3, 5, 10.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
PATHS: dict[str, tuple[str, ...]] = {
    "throughput": ("throughput", "average"),
    "binding_rate": ("binding_rate", "average"),
    "latency_p50": ("latency", "created_to_scheduled", "p50"),
    "latency_p90": ("latency", "created_to_scheduled", "p90"),
    "latency_p99": ("latency", "created_to_scheduled", "p99"),
    "attempt_p99": ("scheduler", "scheduling_attempt_duration_seconds", "p99"),
    "scheduler_cpu_per_pod": ("scheduler", "cpu_seconds_per_pod"),
    "unscheduled": ("pods_unscheduled",),
}


def _get(d: Any, path: tuple[str, ...]) -> float | None:
    for k in path:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return float(d)


def extract(run_dir: Path) -> dict[str, Any]:
    from kwokbench.store import load_run

    r = load_run(run_dir)
    s = r.summary or {}
    submit = s.get("submit") or [{}]
    return {"run": run_dir.name, "started_at": r.meta.get("started_at"), "status": r.meta.get("status"),
            "variant": r.meta.get("variant", {}).get("name"), "repeat": (r.meta.get("group") or {}).get("repeat"),
            "metrics": {k: _get(s, p) for k, p in PATHS.items()},
            "pods_scheduled": s.get("pods_scheduled"), "accepted_ratio": submit[0].get("achieved_ratio"),
            "host": s.get("host")}


def error_rates(doc: dict[str, Any]) -> None:
    from kwokbench.compare.gate import METRICS
    from kwokbench.compare.stats import simulate_error_rates

    runs = sorted((r for r in doc["runs"] if r["status"] == "complete"), key=lambda r: r["order"])
    print(f"\ngate rule on {len(runs)} stored runs ({doc['origin']})")
    print(f"{'metric':<22} {'n':>3} {'A/A regression':>15} {'A/A pass':>9} {'detects >=95%':>14}")
    for name in ("throughput", "scheduler_cpu_per_pod", "latency_p50", "latency_p99"):
        v = [r["metrics"][name] for r in runs if r["metrics"].get(name) is not None]
        m = METRICS[name]
        for n in (3, 5, 10):
            if len(v) < 2 * n:
                continue

            def rates(effect: float, n: int = n, v: list[float] = v, m: Any = m) -> dict[str, Any]:
                e = -effect if m.higher_is_better else effect / (1 - effect)  # a drop of throughput, a rise else
                return simulate_error_rates(v, n, e, m.higher_is_better, 0.10, trials=1000, seed=7,
                                            noise_floor=m.noise_floor)

            aa = rates(0.0)["aa"]
            found = next((f"{eff * 100:.0f}%" for eff in np.arange(0.05, 0.55, 0.05)
                          if rates(float(eff))["ab"]["regression"] >= 0.95), "> 50%")
            print(f"{name:<22} {n:>3} {aa['regression'] * 100:>14.1f}% {aa['pass'] * 100:>8.1f}% {found:>14}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from-data", help="only print the figures of a stored noise file")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--scenario", default=str(REPO / "scenarios/perf-gate.yaml"))
    ap.add_argument("--out", default=str(REPO / "benchmarks/data/noise.json"))
    args = ap.parse_args()
    if args.from_data:
        error_rates(json.loads(Path(args.from_data).read_text()))
        return
    from kwokbench.store import find_runs

    with tempfile.TemporaryDirectory(prefix="kb-noise-") as tmp:
        cmd = [sys.executable, "-m", "kwokbench", "run", args.scenario, "--set", "schedulers=[{name: a}, {name: b}]",
               "--repeat", str(args.pairs), "--out", tmp]
        started = datetime.now(UTC)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
        runs = sorted((extract(p) for p in find_runs([Path(tmp)])), key=lambda r: r["started_at"] or "")
    for i, r in enumerate(runs):
        r["order"] = i
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    doc = {"format_version": 1,
           "origin": (f"benchmarks/bench_noise.py --pairs {args.pairs} on {platform.node()} "
                      f"({started:%Y-%m-%d %H:%M} UTC, kwokbench {commit.stdout.strip()}): "
                      f"{Path(args.scenario).name} as two identical stock variants a/b interleaved"),
           "scenario": Path(args.scenario).name, "runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    done = [r for r in runs if r["status"] == "complete"]
    print(f"{len(done)} of {len(runs)} runs complete; stored in {args.out}")
    print(f"{'metric':<14} {'mean':>10} {'CV':>7} {'pair log-ratio sd':>18} {'min':>10} {'max':>10}")
    for m in PATHS:
        v = np.array([r["metrics"][m] for r in done if r["metrics"][m] is not None], dtype=np.float64)
        if not len(v):
            continue
        a = {r["repeat"]: r["metrics"][m] for r in done if r["variant"] == "a"}
        b = {r["repeat"]: r["metrics"][m] for r in done if r["variant"] == "b"}
        lr = np.array([np.log(b[k] / a[k]) for k in a if k in b and a[k] and b[k]])
        cv = float(v.std(ddof=1) / v.mean()) if len(v) > 1 and v.mean() else 0.0
        sd = f"{lr.std(ddof=1):.3f}" if len(lr) > 1 else "-"
        print(f"{m:<14} {v.mean():>10.4g} {cv * 100:>6.1f}% {sd:>18} {v.min():>10.4g} {v.max():>10.4g}")
    cal = [r["host"]["calibration_seconds"]["before"] for r in done if r.get("host")]
    if cal:
        print(f"host CPU calibration: {min(cal) * 1000:.0f}–{max(cal) * 1000:.0f} ms")
    error_rates(doc)


if __name__ == "__main__":
    main()
