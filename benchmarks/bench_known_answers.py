"""Known answers: regressions upstream found the hard way, found again by `kwokbench bisect` on this host.

For each answer (docs/results/known-answers.md): its scenario bisected over its releases (each built from Go
modules on first use, its build time in bisect.json), the gate's test deciding each step at the allowed change;
printed: the window found (the sentence bisect stores), each release's runs of the decided figure (median and
values), each step's change with its 90% interval, the builds, and the wall time. `--analyse DIR` prints the same
from a bisect folder already stored.

    python benchmarks/bench_known_answers.py [--only NAME] [--repeat 3] [--out DIR]   # NAME: see ANSWERS
    python benchmarks/bench_known_answers.py --analyse DIR [DIR ...]

The machine is shared and noisy: the answer is the step each bisect decided, with its interval, not an absolute
figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(ANSWERS), help="one answer (default: every one)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each release per round (bisect's --repeat)")
    ap.add_argument("--out", type=Path, default=None, help="where the bisects are stored (default: a temp folder)")
    ap.add_argument("--analyse", type=Path, nargs="+", metavar="DIR", help="print stored bisect folders")
    args = ap.parse_args()
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
