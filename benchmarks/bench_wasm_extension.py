"""One rule, three ways, per call: the reference WASM extension's own host and guest next to kwokbench's.

The rule is the reference's NodeNumber example (a node scores 10 when its name ends in the pod's last digit):
- native: plugins/nodenumber, compiled in (Go);
- own: plugins/nodenumber-wasm (Go, wasip1 reactor) on kwokbench's host (plugins/wasm), with and without the
  per-call deadline (``trusted``);
- reference: the prebuilt ``examples/nodenumber/main.wasm`` (TinyGo) on the reference's host
  (kube-scheduler-wasm-extension at 9b2791f, wazero 1.7.2), quiet (logSeverity 3, as its own benchmark) and as
  shipped (it logs every call and records an Event per PreScore).

Each is one Score cycle (PreScore, then Score on every node) over 1 and 500 kwok-like nodes, reported per call.
The reference runs from its pinned source archive (``$KWOKBENCH_SOURCES`` or ``--source``), extracted to a
temporary folder with kwokbench's benchmark file (benchmarks/wasm_reference) dropped into its
``internal/e2e/scheduler`` package, whose go.mod and test helpers it needs. With ``--profile DIR`` every
benchmark also writes a CPU profile and the top of each (``go tool pprof -top``) is printed: where each host's
time goes. Needs Go >= 1.26 on PATH.

    .venv/bin/python benchmarks/bench_wasm_extension.py [--count 3] [--benchtime 1s] [--profile DIR]
    .venv/bin/python benchmarks/bench_wasm_extension.py --count 3 --data docs/results/data/wasm-calls-DATE.json

``--data FILE`` keeps every repetition's figures with the command, this checkout's commit, the day and the host; the
results page renders its per-call table from it (:func:`markdown`: each cell the median, the repetitions' range
beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wasm_plugin import Results, Samples, fmt_ns, medians, samples, stored_samples, write_samples

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = "kube-scheduler-wasm-extension-9b2791f.tar.gz"
BENCH_FILE = ROOT / "benchmarks" / "wasm_reference" / "kwokbench_bench_test.go"


def go_bench(cwd: Path, bench: str, count: int, benchtime: str, profile: Path | None) -> str:
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod -p=2", CGO_ENABLED="0")
    cmd = ["go", "test", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "-count", str(count)]
    if profile is not None:
        cmd += ["-cpuprofile", str(profile)]
    print(f"$ cd {cwd} && {' '.join(cmd)}", file=sys.stderr)
    proc = subprocess.run([*cmd, "."], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"go test failed ({proc.returncode}) in {cwd}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def pprof_top(cwd: Path, profile: Path, lines: int = 18) -> str:
    proc = subprocess.run(["go", "tool", "pprof", "-top", f"-nodecount={lines}", str(profile)], cwd=cwd,
                          env=dict(os.environ, GOTOOLCHAIN="local"), capture_output=True, text=True)
    return proc.stdout or proc.stderr


def reference_tree(source: Path, work: Path) -> Path:
    archive = source / ARCHIVE if source.is_dir() else source
    if not archive.is_file():
        sys.exit(f"no {ARCHIVE} in {source}: give --source or KWOKBENCH_SOURCES")
    from kwokbench.components.wasm_extension import SOURCES
    from kwokbench.toolchain.sources import extract_all, sha256_of

    if (got := sha256_of(archive)) != SOURCES[0].sha256:
        sys.exit(f"{archive}: sha256 {got} is not the pinned {SOURCES[0].sha256}")
    with tarfile.open(archive) as tar:
        extract_all(tar, work)
    [top] = [p for p in work.iterdir() if p.is_dir()]
    pkg = top / "internal" / "e2e" / "scheduler"
    shutil.copyfile(BENCH_FILE, pkg / BENCH_FILE.name)
    return pkg


def table(res: Results) -> list[str]:
    rows = ["| way | nodes | per call | allocs/call | × native |", "|---|---|---|---|---|"]
    for nodes in ("1", "500"):
        native = res.get(("Score", f"native/nodes={nodes}"), {}).get("ns/call")
        for (point, name), m in res.items():
            way, _, n = name.partition("/nodes=")
            if n != nodes:
                continue
            label = {"Score": "", "NodeNumber": "kwokbench host, ", "KwokbenchNodeNumber": "reference host, "}[point]
            ratio = f"{m['ns/call'] / native:.1f}×" if native and point != "Score" else "-"
            allocs = f"{m['allocs/call']:.2f}" if "allocs/call" in m else "-"
            rows.append(f"| {label}{way} | {nodes} | {fmt_ns(m.get('ns/call'))} | {allocs} | {ratio} |")
    return rows


WAYS = [("Score", "native", "native (`plugins/nodenumber`)"),
        ("NodeNumber", "own", "kwokbench's host, Go guest"),
        ("NodeNumber", "own-trusted", "kwokbench's host, Go guest, trusted (no per-call deadline)"),
        ("KwokbenchNodeNumber", "reference", "reference's host, its TinyGo guest, quiet (logSeverity 3)"),
        ("KwokbenchNodeNumber", "reference-logging",
         "reference's host, its TinyGo guest, as shipped (logs every call)")]
"""The page's rows: (go benchmark, its sub-benchmark's way, the label)."""


def _cell(xs: list[float] | None, fmt: Callable[[float], str]) -> str:
    if not xs:
        return "–"
    med, lo, hi = (fmt(x) for x in (statistics.median(xs), min(xs), max(xs)))
    unit = " " + hi.rpartition(" ")[2] if " " in hi else ""
    return med if len(xs) == 1 or lo == hi else f"{med} ({lo.removesuffix(unit)}–{hi})"


def markdown(doc: dict[str, Any]) -> str:
    """The results page's per-call table of ``--data``'s file: the median of the repetitions, their range beside."""
    found = stored_samples(doc)
    out = [f"| way ({doc['count']} repetitions) | per Score call, 1 node | per Score call, 500 nodes | "
           "host heap allocs per call (500) |", "|---|---|---|---|"]
    for point, way, label in WAYS:
        one, five = (found.get((point, f"{way}/nodes={n}"), {}) for n in (1, 500))
        allocs = "—" if point == "Score" else _cell(five.get("allocs/call"), lambda v: f"{v:.1f}")
        out.append(f"| {label} | {_cell(one.get('ns/call'), fmt_ns)} | {_cell(five.get('ns/call'), fmt_ns)} | "
                   f"{allocs} |")
    return "\n".join(out)


def per_call(doc: dict[str, Any], way: str, nodes: int = 500) -> str:
    """One way's median per Score call (``2.49 µs``)."""
    point = next(p for p, w, _ in WAYS if w == way)
    return fmt_ns(medians(stored_samples(doc))[(point, f"{way}/nodes={nodes}")]["ns/call"])


def times(doc: dict[str, Any], way: str, base: str, nodes: int = 500) -> str:
    """``way``'s median per call over ``base``'s (``0.33``)."""
    res = medians(stored_samples(doc))
    a, b = ((res[(next(p for p, w, _ in WAYS if w == x), f"{x}/nodes={nodes}")]["ns/call"]) for x in (way, base))
    return f"{a / b:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--benchtime", default="1s")
    ap.add_argument("--source", type=Path, default=Path(os.environ.get("KWOKBENCH_SOURCES")
                                                         or ROOT.parent / "shared" / "sources"))
    ap.add_argument("--profile", type=Path, help="write CPU profiles here and print the top of each")
    ap.add_argument("--data", type=Path, help="write every repetition's figures, the command, commit, day and host "
                                              "here (JSON)")
    a = ap.parse_args()
    if a.profile:
        a.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kwokbench-wasm-ref-") as tmp:
        ref = reference_tree(a.source, Path(tmp))
        runs = [("native", ROOT / "plugins" / "nodenumber", "Score"),
                ("own", ROOT / "plugins" / "wasm", "NodeNumber"),
                ("reference", ref, "KwokbenchNodeNumber")]
        found: Samples = {}
        tops = []
        for name, cwd, bench in runs:
            prof = a.profile / f"{name}.pprof" if a.profile else None
            found.update(samples(go_bench(cwd, f"^Benchmark{bench}$", a.count, a.benchtime, prof)))
            if prof is not None:
                tops.append((name, pprof_top(cwd, prof)))
    res: Results = medians(found)
    print("\n".join(table(res)))
    if a.data:
        write_samples(a.data, "one Score cycle per call, three hosts (benchmarks/bench_wasm_extension.py)",
                      "bench_wasm_extension.py", f"--count {a.count} --benchtime {a.benchtime}", a.count, found)
        print(markdown(json.loads(a.data.read_text())))
    for name, top in tops:
        print(f"\n## CPU profile: {name}\n{top}")


if __name__ == "__main__":
    main()
