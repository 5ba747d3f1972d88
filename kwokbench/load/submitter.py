"""Open-loop submission of pre-rendered objects, in one or more worker processes.

Object i is sent at ``t0 + offsets[i]`` whatever the server does: a slow answer never delays the next
send (each request has its own keep-alive connection, up to ``SubmitJob.connections``; beyond that a
request waits for one). Four moments are kept per request: when it was due (``scheduled``), when the
pacer handed it to the connection pool (``dispatched``; its lateness is the harness's own), when a
connection actually carried it (``sent``; the gap is the wait for a connection) and its answer
(``latency`` after ``dispatched``), with the HTTP status. A 429 or 5xx is a measured outcome and is never
retried. Rates are judged from these (offered, sent, accepted) by :mod:`kwokbench.figures.summary`.

Bodies are rendered by :class:`~kwokbench.manifests.ManifestFactory` inside the worker (the fast path
splices names into pre-rendered JSON) and sent as whole pre-built requests through
:mod:`kwokbench.load.http1`; responses are not deserialised.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.errors import ApiError
from kwokbench.load.child import Parent, context, send_to_parent
from kwokbench.load.http1 import Pool, build_request, request_prefix
from kwokbench.manifests import ManifestFactory

TICK = 0.001
"""Shortest pacing sleep (s)."""
SUPERVISE = 0.1
"""Interval (s) of progress reports and parent-alive checks while sending."""
WARM_CONNECTIONS = 4
"""Connections opened before t0; the pool grows on demand up to ``SubmitJob.connections``."""


@dataclass(frozen=True)
class SubmitJob:
    creds: Credentials
    path: str
    factory: ManifestFactory
    offsets: np.ndarray = field(repr=False)  # see RequestLog.__repr__
    """Due offset (s) of every object of the phase."""
    t0: float
    """Wall-clock (epoch) time of offset 0."""
    worker: int = 0
    workers: int = 1
    connections: int = 64
    deadline: float = 600.0
    """Seconds after t0 + last offset to wait for outstanding answers."""


@dataclass(repr=False)
class RequestLog:
    """Per-request records of one phase (arrays indexed by object index)."""

    index: np.ndarray
    scheduled: np.ndarray
    dispatched: np.ndarray
    """Handed to the connection pool by the pacer."""
    sent: np.ndarray
    """Written to a connection (NaN: never, e.g. the pool closed first)."""
    latency: np.ndarray
    """Seconds from ``dispatched`` to the answer (waiting for a connection included)."""
    status: np.ndarray
    connections: int = 0
    """The connection cap (summed over workers)."""
    connections_peak: int = 0
    """Most connections open at once (summed over workers)."""
    waited_at_cap: int = 0
    """Requests that found every connection busy with the pool at its cap."""
    cpu_seconds: float = 0.0
    """Harness CPU of the phase, setup included."""
    setup_cpu_seconds: float = 0.0
    """Of which one-off setup before t0 (TLS context, warm connections)."""
    start_cpu_seconds: float = 0.0
    """Not included above: starting the worker process(es) (interpreter, imports, the job)."""

    def __repr__(self) -> str:
        # short on purpose: asyncio formats the finished main task, result included, when it restores
        # its SIGINT handler; printing five arrays in full cost ~0.2 s of CPU per phase
        return f"RequestLog({len(self.index)} requests, cpu_seconds={self.cpu_seconds:.3f})"

    @classmethod
    def empty(cls, n: int) -> RequestLog:
        return cls(np.arange(n, dtype=np.int64), np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan),
                   np.full(n, np.nan), np.zeros(n, dtype=np.int16))

    @classmethod
    def merge(cls, logs: list[RequestLog]) -> RequestLog:
        idx = np.concatenate([lg.index for lg in logs])
        order = np.argsort(idx, kind="stable")

        def cat(attr: str) -> np.ndarray:
            return np.concatenate([getattr(lg, attr) for lg in logs])[order]

        return cls(idx[order], cat("scheduled"), cat("dispatched"), cat("sent"), cat("latency"), cat("status"),
                   sum(lg.connections for lg in logs), sum(lg.connections_peak for lg in logs),
                   sum(lg.waited_at_cap for lg in logs), sum(lg.cpu_seconds for lg in logs),
                   sum(lg.setup_cpu_seconds for lg in logs), sum(lg.start_cpu_seconds for lg in logs))


async def _submit(job: SubmitJob, progress: Any) -> RequestLog:
    cpu0 = time.process_time()
    mine = np.arange(job.worker, len(job.offsets), job.workers)
    n = len(mine)
    log = RequestLog.empty(n)
    log.index[:] = mine
    log.scheduled[:] = job.t0 + job.offsets[mine]
    # whole requests (line, headers, body) built before t0, off the timed path (but counted as
    # harness CPU, a few µs each); responses are never parsed: ask for protobuf, which is smaller
    # to send and cheaper for the apiserver to encode
    prefix = request_prefix(job.creds.server, job.path, {
        "Content-Type": "application/json", "Accept": "application/vnd.kubernetes.protobuf, application/json",
        "User-Agent": "kwokbench-submitter", **job.creds.headers()})
    requests = [build_request(prefix, job.factory.body(int(i))) for i in mine]
    dispatched, sent, latency, status = log.dispatched, log.sent, log.latency, log.status
    finished = 0

    def done(k: int, code: int) -> None:
        nonlocal finished
        latency[k] = time.time() - dispatched[k]
        status[k] = code
        finished += 1

    def on_send(k: int) -> None:
        sent[k] = time.time()

    def report() -> None:
        if progress is not None:
            progress.value = finished  # one writer per Value; no lock needed

    cpu_setup = time.process_time()
    pool = Pool(job.creds.server, job.creds.ssl_context(), job.connections, done, on_send=on_send)
    try:
        # TLS and a few connections set up before t0: the first requests are not delayed by
        # handshakes, and this one-off cost is kept apart from the per-request cost
        await pool.warm(WARM_CONNECTIONS)
        log.setup_cpu_seconds = time.process_time() - cpu_setup
        await asyncio.sleep(max(0.0, job.t0 - time.time()))
        loop = asyncio.get_running_loop()
        scheduled = log.scheduled.tolist()  # python floats: cheaper to compare in the loop
        k = 0
        timer: asyncio.TimerHandle | None = None

        def pace() -> None:
            """Send everything due, then sleep until the next one is due. A plain timer callback, not
            a coroutine: no task step or future per wake-up. At high rates it wakes at most every
            TICK and sends everything due by then (lateness stays below TICK, and is recorded)."""
            nonlocal k, timer
            now = time.time()
            while k < n and scheduled[k] <= now:
                dispatched[k] = now
                pool.post(k, requests[k])
                requests[k] = b""  # sent bytes are not needed again
                k += 1
                now = time.time()
            timer = loop.call_later(max(TICK, scheduled[k] - now), pace) if k < n else None

        pace()
        # supervise: progress for the parent, stop if kwokbench was killed, wait for the last answers
        parent = Parent()
        end = job.t0 + float(job.offsets[-1]) + job.deadline if n else 0.0
        while (k < n or finished < k) and time.time() < end and parent.alive():
            report()
            await asyncio.sleep(SUPERVISE)
        if timer is not None:
            timer.cancel()
    finally:
        pool.close()
    log.connections, log.connections_peak, log.waited_at_cap = pool.limit, pool.peak, pool.waited_at_cap
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


def _worker_main(job: SubmitJob, progress: Any, out: mp.Queue[Any]) -> None:
    parent = Parent()
    started = time.process_time()  # this process's CPU so far: interpreter, imports, unpickling the job
    try:
        log = _run(_submit(job, progress))
        log.start_cpu_seconds = started
        result: tuple[str, Any] = ("ok", log)
    except BaseException as e:  # report to the parent instead of dying silently
        result = ("error", f"{type(e).__name__}: {e}")
    send_to_parent(out, result, parent)


class Submission:
    """A phase being submitted by ``workers`` processes; poll :attr:`done` for progress."""

    def __init__(self, job: SubmitJob, workers: int = 1) -> None:
        ctx = context()
        self.total = len(job.offsets)
        # lock-free (one writer each): no lock a killed kwokbench could die holding, blocking its workers
        self._progress: list[Any] = [ctx.Value("q", 0, lock=False) for _ in range(workers)]
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


