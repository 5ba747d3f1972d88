"""What a WASM scheduler plugin costs per extension-point call, and where it goes.

Runs the Go benchmarks (`go test -bench`) of plugins/gpufilter (native) and plugins/wasm (the same rule
as a WASM guest, plus guests that do less — empty, fetch only — or more — copy every field into maps —,
each with and without the guest's GC): one scheduling cycle's Filter and Score over 1 and 500 nodes.
Prints the figures per call (ns, and allocations of the host's Go heap) and the split of the WASM cost
into boundary crossing, field fetches, guest compute and guest GC. Needs Go >= 1.26 on PATH.

    .venv/bin/python benchmarks/bench_wasm_plugin.py [--count 3] [--benchtime 1s] [--bench 'Filter|Score']
    .venv/bin/python benchmarks/bench_wasm_plugin.py --bench 'Filter|Score|Boundary' --count 3 \\
        --data docs/results/data/X.json

``--data FILE`` keeps every repetition's figures with the command, this checkout's commit, the day and the host; the
results pages quote them from there (:func:`per_call`, :func:`split`: medians of the repetitions).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
MODULES = (PLUGINS / "gpufilter", PLUGINS / "wasm")

# BenchmarkFilter/wasm-fetch/nodes=500-2   2361   512345 ns/op   1024 ns/call   3.0 allocs/call ...
LINE = re.compile(r"^Benchmark(?P<point>[A-Za-z]+)/(?P<name>\S+?)(?:-\d+)?\s+\d+\s+(?P<metrics>.*)$")
METRIC = re.compile(r"([-+0-9.eE]+) (\S+)")

Results = dict[tuple[str, str], dict[str, float]]


def run(module: Path, bench: str, count: int, benchtime: str) -> str:
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod -p=2", CGO_ENABLED="0")
    cmd = ["go", "test", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "-count", str(count), "."]
    print(f"$ cd {module} && {' '.join(cmd)}", file=sys.stderr)
    proc = subprocess.run(cmd, cwd=module, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"go test failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


Samples = dict[tuple[str, str], dict[str, list[float]]]


def samples(out: str) -> Samples:
    """Every metric of each -count repetition, keyed by (point, name), in go test's order."""
    found: Samples = defaultdict(lambda: defaultdict(list))
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        for value, unit in METRIC.findall(m["metrics"]):
            found[(m["point"], m["name"])][unit].append(float(value))
    return {k: dict(units) for k, units in found.items()}


def medians(found: Samples) -> Results:
    return {k: {u: statistics.median(v) for u, v in units.items()} for k, units in found.items()}


def parse(out: str) -> Results:
    """Median of each metric over the -count repetitions, keyed by (point, name)."""
    return medians(samples(out))


def fmt_ns(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.2f} µs" if abs(v) >= 1000 else f"{v:.0f} ns"


def calls_table(res: Results) -> list[str]:
    rows = ["| point | variant | nodes | per call | allocs/call | B/call | × native |", "|---|---|---|---|---|---|---|"]
    for (point, name), m in res.items():
        if point not in ("Filter", "Score"):
            continue
        variant, _, nodes = name.partition("/nodes=")
        native = res.get((point, f"native/nodes={nodes}"), {}).get("ns/call")
        ratio = f"{m['ns/call'] / native:.1f}×" if native else "-"
        rows.append(f"| {point} | {variant} | {nodes} | {fmt_ns(m.get('ns/call'))} | "
                    f"{m.get('allocs/call', 0):.2f} | {m.get('B/call', 0):.0f} | {ratio} |")
    return rows


def ns_per_call(res: Results, point: str, variant: str, nodes: str) -> float | None:
    return res.get((point, f"{variant}/nodes={nodes}"), {}).get("ns/call")


def diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def split_table(res: Results) -> list[str]:
    """WASM's cost per call as differences between the guests that do less and more."""
    rows = ["| point | nodes | native | WASM gpufilter | WASM gpufilter, trusted (no deadline) | boundary | "
            "field fetches | guest compute | guest GC | GC of an allocating guest |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for point in ("Filter", "Score"):
        for nodes in ("1", "500"):
            empty, fetch, nogc, full, alloc, alloc_nogc = (
                ns_per_call(res, point, v, nodes) for v in
                ("wasm-empty", "wasm-fetch", "wasm-gpufilter-nogc", "wasm-gpufilter", "wasm-alloc", "wasm-alloc-nogc"))
            if full is None:
                continue
            rows.append(f"| {point} | {nodes} | {fmt_ns(ns_per_call(res, point, 'native', nodes))} | {fmt_ns(full)} | "
                        f"{fmt_ns(ns_per_call(res, point, 'wasm-gpufilter-trusted', nodes))} | "
                        f"{fmt_ns(empty)} | {fmt_ns(diff(fetch, empty))} | {fmt_ns(diff(nogc, fetch))} | "
                        f"{fmt_ns(diff(full, nogc))} | {fmt_ns(diff(alloc, alloc_nogc))} |")
    return rows


def other_table(res: Results) -> list[str]:
    rows = ["| benchmark | per call | allocs/call | guest memory |", "|---|---|---|---|"]
    for (point, name), m in res.items():
        if point in ("Boundary", "GuestGC"):
            mem = m.get("MiB-guest-memory")
            rows.append(f"| {point}/{name} | {fmt_ns(m.get('ns/call'))} | {m.get('allocs/call', 0):.2f} | "
                        f"{f'{mem:.1f} MiB' if mem else '-'} |")
    return rows


def stored_samples(doc: dict[str, Any]) -> Samples:
    """The repetitions a ``--data`` file keeps (:func:`write_samples`), keyed as :func:`samples` keys them."""
    keys = {k: k.partition(" ") for k in doc["samples"]}
    return {(keys[k][0], keys[k][2]): v for k, v in doc["samples"].items()}


def write_samples(path: Path, what: str, script: str, args: str, count: int, found: Samples) -> None:
    """A ``--data`` file of go benchmarks: every repetition's figures, the command, commit, day and host."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stored import here, write

    write(path, {**here(what, script, args), "count": count, "runs": len(found),
                 "samples": {" ".join(k): v for k, v in found.items()}})


def _stored(doc: dict[str, Any]) -> Results:
    return medians(stored_samples(doc))


def per_call(doc: dict[str, Any], point: str, variant: str, nodes: int = 500) -> str:
    """One stored benchmark's median per call: ``per_call(doc, "Filter", "wasm-gpufilter")`` → ``3.46 µs``."""
    return fmt_ns(_stored(doc)[(point, f"{variant}/nodes={nodes}")]["ns/call"])


def deadline(doc: dict[str, Any], part: str = "watcher") -> str:
    """What wazero's per-call deadline costs an empty call (``Boundary wazero-call/hand-written-guest``, medians):
    ``watcher``, the call with a deadline less the same call without one, or ``call``, the call with it."""
    res = _stored(doc)
    with_it, without = (res[("Boundary", f"wazero-call/hand-written-guest{s}")]["ns/call"]
                        for s in ("", "-no-deadline"))
    return fmt_ns({"watcher": with_it - without, "call": with_it}[part])


def split(doc: dict[str, Any], point: str, part: str, nodes: int = 500) -> str:
    """A part of WASM's cost per call as :func:`split_table` takes it apart (medians): ``boundary`` (the empty
    guest), ``fetches``, ``compute`` or ``gc``."""
    res = _stored(doc)
    empty, fetch, nogc, full = (ns_per_call(res, point, v, str(nodes)) for v in
                                ("wasm-empty", "wasm-fetch", "wasm-gpufilter-nogc", "wasm-gpufilter"))
    return fmt_ns({"boundary": empty, "fetches": diff(fetch, empty), "compute": diff(nogc, fetch),
                   "gc": diff(full, nogc)}[part])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=".", help="go test -bench regexp (default: all)")
    ap.add_argument("--count", type=int, default=1, help="repetitions; the table shows medians")
    ap.add_argument("--benchtime", default="1s", help="go test -benchtime per benchmark")
    ap.add_argument("--raw", action="store_true", help="also print go test's output")
    ap.add_argument("--data", type=Path, help="write every repetition's figures, the command, commit, day and host "
                                              "here (JSON)")
    args = ap.parse_args()
    out = "\n".join(run(m, args.bench, args.count, args.benchtime) for m in MODULES)
    if args.raw:
        print(out)
    found = samples(out)
    res = medians(found)
    if args.data and found:
        write_samples(args.data, "one scheduling cycle's Filter and Score per call, native and WASM "
                      "(benchmarks/bench_wasm_plugin.py)", "bench_wasm_plugin.py",
                      f"--bench '{args.bench}' --count {args.count} --benchtime {args.benchtime}", args.count, found)
    if not res:
        sys.exit(f"no benchmark lines in go test's output:\n{out}")
    for title, table in (("Per call", calls_table(res)), ("Where WASM's time goes (per call)", split_table(res)),
                         ("Boundary and guest GC", other_table(res))):
        if len(table) > 2:
            print(f"\n### {title}\n")
            print("\n".join(table))


if __name__ == "__main__":
    main()
