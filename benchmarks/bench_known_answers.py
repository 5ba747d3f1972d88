"""Known answers: regressions upstream found the hard way, found again by `kwokbench bisect` on this host.

For each answer (docs/results/known-answers.md): its scenario bisected over its releases (each built from Go
modules on first use, its build time in bisect.json), the gate's test deciding each step at the allowed change;
printed: the window found (the sentence bisect stores), each release's runs of the decided figure (median and
values), each step's change with its 90% interval, the builds, and the wall time. `--analyse DIR` prints the same
from a bisect folder already stored.

    .venv/bin/python benchmarks/bench_known_answers.py [--only NAME] [--repeat 3] [--out DIR]   # NAME: see ANSWERS
    .venv/bin/python benchmarks/bench_known_answers.py --analyse DIR [DIR ...]
    .venv/bin/python benchmarks/bench_known_answers.py --analyse DIR --extra extra_claims --data OUT   # keep one bisect

``--data OUT`` keeps a bisect folder's ``bisect.json`` small under docs/results/data/ with what a reader needs to
trust it: the command that made it (read back from bisect.json), the commit its runs ran at (and whether a checkout
was dirty), the day and the host, and each run's ``--extra`` figures from its summary. docs/results/known-answers.md
renders its rounds (:func:`rounds_table`), answer (:func:`answer`) and wall time (:func:`minutes`) from there.

The machine is shared and noisy: the answer is the step each bisect decided, with its interval, not an absolute
figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stored import at, host_text, write  # a sibling: benchmarks/ is on a script's path

ROOT = Path(__file__).resolve().parents[1]
ANSWERS: dict[str, tuple[str, str, str]] = {
    "async-api-calls": ("scenarios/known-async-api-calls.yaml", "v1.35.0,v1.35.1,v1.35.4", "latency_p50:20%"),
    # kubernetes#140877 in, then out: the change first in v1.37.0-beta.0, reverted before v1.37.0 (the tags between
    # are not on the module proxy here); each direction its own bisect (its ends would read the same otherwise)
    "dra-claim-controller": ("scenarios/known-dra-claim-controller.yaml", "v1.36.4,v1.37.0-beta.0",
                             "latency_p50@churn:50%"),
    "dra-claim-controller-revert": ("scenarios/known-dra-claim-controller.yaml", "v1.37.0-beta.0,v1.37.0-rc.1,v1.37.0",
                                    "latency_p50@churn:50%"),
}
"""Answer → (scenario, the releases bisected, the figure and the change that counts)."""

PRE_BUILDS: dict[str, tuple[dict[str, str], list[str]]] = {
    "v1.37.0-beta.0": ({"GONOSUMDB": "k8s.io/kubernetes,github.com/google/cadvisor/lib"},
                       ["--substitute", "k8s.io/kube-proxy@v0.37.0"]),
    "v1.37.0-rc.1": ({"GONOSUMDB": "k8s.io/kubernetes,github.com/google/cadvisor/lib"},
                     ["--substitute", "k8s.io/kube-proxy@v0.37.0", "--substitute", "k8s.io/cri-streaming@v0.37.0"]),
}
"""Releases the module proxy serves only in part, built first with the departures they need (the checksum
database has no record of the tags and of cadvisor/lib v0.60.4; their kube-proxy and cri-streaming are refused): Go's
GONOSUMDB and ``tools install --substitute``, both recorded in the build's build.json and in bisect.json
(docs/guides/kubernetes-versions.md). A release already built is reused as it is."""


def pre_build(releases: str) -> None:
    from kwokbench.toolchain import Toolchain

    for tag in releases.split(","):
        if tag not in PRE_BUILDS or Toolchain(kubernetes=tag).mode() == "source":
            continue
        env, extra = PRE_BUILDS[tag]
        subprocess.run([sys.executable, "-m", "kwokbench", "tools", "install", "--kubernetes", tag, "--core-only",
                        *extra], cwd=ROOT, check=False, env={**os.environ, **env},
                       stderr=subprocess.STDOUT)


def bisect(name: str, out: Path, repeat: int) -> Path:
    scenario, releases, metric = ANSWERS[name]
    pre_build(releases)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "kwokbench", "bisect", scenario, "--kubernetes", releases, "--metric",
                    metric, "--repeat", str(repeat), "--out", str(out)], cwd=ROOT, check=False)
    [folder] = sorted((out / Path(scenario).stem.replace("_", "-")).glob("bisect-*"))[-1:]
    print(f"{name}: {time.monotonic() - t0:.0f} s of wall time")
    return folder


def report(folder: Path) -> None:
    doc: dict[str, Any] = json.loads((folder / "bisect.json").read_text())
    print(f"\n== {doc['scenario']} ({folder})")
    r = doc.get("result") or {}
    if r.get("found") and "level" not in r:  # stored before bisect kept the level: the found step's
        r["level"] = next((st.get("level") for rnd in doc.get("rounds") or [] for st in rnd.get("steps") or []
                           if [st["from"], st["to"]] == r.get("between")), None)
    from kwokbench.bisection import sentence

    print(f"answer: {sentence(doc) if r else doc.get('sentence')}")
    print(f"pinned: {doc.get('pinned')}; builds: " + ", ".join(
        f"{t} {'cached' if b['cached'] else str(round(b['seconds'])) + ' s'}" for t, b in doc["builds"].items()))
    for t, b in doc["builds"].items():
        if b.get("departs"):
            subs = ", ".join(f"{m} {x['built_with']} for {x['release_has']} (imported: "
                             f"{', '.join(x['packages_imported']) or 'nothing'})"
                             for m, x in b["departs"].get("substituted", {}).items())
            print(f"  {t} built with: {subs or 'its own modules'}; not checked by the checksum database: "
                  f"{', '.join(b['departs'].get('not_checked_by_sumdb') or {}) or 'none'}")
    for tag, runs in doc["runs"].items():
        values = [r["value"] for r in runs if r.get("value") is not None]
        median = f"{statistics.median(values):.3g}" if values else "-"
        print(f"  {tag}: {doc['metric']} median {median} of {len(values)} run(s): "
              f"{', '.join(f'{v:.3g}' for v in values)}")
    for rnd in doc.get("rounds") or []:
        for st in rnd.get("steps") or []:
            ci = st.get("ci")
            level = round(float(st.get("level") or 0.90) * 100)  # the interval tested (bisect's looks widen it)
            span = f", {level}% CI {(ci[0] - 1) * 100:+.0f}..{(ci[1] - 1) * 100:+.0f}%" if ci else ""
            ratio = f" {(st['ratio'] - 1) * 100:+.0f}%" if st.get("ratio") else ""
            print(f"  {st['from']} → {st['to']}: {st['step']}{ratio}{span}")
    started, ended = doc.get("started_at"), doc.get("ended_at")
    print(f"  from {started} to {ended}")


def _at(d: Any, path: str) -> Any:
    try:
        return at(d, path)
    except (KeyError, IndexError, TypeError):  # a run whose summary lacks it: kept as none
        return None


def keep(folder: Path, extras: list[str], out: Path) -> None:
    """``--analyse DIR --data OUT``: the bisect and its provenance, each run with its ``extras`` (summary keys)."""
    doc: dict[str, Any] = json.loads((folder / "bisect.json").read_text())
    metas, runs = [], {}
    for tag, rs in doc["runs"].items():
        kept = []
        for r in rs:
            run = Path(r["path"])
            meta = json.loads((run / "meta.json").read_text())
            summary = json.loads((run / "summary.json").read_text())
            metas.append(meta)
            kept.append({"run": run.name, "status": r["status"], "value": r.get("value"),
                         **{k.rsplit(".", 1)[-1]: _at(summary, k) for k in extras}})
        runs[tag] = kept
    code = [m.get("code") or {} for m in metas]
    commits = sorted({str(c.get("commit")) for c in code})
    spec = f"{doc['metric']}:{doc['allowed'] * 100:g}%"
    command = (f"kwokbench bisect {doc['scenario_file']} --kubernetes {','.join(doc['path'])} --metric {spec} "
               f"--repeat {doc['repeat']} --max-repeat {doc['max_repeat']}" + (" --duet" if doc.get("duet") else ""))
    bisect = {k: v for k, v in doc.items() if k not in ("runs", "owner")}
    write(out, {
        "what": f"kwokbench bisect of {doc['scenario_file']} over {', '.join(doc['path'])} (bisect.json, each run's "
                f"{doc['metric']}{' and ' + ', '.join(extras) if extras else ''}; runs keyed as bisect.json keys them, "
                f"in the order of its path)",
        "command": command, "commit": commits[0], "commits": commits, "dirty": any(c.get("dirty") for c in code),
        "date": str(doc["started_at"])[:10], "host": host_text(doc.get("host") or {}),
        "rendered_by": "benchmarks/bench_known_answers.py", "runs": runs, "bisect": bisect})
    if len(commits) > 1:
        print(f"note: the runs of {folder} ran at {len(commits)} commits ({', '.join(c[:10] for c in commits)})")


# What docs/results/known-answers.md renders from --data's file (docs/figures.py: bench(name, function, ...)).

def _minus(text: str) -> str:
    """A minus sign for each negative figure (not a release's or a date's hyphen)."""
    return re.sub(r"(?<!\w)-(?=\d)", "\u2212", text)


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%".replace("-", "\u2212")


def _interval(st: dict[str, Any]) -> str:
    lo, hi = (f"{(x - 1) * 100:+.1f}".replace("-", "\u2212") for x in st["ci"])
    return f"{round(float(st.get('level') or 0.90) * 100)}% CI {lo}..{hi}%"


def rounds_table(doc: dict[str, Any], extra: str | None = None, label: str = "") -> str:
    """A row per round: its releases, each run's figure per release (``;`` between releases), each run's
    ``extra`` (a kept summary key, headed ``label``), and each step with its change and the interval tested."""
    b = doc["bisect"]
    head = ["round", "releases", f"{label or b['metric']}, each run"]
    if extra:
        head.append(f"{extra.replace('_', ' ')}, each run")
    head.append("step")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n, rnd in enumerate(b["rounds"], 1):
        cells = [str(n), ", ".join(rnd["tags"]),
                 "; ".join(", ".join(f"{v:.3f}" for v in vs if v is not None) for vs in rnd["values"])]
        if extra:
            per = []
            for tag, at, vs in zip(rnd["tags"], rnd["positions"], rnd["values"], strict=True):
                # keyed by release, or by position in the path where a release is there twice (an A/A)
                runs = doc["runs"][tag] if tag in doc["runs"] else list(doc["runs"].values())[at]
                per.append(", ".join(str(next(r[extra] for r in runs if r["value"] == v)) for v in vs))
            cells.append("; ".join(per))
        steps = rnd["steps"]
        cells.append("; ".join(
            (f"{st['from']} → {st['to']} " if len(steps) > 1 else "") + f"{st['step']}: {_pct(st['ratio'])} "
            f"({_interval(st)})" for st in steps))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def answer(doc: dict[str, Any]) -> str:
    """The bisect's answer in one line, with the interval it tested."""
    from kwokbench.bisection import sentence

    b = doc["bisect"]
    r = b.get("result") or {}
    if r.get("found"):
        found = next(st for rnd in b["rounds"] for st in rnd["steps"] if [st["from"], st["to"]] == r["between"])
        return _minus(sentence({**b, "result": {"level": found.get("level"), **r}}))
    last = b["rounds"][-1]["steps"][-1]
    return f"{r.get('why', b.get('sentence'))}: {_pct(last['ratio'])} ({_interval(last)}), {last['runs']}"


def minutes(doc: dict[str, Any]) -> str:
    """The bisect's wall time, and its runs: ``35.4 minutes (14 runs)``."""
    from datetime import datetime

    b = doc["bisect"]
    m = (datetime.fromisoformat(b["ended_at"]) - datetime.fromisoformat(b["started_at"])).total_seconds() / 60
    return f"{m:.1f} minutes ({sum(len(rs) for rs in doc['runs'].values())} runs)"


def builds(doc: dict[str, Any]) -> str:
    """Each release's build as the bisect met it: ``v1.35.0 204 s, v1.35.1 built before``."""
    return ", ".join(f"{t} {'built before' if b['cached'] else str(round(b['seconds'])) + ' s'}"
                     for t, b in doc["bisect"]["builds"].items())


def pinned(doc: dict[str, Any]) -> str:
    """What the bisect held the same across its releases: ``Go 1.26.8, kwok v0.8.0, etcd v3.6.16``."""
    p = doc["bisect"].get("pinned") or {}
    names = {"go": "Go", "kwok": "kwok", "etcd": "etcd"}
    return ", ".join(f"{names.get(k, k)} {str(v).removeprefix('go')}" for k, v in p.items() if k != "differs")


def extra_median(doc: dict[str, Any], tag: str, extra: str, scale: float = 1.0, digits: int = 2) -> str:
    """The median of a kept summary key over a release's runs (times ``scale``): ``0.48``."""
    xs = [float(r[extra]) * scale for r in doc["runs"][tag] if r.get(extra) is not None]
    if not xs:
        raise KeyError(f"no run of {tag} has {extra}")
    return f"{statistics.median(xs):.{digits}f}"


def extra_values(doc: dict[str, Any], tags: list[str], extra: str) -> str:
    """The distinct values of a kept summary key over the runs of ``tags`` (a verdict): ``scheduler-client``."""
    xs = sorted({str(r[extra]) for t in tags for r in doc["runs"][t] if r.get(extra) is not None})
    if not xs:
        raise KeyError(f"no run of {', '.join(tags)} has {extra}")
    return ", ".join(xs)


def extra_range(doc: dict[str, Any], tags: list[str], extra: str) -> str:
    """The range of a kept summary key over the runs of ``tags``: ``8830–10908``."""
    xs = [r[extra] for t in tags for r in doc["runs"][t] if r.get(extra) is not None]
    if not xs:
        raise KeyError(f"no run of {', '.join(tags)} has {extra}")
    return f"{min(xs)}–{max(xs)}" if min(xs) != max(xs) else str(min(xs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(ANSWERS), help="one answer (default: every one)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each release per round (bisect's --repeat)")
    ap.add_argument("--out", type=Path, default=None, help="where the bisects are stored (default: a temp folder)")
    ap.add_argument("--analyse", type=Path, nargs="+", metavar="DIR", help="print stored bisect folders")
    ap.add_argument("--extra", action="append", default=[], metavar="KEY",
                    help="with --data: a summary figure of each run to keep too (repeatable)")
    ap.add_argument("--data", type=Path, metavar="OUT",
                    help="with --analyse DIR: keep that bisect (docs/results/data/)")
    args = ap.parse_args()
    if args.analyse and args.data:
        if len(args.analyse) != 1:
            raise SystemExit("error: --data keeps one bisect folder; give --analyse one DIR")
        keep(args.analyse[0], args.extra, args.data)
        return 0
    if args.analyse:
        for folder in args.analyse:
            report(folder)
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="kwokbench-known-"))
    for name in [args.only] if args.only else list(ANSWERS):
        report(bisect(name, out, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
