"""Where a scenario's trace file is found."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.trace.paths import PROJECT_ROOT, TRACES_ENV, resolve, traces_dir


def test_resolve_looks_next_to_the_scenario_then_in_the_traces_folder(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    scenario_dir, shared = tmp_path / "scenarios", tmp_path / "shared"
    (scenario_dir / "t").mkdir(parents=True)
    (shared / "t").mkdir(parents=True)
    (shared / "t" / "pods.csv").write_text("x")
    monkeypatch.setenv(TRACES_ENV, str(shared))
    assert resolve("t/pods.csv", scenario_dir) == shared / "t" / "pods.csv"
    (scenario_dir / "t" / "pods.csv").write_text("x")
    assert resolve("t/pods.csv", scenario_dir) == scenario_dir / "t" / "pods.csv"
    assert resolve(str(shared / "t" / "pods.csv"), scenario_dir) == shared / "t" / "pods.csv"
    with pytest.raises(ScenarioError) as err:
        resolve("t/nodes.csv", scenario_dir)
    assert str(err.value) == (f"trace 't/nodes.csv' not found; looked in: {scenario_dir}/t/nodes.csv (scenario "
                              f"folder), {shared}/t/nodes.csv ($KWOKBENCH_TRACES)")
    monkeypatch.delenv(TRACES_ENV)
    with pytest.raises(ScenarioError, match=r"/shared/traces/t/nodes\.csv \(default traces folder, \$KWOKBENCH_TRAC"):
        resolve("t/nodes.csv", scenario_dir)


def test_default_traces_folder_is_shared_next_to_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRACES_ENV, raising=False)
    assert (PROJECT_ROOT / "kwokbench" / "trace" / "paths.py").is_file()
    assert traces_dir() == PROJECT_ROOT.parent / "shared" / "traces"
