"""How fast does `kwokbench up` give a Ready cluster, and how does it compare with `kwokctl scale node`?

Prints, for each node count: seconds to components Ready, to nodes created, to all nodes Ready, for
kwokbench's concurrent creation and for `kwokctl scale node --replicas N` on an identically configured
fresh cluster in the same run, and the ratio. Target (issue 2): 5000 nodes Ready <= 30 s, not slower
than kwokctl scale.

    python benchmarks/bench_up.py [--nodes 1000,5000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="1000,5000")
    args = ap.parse_args()
    tc = Toolchain()
    tc.install("auto")
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
        k = Kwokctl(tc, Path(home))
        print(f"{'nodes':>6} {'method':<16} {'components s':>12} {'created s':>10} {'ready s':>8}")
        for n in [int(x) for x in args.nodes.split(",")]:
            kb = kwokbench_up(k, n)
            kc = kwokctl_scale(k, n)
            for label, r in (("kwokbench up", kb), ("kwokctl scale", kc)):
                print(f"{n:>6} {label:<16} {r['components']:>12.1f} {r['created']:>10.1f} {r['ready']:>8.1f}")
            print(f"{n:>6} ratio kwokctl/kwokbench (ready): {kc['ready'] / kb['ready']:.2f}x")


if __name__ == "__main__":
    main()
