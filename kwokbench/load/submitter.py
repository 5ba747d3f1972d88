"""Open-loop submission of pre-rendered objects, in one or more worker processes.

Object i is sent at ``t0 + offsets[i]`` whatever the server does: a slow answer never delays the next
send (requests are independent tasks), and if the harness itself falls behind, the gap between the
scheduled and the actual send time is recorded, not hidden. Every request's scheduled time, send time,
latency and HTTP status is kept; a 429 or 5xx is a measured outcome and is never retried.

Bodies are rendered by :class:`~kwokbench.templates.ManifestFactory` inside the worker (the fast path
splices names into pre-rendered JSON), sent as bytes, and responses are not deserialised.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import time
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import aiohttp
import numpy as np
import yarl

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError
from kwokbench.templates import ManifestFactory

CONNECTION_ERROR = -1
TICK = 0.001
"""Shortest pacing sleep (s)."""


@dataclass(frozen=True)
class SubmitJob:
    creds: Credentials
    path: str
    factory: ManifestFactory
    offsets: np.ndarray
    """Due offset (s) of every object of the phase."""
    t0: float
    """Wall-clock (epoch) time of offset 0."""
    worker: int = 0
    workers: int = 1
    connections: int = 64
    deadline: float = 600.0
    """Seconds after t0 + last offset to wait for outstanding answers."""


@dataclass
class RequestLog:
    """Per-request records of one phase (arrays indexed by object index)."""

    index: np.ndarray
    scheduled: np.ndarray
    sent: np.ndarray
    latency: np.ndarray
    status: np.ndarray
    cpu_seconds: float = 0.0

    @classmethod
    def empty(cls, n: int) -> RequestLog:
        return cls(np.arange(n, dtype=np.int64), np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan),
                   np.zeros(n, dtype=np.int16))

    @classmethod
    def merge(cls, logs: list[RequestLog]) -> RequestLog:
        idx = np.concatenate([lg.index for lg in logs])
        order = np.argsort(idx, kind="stable")

        def cat(attr: str) -> np.ndarray:
            return np.concatenate([getattr(lg, attr) for lg in logs])[order]

        return cls(idx[order], cat("scheduled"), cat("sent"), cat("latency"), cat("status"),
                   sum(lg.cpu_seconds for lg in logs))


async def _submit(job: SubmitJob, progress: Synchronized[int] | None) -> RequestLog:
    mine = np.arange(job.worker, len(job.offsets), job.workers)
    n = len(mine)
    log = RequestLog.empty(n)
    log.index[:] = mine
    log.scheduled[:] = job.t0 + job.offsets[mine]
    bodies = [job.factory.body(int(i)) for i in mine]  # rendered before t0, off the timed path
    pending: set[asyncio.Task[None]] = set()
    cpu0 = time.process_time()

    finished = 0

    def report() -> None:
        if progress is not None:
            progress.value = finished  # one writer per Value; no lock needed

    # The hot path skips the generic Api wrapper: one pre-built URL, session-wide timeout, no
    # per-request base-URL join or timeout object (together about a third of the CPU per request).
    url = yarl.URL(job.creds.server + job.path)
    connector = aiohttp.TCPConnector(ssl=job.creds.ssl_context(), limit=job.connections)
    async with aiohttp.ClientSession(
        # responses are never parsed: ask for protobuf, which is smaller to send and cheaper for
        # the apiserver to encode than JSON
        connector=connector, headers={"Content-Type": "application/json",
                                      "Accept": "application/vnd.kubernetes.protobuf, application/json",
                                      **job.creds.headers()},
        timeout=aiohttp.ClientTimeout(total=job.deadline, sock_connect=10),
    ) as session:
        async def one(k: int) -> None:
            nonlocal finished
            try:
                async with session.post(url, data=bodies[k]) as resp:
                    status = resp.status
                    await resp.read()
            except (aiohttp.ClientError, TimeoutError):
                status = CONNECTION_ERROR
            log.latency[k] = time.time() - log.sent[k]
            log.status[k] = status
            finished += 1

        await asyncio.sleep(max(0.0, job.t0 - time.time()))
        k = 0
        ppid = os.getppid()
        while k < n and os.getppid() == ppid:  # stop sending if kwokbench was killed
            now = time.time()
            while k < n and log.scheduled[k] <= now:
                log.sent[k] = now
                t = asyncio.create_task(one(k))
                pending.add(t)
                t.add_done_callback(pending.discard)
                k += 1
                now = time.time()
            report()
            if k < n:
                # a timer per object costs as much CPU as the request at 2000/s: wake at most every
                # TICK and send everything due by then (lateness stays below TICK, and is recorded)
                await asyncio.sleep(max(TICK, log.scheduled[k] - time.time()))
        end = job.t0 + float(job.offsets[-1]) + job.deadline if n else 0.0
        while finished < k and time.time() < end and os.getppid() == ppid:  # answers still outstanding
            await asyncio.sleep(0.05)
            report()
        for t in list(pending):
            t.cancel()
    log.cpu_seconds = time.process_time() - cpu0
    report()
    return log


def _run(coro: Any) -> Any:
    """uvloop when available: it roughly halves the event loop's CPU per request."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)


def send_to_parent(q: Any, item: Any, ppid: int) -> None:
    """Put a child's result on its queue, unless the parent is gone: then nobody will read it, and
    exiting must not wait on the queue's feeder thread (cancel_join_thread drops unsent data, so it
    is only safe when there is no reader left)."""
    if os.getppid() != ppid:
        q.cancel_join_thread()
        return
    q.put(item)


def _worker_main(job: SubmitJob, progress: Synchronized[int], out: mp.Queue[Any]) -> None:
    ppid = os.getppid()
    try:
        result: tuple[str, Any] = ("ok", _run(_submit(job, progress)))
    except BaseException as e:  # report to the parent instead of dying silently
        result = ("error", f"{type(e).__name__}: {e}")
    send_to_parent(out, result, ppid)


class Submission:
    """A phase being submitted by ``workers`` processes; poll :attr:`done` for progress."""

    def __init__(self, job: SubmitJob, workers: int = 1) -> None:
        ctx = mp.get_context("spawn")
        self.total = len(job.offsets)
        self._progress: list[Synchronized[int]] = [ctx.Value("q", 0) for _ in range(workers)]
        self._out: mp.Queue[Any] = ctx.Queue()
        self._procs = [
            ctx.Process(target=_worker_main, name=f"kwokbench-submit-{w}", daemon=True,
                        args=(_with_worker(job, w, workers), self._progress[w], self._out))
            for w in range(workers)
        ]
        for p in self._procs:
            p.start()

    @property
    def done(self) -> int:
        return sum(int(p.value) for p in self._progress)

    def result(self, timeout: float) -> RequestLog:
        logs: list[RequestLog] = []
        deadline = time.monotonic() + timeout
        while len(logs) < len(self._procs):
            try:
                kind, payload = self._out.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise ApiError(f"submitter did not finish within {timeout:.0f}s") from None
            if kind == "error":
                self.stop()
                raise ApiError(f"submitter worker failed: {payload}")
            logs.append(payload)
        for p in self._procs:
            p.join(5)
        return RequestLog.merge(logs)

    def stop(self) -> None:
        for p in self._procs:
            if p.is_alive():
                p.terminate()
        for p in self._procs:
            p.join(5)


def _with_worker(job: SubmitJob, w: int, workers: int) -> SubmitJob:
    return SubmitJob(job.creds, job.path, job.factory, job.offsets, job.t0, w, workers, job.connections,
                     job.deadline)


