"""benchmarks/bench_known_answers.py's renderers on a kept bisect (docs/results/data/bisect-dra-claim-controller-
2026-11-28.json: `kwokbench bisect` on real clusters, this project's 2-core machine): what the page quotes is what
bisect.json and each run's kept summary keys hold."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_known_answers  # noqa: E402

DOC = json.loads((ROOT / "docs/results/data/bisect-dra-claim-controller-2026-11-28.json").read_text())


def test_builds_and_pins_are_bisects_own_record() -> None:
    builds = DOC["bisect"]["builds"]
    text = bench_known_answers.builds(DOC)
    assert [part.split()[0] for part in text.split(", ")] == list(builds)
    for tag, b in builds.items():
        assert (f"{tag} built before" in text) == b["cached"]
    assert bench_known_answers.pinned(DOC) == ", ".join(
        f"{ {'go': 'Go'}.get(k, k)} {str(v).removeprefix('go')}" for k, v in DOC["bisect"]["pinned"].items()
        if k != "differs")


def test_a_kept_keys_median_and_values_are_the_runs() -> None:
    tag = next(iter(DOC["runs"]))
    xs = [r["extra_claims"] for r in DOC["runs"][tag]]
    assert bench_known_answers.extra_median(DOC, tag, "extra_claims", digits=1) == f"{statistics.median(xs):.1f}"
    assert bench_known_answers.extra_values(DOC, [tag], "extra_claims") == ", ".join(sorted({str(x) for x in xs}))
    with pytest.raises(KeyError, match="has nothing_kept"):
        bench_known_answers.extra_median(DOC, tag, "nothing_kept")
