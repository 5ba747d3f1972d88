"""How fast does `kwokbench up` give a Ready cluster, and how does it compare with `kwokctl scale node`?

Prints, for each node count: seconds to components Ready, to nodes created, to all nodes Ready, for
kwokbench's concurrent creation and for `kwokctl scale node --replicas N` on an identically configured
fresh cluster in the same run, and the ratio. Target (issue 2): 5000 nodes Ready <= 30 s, not slower
than kwokctl scale.

    .venv/bin/python benchmarks/bench_up.py [--nodes 1000,5000] [--repeat 1]
    .venv/bin/python benchmarks/bench_up.py --repeat 3 --data docs/results/data/up-DATE.json

``--repeat N`` measures both ways N times, interleaved; ``--data FILE`` keeps every measurement with the command, this
checkout's commit, the day and the host, and the results pages quote it through :func:`ready` and :func:`components`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from stored import here, ranged, write  # a sibling: benchmarks/ is on a script's path

from kwokbench.cluster import ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.cluster.api import Api
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.cluster.nodes import is_ready
from kwokbench.manifests import resolve_template
from kwokbench.toolchain import Toolchain


async def wait_ready(creds: Credentials, n: int, timeout: float = 600) -> float:
    ready: set[str] = set()
    done, stop = asyncio.Event(), asyncio.Event()

    def handle(typ: str, obj: dict[str, Any], _t: float) -> None:
        name = obj["metadata"]["name"]
        if typ != "DELETED" and is_ready(obj):
            ready.add(name)
        if len(ready) >= n:
            done.set()

    t0 = time.monotonic()
    async with Api(creds) as api:
        task = asyncio.create_task(api.watch("/api/v1/nodes", handle, stop))
        try:
            await asyncio.wait_for(done.wait(), timeout)
        finally:
            stop.set()
            await asyncio.gather(task, return_exceptions=True)
    return time.monotonic() - t0


def kwokbench_up(k: Kwokctl, n: int) -> dict[str, float]:
    res = bring_up(k, ClusterOptions(name=f"bench-kb-{n}"), [NodeGroup("default", n, resolve_template("node"), {})])
    k.delete(res.cluster.name)
    return {"components": res.timings["components ready"], "created": res.timings["nodes created"],
            "ready": res.timings["nodes ready"]}


def kwokctl_scale(k: Kwokctl, n: int) -> dict[str, float]:
    name = f"bench-kc-{n}"
    t = time.monotonic()
    info = bring_up(k, ClusterOptions(name=name), []).cluster
    components = time.monotonic() - t
    try:
        env = {**os.environ, "KWOK_WORKDIR": str(k.workdir)}

        async def both() -> tuple[float, float]:
            waiter = asyncio.create_task(wait_ready(info.credentials(), n))
            await asyncio.sleep(0.5)  # let the watch list first
            t0 = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                str(k.toolchain.path("kwokctl")), "--name", name, "scale", "node", "--replicas", str(n),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, err = await proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"kwokctl scale failed: {err.decode()[-500:]}")
            created = time.monotonic() - t0
            await waiter
            return created, time.monotonic() - t0

        created, ready = asyncio.run(both())
    finally:
        k.delete(name)
    return {"components": components, "created": created, "ready": ready}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1000,5000")
    ap.add_argument("--repeat", type=int, default=1, help="measure both ways this many times, interleaved")
    ap.add_argument("--data", type=Path, help="write every measurement, the command, commit, day and host here (JSON)")
    args = ap.parse_args()
    tc = Toolchain()
    tc.install("auto")
    runs: dict[str, list[dict[str, Any]]] = {METHODS[0]: [], METHODS[1]: []}
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
        k = Kwokctl(tc, Path(home))
        print(f"{'nodes':>6} {'method':<16} {'components s':>12} {'created s':>10} {'ready s':>8}")
        for rep in range(args.repeat):
            for n in [int(x) for x in args.nodes.split(",")]:
                kb = kwokbench_up(k, n)
                kc = kwokctl_scale(k, n)
                for label, r in zip(METHODS, (kb, kc), strict=True):
                    runs[label].append({"nodes": n, "repeat": rep, **r})
                    print(f"{n:>6} {label:<16} {r['components']:>12.1f} {r['created']:>10.1f} {r['ready']:>8.1f}")
                print(f"{n:>6} ratio kwokctl/kwokbench (ready): {kc['ready'] / kb['ready']:.2f}x", flush=True)
    if args.data:
        options = f"--nodes {args.nodes}" + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        write(args.data, {**here("nodes Ready by `kwokbench up` and by `kwokctl scale node` on a fresh cluster "
                                 "each, interleaved (benchmarks/bench_up.py)", "bench_up.py", options), "runs": runs})


METHODS = ("kwokbench up", "kwokctl scale")


def _by_nodes(doc: dict[str, Any], method: str, key: str) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for r in doc["runs"][method]:
        out.setdefault(int(r["nodes"]), []).append(float(r[key]))
    return dict(sorted(out.items()))


def _mid(xs: list[float]) -> str:
    """The median and, over more than one measurement, the range: ``5.7 s (5.5–6.0)``."""
    m, lo, hi = (f"{x:.1f}" for x in (statistics.median(xs), min(xs), max(xs)))
    return f"{m} s" if len(xs) == 1 or lo == hi else f"{m} s ({lo}–{hi})"


def ready(doc: dict[str, Any], method: str = METHODS[0]) -> str:
    """Seconds to every node Ready at each node count, medians with their range: ``5.7 s / 28.7 s``."""
    return " / ".join(_mid(xs) for xs in _by_nodes(doc, method, "ready").values())


def slower(doc: dict[str, Any]) -> str:
    """``kwokctl scale node``'s median time to Ready over kwokbench's, at each node count: ``2.6x / 2.6x``."""
    a, b = _by_nodes(doc, METHODS[1], "ready"), _by_nodes(doc, METHODS[0], "ready")
    return " / ".join(f"{statistics.median(a[n]) / statistics.median(b[n]):.1f}x" for n in a)


def components(doc: dict[str, Any]) -> str:
    """The range of seconds to the control plane's components Ready, over every measurement: ``3.4–3.6 s``."""
    xs = [x for m in METHODS for v in _by_nodes(doc, m, "components").values() for x in v]
    return ranged(xs, ".1f", unit=" s")


if __name__ == "__main__":
    main()
