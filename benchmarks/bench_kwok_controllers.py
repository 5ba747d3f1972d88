"""Does splitting the fake nodes over K kwok controllers make nodes Ready and pods Running faster?

For each K (default 1, 2, 4) on a fresh cluster of N nodes (default 20000): nodes Ready per second
(`kwokbench up`'s creation to all Ready, as bring_up times it), then P pods (default N) created already bound
(``spec.nodeName``, round-robin over the nodes, so the scheduler is not what is measured) and pods Running
per second from the first create to the last Running. Prints a table; each cluster is deleted after its row.
``--repeat R`` runs the K's R times, interleaved (1, 2, 4, 1, 2, 4, …); ``--data FILE`` keeps every run's row by K
with the command, the commit, the day and the host, from which the results page renders :func:`table`.

    .venv/bin/python benchmarks/bench_kwok_controllers.py [--nodes 20000] [--pods 20000] [--k 1,2,4] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from stored import here, ranged, write  # a sibling: benchmarks/ is on a script's path

from kwokbench.cluster import ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.cluster.api import Api, gather_limited
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.manifests import resolve_template


def pod(i: int, node: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"bench-{i}", "namespace": "default"},
                         "spec": {"nodeName": node, "containers": [{"name": "c", "image": "fake",
                                                                    "resources": {"requests": {"cpu": "10m"}}}]}})


async def pods_running(creds: Credentials, nodes: list[str], n: int, timeout: float = 1800) -> tuple[float, float]:
    """(seconds to create ``n`` bound pods, seconds from the first create to all Running)."""
    running: set[str] = set()
    done, stop, synced = asyncio.Event(), asyncio.Event(), asyncio.Event()

    def handle(typ: str, obj: dict[str, Any], _t: float) -> None:
        if typ != "DELETED" and (obj.get("status") or {}).get("phase") == "Running":
            running.add(obj["metadata"]["name"])
            if len(running) >= n:
                done.set()

    async with Api(creds, connections=64) as api:
        watch = asyncio.create_task(api.watch("/api/v1/namespaces/default/pods", handle, stop, synced=synced))
        try:
            await asyncio.wait_for(synced.wait(), 60)

            def post(i: int) -> Any:
                async def job() -> None:
                    for attempt in range(5):
                        status, body = await api.raw("POST", "/api/v1/namespaces/default/pods",
                                                     pod(i, nodes[i % len(nodes)]))
                        if status in (201, 409):
                            return
                        await asyncio.sleep(0.2 * (attempt + 1))
                    raise RuntimeError(f"pod {i}: HTTP {status}: {body[:200]!r}")
                return job

            t0 = time.monotonic()
            await gather_limited([post(i) for i in range(n)], 64)
            created = time.monotonic() - t0
            await asyncio.wait_for(done.wait(), timeout)
            return created, time.monotonic() - t0
        finally:
            stop.set()
            await asyncio.gather(watch, return_exceptions=True)


async def node_names(creds: Credentials) -> list[str]:
    async with Api(creds) as api:
        doc = await api.json("GET", "/api/v1/nodes")
    return sorted(n["metadata"]["name"] for n in doc["items"])


def one(k: Kwokctl, controllers: int, nodes: int, pods: int) -> dict[str, float]:
    name = f"bench-kwok-{controllers}"
    res = bring_up(k, ClusterOptions(name=name, kwok_controllers=controllers),
                   [NodeGroup("default", nodes, resolve_template("node"), {})], node_timeout=1800)
    try:
        creds = res.cluster.credentials()
        created, running = asyncio.run(pods_running(creds, asyncio.run(node_names(creds)), pods)) if pods else (0, 0)
    finally:
        k.delete(name)
    ready = res.timings["nodes ready"]
    return {"nodes_ready_s": ready, "nodes_per_s": nodes / ready, "pods_created_s": created,
            "pods_running_s": running, "pods_per_s": pods / running if running else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--pods", type=int, default=None, help="bound pods to run (default: as many as nodes; 0: none)")
    ap.add_argument("--k", default="1,2,4", help="kwok controller counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each K, interleaved")
    ap.add_argument("--data", type=Path, help="write each run's row, the command, commit, day and host here (JSON)")
    args = ap.parse_args()
    pods = args.nodes if args.pods is None else args.pods
    runs: dict[str, list[dict[str, Any]]] = {}
    doc = here("kwok controllers: nodes Ready and bound pods Running per second by K (bench_kwok_controllers.py)",
               "bench_kwok_controllers.py")
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
        k = Kwokctl(home=Path(home))
        k.toolchain.install("auto")
        print(f"{'K':>3} {'nodes':>6} {'ready s':>8} {'nodes/s':>8} {'pods':>6} {'created s':>9} {'running s':>9} "
              f"{'pods/s':>8}")
        for _ in range(args.repeat):
            for controllers in [int(x) for x in args.k.split(",")]:
                started = datetime.now(UTC).isoformat()
                r = one(k, controllers, args.nodes, pods)
                runs.setdefault(str(controllers), []).append({**r, "nodes": args.nodes, "pods": pods,
                                                              "started": started})
                print(f"{controllers:>3} {args.nodes:>6} {r['nodes_ready_s']:>8.1f} {r['nodes_per_s']:>8.0f} "
                      f"{pods:>6} {r['pods_created_s']:>9.1f} {r['pods_running_s']:>9.1f} {r['pods_per_s']:>8.0f}",
                      flush=True)
    if args.data:
        write(args.data, {**doc, "runs": runs})


def table(doc: dict[str, Any]) -> str:
    """The results page's table: for each K, the range of its runs (one figure where they agree)."""
    out = ["| K (runs) | nodes Ready | nodes Ready per second | bound pods Running | pods Running per second |",
           "|---|---|---|---|---|"]
    for controllers, rs in doc["runs"].items():
        ready, per_s, running, pods_s = (ranged([r[key] for r in rs], fmt, unit=unit) for key, fmt, unit in (
            ("nodes_ready_s", ".1f", " s"), ("nodes_per_s", ".0f", ""), ("pods_running_s", ".1f", " s"),
            ("pods_per_s", ".0f", "")))
        out.append(f"| {controllers} ({len(rs)}) | {ready} | {per_s} | {running} | {pods_s} |")
    return "\n".join(out)


def median(doc: dict[str, Any], controllers: str, key: str, fmt: str = ".0f") -> str:
    """The median of ``key`` over K = ``controllers``' runs, as the page quotes it: ``90``."""
    return format(statistics.median(r[key] for r in doc["runs"][controllers]), fmt)


if __name__ == "__main__":
    main()
