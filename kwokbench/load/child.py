"""What a child process kwokbench spawns (pod watch, scraper, submit workers) needs to outlive nothing:
its parent's pid as it was at spawn, a result sent only to a parent still there, and a flag instead of a
``multiprocessing.Event``."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any


def spawn_parent() -> int:
    """The pid of the kwokbench process that spawned this child, as it was when it spawned it. Not
    ``os.getppid()`` read at the child's start: a parent killed while the child was still importing has
    already handed it to init, and the child would then wait on init for ever."""
    parent = mp.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getppid()


def send_to_parent(q: Any, item: Any, ppid: int) -> None:
    """Put a child's result on its queue, unless the parent is gone: then nobody will read it, and
    exiting must not wait on the queue's feeder thread (cancel_join_thread drops unsent data, so it
    is only safe when there is no reader left)."""
    if os.getppid() != ppid:
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
