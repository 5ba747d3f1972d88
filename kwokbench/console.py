"""The one place that talks to the terminal: rich console, progress and tables.

The core reports progress through :class:`Progress`-like callables so that it never imports rich
directly; the CLI passes :func:`step` and :func:`status` in.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

console = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def info(msg: str) -> None:
    console.print(msg)


def warn(msg: str) -> None:
    console.print(f"[yellow]warning:[/] {msg}")


def error(msg: str) -> None:
    console.print(f"[bold red]error:[/] {msg}", soft_wrap=True)


HEARTBEAT_SECONDS = 30.0


@contextlib.contextmanager
def _plain_status(msg: str) -> Iterator[Any]:
    """Without a terminal (CI logs) a spinner shows nothing: print a line every 30 s instead."""
    start = last = time.monotonic()
    console.print(f"… {msg}")

    def update(detail: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= HEARTBEAT_SECONDS:
            last = now
            console.print(f"  … {now - start:.0f}s {detail[-100:]}")

    yield update
    console.print(f"[green]✓[/] {msg} [dim]({time.monotonic() - start:.1f}s)[/]")


@contextlib.contextmanager
def status(msg: str) -> Iterator[Any]:
    """A spinner with elapsed time for a long step of unknown length; prints the duration when done."""
    if not console.is_terminal:
        with _plain_status(msg) as update:
            yield update
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
    console.print(f"[green]✓[/] {msg} [dim]({time.monotonic() - start:.1f}s)[/]")


@contextlib.contextmanager
def counter(msg: str, total: int) -> Iterator[Any]:
    """A bar for a step that counts up to ``total``; yields ``advance(n_done_absolute)``."""
    if not console.is_terminal:
        with _plain_status(f"{msg} (0/{total})") as update:
            yield lambda done: update(f"{done}/{total}")
        return
    start = time.monotonic()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        task = progress.add_task(msg, total=total)

        def update(done: int) -> None:
            progress.update(task, completed=done)

        yield update
    console.print(f"[green]✓[/] {msg} [dim]({time.monotonic() - start:.1f}s)[/]")


def table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*r)
    out.print(t)


class RichReporter:
    """:class:`kwokbench.progress.Reporter` on the terminal."""

    status = staticmethod(status)
    counter = staticmethod(counter)
    info = staticmethod(info)
    warn = staticmethod(warn)
