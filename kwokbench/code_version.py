"""Which commit of the code under test a run measured: ``meta.json``'s ``code`` section.

A regression history orders runs by commit (``kwokbench detect``), so every run records the commit it
measured, from the first of: the ``--commit`` / ``--ref`` options, the CI environment (the commit a CI job
checked out is the one under test even when the scenario lives elsewhere), ``git`` in the directory of the
scheduler plugin or of the scenario. Nothing found: no section (such a run is ordered by its start time).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# CI system → (commit variable, ref variables in order of preference)
CI_VARIABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "github": ("GITHUB_SHA", ("GITHUB_HEAD_REF", "GITHUB_REF_NAME")),  # a pull request's branch, else the ref
    "gitlab": ("CI_COMMIT_SHA", ("CI_COMMIT_REF_NAME",)),
    "buildkite": ("BUILDKITE_COMMIT", ("BUILDKITE_BRANCH",)),
    "jenkins": ("GIT_COMMIT", ("GIT_BRANCH",)),
}
GIT_TIMEOUT = 5.0


def _git(directory: Path, *args: str) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                             timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def from_git(directory: Path) -> dict[str, Any] | None:
    """HEAD of the repository holding ``directory``, its branch (or exact tag), and whether tracked files
    differ from it (untracked files, such as stored runs, do not count)."""
    commit = _git(directory, "rev-parse", "HEAD")
    if not commit:
        return None
    ref = _git(directory, "rev-parse", "--abbrev-ref", "HEAD")
    if not ref or ref == "HEAD":  # detached: a tag naming exactly this commit, if any
        ref = _git(directory, "describe", "--tags", "--exact-match") or None
    status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "ref": ref, "dirty": bool(status) if status is not None else None,
            "source": f"git:{directory}"}


def from_ci(env: Mapping[str, str]) -> dict[str, Any] | None:
    for system, (commit_var, ref_vars) in CI_VARIABLES.items():
        if env.get(commit_var):
            ref = next((env[v] for v in ref_vars if env.get(v)), None)
            return {"commit": env[commit_var], "ref": ref, "dirty": None, "source": f"ci:{system}"}
    return None


def code_version(directory: Path | None, commit: str | None = None, ref: str | None = None,
                 env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """``{commit, ref, dirty, source}`` of the code under test, or None when nothing says which it is.
    An explicit ``ref`` without ``commit`` completes what CI or git found."""
    import os

    if commit:
        return {"commit": commit, "ref": ref, "dirty": None, "source": "option"}
    found = from_ci(os.environ if env is None else env) or (from_git(directory) if directory else None)
    if found and ref:
        found["ref"] = ref
    return found
