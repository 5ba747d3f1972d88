"""Shards: a deterministic slice of a grid of cells, so N machines run every cell exactly once (pure).

A sweep's cells are its (cluster size, submit rate) points; a run group's are its (repeat, variant) runs.
Cells are dealt round-robin over their canonical order (sizes and rates ascending, repeats in order), so
how the lists were written does not move a cell, and shards get as many cells as they can. Cells sharing a
``group`` key (the variants of one repeat) are dealt as one, so each shard keeps its A/B interleaving.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kwokbench.errors import ScenarioError

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int
    """1-based: shard ``index`` of ``count``."""
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``i/N`` with 1 <= i <= N, e.g. ``--shard 2/4``; ScenarioError (one line) otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise ScenarioError(f"--shard {text!r}: expected i/N, e.g. 1/4 (shard i of N, counted from 1)")
    i, n = int(m[1]), int(m[2])
    if n < 1 or not 1 <= i <= n:
        raise ScenarioError(f"--shard {text!r}: the shard must be between 1 and N (1/{max(n, 1)} … "
                            f"{max(n, 1)}/{max(n, 1)})")
    return Shard(i, n)


def shard_cells(cells: Sequence[T], shard: Shard, group: Callable[[T], Hashable] | None = None) -> list[T]:
    """The cells of ``shard``, in their given order. ``cells`` come in canonical order; cells with the same
    ``group`` key are kept together (the k-th distinct group goes to shard ``k mod N + 1``)."""
    keys = [group(c) if group else i for i, c in enumerate(cells)]
    order: dict[Hashable, int] = {}
    for k in keys:
        order.setdefault(k, len(order))
    return [c for c, k in zip(cells, keys, strict=True) if order[k] % shard.count == shard.index - 1]
