"""Kueue (sigs.k8s.io/kueue), the job-queueing controller, built from Go modules into the cache.

Kueue decides *when* a Job may start (quota of a ClusterQueue) and leaves *where* its pods go to
kube-scheduler, so a Kueue cluster measures queueing plus scheduling. The binary is built once per
version into ``$KWOKBENCH_CACHE/kueue-<version>/kueue``; its CRDs are read straight from the module
source in the Go module cache (``config/components/crd/bases``), which ``go mod download`` fills.

The build uses a wrapper module, as for scheduler-plugins: ``go install pkg@version`` refuses a module
whose go.mod has replace directives, so the wrapper copies whatever version replaces Kueue's go.mod
has (none in v0.19.2) and builds ``cmd/kueue`` with the version stamped as Kueue's Makefile does. The
wrapper also starts from Kueue's own go.sum: one of its dependencies (sigs.k8s.io/scheduler-library
v0.1.0-alpha1) is served by the module proxy but unknown to the checksum database it mirrors, so
``go get`` without those hashes fails with "verifying module: … 404 Not Found".
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kwokbench.errors import ToolchainError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import versions
from kwokbench.toolchain.install import (
    _download_module,
    _go_env,
    build_lock,
    cache_dir,
    check_go,
    put_in_place,
    run_logged,
    staged,
    version_replaces,
)

KUEUE_VERSION = versions.KUEUE
MODULE = "sigs.k8s.io/kueue"
CRD_DIR = "config/components/crd/bases"


def kueue_binary(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"kueue-{KUEUE_VERSION}" / "kueue"


def ldflags(version: str = KUEUE_VERSION) -> str:
    """Stripped, with the version stamping of Kueue's Makefile (it logs it at start: ``gitVersion``)."""
    pkg = f"{MODULE}/pkg/version"
    return f"-s -w -X {pkg}.GitVersion={version} -X {pkg}.GitCommit={version} -X {pkg}.BuildDate=2026-01-01T00:00:00Z"


def build_commands(out: Path, gomod_text: str, version: str = KUEUE_VERSION) -> list[list[str]]:
    """The commands that build ``cmd/kueue`` at ``version`` into ``out``, run in a directory that holds
    only a copy of Kueue's go.sum."""
    cmds = [["go", "mod", "init", "kwokbench.local/kueuebuild"]]
    replaces = version_replaces(gomod_text)
    if replaces:
        cmds.append(["go", "mod", "edit", *[f"-replace={a}={b}@{v}" for a, b, v in replaces]])
    cmds += [["go", "get", "-tool", f"{MODULE}/cmd/kueue@{version}"],
             ["go", "build", "-trimpath", "-ldflags", ldflags(version), "-o", str(out), f"{MODULE}/cmd/kueue"]]
    return cmds


def is_built(binary: Path, version: str = KUEUE_VERSION) -> bool:
    """Whether ``binary`` is Kueue ``version``: Go's build info embeds ``sigs.k8s.io/kueue\\t<version>``
    (Kueue has no ``--version`` flag, and running it without a cluster only fails)."""
    try:
        with binary.open("rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[:4] == b"\x7fELF" and f"{MODULE}\t{version}\t".encode() in data


def build_kueue(reporter: Reporter | None = None, force: bool = False, cache: Path | None = None) -> Path:
    """The Kueue controller binary of :data:`KUEUE_VERSION`; built on first use (about 5 min with cold
    Go caches on 2 cores), then taken from the cache."""
    rep = reporter or Silent()
    final = kueue_binary(cache)
    if not force and is_built(final):
        rep.cached(f"kueue {KUEUE_VERSION}", str(final.parent))
        return final
    check_go()
    with build_lock(final.parent.parent, final.parent.name, rep):
        if not force and is_built(final):  # built by another kwokbench while this one waited
            rep.cached(f"kueue {KUEUE_VERSION}", str(final.parent))
            return final
        return _build(final, rep)


def _build(final: Path, rep: Reporter) -> Path:
    module = _download_module(MODULE, KUEUE_VERSION)
    gomod = module["GoMod"].read_text()
    with staged(final, "kueue") as (work, log):
        out = work / "out" / "kueue"
        shutil.copyfile(module["Dir"] / "go.sum", work / "go.sum")
        try:
            with rep.status(f"building kueue {KUEUE_VERSION} from Go modules (log: {log})") as update, \
                    log.open("w") as logf:
                for cmd in build_commands(out, gomod):
                    run_logged(cmd, work, _go_env(), logf, update)
        except ToolchainError as e:
            raise ToolchainError(f"building kueue {KUEUE_VERSION} failed: {_summary(str(e))} (see {log})") from e
        if not is_built(out):
            raise ToolchainError(f"the kueue build wrote no binary of {MODULE} {KUEUE_VERSION} (see {log})")
        put_in_place(out, final)
    return final


def _summary(err: str) -> str:
    """One line from run_logged's multi-line error: the failed command and Go's last output line."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    cmd = lines[0].split("; last lines")[0] if lines else "the build"
    return f"{cmd}: {lines[-1][:200]}" if len(lines) > 1 else cmd


def kueue_crds() -> list[Path]:
    """Kueue's CRD manifests (ClusterQueue, LocalQueue, Workload, ResourceFlavor, …) in the module
    cache, downloading the module if needed. They carry no conversion webhook: the apiserver serves
    every version of a kind as stored (v1beta2), which is all a Kueue without webhooks needs."""
    src = _download_module(MODULE, KUEUE_VERSION)["Dir"] / CRD_DIR
    files = sorted(src.glob("*.yaml"))
    if not any(f.name == "kueue.x-k8s.io_workloads.yaml" for f in files):
        raise ToolchainError(f"{src} holds no Workload CRD; the {MODULE} module layout changed")
    return files
