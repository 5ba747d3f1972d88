"""Run-to-run spread of every gate metric on this machine: the data the gate's error rates are checked on.

Runs the gate scenario (default ``scenarios/perf-gate.yaml``) as two identical stock variants ``a`` and
``b`` interleaved (a b a b …, ``--pairs`` of each) on fresh clusters, exactly as ``kwokbench run --repeat``
does, and stores each run's gate metrics, in start order, with the host evidence, in
``benchmarks/data/noise.json``. Prints per metric: mean, coefficient of variation across runs, and the
spread of the log ratio within interleaved pairs (what a paired comparison sees).

``tests/unit/test_gate_noise.py`` draws A/A and A/B groups from the stored file to check the gate's
false-alarm and detection rates.

    .venv/bin/python benchmarks/bench_noise.py [--pairs 12] [--scenario scenarios/perf-gate.yaml] [--out FILE]
    .venv/bin/python benchmarks/bench_noise.py --from-data benchmarks/data/noise.json   # the figures of stored data
    .venv/bin/python benchmarks/bench_noise.py --from-data benchmarks/data/noise.json,benchmarks/data/noise-busy.json \\
        --data docs/results/data/noise-rates-DAY.json   # kept for the gate page (rates_table)

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


GATED = ("throughput", "scheduler_cpu_per_pod", "latency_p50", "latency_p99")
"""The metrics whose error rates are drawn (the gate's, with their noise floors)."""
SIZES = (3, 5, 10)
EFFECTS = tuple(round(float(e), 2) for e in np.arange(0.05, 0.55, 0.05))


def error_rates(doc: dict[str, Any], metrics: tuple[str, ...] = GATED, trials: int = 1000) -> dict[str, Any]:
    """The gate's own rule on groups drawn from the stored runs as ``run --repeat`` makes them, per metric and group
    size ``n``: the A/A's false regressions and passes, and the smallest change (a drop of throughput, a rise of the
    others, in steps of 5%) called a regression in >= 95% of draws (None: not even 50%)."""
    from kwokbench.compare.gate import METRICS
    from kwokbench.compare.stats import simulate_error_rates

    runs = sorted((r for r in doc["runs"] if r["status"] == "complete"), key=lambda r: r["order"])
    out: dict[str, Any] = {}
    for name in metrics:
        v = [r["metrics"][name] for r in runs if r["metrics"].get(name) is not None]
        m = METRICS[name]
        for n in SIZES:
            if len(v) < 2 * n:
                continue

            def rates(effect: float, n: int = n, v: list[float] = v, m: Any = m) -> dict[str, Any]:
                e = -effect if m.higher_is_better else effect / (1 - effect)  # a drop of throughput, a rise else
                return simulate_error_rates(v, n, e, m.higher_is_better, 0.10, trials=trials, seed=7,
                                            noise_floor=m.noise_floor)

            aa = rates(0.0)["aa"]
            found = next((eff for eff in EFFECTS if rates(eff)["ab"]["regression"] >= 0.95), None)
            out.setdefault(name, {})[str(n)] = {"aa_regression": aa["regression"], "aa_pass": aa["pass"],
                                                "found": found}
    return {"origin": doc["origin"], "runs": len(runs), "trials": trials, "allowed": 0.10, "rates": out,
            "throughput_apart": _apart([r["metrics"]["throughput"] for r in runs])}


def _apart(values: list[float | None]) -> float | None:
    """How far apart identical runs came: the largest over the smallest."""
    v = [x for x in values if x]
    return max(v) / min(v) if v else None


def _found(rates: dict[str, Any]) -> str:
    """The smallest change found in >= 95% of draws, as the tables print it: ``15%``, or ``> 50%``."""
    return f"{rates['found'] * 100:.0f}%" if rates["found"] is not None else "> 50%"


def _share(x: float, digits: int) -> str:
    return f"{x * 100:.{digits}f}".rstrip("0").rstrip(".") + "%" if digits else f"{x * 100:.0f}%"


def _row(label: str, rates: dict[str, Any], word: str) -> str:
    sizes = list(rates)
    wrong = [_share(rates[n]["aa_regression"], 1) for n in sizes]
    found = [_found(rates[n]) for n in sizes]
    lead = "" if found[0].startswith(">") else "a "
    return (f"| {label} | {' / '.join(sizes)} | {wrong[0] if len(set(wrong)) == 1 else ' / '.join(wrong)} | "
            f"{' / '.join(_share(rates[n]['aa_pass'], 0) for n in sizes)} | {lead}{' / '.join(found)} {word} |")


LABELS = {"throughput": ("throughput", "drop"), "scheduler_cpu_per_pod": ("scheduler CPU per pod", "rise"),
          "latency_p50": ("latency p50", "rise"), "latency_p99": ("latency p99", "rise")}


def rates_table(doc: dict[str, Any]) -> str:
    """The stored error rates as the gate page's table: every gated metric of the quiet host's runs, then the busy
    host's throughput (its other figures are of an earlier scenario version)."""
    from kwokbench.compare.gate import METRICS

    rows = ["| metric (allowed 10%) | n pairs | A/A false regressions | A/A pass | smallest change found in >= 95% |",
            "|---|---|---|---|---|"]
    for name, rates in doc["runs"]["noise.json"]["rates"].items():
        label, word = LABELS[name]
        floor = METRICS[name].noise_floor
        rows.append(_row(f"{label} (floor {floor * 100:.0f}%)" if floor else label, rates, word))
    rows.append(_row("throughput, busy host", doc["runs"]["noise-busy.json"]["rates"]["throughput"], "drop"))
    return "\n".join(rows)


def apart(doc: dict[str, Any], name: str) -> str:
    """How far apart identical runs' throughput came in a stored file: ``2.4``."""
    return f"{doc['runs'][name]['throughput_apart']:.1f}"


def print_rates(rates: dict[str, Any]) -> None:
    print(f"\ngate rule on {rates['runs']} stored runs ({rates['origin']})")
    print(f"{'metric':<22} {'n':>3} {'A/A regression':>15} {'A/A pass':>9} {'detects >=95%':>14}")
    for name, by_n in rates["rates"].items():
        for n, r in by_n.items():
            print(f"{name:<22} {n:>3} {r['aa_regression'] * 100:>14.1f}% {r['aa_pass'] * 100:>8.1f}% {_found(r):>14}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from-data", help="only print the figures of a stored noise file")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--scenario", default=str(REPO / "scenarios/perf-gate.yaml"))
    ap.add_argument("--out", default=str(REPO / "benchmarks/data/noise.json"))
    ap.add_argument("--data", metavar="OUT", help="with --from-data: keep the error rates of every file given "
                                                  "(docs/results/data/), with the command, commit, day and host")
    args = ap.parse_args()
    if args.from_data:
        files = [Path(f) for f in args.from_data.split(",")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SystemExit(f"bench_noise.py: no stored noise file at {', '.join(missing)}")
        rates = {f.name: error_rates(json.loads(f.read_text())) for f in files}
        for r in rates.values():
            print_rates(r)
        if args.data:
            from stored import here, write

            write(Path(args.data), {**here("the gate's rule (10% allowed) on groups drawn from identical stored runs "
                                           "of scenarios/perf-gate.yaml: A/A false regressions and passes, the "
                                           "smallest change found", "bench_noise.py"), "runs": rates})
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
    print_rates(error_rates(doc))


if __name__ == "__main__":
    main()
