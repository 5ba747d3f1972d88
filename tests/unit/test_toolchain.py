from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kwokbench.errors import ToolchainError
from kwokbench.toolchain import Toolchain, versions
from kwokbench.toolchain.install import (
    check_go,
    components,
    kubernetes_ldflags,
    parse_go_version,
    staging_replaces,
)

GOMOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tk8s.io/api v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tgithub.com/foo/bar => github.com/foo/bar v1.2.3
)

replace k8s.io/kubectl => ./staging/src/k8s.io/kubectl
"""


def test_staging_replaces_are_derived_from_gomod() -> None:
    assert staging_replaces(GOMOD) == ["k8s.io/api", "k8s.io/client-go", "k8s.io/kubectl"]


@pytest.mark.parametrize(("raw", "want"), [
    ("go version go1.26.8 linux/amd64", (1, 26)),
    ("go version go1.27rc1 linux/arm64", (1, 27)),
    ("go version go1.9 darwin/amd64", (1, 9)),
])
def test_parse_go_version(raw: str, want: tuple[int, int]) -> None:
    assert parse_go_version(raw)[:2] == want


def test_parse_go_version_garbage() -> None:
    with pytest.raises(ToolchainError, match="cannot read the Go version"):
        parse_go_version("command not found")


def _fake_go(tmp_path: Path, version: str) -> None:
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\necho 'go version go{version} linux/amd64'\n")
    go.chmod(0o755)


def test_go_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match="Go is not on PATH"):
        check_go()


def test_go_too_old(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_go(tmp_path, "1.21.5")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + "/usr/bin:/bin")
    with pytest.raises(ToolchainError, match=r"Go 1\.21\.5 is too old"):
        check_go()


def test_go_new_enough(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_go(tmp_path, f"{versions.MIN_GO[0]}.{versions.MIN_GO[1]}.0")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + "/usr/bin:/bin")
    assert check_go().startswith("go1.")


def test_ldflags_stamp_both_version_packages() -> None:
    ld = kubernetes_ldflags("v1.36.4")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion=v1.36.4" in ld
        assert f"-X {pkg}.gitMinor=36" in ld
    with pytest.raises(ToolchainError):
        kubernetes_ldflags("v0.36.4-devel")
    pre = kubernetes_ldflags("v1.36.0-rc.0")  # a pre-release tag is built and stamped as itself
    assert "gitVersion=v1.36.0-rc.0" in pre and "gitMinor=36" in pre


def test_cache_is_version_keyed(tmp_path: Path) -> None:
    tc = Toolchain(tmp_path)
    assert tc.path("kube-apiserver") == tmp_path / "toolchain" / f"kubernetes-{versions.KUBERNETES}" / "kube-apiserver"
    assert tc.path("etcd").parent.name == f"etcd-{versions.ETCD}"
    assert {b.name for c in components() for b in c.binaries} >= {"kwokctl", "kwok", "etcd", "kubectl"}


def test_missing_and_broken_binaries_are_reported(tmp_path: Path) -> None:
    tc = Toolchain(tmp_path)
    fake = tc.path("kwokctl")
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'kwokctl version v0.0.1'\n")
    fake.chmod(0o755)
    status = {s.binary: s for s in tc.check()}
    assert status["kwokctl"].problem.startswith("wrong version")
    assert status["etcd"].problem == "not built"
    assert tc.mode() is None
    with pytest.raises(ToolchainError, match="not installed"):
        tc.kwokctl_options()


def test_a_second_build_of_one_cache_entry_waits_for_the_first(tmp_path: Path) -> None:
    """Two test workers built scheduler_perf at once, and the second replaced the first's entry under a run
    using it (CI): a build holds its entry's lock, and the other waits and is told so."""
    import threading
    import time as _time

    from kwokbench.progress import Silent
    from kwokbench.toolchain.install import build_lock

    order: list[str] = []
    said: list[str] = []

    class Rep(Silent):
        def info(self, msg: str) -> None:
            said.append(msg)

    def first() -> None:
        with build_lock(tmp_path, "entry"):
            order.append("first in")
            _time.sleep(0.5)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    while not order:
        _time.sleep(0.01)
    with build_lock(tmp_path, "entry", Rep()):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]
    assert said == ["waiting for another kwokbench's build of entry"]
    with build_lock(tmp_path, "other", Rep()):  # another entry: no wait
        pass
    assert len(said) == 1


def test_builds_skip_the_dwarf_the_stripped_link_drops_and_the_plugin_tests_compile_alike(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Makefile's Go plugin tests reuse ``make tools``' compiled Kubernetes packages only with the same
    compiler flags, cgo setting and ``-trimpath``: a change to one side alone would compile them twice, cold."""
    import re

    from kwokbench.toolchain.install import NO_DWARF, _go_env

    monkeypatch.delenv("GOFLAGS", raising=False)
    env = _go_env()
    assert env["GOFLAGS"].split() == ["-mod=mod", NO_DWARF] and env["CGO_ENABLED"] == "0"
    monkeypatch.setenv("GOFLAGS", "-gcflags=all=-N")  # a user's own compiler flags are left as they are
    assert _go_env()["GOFLAGS"].split() == ["-gcflags=all=-N", "-mod=mod"]
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    line = re.search(r"^PLUGIN_GO := (.*)$", makefile, flags=re.M)
    assert line is not None
    assert "CGO_ENABLED=0" in line.group(1).split()
    assert re.search(r"GOFLAGS='([^']*)'", line.group(1)).group(1).split() == ["-mod=mod", "-trimpath", NO_DWARF]  # type: ignore[union-attr]
    assert all("trimpath" in cmd for cmd in re.findall(r'\["go", "build"[^\]]*\]', (
        Path(__file__).resolve().parents[2] / "kwokbench/toolchain/install.py").read_text()))


def test_a_release_that_asks_for_a_newer_go_is_built_with_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Kubernetes 1.38's go.mod asks for Go 1.27.0: its builds run that Go (GOTOOLCHAIN=go1.27.0, which the go
    command fetches from the module proxy); a release this Go can build keeps GOTOOLCHAIN=local."""
    from kwokbench.toolchain import install

    assert install.go_needed("module k8s.io/kubernetes\n\ngo 1.27.0\n\ngodebug default=go1.27\n") == (1, 27, 0)
    assert install.go_needed("module x\ngo 1.26\n") == (1, 26, 0) and install.go_needed("module x\n") is None
    mods = {"v1.38.0-beta.0": "go 1.27.0", "v1.36.4": "go 1.25.0"}

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        f = tmp_path / f"{cmd[-1].replace('/', '_')}.mod"
        f.write_text(f"module k8s.io/kubernetes\n\n{mods[cmd[-1].split('@')[1]]}\n")
        return subprocess.CompletedProcess(cmd, 0, json.dumps({"GoMod": str(f)}), "")

    monkeypatch.setattr(install.subprocess, "run", run)
    monkeypatch.setattr(install, "go_version", lambda: (1, 26, "go version go1.26.8 linux/amd64"))
    assert install.go_env_for("v1.38.0-beta.0")["GOTOOLCHAIN"] == "go1.27.0"
    assert install.go_env_for("v1.36.4")["GOTOOLCHAIN"] == "local"


def test_a_binary_that_answered_is_not_started_again_by_a_later_process(tmp_path: Path) -> None:
    """Every run, `up` and sweep started the twelve binaries to read their versions (0.5 s): one that answered
    is remembered in the cache by path, mtime, ctime and size; changed in any of them, or failing, it is asked."""
    from kwokbench.toolchain import install

    tc = Toolchain(tmp_path)
    fake, calls = tc.path("kwokctl"), tmp_path / "calls"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'kwokctl version {versions.KWOK}'\n")
    fake.chmod(0o755)

    def asked() -> bool:
        install._CHECKED.clear()  # as a new process: only the cache's record is left
        before = calls.read_text().count("x") if calls.exists() else 0
        status = {s.binary: s for s in Toolchain(tmp_path).check()}["kwokctl"]
        assert status.ok, status
        return calls.read_text().count("x") > before

    assert asked() and not asked() and not asked()
    assert (tmp_path / "toolchain" / install.ANSWERED).is_file()
    fake.chmod(0o700)  # other permissions: asked again
    assert asked() and not asked()
    fake.write_text(fake.read_text().replace(versions.KWOK, "v0.0.1"))  # another binary: asked, and refused
    install._CHECKED.clear()
    assert {s.binary: s for s in Toolchain(tmp_path).check()}["kwokctl"].problem.startswith("wrong version")
    install._CHECKED.clear()
    assert {s.binary: s for s in Toolchain(tmp_path).check()}["kwokctl"].problem.startswith("wrong version")
