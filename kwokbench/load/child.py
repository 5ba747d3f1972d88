"""What a child process kwokbench starts (pod watch, scraper, submit workers) needs to outlive nothing and to
start cheaply: one forkserver per kwokbench process, its parent checked for life rather than for being its
parent, a result sent only to a parent still there, and a flag instead of a ``multiprocessing.Event``."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

import psutil

PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "aiohttp", "psutil", "zstandard", "uvloop",
           "kwokbench.load.watcher", "kwokbench.load.submitter", "kwokbench.metrics.scrape", "kwokbench.cli")
"""What the forkserver imports once, before its first fork: each child is a fork of it, and starts with these
loaded instead of importing them anew (a spawned child imported them each time). ``kwokbench.cli`` because each
child first runs kwokbench's entry script again, as ``__mp_main__`` (Python before 3.13 cannot preload
``__main__`` in a forkserver: cpython#126631), and that script's one import is then already loaded."""


def context() -> Any:
    """The multiprocessing context of every child: a forkserver with :data:`PRELOAD` loaded. Not ``fork``: the
    parent has threads (the progress display, the process sampler) that a fork could catch holding a lock. Not
    ``spawn``: each child would import numpy, pandas, pyarrow and aiohttp anew, about 1.5 CPU-seconds each,
    three or more children a run. A forkserver's children are its own, not kwokbench's: they check that
    kwokbench is alive (:class:`Parent`), not that it is their parent."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _forget_the_forkserver() -> None:
    """In a fork of a process that started the forkserver (a duet's sides): the server is not this process's
    child, so multiprocessing could not wait on it; this process starts its own when it needs one."""
    from multiprocessing import forkserver

    fs: Any = forkserver._forkserver
    if fs._forkserver_pid is not None:
        if fs._forkserver_alive_fd is not None:
            os.close(fs._forkserver_alive_fd)
        fs._forkserver_alive_fd = fs._forkserver_address = fs._forkserver_pid = None


os.register_at_fork(after_in_child=_forget_the_forkserver)


class Parent:
    """The kwokbench process that started this child, as it was when it started it (its pid, from
    ``multiprocessing.parent_process()``, and its start time): alive while that process runs and is not a
    zombie. Not ``os.getppid()``: a forkserver's child has the server for its parent, and a child whose
    kwokbench was killed while it was starting has init."""

    def __init__(self) -> None:
        p = mp.parent_process()
        pid = p.pid if p is not None and p.pid else os.getppid()
        try:
            self._proc: Any = psutil.Process(pid)
        except psutil.Error:
            self._proc = None

    def alive(self) -> bool:
        try:
            return bool(self._proc is not None and self._proc.is_running()
                        and self._proc.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False


def send_to_parent(q: Any, item: Any, parent: Parent) -> None:
    """Put a child's result on its queue, unless the parent is gone: then nobody will read it, and
    exiting must not wait on the queue's feeder thread (cancel_join_thread drops unsent data, so it
    is only safe when there is no reader left)."""
    if not parent.alive():
        q.cancel_join_thread()
        return
    q.put(item)


class Flag:
    """A one-way signal across processes, set once and polled. Not a ``multiprocessing.Event``: its
    ``set()`` waits until every waiter has woken, so a child setting an Event that a killed kwokbench was
    waiting on (``wait_started``, ``wait_synced``) blocks for ever, and with it the child's exit."""

    def __init__(self, ctx: Any) -> None:
        self._v = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._v.value = 1

    def is_set(self) -> bool:
        return bool(self._v.value)

    def wait(self, timeout: float, poll: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while not self.is_set():
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
        return True
