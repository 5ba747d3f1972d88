"""How the core reports progress without importing rich: the CLI injects :mod:`kwokbench.cli.console`.

The core speaks in events (a step with a count, a section of the work, something found in the cache, a
warning); how they look is the console's business, so no markup string leaves :mod:`kwokbench.cli.console`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from typing import Protocol

Update = Callable[[str], None]
Count = Callable[[int], None]


class Reporter(Protocol):
    def status(self, msg: str) -> ContextManager[Update]: ...
    def counter(self, msg: str, total: int) -> ContextManager[Count]: ...
    def info(self, msg: str) -> None: ...
    def warn(self, msg: str) -> None: ...
    def heading(self, msg: str) -> None:
        """A new section of the work (a repeat of a variant, a sweep's cluster size)."""
    def cached(self, what: str, where: str) -> None:
        """``what`` was found ready in ``where`` (a build that was not needed)."""


class Silent:
    """Reporter for tests and library use: swallows everything."""

    @contextlib.contextmanager
    def status(self, msg: str) -> Iterator[Update]:
        yield lambda _detail: None

    @contextlib.contextmanager
    def counter(self, msg: str, total: int) -> Iterator[Count]:
        yield lambda _done: None

    def info(self, msg: str) -> None:
        pass

    def warn(self, msg: str) -> None:
        pass

    def heading(self, msg: str) -> None:
        pass

    def cached(self, what: str, where: str) -> None:
        pass


class Tagged:
    """A reporter for one of several processes writing to one terminal at once (the sides of a duet of two
    clusters): every line names its side, and steps are lines (begun, done), never a live display that the other
    process would overwrite."""

    def __init__(self, inner: Reporter, tag: str) -> None:
        self.inner, self.tag = inner, tag

    @contextlib.contextmanager
    def status(self, msg: str) -> Iterator[Update]:
        self.inner.info(f"[{self.tag}] {msg} …")
        yield lambda _detail: None

    @contextlib.contextmanager
    def counter(self, msg: str, total: int) -> Iterator[Count]:
        done = 0

        def count(n: int) -> None:
            nonlocal done
            done = n

        self.inner.info(f"[{self.tag}] {msg} …")
        yield count
        self.inner.info(f"[{self.tag}] {msg}: {done}/{total}")

    def info(self, msg: str) -> None:
        self.inner.info(f"[{self.tag}] {msg}")

    def warn(self, msg: str) -> None:
        self.inner.warn(f"[{self.tag}] {msg}")

    def heading(self, msg: str) -> None:
        self.inner.heading(f"[{self.tag}] {msg}")

    def cached(self, what: str, where: str) -> None:
        self.inner.cached(f"[{self.tag}] {what}", where)
