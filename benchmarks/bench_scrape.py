"""What 1-second scraping costs, and whether it disturbs the submitter.

For 1000 and 5000 nodes: payload size and CPU ms per scrape+compress+store of each component's
/metrics (the scraper's own process), then the submitter's achieved rate and send lateness at
1000 pods/s without and with the scraper running, in the same run.

    python benchmarks/bench_scrape.py [--nodes 1000,5000] [--qps 1000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np
import zstandard

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
    args = ap.parse_args()
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
                for e in cluster_endpoints(info):
                    if e.component == "kube-scheduler":
                        continue
                    cpu_ms, kib, ckib = asyncio.run(scrape_cost(e, 10, Path(home)))
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
            finally:
                k.delete(name)


if __name__ == "__main__":
    main()
