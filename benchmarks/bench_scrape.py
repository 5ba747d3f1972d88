"""What 1-second scraping costs, and whether it disturbs the submitter.

For 1000 and 5000 nodes: payload size and CPU ms per scrape+compress+store of each component's
/metrics (the scraper's own process), then the submitter's achieved rate and send lateness at
1000 pods/s without and with the scraper running, in the same run.

    .venv/bin/python benchmarks/bench_scrape.py [--nodes 1000,5000] [--qps 1000] [--seconds 10]
    .venv/bin/python benchmarks/bench_scrape.py --data docs/results/data/scrape-DATE.json

``--data FILE`` keeps each node count's figures with the command, this checkout's commit, the day and the host; the
results pages quote them through :func:`cost`, :func:`round_ms` and :func:`send_ratio`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import zstandard
from stored import here, ranged, write  # a sibling: benchmarks/ is on a script's path

from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.load.pacer import schedule
from kwokbench.load.submitter import Submission, SubmitJob
from kwokbench.manifests import ManifestFactory, resolve_template
from kwokbench.metrics.scrape import Scraper, cluster_endpoints, write_frame
from kwokbench.scenario import QpsArrival
from kwokbench.toolchain import Toolchain


async def scrape_cost(e: Endpoint, n: int, out: Path) -> tuple[float, float, float]:
    """(CPU ms per scrape+store, payload KiB, compressed KiB per scrape)."""
    ssl = e.creds.ssl_context() if e.creds else False
    raw = comp = 0
    with (out / f"{e.component}.zst").open("wb") as f, zstandard.ZstdCompressor(level=3).stream_writer(f) as w:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl, limit=1)) as s:
            cpu0 = time.process_time()
            for _ in range(n):
                t = time.time()
                async with s.get(e.url) as r:
                    body = await r.read()
                write_frame(w, t, r.status, 0.0, body)
                raw += len(body)
            cpu = time.process_time() - cpu0
    comp = (out / f"{e.component}.zst").stat().st_size
    return cpu * 1000 / n, raw / n / 1024, comp / n / 1024


def submit(info: ClusterInfo, qps: float, seconds: float, tag: str) -> tuple[float, float]:
    n = int(qps * seconds)
    f = ManifestFactory(resolve_template("pod"), {}, tag)
    job = SubmitJob(info.credentials(), f.namespaced_path("default"), f, schedule(QpsArrival(qps=qps), n),
                    t0=time.time() + 1.5)
    log = Submission(job, 1).result(timeout=seconds + 120)
    achieved = (n - 1) / (np.nanmax(log.sent) - np.nanmin(log.sent))
    return achieved / qps, float(np.nanpercentile(log.sent - log.scheduled, 99))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="1000,5000")
    ap.add_argument("--qps", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--data", type=Path, help="write each node count's figures, the command, commit, day and host "
                                              "here (JSON)")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    tc = Toolchain()
    tc.install("auto")
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as home:
        k = Kwokctl(tc, Path(home))
        for nodes in [int(x) for x in args.nodes.split(",")]:
            name = f"bench-scrape-{nodes}"
            groups = [NodeGroup("default", nodes, resolve_template("node"), {})]
            # no scheduler: pods stay pending, so the apiserver load is the submitter's alone
            info = bring_up(k, ClusterOptions(name=name, disable=["kube-scheduler"]), groups).cluster
            try:
                print(f"--- {nodes} nodes")
                row: dict[str, Any] = {"nodes": nodes, "qps": args.qps, "components": {}}
                for e in cluster_endpoints(info):
                    if e.component == "kube-scheduler":
                        continue
                    cpu_ms, kib, ckib = asyncio.run(scrape_cost(e, 10, Path(home)))
                    row["components"][e.component] = {"cpu_ms": cpu_ms, "payload_kib": kib, "stored_kib": ckib}
                    print(f"{e.component:<24} {cpu_ms:7.1f} ms CPU per scrape+store  {kib:8.0f} KiB payload "
                          f"{ckib:7.0f} KiB stored")
                base_ratio, base_late = submit(info, args.qps, args.seconds, "noscrape")
                endpoints = [e for e in cluster_endpoints(info) if e.component != "kube-scheduler"]
                scraper = Scraper(endpoints, k.pids(name), Path(home) / name, 1.0)
                scraper.wait_started()
                with_ratio, with_late = submit(info, args.qps, args.seconds, "scrape")
                stats = scraper.stop()
                print(f"submitter at {args.qps:g}/s: achieved/target {base_ratio:.4f} without scraping, "
                      f"{with_ratio:.4f} with (ratio {with_ratio / base_ratio:.4f}); p99 send lateness "
                      f"{base_late * 1000:.1f} ms → {with_late * 1000:.1f} ms")
                print(f"scraper during that run: {stats['scrapes']} rounds, "
                      f"{stats['cpu_seconds'] / max(stats['scrapes'], 1) * 1000:.1f} ms CPU per round of "
                      f"{len(endpoints)} endpoints, {stats['failed']} failed")
                rows.append({**row, "without": base_ratio, "with": with_ratio, "late_without": base_late,
                             "late_with": with_late, "rounds": stats["scrapes"], "failed": stats["failed"],
                             "round_ms": stats["cpu_seconds"] / max(stats["scrapes"], 1) * 1000})
            finally:
                k.delete(name)
    if args.data:
        options = f"--nodes {args.nodes} --qps {args.qps:g} --seconds {args.seconds:g}"
        write(args.data, {**here("what 1-second scraping costs and whether it disturbs the submitter, per node count "
                                 "(benchmarks/bench_scrape.py)", "bench_scrape.py", options), "runs": rows})


def cost(doc: dict[str, Any], component: str) -> str:
    """CPU per scrape and store of ``component`` over the node counts, and, for a payload over 1 MiB, what it weighs
    and what is stored: ``7 ms (1.7 MiB payload → 25–30 KiB stored)``."""
    c = [r["components"][component] for r in doc["runs"]]
    out = ranged([x["cpu_ms"] for x in c], ".1f", unit=" ms")
    if max(x["payload_kib"] for x in c) >= 1024:
        out += (f" ({ranged([x['payload_kib'] / 1024 for x in c], '.1f', unit=' MiB')} payload → "
                f"{ranged([x['stored_kib'] for x in c], '.0f', unit=' KiB')} stored)")
    return out


def round_ms(doc: dict[str, Any]) -> str:
    """The scraper's CPU per 1 s round of every endpoint, over the node counts: ``12 ms``."""
    return ranged([r["round_ms"] for r in doc["runs"]], ".0f", unit=" ms")


def send_ratio(doc: dict[str, Any]) -> str:
    """The submitter's achieved rate with scraping over without, over the node counts: ``0.9998–1.0002``."""
    return ranged([r["with"] / r["without"] for r in doc["runs"]], ".4f")


def achieved(doc: dict[str, Any]) -> str:
    """The submitter's achieved rate over its target without → with scraping, per node count:
    ``0.968 → 1.000 (1000 nodes), 0.937 → 0.895 (5000 nodes)``."""
    return ", ".join(f"{r['without']:.3f} → {r['with']:.3f} ({r['nodes']} nodes)" for r in doc["runs"])


def lateness(doc: dict[str, Any]) -> str:
    """The submitter's p99 send lateness without → with scraping, over the node counts: ``1.2–2.0 ms → 1.4–2.2 ms``."""
    return (f"{ranged([1000 * r['late_without'] for r in doc['runs']], '.1f', unit=' ms')} → "
            f"{ranged([1000 * r['late_with'] for r in doc['runs']], '.1f', unit=' ms')}")


if __name__ == "__main__":
    main()
