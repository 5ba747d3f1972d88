"""Shared fixtures. e2e tests use a real kwokctl cluster in an isolated KWOKBENCH_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--keep-cluster", action="store_true", help="do not delete the e2e cluster at the end")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def kb_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An isolated kwokbench state dir for the whole session (clusters, kubeconfig)."""
    home = tmp_path_factory.mktemp("kbhome")
    old = os.environ.get("KWOKBENCH_HOME")
    os.environ["KWOKBENCH_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("KWOKBENCH_HOME", None)
    else:
        os.environ["KWOKBENCH_HOME"] = old


def kwokbench(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (what a user types)."""
    res = subprocess.run([sys.executable, "-m", "kwokbench", *args], capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, "COLUMNS": "200", **(env or {})},
                         stdin=subprocess.DEVNULL, cwd=REPO)
    if check and res.returncode != 0:
        raise AssertionError(f"kwokbench {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def assert_one_line_error(res: subprocess.CompletedProcess[str], needle: str, code: int = 2) -> None:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    assert needle in res.stderr, res.stderr
