"""False alarms and detections of ``kwokbench detect`` on histories made of measured runs.

A history is ``--commits`` commits, one run each, whose figures are drawn (with replacement) from the
complete runs of a file written by ``benchmarks/bench_noise.py``: identical runs of
scenarios/perf-gate.yaml on this project's 2-core machine (``noise.json``: a quiet host; ``noise-busy.json``:
other work sharing the cores; each file's ``origin`` says when and how). In an A/A history every commit is
the same code; in a step history the throughput of every commit from a random one on (at least
``MIN_SEGMENT`` commits from either end) is lowered by ``--step``. Each history goes through the detector
exactly as ``kwokbench detect`` runs it (index rows → commit order → E-divisive → minimum magnitude):

- false alarm: an A/A history in which ``detect`` reports any regression (exit 1);
- detection: a step history in which it reports a regression; "at the commit" when the change it reports
  is the injected one (the first commit after the step, within one commit).

Drawing runs independently ignores drift of the host over a session; ``tests/unit/test_detect.py`` checks
the in-order series of the same files as they were measured.

``--duets`` asks the same of a plugin's history recorded two ways, on the runs of benchmarks/bench_verdicts.py
(scenarios/cost-ab.yaml: a Score plugin whose cost moves the scheduler's CPU per pod and nothing else), quiet and
beside benchmarks/noisy_neighbour.py: each commit **one run** (``scheduler_cpu_per_pod``, drawn from both sides of
the recorded A/A sequential pairs: 16 runs a host) or each commit **one duet against a pinned reference**
(``duet_cpu_per_pod``, the candidate side over the reference side at the same instants: drawn from the 8 recorded
A/A duets, resampled, and from a normal of their measured log spread, as bench_verdicts.py draws them), the
candidate's CPU per pod raised by ``--duet-steps`` from a random commit on. One recording's runs span minutes:
drawing them ignores a runner's drift over days, which a single run carries into its history and a duet's ratio
cancels.

``--data OUT`` stores what either mode measured, with the command, the commit, the day and the host: what
docs/results/gate-and-detect.md renders (docs/figures.py's ``bench`` macro with :func:`duets_table`,
:func:`history_table` and :func:`found_after`).

    .venv/bin/python benchmarks/bench_detect.py [--trials 500] [--commits 20] [--step 0.15] [--json] [--data OUT]
    .venv/bin/python benchmarks/bench_detect.py --duets [--trials 500] [--duet-steps 0.05,0.10,0.15]
        [--threshold 0.03] [--data OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from stored import both, here, pct, write  # noqa: E402

from kwokbench.compare.detect import MIN_SEGMENT, detect  # noqa: E402

DATA = REPO / "benchmarks" / "data"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def measured(name: str) -> tuple[str, list[dict[str, float]]]:
    doc = json.loads((DATA / name).read_text())
    return doc["origin"], [r["metrics"] for r in doc["runs"] if r["status"] == "complete"]


def history(runs: list[dict[str, float]], commits: int, rng: np.random.Generator, step: float,
            step_at: int | None) -> list[dict[str, Any]]:
    """Index rows of one history (what ``kwokbench history`` returns for stored runs)."""
    rows = []
    for i, j in enumerate(rng.integers(0, len(runs), commits)):
        figures = dict(runs[j])
        if step_at is not None and i >= step_at:
            figures["throughput"] *= 1 - step
        rows.append({"run_id": f"run-{i:03d}", "scenario": "perf-gate", "variant": "default", "status": "complete",
                     "commit": f"{i:040x}", "ref": "main", "started_at": T0 + timedelta(minutes=i), "host": "vm",
                     "ceiling_pods_per_second": None, **figures})
    return rows


def rates(name: str, trials: int, commits: int, step: float, specs: list[str], seed: int) -> dict[str, Any]:
    origin, runs = measured(name)
    rng = np.random.default_rng(seed)
    aa = found = at_commit = 0
    aa_by_metric: dict[str, int] = {s.split(":")[0]: 0 for s in specs}
    by_after: dict[str, list[int]] = {}
    """Step histories by commits measured after the step: [detected, trials]."""
    for t in range(trials):
        result = detect(history(runs, commits, rng, step, None), specs, seed=t)
        aa += result.exit_code == 1
        for s in result.series:
            aa_by_metric[s.spec.metric.name] += any(c.new_regression for c in s.changes)
        k = int(rng.integers(MIN_SEGMENT, commits - MIN_SEGMENT + 1))
        result = detect(history(runs, commits, rng, step, k), ["throughput:-10%"], seed=t)
        hits = [c for c in result.series[0].changes if c.new_regression]
        found += bool(hits)
        bucket = by_after.setdefault(_bucket(commits - k), [0, 0])
        bucket[0] += bool(hits)
        bucket[1] += 1
        at_commit += any(abs(c.index - k) <= 1 for c in hits)
    return {"data": name, "origin": origin, "runs": len(runs), "trials": trials, "commits": commits, "step": step,
            "aa_specs": specs, "false_alarms": aa, "false_alarm_rate": aa / trials,
            "false_alarms_by_metric": aa_by_metric, "detected": found, "detection_rate": found / trials,
            "at_commit": at_commit, "at_commit_rate": at_commit / trials,
            "detected_by_commits_after": {b: by_after[b] for b in sorted(by_after, key=lambda b: int(b.rstrip("+")))}}


def plugin_histories(host: str) -> dict[str, tuple[str, str, list[float]]]:
    """Each way of recording a plugin's history on ``host`` (quiet / noisy): metric, origin, the values drawn."""
    seq = json.loads((DATA / f"verdicts-sequential-{host}-0.json").read_text())
    duet = json.loads((DATA / f"verdicts-duet-{host}-0.json").read_text())
    return {"one run a commit": ("scheduler_cpu_per_pod", seq["origin"],
                                 [p[side]["cpu_per_pod"] for p in seq["pairs"] for side in ("base", "head")]),
            "one duet a commit": ("duet_cpu_per_pod", duet["origin"],
                                  [p["head"]["cpu_per_pod"] / p["base"]["cpu_per_pod"] for p in duet["pairs"]])}


def plugin_rates(metric: str, values: list[float], parametric: bool, trials: int, commits: int, steps: list[float],
                 threshold: float, seed: int) -> dict[str, Any]:
    """A/A false alarms and detection of each step of ``metric`` (a rise is worse) over ``trials`` histories."""
    rng = np.random.default_rng(seed)
    logs = np.log(np.asarray(values))
    centre, sd = float(np.median(logs)), float(np.std(logs, ddof=1))
    spec = [f"{metric}:+{threshold * 100:g}%"]

    def rows(step: float, at: int | None) -> list[dict[str, Any]]:
        x = rng.normal(centre, sd, commits) if parametric else rng.choice(logs, commits)
        out = []
        for i, v in enumerate(np.exp(x)):
            out.append({"run_id": f"run-{i:03d}", "scenario": "cost-ab", "variant": "head", "status": "complete",
                        "commit": f"{i:040x}", "ref": "main", "started_at": T0 + timedelta(minutes=i),
                        "host": "vm", "ceiling_pods_per_second": None,
                        metric: float(v) * (1 + step if at is not None and i >= at else 1)})
        return out

    aa = sum(detect(rows(0.0, None), spec, seed=t).exit_code == 1 for t in range(trials))
    found: dict[str, list[int]] = {}
    for step in steps:
        hits = at = 0
        for t in range(trials):
            k = int(rng.integers(MIN_SEGMENT, commits - MIN_SEGMENT + 1))
            changes = [c for c in detect(rows(step, k), spec, seed=t).series[0].changes if c.new_regression]
            hits += bool(changes)
            at += any(abs(c.index - k) <= 1 for c in changes)
        found[f"{step:g}"] = [hits, at]
    return {"metric": metric, "spec": spec[0], "values": len(values), "log_sd": sd, "drawn": "normal" if parametric
            else "resampled", "trials": trials, "commits": commits, "false_alarms": aa, "found": found}


def store(args: argparse.Namespace, what: str, runs: dict[str, Any]) -> None:
    """``--data``: what was measured and how, with the commit it ran at (a dirty checkout recorded)."""
    write(Path(args.data), {**here(what, "bench_detect.py"), "runs": runs})


def duets_main(args: argparse.Namespace) -> None:
    steps = [float(x) for x in args.duet_steps.split(",")]
    out = []
    for host in ("quiet", "noisy"):
        for way, (metric, origin, values) in plugin_histories(host).items():
            for parametric in (False, True):
                start = time.monotonic()
                r = plugin_rates(metric, values, parametric, args.trials, args.commits, steps, args.threshold,
                                 args.seed)
                r.update(host=host, way=way, origin=origin, seconds=round(time.monotonic() - start, 1))
                out.append(r)
                if args.json:
                    continue
                if not parametric:
                    print(f"{host} host, {way} ({r['values']} recorded, spread {r['log_sd'] * 100:.1f}%; {origin})")
                print(f"  {r['drawn']:>9}, {r['spec']}: A/A false alarms {r['false_alarms']}/{r['trials']} "
                      f"({r['false_alarms'] / r['trials'] * 100:.1f}%); " + ", ".join(
                          f"{float(s) * 100:g}% step found {h / r['trials'] * 100:.1f}% (at its commit ±1 "
                          f"{a / r['trials'] * 100:.1f}%)" for s, (h, a) in r["found"].items())
                      + f"  [{r['seconds']} s]")
    if args.json:
        print(json.dumps(out, indent=1))
    if args.data:
        store(args, "a plugin's history recorded as one run or one duet a commit: detect's false alarms and steps "
                    "found, drawn from the pairs of benchmarks/data/verdicts-{sequential,duet}-{quiet,noisy}-0.json",
              {f"{r['host']}/{r['way']}/{r['drawn']}": r for r in out})


def _bucket(after: int) -> str:
    return str(after) if after < 6 else "6+"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--step", type=float, default=0.15, help="the injected drop of throughput")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--duets", action="store_true", help="a plugin's history as one run or one duet a commit")
    ap.add_argument("--duet-steps", default="0.05,0.10,0.15", help="the injected rises of CPU per pod (--duets)")
    ap.add_argument("--threshold", type=float, default=0.03, help="the minimum magnitude of a change (--duets)")
    ap.add_argument("--data", metavar="OUT", help="also store what was measured (docs/results/data/)")
    args = ap.parse_args()
    if args.duets:
        duets_main(args)
        return
    specs = ["throughput:-10%", "latency_p99:+40%"]
    out = []
    for name in ("noise.json", "noise-busy.json"):
        start = time.monotonic()
        r = rates(name, args.trials, args.commits, args.step, specs, args.seed)
        r["seconds"] = round(time.monotonic() - start, 1)
        out.append(r)
        if not args.json:
            print(f"{name} ({r['runs']} measured runs; {r['origin']})")
            print(f"  A/A, {' '.join(specs)}: false alarms {r['false_alarms']}/{r['trials']} "
                  f"({r['false_alarm_rate'] * 100:.1f}%; by metric {r['false_alarms_by_metric']})")
            print(f"  {args.step * 100:g}% throughput step, throughput:-10%: detected {r['detected']}/{r['trials']} "
                  f"({r['detection_rate'] * 100:.1f}%), at the injected commit ±1 {r['at_commit']}/{r['trials']} "
                  f"({r['at_commit_rate'] * 100:.1f}%)  [{r['seconds']} s]")
            print("  detected by commits measured after the step: " + ", ".join(
                f"{b}: {d}/{n} ({d / n * 100:.0f}%)" for b, (d, n) in r["detected_by_commits_after"].items()))
    if args.json:
        print(json.dumps(out, indent=1))
    if args.data:
        store(args, "a release's history, one run a commit of scenarios/perf-gate.yaml drawn from "
                    "benchmarks/data/noise.json and noise-busy.json: detect's false alarms and a throughput step found",
              {r["data"]: r for r in out})


# What docs/results/gate-and-detect.md renders from --data's file (docs/figures.py: bench(name, function, ...)).

def _rate(n: int, trials: int) -> str:
    return pct(n / trials)


def duets_table(doc: dict[str, Any]) -> str:
    """``--duets``' rates, a row per host and way of recording (its log spread): A/A false alarms and each step
    found, resampled / normal (bold where both reach 90%)."""
    runs = doc["runs"]
    steps = list(next(iter(runs.values()))["found"])
    head = ["host, history (spread a commit)", "A/A false alarms",
            *[f"{float(s) * 100:g}% step found" if i == 0 else f"{float(s) * 100:g}%" for i, s in enumerate(steps)]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for host in ("quiet", "noisy"):
        for way in ("one run a commit", "one duet a commit"):
            r, n = runs[f"{host}/{way}/resampled"], runs[f"{host}/{way}/normal"]
            cells = [f"{'noisy neighbour' if host == 'noisy' else 'quiet'}, {way} ({pct(r['log_sd'])})",
                     both(r["false_alarms"] / r["trials"], n["false_alarms"] / n["trials"])]
            for s in steps:
                a, b = r["found"][s][0] / r["trials"], n["found"][s][0] / n["trials"]
                cells.append(f"**{both(a, b)}**" if min(a, b) >= 0.9 else both(a, b))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def history_table(doc: dict[str, Any]) -> str:
    """The release histories' rates per data file: false alarms (by metric), the step found and where."""
    lines = ["| data | A/A false alarms (any regression) | of which throughput / latency_p99 | "
             f"{100 * next(iter(doc['runs'].values()))['step']:g}% step detected | at the injected commit (±1) |",
             "|---|---|---|---|---|"]
    for name, label in (("noise.json", "quiet host"), ("noise-busy.json", "busy host")):
        r = doc["runs"][name]
        t = r["trials"]
        by = r["false_alarms_by_metric"]
        lines.append(f"| {label} (`{name}`) | {r['false_alarms']} / {t} ({_rate(r['false_alarms'], t)}) | "
                     f"{by['throughput']} ({_rate(by['throughput'], t)}) / {by['latency_p99']} "
                     f"({_rate(by['latency_p99'], t)}) | {r['detected']} / {t} ({_rate(r['detected'], t)}) | "
                     f"{r['at_commit']} / {t} ({_rate(r['at_commit'], t)}) |")
    return "\n".join(lines)


def history_rate(doc: dict[str, Any], name: str, key: str) -> str:
    """One rate of the release histories of a data file: ``false_alarm_rate``, ``detection_rate``, ``at_commit_rate``
    (a share, as ``3.1%``)."""
    return pct(doc["runs"][name][key])


def found_after(doc: dict[str, Any], name: str, bucket: str) -> str:
    """The share of step histories found with ``bucket`` commits measured after the step (``2`` … ``6+``)."""
    d, n = doc["runs"][name]["detected_by_commits_after"][bucket]
    return f"{100 * d / n:.0f}%"


def duet_rate(doc: dict[str, Any], key: str, step: str | None = None, at: bool = False) -> str:
    """One rate of ``--duets``: ``key`` ``host/way/drawn``; the A/A false alarms, or ``step`` found (``at``: at
    its commit ±1)."""
    r = doc["runs"][key]
    n = r["false_alarms"] if step is None else r["found"][step][1 if at else 0]
    return _rate(n, r["trials"])


if __name__ == "__main__":
    main()
