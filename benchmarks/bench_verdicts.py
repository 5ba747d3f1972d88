"""What the verdicts can decide on this host: sequential interleaved pairs against duets, quiet or beside a noisy
neighbour, on real runs of scenarios/cost-ab.yaml (a Score plugin of known cost, plugins/costscore).

``--mode`` records: it runs the scenario's two variants ``--pairs`` times, interleaved on fresh clusters
(``run --repeat``), as duets on one control plane (``run --repeat --duet``) or as duets of two clusters at once
(``--mode clusters``: ``--set duet=clusters``, the way `bisect --duet` runs releases), the candidate's plugin at
``--cost`` ns per Score call (0: an A/A), optionally beside benchmarks/noisy_neighbour.py (one core burnt in seeded
random bursts), and stores each pair's figures (both sides' throughput and scheduler CPU per pod, the pair's wall time)
in a JSON file under benchmarks/data/ with its origin.

``--analyse`` prints, for each stored file: the spread (sd of the log ratio) of the pairs per figure (throughput is
the offer's in cost-ab.yaml, 100/s that the scheduler keeps up with: CPU per pod is the figure a plugin's cost moves,
and the one decided below); the duet's spread as a share of the sequential pairs' of the same noise; and, resampling
the A/A pairs with an effect added (2, 5, 10, 20% more CPU per pod), the sequential decision's rates
(:func:`kwokbench.compare.stats.decide_sequential`, looks at 3…20 pairs, the allowed change ``--allowed``): false
alarms, detection, the median pairs and minutes to a decided verdict. A file with a real injected cost is decided as
it ran, beside the resampled rate at its measured effect. The calibration (the stock CPU per pod, the cost per node
call that adds 5%) is printed.

``--analyse FILE… --data OUT`` stores those figures instead (what docs/results/gate-and-detect.md renders, through
docs/figures.py's ``bench`` macro and this module's ``spread_table``, ``errors_table``, ``decided`` and ``value``):
per file its origin, pairs, minutes a pair, spreads and stock CPU per pod; per A/A file the resampled and the normal
draws' rates on the schedules of :data:`SCHEDULES` at the effects of :data:`EFFECTS`; per file with a real cost its
decision as it ran and the resampled rate at its measured effect; with the command, the commit, the day and the host.

    .venv/bin/python benchmarks/bench_verdicts.py --mode duet --pairs 8 [--noisy] [--cost 0] [--out FILE]
    .venv/bin/python benchmarks/bench_verdicts.py --analyse benchmarks/data/verdicts-*.json [--allowed 0.02]
        [--first 3] [--most 20] [--data docs/results/data/verdicts-DAY.json]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from stored import at, both, here, pct, write  # a sibling: benchmarks/ is on a script's path

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "scenarios" / "cost-ab.yaml"
FIGURES = {"cpu_per_pod": False, "throughput": True}
"""Figure → higher is better."""
NODES_SCORED = 100
"""Score calls per pod in cost-ab.yaml (every node of a side's pool is feasible and scored)."""
SCHEDULES = {"3-20": (3, 20), "3-12": (3, 12), "5-20": (5, 20)}
"""``--data``'s looks (first, most): kwokbench's default, the action's (repeat 3, max-repeat 12), a later first look."""
EFFECTS = (0.0, 0.05, 0.10, 0.20)
"""``--data``'s effects added to the A/A pairs (relative, more CPU per pod)."""


def _seconds(meta: dict[str, Any]) -> float | None:
    try:
        return (datetime.fromisoformat(meta["ended_at"]) - datetime.fromisoformat(meta["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _pairs(root: Path, mode: str) -> list[dict[str, Any]]:
    from kwokbench.store import find_runs, load_run

    runs = [load_run(p) for p in find_runs([root])]
    out: list[dict[str, Any]] = []
    if mode == "duet":
        for r in sorted(runs, key=lambda r: str(r.meta.get("started_at"))):
            d = (r.summary or {}).get("duet")
            if r.meta.get("status") != "complete" or not d:
                continue
            out.append({"base": {k: d["sides"]["base"].get(k) for k in FIGURES},
                        "head": {k: d["sides"]["head"].get(k) for k in FIGURES},
                        "seconds": _seconds(r.meta), "started_first": d["started_first"],
                        "notes": d.get("notes") or []})
        return out
    by_repeat: dict[int, dict[str, Any]] = {}
    for r in runs:
        if r.meta.get("status") != "complete":
            continue
        s = r.summary or {}
        fig = {"cpu_per_pod": (s.get("scheduler") or {}).get("cpu_seconds_per_pod"),
               "throughput": (s.get("throughput") or {}).get("average")}
        slot = by_repeat.setdefault(int((r.meta.get("group") or {}).get("repeat", -1)), {"seconds": 0.0})
        slot[str(r.meta["variant"]["name"])] = fig
        slot["seconds"] += _seconds(r.meta) or 0.0
    return [p for _, p in sorted(by_repeat.items()) if "base" in p and "head" in p]


def record(a: argparse.Namespace) -> None:
    cmd = [sys.executable, "-m", "kwokbench", "run", str(SCENARIO), "--repeat", str(a.pairs),
           "--set", f"schedulers.1.plugin_args.CostScore.costNanos={a.cost}", *(["--duet"] if a.mode == "duet" else []),
           *(["--set", "duet=clusters"] if a.mode == "clusters" else [])]
    neighbour = None
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="kb-verdicts-") as tmp:
        try:
            if a.noisy:
                neighbour = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "noisy_neighbour.py"),
                                              "--seconds", "36000", "--seed", str(a.seed)],
                                             stdout=subprocess.DEVNULL)
            subprocess.run([*cmd, "--out", tmp], check=True, stdout=subprocess.DEVNULL, cwd=REPO)
        finally:
            if neighbour is not None:
                neighbour.terminate()
                neighbour.wait(10)
        pairs = _pairs(Path(tmp), a.mode)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    noise = f"beside benchmarks/noisy_neighbour.py --seed {a.seed}" if a.noisy else "host otherwise idle"
    doc = {"format_version": 1, "mode": a.mode, "noisy": a.noisy, "cost_nanos": a.cost, "pairs": pairs,
           "origin": f"benchmarks/bench_verdicts.py --mode {a.mode} --pairs {a.pairs} --cost {a.cost} on "
                     f"{platform.node()} ({started:%Y-%m-%d %H:%M} UTC, kwokbench {commit.stdout.strip()}), {noise}: "
                     f"scenarios/cost-ab.yaml"}
    out = Path(a.out or REPO / "benchmarks" / "data" /
               f"verdicts-{a.mode}-{'noisy' if a.noisy else 'quiet'}-{a.cost}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(pairs)} of {a.pairs} pairs complete; stored in {out}")


def log_ratios(doc: dict[str, Any], figure: str) -> np.ndarray:
    """log(head / base) of each complete pair, in run order."""
    return np.array([math.log(p["head"][figure] / p["base"][figure]) for p in doc["pairs"]
                     if p["base"].get(figure) and p["head"].get(figure)], dtype=np.float64)


def resampled(aa: np.ndarray, effect: float, higher_is_better: bool, allowed: float, trials: int = 2000,
              seed: int = 0, first: int = 3, parametric: bool = False, most: int = 20) -> dict[str, float]:
    """The sequential decision on pairs drawn (with replacement) from A/A log ratios centred on 0 — or, with
    ``parametric``, from a normal of their spread — shifted by the effect (relative, in the worse direction):
    outcome rates and the median pairs used. Drawing from a handful of values makes ties (a draw of 3 alike has no
    spread), which inflates the false alarms at an early look: the parametric draw bounds it from the other side."""
    from kwokbench.compare.stats import decide_sequential, looks

    rng = np.random.default_rng(seed)
    centred = aa - aa.mean()
    sd = float(aa.std(ddof=1))
    shift = math.log(1 - effect) if higher_is_better else math.log(1 + effect)
    schedule = looks(first, most)
    counts = {"regression": 0, "same": 0, "better": 0, "inconclusive": 0}
    used = []
    for _ in range(trials):
        x = (rng.normal(0.0, sd, schedule[-1]) if parametric
             else rng.choice(centred, size=schedule[-1], replace=True)) + shift
        got, n = decide_sequential(x, higher_is_better, allowed, schedule)
        assert got is not None
        counts[got.decision] += 1
        used.append(n)
    return {**{k: v / trials for k, v in counts.items()}, "pairs": float(np.median(used))}


def analyse(a: argparse.Namespace) -> None:
    from kwokbench.compare.stats import decide_sequential, looks

    docs = [(Path(f).name, json.loads(Path(f).read_text())) for f in a.files]
    print(f"{'file':<38} {'pairs':>5} {'min/pair':>8} {'sd cpu/pod':>10} {'sd thr':>7}  origin")
    for name, d in docs:
        secs = [p["seconds"] for p in d["pairs"] if p.get("seconds")]
        per = np.median(secs) / 60 if secs else float("nan")
        print(f"{name:<38} {len(d['pairs']):>5} {per:>8.2f} {log_ratios(d, 'cpu_per_pod').std(ddof=1):>10.3f} "
              f"{log_ratios(d, 'throughput').std(ddof=1):>7.3f}  {d['origin']}")
    aa = {(d["mode"], d["noisy"]): d for _, d in docs if d["cost_nanos"] == 0}
    for noisy in (False, True):
        s = aa.get(("sequential", noisy))
        for mode, what in (("duet", "the duet's"), ("clusters", "two clusters at once:")):
            du = aa.get((mode, noisy))
            if s and du:
                for fig in FIGURES:
                    r = log_ratios(du, fig).std(ddof=1) / log_ratios(s, fig).std(ddof=1)
                    print(f"{'noisy' if noisy else 'quiet'} host, {fig}: {what} pair spread is {r:.2f}x the "
                          f"sequential pairs'")
    for (mode, noisy), d in sorted(aa.items()):
        base = [p["base"]["cpu_per_pod"] for p in d["pairs"] if p["base"].get("cpu_per_pod")]
        if base:
            cpu = float(np.median(base))
            print(f"\ncalibration ({mode}, {'noisy' if noisy else 'quiet'}): stock CPU per pod {cpu * 1000:.2f} ms; "
                  f"+5% is costNanos {cpu * 0.05 / NODES_SCORED * 1e9:.0f} per Score call ({NODES_SCORED} nodes)")
        secs = [p["seconds"] for p in d["pairs"] if p.get("seconds")]
        minutes = float(np.median(secs)) / 60 if secs else float("nan")
        for fig, hib in FIGURES.items():
            x = log_ratios(d, fig)
            if len(x) < 3 or fig == "throughput":  # arrival-bound in cost-ab.yaml: it measures the offer
                continue
            for parametric in (False, True):
                print(f"{mode}, {'noisy' if noisy else 'quiet'}, {fig} (allowed {a.allowed * 100:.0f}%, looks "
                      f"{looks(a.first, a.most)}, {'normal of the measured spread' if parametric else 'resampled'}):")
                for eff in (0.0, 0.02, 0.05, 0.10, 0.20):
                    r = resampled(x, eff, hib, a.allowed, first=a.first, parametric=parametric, most=a.most)
                    print(f"  effect {eff * 100:>4.0f}%: regression {r['regression'] * 100:5.1f}%  same "
                          f"{r['same'] * 100:5.1f}%  inconclusive {r['inconclusive'] * 100:5.1f}%  median pairs "
                          f"{r['pairs']:.0f} (~{r['pairs'] * minutes:.0f} min)")
    for name, d in docs:
        if d["cost_nanos"] == 0:
            continue
        for fig, hib in FIGURES.items():
            x = log_ratios(d, fig)
            if len(x) < 3 or fig == "throughput":
                continue
            got, n = decide_sequential(x, hib, a.allowed, looks(min(a.first, len(x)), max(a.first, len(x))))
            measured = math.exp(float(x.mean())) - 1
            print(f"\n{name}, {fig}: measured {measured * 100:+.1f}% over {len(x)} pairs; decided as it ran: "
                  f"{got.decision if got else 'undecided'} after {n} pairs ({got.reason if got else ''})")
            ref = aa.get((d["mode"], d["noisy"]))
            if ref is not None and len(log_ratios(ref, fig)) >= 3:
                eff = measured if not hib else -measured
                r = resampled(log_ratios(ref, fig), max(eff, 0.0), hib, a.allowed, first=a.first, most=a.most)
                print(f"  resampled A/A with that effect: regression {r['regression'] * 100:.1f}%")


def _stem(path: str) -> str:
    return Path(path).name.removesuffix(".json").removeprefix("verdicts-")


def summarise(files: list[str], allowed: float) -> dict[str, dict[str, Any]]:
    """``--data``'s figures of each stored file (keyed ``mode-noise-cost``), the same computations ``--analyse``
    prints (resampling seeded: the same files give the same figures)."""
    from kwokbench.compare.stats import decide_sequential, looks

    docs = {_stem(f): json.loads(Path(f).read_text()) for f in files}
    aa = {(d["mode"], d["noisy"]): d for d in docs.values() if d["cost_nanos"] == 0}
    out: dict[str, dict[str, Any]] = {}
    for stem, d in sorted(docs.items()):
        secs = [p["seconds"] for p in d["pairs"] if p.get("seconds")]
        base = [p["base"]["cpu_per_pod"] for p in d["pairs"] if p["base"].get("cpu_per_pod")]
        x = log_ratios(d, "cpu_per_pod")
        row: dict[str, Any] = {
            "origin": d["origin"], "mode": d["mode"], "noisy": d["noisy"], "cost_nanos": d["cost_nanos"],
            "pairs": len(d["pairs"]), "minutes": float(np.median(secs)) / 60 if secs else None,
            "sd": {fig: float(log_ratios(d, fig).std(ddof=1)) for fig in FIGURES},
            "stock_cpu_per_pod": float(np.median(base)) if base else None}
        if d["cost_nanos"] == 0:
            row["errors"] = {key: {method: {f"{eff:g}": resampled(x, eff, False, allowed, first=first, most=most,
                                                                  parametric=method == "normal")
                                            for eff in EFFECTS}
                                   for method in ("resampled", "normal")}
                             for key, (first, most) in SCHEDULES.items()}
        else:
            got, n = decide_sequential(x, False, allowed, looks(min(3, len(x)), max(3, len(x))))
            measured = math.exp(float(x.mean())) - 1
            ref = aa.get((d["mode"], d["noisy"]))
            row["decided"] = {
                "measured": measured, "decision": got.decision if got else None, "pairs": n,
                "ratio": got.ratio if got else None, "interval": list(got.interval) if got else None,
                "level": got.level if got else None,
                "predicted": d["cost_nanos"] * 1e-9 * NODES_SCORED / row["stock_cpu_per_pod"],
                "resampled_regression": (resampled(log_ratios(ref, "cpu_per_pod"), max(measured, 0.0), False,
                                                   allowed)["regression"] if ref is not None else None)}
        out[stem] = row
    return out


def store(a: argparse.Namespace) -> None:
    """``--analyse … --data OUT``: the figures and their provenance (the analysis's commit; each file its origin)."""
    files = " ".join(str(Path(f).resolve().relative_to(REPO)) if Path(f).resolve().is_relative_to(REPO) else f
                     for f in a.files)
    opts = "".join(f" --{k} {getattr(a, k)}" for k, dflt in (("allowed", 0.02), ("first", 3), ("most", 20))
                   if getattr(a, k) != dflt)
    doc = {**here("the verdicts' spreads and error rates over the pairs stored in benchmarks/data (each with its "
                  "origin): scenarios/cost-ab.yaml, CPU per pod", "bench_verdicts.py",
                  f"--analyse {files}{opts} --data {a.data}"),
           "allowed": a.allowed, "runs": summarise(a.files, a.allowed)}
    write(Path(a.data), doc)


# What docs/results/gate-and-detect.md renders from --data's file (docs/figures.py: bench(name, function, ...)).

def _label(row: dict[str, Any]) -> str:
    return f"{'two clusters' if row['mode'] == 'clusters' else row['mode']}, " \
           f"{'noisy neighbour' if row['noisy'] else 'quiet'}"


def spread_table(doc: dict[str, Any], mode: str) -> str:
    """Each A/A file of ``mode`` (``duet`` or ``clusters``) beside the sequential pairs of the same noise: pairs,
    minutes a pair, the spread of the pair's log ratio of CPU per pod and its share of the sequential pairs'."""
    runs = doc["runs"]
    what = "duet" if mode == "duet" else "two clusters"
    lines = [f"| | pairs | minutes a pair | spread of the pair's log ratio of CPU per pod | {what} / sequential |",
             "|---|---|---|---|---|"]
    for noise in ("quiet", "noisy"):
        seq, other = runs[f"sequential-{noise}-0"], runs[f"{mode}-{noise}-0"]
        rows = [(other, None)] if mode != "duet" else [(seq, None), (other, None)]
        for r, _ in rows:
            share = "" if r is seq else f"**{r['sd']['cpu_per_pod'] / seq['sd']['cpu_per_pod']:.2f}×**"
            lines.append(f"| {_label(r)} | {r['pairs']} | {r['minutes']:.2f} | {pct(r['sd']['cpu_per_pod'])} | "
                         f"{share} |")
    return "\n".join(lines)


def _pairs_to_find(row: dict[str, Any], rates: dict[str, dict[str, Any]], most: int) -> str:
    """The median pairs (and minutes) the resampled and the normal draws used to decide a 5% rise."""
    ns = sorted({int(rates[m]["0.05"]["pairs"]) for m in ("resampled", "normal")})
    undecided = all(rates[m]["0.05"]["inconclusive"] >= 0.5 for m in ("resampled", "normal"))
    pairs = "–".join(map(str, ns)) + (", undecided" if undecided and ns[-1] >= most else "")
    mins = "–".join(f"{n * row['minutes']:.0f}" for n in ns)
    return f"{pairs} ({mins} min)"


def errors_table(doc: dict[str, Any], schedule: str, rows: list[str], effects: list[float]) -> str:
    """The sequential decision's rates on the looks ``schedule`` (a key of SCHEDULES), one row per A/A file: false
    regressions, each effect found (resampled / normal; the first bold where both reach 95%), the median pairs to
    find 5%."""
    runs = doc["runs"]
    head = ["host, mode", "A/A false regressions (resampled / normal)",
            *[f"{100 * e:.0f}% slower found" if i == 0 else f"{100 * e:.0f}%" for i, e in enumerate(effects)],
            "median pairs (minutes) to find 5%"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    most = SCHEDULES[schedule][1]
    for stem in rows:
        r = runs[stem]
        rates = r["errors"][schedule]
        cells = [f"{'noisy' if r['noisy'] else 'quiet'}, {'two clusters' if r['mode'] == 'clusters' else r['mode']}",
                 both(rates["resampled"]["0"]["regression"], rates["normal"]["0"]["regression"])]
        for e in effects:
            a, b = (rates[m][f"{e:g}"]["regression"] for m in ("resampled", "normal"))
            cells.append(f"**{both(a, b)}**" if e == effects[0] and min(a, b) >= 0.95 else both(a, b))
        cells.append(_pairs_to_find(r, rates, most))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def decided(doc: dict[str, Any], stem: str) -> str:
    """A file with a real cost, decided as its pairs ran: ``regression after 3 pairs (+7.1%, 98% interval
    +3.1%..+11.2%)``."""
    d = doc["runs"][stem]["decided"]
    lo, hi = (f"{100 * (x - 1):+.1f}%" for x in d["interval"])
    return f"{d['decision']} after {d['pairs']} pairs ({100 * (d['ratio'] - 1):+.1f}%, " \
           f"{100 * d['level']:.0f}% interval {lo}..{hi})"


def value(doc: dict[str, Any], stem: str, path: str, kind: str = "pct") -> str:
    """One stored figure of a file, at a dotted ``path`` (``sd.cpu_per_pod``, ``errors.5-20.normal.0.regression``):
    ``pct`` 5.8%, ``signed`` +8.5%, ``ms`` 2.21 ms, ``pairs`` 8, ``minutes`` 3 min (with the file's minutes a pair)."""
    x = float(at(doc["runs"][stem], path))
    return {"pct": lambda: pct(x), "signed": lambda: f"{100 * x:+.1f}%", "ms": lambda: f"{1000 * x:.2f} ms",
            "pairs": lambda: f"{x:.0f}", "minutes": lambda: f"{x * doc['runs'][stem]['minutes']:.0f} min"}[kind]()


def main() -> None:
    ap = argparse.ArgumentParser(description="Record pairs (--mode), or analyse stored files (--analyse).")
    ap.add_argument("--mode", choices=["duet", "clusters", "sequential"], help="record pairs this way")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--cost", type=int, default=0, help="the candidate's costNanos per Score call")
    ap.add_argument("--noisy", action="store_true", help="beside benchmarks/noisy_neighbour.py")
    ap.add_argument("--seed", type=int, default=1, help="the neighbour's seed")
    ap.add_argument("--out", help="the file to store (default benchmarks/data/verdicts-<mode>-<noise>-<cost>.json)")
    ap.add_argument("--analyse", nargs="+", metavar="FILE", dest="files", help="print the figures of stored files")
    ap.add_argument("--allowed", type=float, default=0.02, help="the allowed change the decision uses")
    ap.add_argument("--first", type=int, default=3, help="pairs at the first look")
    ap.add_argument("--most", type=int, default=20,
                    help="pairs at the last look (the action's max-repeat: 12, its first look repeat: 3)")
    ap.add_argument("--data", metavar="OUT", help="with --analyse: store the figures (docs/results/data/) instead")
    a = ap.parse_args()
    if a.files and a.data:
        store(a)
    elif a.files:
        analyse(a)
    elif a.mode:
        record(a)
    else:
        raise SystemExit("error: give --mode duet|clusters|sequential to record pairs, or --analyse FILE… to analyse "
                         "them")


if __name__ == "__main__":
    main()
