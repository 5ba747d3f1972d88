"""The reusable sweep workflow's shape: inputs, matrix from the setup job, merge after the shards, pinned actions,
no input spliced into a script (actionlint and zizmor check the rest in `make lint-workflows`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
SWEEP = WORKFLOWS / "sweep-matrix.yml"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def _load(path: Path) -> dict[Any, Any]:
    doc = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key `on` as True
    return {("on" if k is True else k): v for k, v in doc.items()}


def _steps(doc: dict[Any, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


@pytest.fixture(scope="module")
def sweep() -> dict[Any, Any]:
    return _load(SWEEP)


def test_called_with_scenario_shards_args_and_optional_gate(sweep: dict[Any, Any]) -> None:
    inputs = sweep["on"]["workflow_call"]["inputs"]
    assert set(sweep["on"]) == {"workflow_call"}
    assert inputs["scenario"]["required"] is True and inputs["scenario"]["type"] == "string"
    assert inputs["shards"]["type"] == "number"
    assert inputs["sweep-args"]["type"] == "string" and inputs["sweep-args"]["default"] == ""
    for optional in ("gate-metrics", "baseline"):
        assert inputs[optional].get("required", False) is False and inputs[optional]["default"] == ""
    assert all(i.get("description") for i in inputs.values())
    outputs = sweep["on"]["workflow_call"]["outputs"]
    assert outputs["merged-artifact"]["value"] == "${{ jobs.merge.outputs.artifact }}"
    assert sweep["permissions"] == {"contents": "read"}


def test_the_matrix_comes_from_the_setup_jobs_output(sweep: dict[Any, Any]) -> None:
    jobs = sweep["jobs"]
    assert list(jobs) == ["setup", "sweep", "merge"]
    setup, shards, merge = jobs["setup"], jobs["sweep"], jobs["merge"]
    step_id = next(s["id"] for s in setup["steps"] if "GITHUB_OUTPUT" in s.get("run", ""))
    assert setup["outputs"]["shards"] == f"${{{{ steps.{step_id}.outputs.list }}}}"
    assert shards["needs"] == "setup"
    assert shards["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.setup.outputs.shards) }}"
    assert shards["strategy"]["fail-fast"] is False
    run = next(s for s in shards["steps"] if "sweep" in s.get("run", "") and "--shard" in s["run"])
    assert '--shard "$SHARD/$SHARDS"' in run["run"]
    assert run["env"]["SHARD"] == "${{ matrix.shard }}" and run["env"]["SHARDS"] == "${{ inputs.shards }}"
    upload = next(s for s in shards["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert "matrix.shard" in upload["with"]["name"]
    # merge: after every shard, even a failed one (the merged sweep is then partial)
    assert "sweep" in merge["needs"] and "!cancelled()" in merge["if"]
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "${{ inputs.artifact-prefix }}-shard-*"
    script = next(s["run"] for s in merge["steps"] if "\" merge " in s.get("run", ""))
    assert '"$kb" merge "${shards[@]}" -o merged' in script and '"$kb" report merged' in script
    assert '"$kb" gate' in script
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in merge["steps"])


def test_the_shards_use_the_toolchain_cache(sweep: dict[Any, Any]) -> None:
    uses = [s.get("uses", "").split("@")[0] for s in sweep["jobs"]["sweep"]["steps"]]
    assert "actions/cache/restore" in uses and "actions/cache/save" in uses


@pytest.mark.parametrize("path", sorted([*WORKFLOWS.glob("*.yml"), REPO / "action.yml"]), ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit(path: Path) -> None:
    doc = _load(path)
    steps = _steps(doc) if "jobs" in doc else doc["runs"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s] + [j["uses"] for j in doc.get("jobs", {}).values() if "uses" in j]
    assert uses
    for u in uses:
        assert u.startswith("./") or PINNED.match(u), f"{path.name}: {u} is not pinned to a 40-hex commit"


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_no_input_is_spliced_into_a_script_and_checkouts_keep_no_token(path: Path) -> None:
    doc = _load(path)
    for s in _steps(doc):
        assert not re.search(r"\$\{\{\s*(inputs|github\.event|matrix)\.", s.get("run", "")), (path.name, s)
        if s.get("uses", "").startswith("actions/checkout@"):
            assert s["with"]["persist-credentials"] is False, (path.name, s)


def test_the_action_installs_with_the_uv_the_makefile_pins() -> None:
    """action.yml and `make install` both install kwokbench with uv, pinned once each: the two pins are one version."""
    [make_pin] = re.findall(r"^UV_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert re.findall(r"'uv==([^']+)'", (REPO / "action.yml").read_text()) == [make_pin]
