"""Shards deal every cell of a grid exactly once, deterministically, keeping a repeat's variants together."""

from __future__ import annotations

import itertools

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.shard import Shard, parse_shard, shard_cells

GRID = [(n, q) for n in (100, 1000, 5000) for q in (50.0, 100.0, 200.0, 500.0)]
RUNS = [(r, v) for r in range(5) for v in ("default", "fast", "slow")]


@pytest.mark.parametrize("n", range(1, 8))
def test_every_cell_exactly_once_over_n_shards(n: int) -> None:
    for cells, group in ((GRID, None), (RUNS, lambda c: c[0])):
        dealt = [shard_cells(cells, Shard(i, n), group) for i in range(1, n + 1)]
        flat = list(itertools.chain.from_iterable(dealt))
        assert sorted(flat) == sorted(cells) and len(flat) == len(cells)
        sizes = [len({group(c) if group else c for c in d}) for d in dealt]
        assert max(sizes) - min(sizes) <= 1  # balanced
        assert dealt == [shard_cells(cells, Shard(i, n), group) for i in range(1, n + 1)]  # deterministic
        for d in dealt:
            assert d == [c for c in cells if c in d]  # each shard keeps the canonical order


def test_variants_of_a_repeat_stay_together_and_interleaved() -> None:
    for n in range(1, 8):
        for i in range(1, n + 1):
            mine = shard_cells(RUNS, Shard(i, n), lambda c: c[0])
            for r in {c[0] for c in mine}:
                assert [v for rr, v in mine if rr == r] == ["default", "fast", "slow"]


def test_round_robin_over_the_canonical_order() -> None:
    assert shard_cells(GRID[:4], Shard(1, 2)) == [(100, 50.0), (100, 200.0)]
    assert shard_cells(GRID[:4], Shard(2, 2)) == [(100, 100.0), (100, 500.0)]
    assert shard_cells(RUNS[:6], Shard(2, 2), lambda c: c[0]) == [(1, "default"), (1, "fast"), (1, "slow")]
    assert shard_cells(GRID, Shard(1, 1)) == GRID


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4) and parse_shard(" 1 / 1 ").label == "1/1"
    for bad, needle in (("3/2", "between 1 and N"), ("0/2", "between 1 and N"), ("x", "expected i/N"),
                        ("1/0", "between 1 and N"), ("1", "expected i/N"), ("-1/2", "expected i/N")):
        with pytest.raises(ScenarioError, match=needle):
            parse_shard(bad)
