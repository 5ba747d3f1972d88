"""Which commit a run measured: options first, then the CI environment, then git where the code lives."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kwokbench.code_version import code_version


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "plugin"
    repo.mkdir()
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "feature", str(repo)], check=True)
    (repo / "go.mod").write_text("module x\n")
    subprocess.run(["git", "-C", str(repo), "add", "go.mod"], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-q", "-m", "x"], check=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    return repo, head


def test_options_win_over_ci_and_git(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    code = code_version(repo, "abc1234", "v1.2", env={"GITHUB_SHA": "f" * 40})
    assert code == {"commit": "abc1234", "ref": "v1.2", "dirty": None, "source": "option"}


def test_ci_environment_before_git(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    env = {"GITHUB_SHA": "f" * 40, "GITHUB_REF_NAME": "12/merge", "GITHUB_HEAD_REF": "fix-queue"}
    assert code_version(repo, env=env) == {"commit": "f" * 40, "ref": "fix-queue", "dirty": None,
                                           "source": "ci:github"}
    assert code_version(repo, ref="main", env={"CI_COMMIT_SHA": "e" * 40})["ref"] == "main"  # type: ignore[index]


def test_git_where_the_code_lives_and_dirty_tracked_files_only(tmp_path: Path) -> None:
    repo, head = _repo(tmp_path)
    (repo / "runs").mkdir()
    (repo / "runs" / "meta.json").write_text("{}")  # untracked results do not make it dirty
    assert code_version(repo, env={}) == {"commit": head, "ref": "feature", "dirty": False,
                                          "source": f"git:{repo}"}
    (repo / "go.mod").write_text("module y\n")
    assert code_version(repo, env={})["dirty"] is True  # type: ignore[index]


def test_nothing_known_is_absent(tmp_path: Path) -> None:
    assert code_version(tmp_path, env={}) is None
    assert code_version(None, env={}) is None
