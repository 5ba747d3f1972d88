"""A duet of two clusters, its orchestration alone: one process per side, a barrier before each phase, a failing
side stopping the other. The run itself is a stand-in here (tests/e2e/test_duet.py runs real clusters): each side
waits at the phase barrier as :func:`kwokbench.runner.run_variant` does, then stores a run directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kwokbench import runner
from kwokbench.errors import KwokbenchError, ScenarioError
from kwokbench.progress import Silent
from kwokbench.scenario import parse_scenario
from kwokbench.store import DOCS, SUMMARY
from tests.unit.test_duet import TWO_RELEASES


def _stand_in(fail: str | None, late: str | None, out: Path) -> Any:
    def run_variant(scenario: Any, base: Path, v: Any, opts: runner.RunOptions, rep: Any, k: Any,
                    multi: bool = False, group: dict[str, Any] | None = None) -> runner.VariantRun:
        if v.name == late:
            time.sleep(0.5)
        if v.name == fail:
            raise ScenarioError(f"{v.name} could not start its scheduler")
        reached = time.monotonic()
        try:
            runner._phase_together(opts, "pods", rep)
        except KwokbenchError:
            opts.together.abort()
            raise
        path = out / v.name
        path.mkdir()
        (path / "t").write_text(f"{reached} {time.monotonic()}")
        (path / SUMMARY).write_text(f'{{"format_version": {DOCS[SUMMARY][0]}, "side": "{v.name}"}}')
        return runner.VariantRun(path, "complete", None)

    return run_variant


def test_the_sides_start_each_phase_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = parse_scenario(TWO_RELEASES, "r.yaml")
    monkeypatch.setattr(runner, "run_variant", _stand_in(None, "old", tmp_path))
    got = runner.together_in_clusters(sc, Path(), list(sc.schedulers), runner.RunOptions(), Silent(), None,  # type: ignore[arg-type]
                                      {"id": "g", "repeat": 0})
    assert {n: r.status for n, r in got.items()} == {"old": "complete", "new": "complete"}
    assert got["new"].summary is not None and got["new"].summary["side"] == "new"
    # no side began the phase before every side had reached it (the prompt one waited for the late one)
    reached, passed = zip(*((float(x) for x in (tmp_path / n / "t").read_text().split()) for n in ("old", "new")),
                          strict=True)
    assert min(passed) >= max(reached), (reached, passed)


def test_a_side_that_fails_stops_the_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = parse_scenario(TWO_RELEASES, "r.yaml")
    monkeypatch.setattr(runner, "run_variant", _stand_in("new", None, tmp_path))
    monkeypatch.setattr(runner, "TOGETHER_WAIT", 60.0)
    t0 = time.monotonic()
    with pytest.raises(KwokbenchError) as e:
        runner.together_in_clusters(sc, Path(), list(sc.schedulers), runner.RunOptions(), Silent(), None,  # type: ignore[arg-type]
                                    {"id": "g", "repeat": 0})
    assert "new: new could not start its scheduler" in str(e.value)
    assert "old: phase pods: the other side of the duet stopped" in str(e.value)
    assert time.monotonic() - t0 < 30  # not the barrier's timeout: the failing side broke it
