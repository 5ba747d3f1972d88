"""The step a build is at, read from Go's output: downloads counted, packages compiled of how many, linking."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from kwokbench.toolchain.gosteps import GoSteps, count_packages, label, targets, verbose
from kwokbench.toolchain.install import kubernetes_ldflags, run_logged

APISERVER = ["go", "build", "-trimpath", "-ldflags", kubernetes_ldflags("v1.36.4"), "-o", "/cache/.k8s/kube-apiserver",
             "k8s.io/kubernetes/cmd/kube-apiserver"]
KWOK = ["go", "install", "-trimpath", "-ldflags", "-s -w", "sigs.k8s.io/kwok/cmd/kwok@v0.8.0",
        "sigs.k8s.io/kwok/cmd/kwokctl@v0.8.0"]
SHIM = ["go", "build", "-trimpath", "-ldflags", "-X main.version=1", "-o", "/out/yunikorn-scheduler", "./pkg/cmd/shim"]


def test_the_commands_targets_label_and_verbose_form() -> None:
    assert targets(APISERVER) == ["k8s.io/kubernetes/cmd/kube-apiserver"]
    assert targets(KWOK) == ["sigs.k8s.io/kwok/cmd/kwok@v0.8.0", "sigs.k8s.io/kwok/cmd/kwokctl@v0.8.0"]
    assert targets(["go", "get", "-tool", "x@v1"]) == [] and targets(["go", "mod", "init", "m"]) == []
    assert label(APISERVER) == "go build kube-apiserver" and label(KWOK) == "go install kwok, kwokctl"
    assert label(["go", "mod", "init", "kwokbench.local/k8sbuild"]) == "go mod init"
    assert label(["sh", "-c", "sleep 1"]) == "sh -c sleep 1"
    assert label(["go", "get", "-tool", "k8s.io/kubernetes/cmd/kubectl@v1.36.4"]) == "go get"
    assert label(["go", "test", "-c", "-o", "/x/scheduler_perf.test", "./test/integration"]) == \
        "go test scheduler_perf.test"
    assert verbose(APISERVER) == ["go", "build", "-v", *APISERVER[2:]]
    assert verbose(KWOK)[:3] == ["go", "install", "-v"]
    for unchanged in (["go", "get", "-tool", "x@v1"], ["go", "test", "-c", "./t"], ["go", "build", "-v", "."]):
        assert verbose(unchanged) == unchanged


def test_a_build_reads_as_downloads_then_packages_k_of_n_then_linking() -> None:
    steps = GoSteps.of(APISERVER)
    lines = ["go: downloading golang.org/x/exp v0.0.0-20250620022241-b7579e27df2b",
             "go: downloading k8s.io/api v0.36.4",
             "internal/goarch", "runtime", "k8s.io/apimachinery/pkg/util/sets",
             "k8s.io/kubernetes/cmd/kube-apiserver/app", "k8s.io/kubernetes/cmd/kube-apiserver"]
    got = [steps.step(line + "\n") for line in lines[:3]]
    steps.packages = 2034  # go list -deps answered while Go compiled
    got += [steps.step(line) for line in lines[3:]]
    assert got == [
        "go build kube-apiserver: downloading 1 modules (golang.org/x/exp)",
        "go build kube-apiserver: downloading 2 modules (k8s.io/api)",
        "go build kube-apiserver: compiling packages 1",
        "go build kube-apiserver: compiling packages 2 of 2034",
        "go build kube-apiserver: compiling packages 3 of 2034",
        "go build kube-apiserver: compiling packages 4 of 2034",
        "go build kube-apiserver: compiled 5 of 2034 packages, linking kube-apiserver"]


def test_lines_that_are_not_a_step_leave_it_as_it_was() -> None:
    steps = GoSteps.of(KWOK)
    for line in ("", "# k8s.io/kubernetes/pkg/foo", "pkg/foo/bar.go:12:3: undefined: Baz",
                 "go: warning: ignoring go.mod in $GOPATH", "note: module requires Go 1.26"):
        assert steps.step(line) is None, line
    assert steps.step("go: added k8s.io/api v0.36.4") == "go install kwok, kwokctl: resolving modules"
    assert steps.step("sigs.k8s.io/kwok/cmd/kwokctl") == \
        "go install kwok, kwokctl: compiled 1 packages, linking kwokctl"  # a pkg@version target is its path
    # a count below what Go compiles (cached packages are not printed, extra ones are) never reads "9 of 3"
    steps.packages = 1
    assert steps.step("sigs.k8s.io/kwok/pkg/utils") == "go install kwok, kwokctl: compiling packages 2"
    assert GoSteps.of(["make", "all"]).step("CC main.o\n") == "CC main.o"  # not Go: its last line
    shim = GoSteps.of(SHIM)
    assert shim.step("github.com/apache/yunikorn-k8shim/pkg/cmd/shim") == \
        "go build yunikorn-scheduler: compiled 1 packages, linking shim"


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `go` that answers `list -deps` with 4 packages and builds (with -v) by naming 3 of them, slowly."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    go = bindir / "go"
    listed = tmp_path / "listed"
    # the build waits for the list (run beside it) to have answered, so that "of 4" is shown
    go.write_text(f'#!/bin/sh\nif [ "$1" = list ]; then printf "a\\nb\\nc\\nexample.com/m/cmd/tool\\n"; '
                  f'touch {listed}; exit 0; fi\n'
                  'echo "go: downloading example.com/dep v1.0.0"\n'
                  f'i=0; while [ ! -f {listed} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.5\n'
                  'for p in "$@"; do [ "$p" = -v ] && printf "b\\nc\\nexample.com/m/cmd/tool\\n"; done\nexit 0\n')
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return bindir


def test_run_logged_shows_the_step_not_the_last_line(fake_go: Path, tmp_path: Path) -> None:
    shown: list[str] = []
    log = io.StringIO()
    run_logged(["go", "build", "-o", str(tmp_path / "tool"), "example.com/m/cmd/tool"], tmp_path, dict(os.environ),
               log, shown.append)
    assert shown[0] == "go build tool" and shown[1] == "go build tool: downloading 1 modules (example.com/dep)"
    assert shown[-1] == "go build tool: compiled 3 of 4 packages, linking tool"
    assert log.getvalue().startswith(f"$ go build -v -o {tmp_path / 'tool'} example.com/m/cmd/tool\n")
    assert count_packages(["go", "build", "./x"], tmp_path, dict(os.environ)) == 4
    assert count_packages(KWOK, tmp_path, dict(os.environ)) is None  # Go lists no pkg@version
    assert count_packages(["go", "get", "x@v1"], tmp_path, dict(os.environ)) is None
