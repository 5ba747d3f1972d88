"""The one place that talks to the terminal: rich console, progress and tables.

The core reports progress through :class:`Progress`-like callables so that it never imports rich
directly; the CLI passes :func:`step` and :func:`status` in.

Without a terminal (a CI log, a pipe) there is no spinner to look at and no width to detect: every
step prints a line when it starts, a heartbeat every :data:`HEARTBEAT_SECONDS` while it runs, and a
line with its final count and duration when it ends; log lines are never hard-wrapped (a wrapped path
cannot be copied), and tables get :data:`PLAIN_WIDTH` columns unless ``COLUMNS`` says otherwise.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

HEARTBEAT_SECONDS = 30.0
"""Without a terminal, a running step prints a line this often (docs/reference/reliability.md promises 30 s)."""
PLAIN_WIDTH = 160
"""Width of tables without a terminal and without ``COLUMNS`` (rich would assume 80)."""


def make_console(stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console that, without a terminal, soft-wraps (never splits a line) and is ``COLUMNS`` or
    :data:`PLAIN_WIDTH` wide instead of rich's 80."""
    c = Console(stderr=stderr, file=file, highlight=False)
    if c.is_terminal:
        return c
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH
    return Console(stderr=stderr, file=file, highlight=False, soft_wrap=True, width=width)


console = make_console(stderr=True)
out = make_console()


def info(msg: str) -> None:
    console.print(msg, markup=False)


def heading(msg: str) -> None:
    console.print(f"[bold]{escape(msg)}[/]")


def cached(what: str, where: str) -> None:
    console.print(f"[dim]{escape(what)}: cached in {escape(where)}[/]")


STATUS_STYLE = {"ok": "green", "problem": "red", "optional": "yellow", "pass": "green", "regression": "red",
                "inconclusive": "yellow", "improvement": "green", "no change": "green", "acked": "yellow",
                "not enough history": "yellow"}


def styled(kind: str, text: str) -> str:
    """A table cell in the colour of its kind (ok / problem / optional; a gate verdict)."""
    colour = STATUS_STYLE.get(kind)
    return f"[{colour}]{escape(text)}[/]" if colour else escape(text)


def dim(text: str) -> None:
    out.print(f"[dim]{escape(text)}[/]")


def warn(msg: str) -> None:
    console.print(f"[yellow]warning:[/] {msg}")


def error(msg: str) -> None:
    console.print(f"[bold red]error:[/] {msg}", soft_wrap=True)


class _PlainStep:
    """A step in a log without a terminal: a line at the start, a heartbeat from a background thread
    every :data:`HEARTBEAT_SECONDS` (also while the step reports nothing, e.g. a silent ``go build``),
    and the caller prints the end line with :attr:`detail`, the last thing reported."""

    def __init__(self, msg: str) -> None:
        self.msg, self.detail = msg, ""
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="kwokbench-heartbeat", daemon=True)

    def update(self, detail: str) -> None:
        self.detail = detail

    def _beat(self) -> None:
        # the interval is read on every beat so a test can shorten it
        while not self._stop.wait(HEARTBEAT_SECONDS):
            detail = f": {self.detail[-100:]}" if self.detail else ""
            console.print(f"  … {self.msg} ({time.monotonic() - self.start:.0f}s){detail}")

    def __enter__(self) -> _PlainStep:
        console.print(f"… {self.msg}")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _done(msg: str, start: float) -> None:
    console.print(f"[green]✓[/] {msg} [dim]({time.monotonic() - start:.1f}s)[/]")


@contextlib.contextmanager
def status(msg: str) -> Iterator[Any]:
    """A spinner with elapsed time for a long step of unknown length; prints the duration when done."""
    if not console.is_terminal:
        with _PlainStep(msg) as step:
            yield step.update
        _done(msg, step.start)
        return
    start = time.monotonic()
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        task = progress.add_task(msg, total=None)

        def update(detail: str) -> None:
            progress.update(task, description=f"{msg} [dim]{detail[-90:]}[/]")

        yield update
    _done(msg, start)


@contextlib.contextmanager
def counter(msg: str, total: int) -> Iterator[Any]:
    """A bar for a step that counts up to ``total``; yields ``advance(n_done_absolute)``. The end line
    carries the count reached (``creating 100 nodes (100/100)``)."""
    done = 0

    def count(n: int) -> None:
        nonlocal done
        done = n

    if not console.is_terminal:
        with _PlainStep(msg) as step:

            def update(n: int) -> None:
                count(n)
                step.update(f"{n}/{total}")

            yield update
        _done(f"{msg} ({done}/{total})", step.start)
        return
    start = time.monotonic()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        task = progress.add_task(msg, total=total)

        def advance(n: int) -> None:
            count(n)
            progress.update(task, completed=n)

        yield advance
    _done(f"{msg} ({done}/{total})", start)


def table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*r)
    out.print(t, soft_wrap=False)


def fitted_table(title: str, columns: list[str], rows: list[list[str]], priority: list[str]) -> list[str]:
    """A table of the columns that fit the console whole, kept in ``priority`` order (the first always), and
    shown in their own order; returns the names of those left out, for the caller to say so.

    Rich squeezes a table wider than the console by cutting every cell ("quicks…"), which in a CI log
    leaves nothing readable: fewer whole columns, and a line saying where the rest are, are worth more."""
    widths = [max(Text.from_markup(c).cell_len for c in [name, *(r[i] for r in rows)])
              for i, name in enumerate(columns)]
    used, kept = 1, set[str]()  # the table's left border; each column adds its padding and right border
    for name in [c for c in priority if c in columns] + [c for c in columns if c not in priority]:
        need = widths[columns.index(name)] + 3
        if not kept or used + need <= out.width:
            kept.add(name)
            used += need
    keep = [i for i, c in enumerate(columns) if c in kept]
    table(title, [columns[i] for i in keep], [[r[i] for i in keep] for r in rows])
    return [c for c in columns if c not in kept]


class RichReporter:
    """:class:`kwokbench.progress.Reporter` on the terminal."""

    status = staticmethod(status)
    counter = staticmethod(counter)
    info = staticmethod(info)
    warn = staticmethod(warn)
    heading = staticmethod(heading)
    cached = staticmethod(cached)
