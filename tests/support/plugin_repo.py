"""The throwaway plugin repository the action is run on (tests/e2e/test_action.py, benchmarks/bench_action.py): a
plugin author's module with commits ``plugin`` (no gate), ``gate`` (adds perf/ as docs/guides/ci-action.md says),
``slow`` (a Score that spins MODEST µs per node) and ``moved`` (from ``gate``: the plugin moved into plugin/, so the
scenario names a directory the base lacks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.support.plugins import CONFIG, MODEST, write_score_plugin


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo),
                               "PATH": "/usr/bin:/bin"}).stdout.strip()


def plugin_repository(dest: Path) -> dict[str, str]:
    """The repository in ``dest``: each commit's sha by name, and ``path``."""
    ws = write_score_plugin(dest)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "the plugin")
    shas = {"plugin": git(ws, "rev-parse", "HEAD")}
    (ws / "perf").mkdir()
    starter = (REPO / "scenarios" / "plugin-gate.yaml").read_text()
    scenario = starter.replace("binary: ../plugins/nodenumber", "binary: ..").replace(
        "config: configs/nodenumber.yaml", "config: plugin.yaml")
    assert scenario != starter, "scenarios/plugin-gate.yaml no longer names plugins/nodenumber"
    (ws / "perf" / "scenario.yaml").write_text(scenario)
    shutil.copy(CONFIG, ws / "perf" / "plugin.yaml")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "the gate")
    shas["gate"] = git(ws, "rev-parse", "HEAD")
    write_score_plugin(ws, spin_us=MODEST)
    git(ws, "commit", "-q", "-am", "a slower Score")
    shas["slow"] = git(ws, "rev-parse", "HEAD")
    git(ws, "checkout", "-q", "--detach", shas["gate"])
    (ws / "plugin").mkdir()
    git(ws, "mv", "go.mod", "go.sum", "nodenumber.go", "plugin/")
    moved = (ws / "perf" / "scenario.yaml").read_text().replace("binary: ..", "binary: ../plugin")
    (ws / "perf" / "scenario.yaml").write_text(moved)
    git(ws, "commit", "-q", "-am", "the plugin moved into plugin/")
    shas["moved"] = git(ws, "rev-parse", "HEAD")
    shas["path"] = str(ws)
    return shas


def checkout(repo: dict[str, str], commit: str) -> Path:
    """The repository's work tree at ``commit`` (a name of :func:`plugin_repository`)."""
    ws = Path(repo["path"])
    git(ws, "checkout", "-q", "--detach", repo[commit])
    return ws
