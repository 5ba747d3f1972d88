"""Scrape every component's ``/metrics`` each second, in a process of its own, and store raw snapshots.

Raw first: each snapshot is appended, zstd-compressed, to ``scrapes/<component>.prom.zst`` as a JSON
header line (time, status, size, scrape latency) followed by the payload. Parsing happens after the
run (:mod:`kwokbench.metrics.derive`), so scraping costs one HTTP GET and one compression per
endpoint per second and never competes with the submitter's process. The same loop samples the CPU
seconds and RSS of every control-plane process by pid. A failed scrape is recorded, not skipped over.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import StoreError
from kwokbench.load.child import Flag, Parent, context, send_to_parent

SCRAPES = "scrapes"
FRAME_VERSION = 1
"""Format of a snapshot frame (a JSON header line, then the payload); headers before it had no ``v``."""
PROCS = "procs.parquet"
FINAL_RETRIES = 3
"""How often the round after stop asks an endpoint again whose scrape failed (its counters' final values)."""


@dataclass(frozen=True)
class Snapshot:
    t: float
    status: int
    ms: float
    payload: bytes


def write_frame(w: Any, t: float, status: int, ms: float, payload: bytes) -> None:
    w.write(orjson.dumps({"v": FRAME_VERSION, "t": t, "status": status, "ms": ms, "bytes": len(payload)}) + b"\n")
    w.write(payload)
    w.write(b"\n")


def read_snapshots(path: Path) -> Iterator[Snapshot]:
    """Every snapshot of one component's stream (a torn last frame, from a killed run, is dropped)."""
    import zstandard

    with path.open("rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
        import io

        buf = io.BufferedReader(r)
        while True:
            head = buf.readline()
            if not head:
                return
            try:
                h = orjson.loads(head)
            except orjson.JSONDecodeError:
                return
            if h.get("v", 1) > FRAME_VERSION:
                raise StoreError(f"{path}: scrape frame version {h['v']} is newer than this kwokbench reads "
                                 f"({FRAME_VERSION})")
            payload = buf.read(h["bytes"])
            if len(payload) < h["bytes"]:
                return
            buf.read(1)
            yield Snapshot(h["t"], h["status"], h["ms"], payload)


def _scrape_main(endpoints: list[Endpoint], pids: dict[str, int], out: str, interval: float, stop: Any,
                 started: Any, result_q: Any, pid_dir: str | None = None) -> None:
    import psutil
    import zstandard

    parent = Parent()
    outdir = Path(out) / SCRAPES
    outdir.mkdir(parents=True, exist_ok=True)
    files = {e.component: (outdir / f"{e.component}.prom.zst").open("wb") for e in endpoints}
    # one compressor per stream: a ZstdCompressor cannot interleave several streams
    writers: dict[str, Any] = {c: zstandard.ZstdCompressor(level=3).stream_writer(f) for c, f in files.items()}
    procs: dict[str, psutil.Process] = {}
    for comp, pid in pids.items():
        with contextlib.suppress(psutil.Error):
            procs[comp] = psutil.Process(pid)
    rows: list[tuple[float, str, float, int]] = []
    errors: list[str] = []
    stats = {"scrapes": 0, "failed": 0, "cpu_seconds": 0.0}

    async def main() -> None:
        import aiohttp

        sessions: dict[str, aiohttp.ClientSession] = {}
        for e in endpoints:
            ssl: Any = False
            if e.creds is not None:
                ssl = e.creds.ssl_context()
            sessions[e.component] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl, limit=1),
                                                          timeout=aiohttp.ClientTimeout(total=10),
                                                          headers=e.creds.headers() if e.creds else None)

        async def one(e: Endpoint) -> int:
            t = time.time()
            try:
                async with sessions[e.component].get(e.url) as resp:
                    body, status = await resp.read(), resp.status
            except (aiohttp.ClientError, TimeoutError) as ex:
                body, status = f"{type(ex).__name__}: {ex}".encode(), -1
            ms = (time.time() - t) * 1000
            if status != 200:
                stats["failed"] += 1
                if len(errors) < 100:
                    errors.append(f"{t:.3f} {e.component}: {status} {body[:200].decode(errors='replace')}")
            write_frame(writers[e.component], t, status, ms, body if status == 200 else b"")
            return status

        def sample_procs() -> None:
            t = time.time()
            for comp, p in list(procs.items()):
                if pid_dir and not p.is_running():  # restarted (a chaos event): follow kwokctl's pid file
                    with contextlib.suppress(OSError, ValueError, psutil.Error):
                        p = procs[comp] = psutil.Process(int((Path(pid_dir) / f"{comp}.pid").read_text()))
                with contextlib.suppress(psutil.Error), p.oneshot():
                    c = p.cpu_times()
                    rows.append((t, comp, c.user + c.system, p.memory_info().rss))

        try:
            started.set()
            next_t = time.time()
            while True:
                # decided before the round: a round in flight when stop came began before the end and may miss
                # its last second (CI: a scheduler's count 79 bindings short of the pods the watch saw bound)
                last = stop.is_set() or not parent.alive()  # stopped, or kwokbench was killed
                cpu0 = time.process_time()
                sample_procs()
                status = await asyncio.gather(*(one(e) for e in endpoints))
                stats["scrapes"] += 1
                if last:  # the counters' final values: a failed one is asked again, a bounded number of times
                    todo = [e for e, st in zip(endpoints, status, strict=True) if st != 200]
                    for _ in range(FINAL_RETRIES):
                        if not todo:
                            break
                        await asyncio.sleep(0.5)
                        status = await asyncio.gather(*(one(e) for e in todo))
                        todo = [e for e, st in zip(todo, status, strict=True) if st != 200]
                stats["cpu_seconds"] += time.process_time() - cpu0
                if last:
                    break  # the last round began after stop, so counters include the very end
                next_t = max(next_t + interval, time.time())  # fell behind: do not burst to catch up
                while not stop.is_set() and time.time() < next_t and parent.alive():
                    await asyncio.sleep(min(0.05, next_t - time.time()))
        finally:
            for s in sessions.values():
                await s.close()

    try:
        asyncio.run(main())
    finally:
        for w in writers.values():
            w.close()
        import pandas as pd

        df = pd.DataFrame(rows, columns=["t", "component", "cpu_seconds", "rss_bytes"])
        df.to_parquet(Path(out) / PROCS, index=False)
        send_to_parent(result_q, {"errors": errors, **stats}, parent)


class Scraper:
    """The scrape loop in a child process. ``stop()`` takes one last scrape and returns its stats."""

    def __init__(self, endpoints: list[Endpoint], pids: dict[str, int], run_dir: Path, interval: float = 1.0,
                 pid_dir: Path | None = None):
        ctx = context()
        self._stop, self._started = Flag(ctx), Flag(ctx)
        self._q: Any = ctx.Queue()
        self._proc = ctx.Process(target=_scrape_main, name="kwokbench-scrape", daemon=True,
                                 args=(endpoints, pids, str(run_dir), interval, self._stop, self._started, self._q,
                                       str(pid_dir) if pid_dir else None))
        self._proc.start()

    def wait_started(self, timeout: float = 30.0) -> bool:
        return bool(self._started.wait(timeout))

    def stop(self, timeout: float = 60.0) -> dict[str, Any]:
        self._stop.set()
        result: dict[str, Any] = {"errors": ["scraper did not report"], "scrapes": 0, "failed": 0}
        with contextlib.suppress(Exception):
            result = self._q.get(timeout=timeout)
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()
        return result


def cluster_endpoints(info: Any) -> list[Endpoint]:
    """apiserver with the admin client certificate; scheduler and controller-manager serve self-signed
    certificates (verification off, the admin certificate still presented); kwok serves plain HTTP.
    An attached cluster exposes only some of them: the others are simply not scraped (and reported)."""
    creds = info.credentials()
    insecure = Credentials("", None, creds.cert_file, creds.key_file, insecure=True)
    how = {"kube-apiserver": creds, "kube-scheduler": insecure, "kube-controller-manager": insecure,
           "kwok-controller": None}
    return [Endpoint(comp, url, how[comp]) for comp, url in info.metrics_endpoints().items() if comp in how]
