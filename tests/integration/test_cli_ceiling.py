"""`kwokbench ceiling` on bad input and in a refusing environment: one line, exit 2, before any build."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kwokbench.toolchain import versions
from tests.conftest import REPO, assert_one_line_error, kwokbench


@pytest.mark.parametrize(("args", "needle"), [
    ([], "give --nodes N [--pods M] or --scenario FILE"),
    (["--nodes", "500", "--scenario", str(REPO / "scenarios/quickstart.yaml")], "give --nodes N"),
    (["--scenario", str(REPO / "scenarios/quickstart.yaml"), "--pods", "5"], "--pods goes with --nodes"),
    (["--nodes", "500", "--set", "seed=2"], "--set goes with --scenario"),
    (["--scenario", "/nonexistent.yaml"], "cannot read scenario"),
])
def test_ceiling_usage_errors(args: list[str], needle: str) -> None:
    assert_one_line_error(kwokbench("ceiling", *args), needle)


def _fake_etcd(cache: Path) -> None:
    d = cache / "toolchain" / f"etcd-{versions.ETCD}"
    d.mkdir(parents=True)
    (d / "etcd").write_text(f"#!/bin/sh\necho 'etcd Version: {versions.ETCD.removeprefix('v')}'\n")
    (d / "etcd").chmod(0o755)


def test_ceiling_without_etcd_go_or_a_working_build(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"KWOKBENCH_CACHE": str(cache), "KWOKBENCH_HOME": str(tmp_path / "home")}
    res = kwokbench("ceiling", "--nodes", "500", env=env)
    assert_one_line_error(res, f"etcd {versions.ETCD} is missing (not built at")
    assert "kwokbench tools install --core-only" in res.stderr
    _fake_etcd(cache)
    no_go = {**env, "PATH": str(Path(sys.executable).parent)}
    res = kwokbench("ceiling", "--nodes", "500", env=no_go)
    assert_one_line_error(res, "Go is not on PATH: the scheduler_perf test binary is built from Go modules")
    # a build that fails: the tail of Go's output, and the log's path
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "go").write_text("#!/bin/sh\n[ \"$1\" = version ] && { echo 'go version go1.26.0 linux/amd64'; exit 0; }\n"
                             "echo 'go: something exploded'; exit 1\n")
    (bins / "go").chmod(0o755)
    module = cache / "build" / f"kubernetes-{versions.KUBERNETES}"
    module.mkdir(parents=True)
    (module / "go.mod").write_text("module kwokbench.local/k8sbuild\n")
    (module / "go.sum").write_text("")
    res = kwokbench("ceiling", "--nodes", "500", env={**env, "PATH": f"{bins}:{Path(sys.executable).parent}"})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "failed with exit 1; last lines of the Go output" in res.stderr and "something exploded" in res.stderr
    assert f"scheduler-perf-{versions.KUBERNETES}.log" in res.stderr
    assert not list((cache / "toolchain").glob(".scheduler-perf-*"))  # no half-built binary left
