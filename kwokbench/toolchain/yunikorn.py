"""Apache YuniKorn's scheduler (k8shim + core + scheduler-interface in one binary), built from pinned sources.

The module proxy refuses YuniKorn's modules and k8shim's go.mod has replace directives of its own, so
``go install …@v1.8.0`` cannot work even online. The recipe is the one YuniKorn's Makefile uses, in a
module that points at the sources: k8shim extracted with core and scheduler-interface beside it, its go.mod
given ``replace`` directives to those two directories, then ``go build ./pkg/cmd/shim`` with the version
stamped as its Makefile does (the shim logs it at start). Every other dependency comes from the module proxy.

The binary is cached at ``$KWOKBENCH_CACHE/toolchain/yunikorn-<version>/yunikorn-scheduler`` with a
``BUILD.json`` saying which sources (archive sha256, or a checkout's hash) and which binary it is: a cached
build is reused (a hash of the binary, well under a second) while it matches; other sources rebuild it.
"""

from __future__ import annotations

from pathlib import Path

from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import versions
from kwokbench.toolchain.sources import PinnedSource, SourceBuild

VERSION = versions.YUNIKORN
SHIM = "github.com/apache/yunikorn-k8shim"
CORE = "github.com/apache/yunikorn-core"
SI = "github.com/apache/yunikorn-scheduler-interface"
_GH = "https://github.com/apache"
SOURCES = (
    PinnedSource(SHIM, "yunikorn-k8shim-v1.8.0.tar.gz",
                 "9e048becf234f2b3a7a5509a8fdb3f4aa923a4a9a730a3cfcc64b396b2de96b9",
                 f"{_GH}/yunikorn-k8shim/archive/refs/tags/v1.8.0.tar.gz"),
    PinnedSource(CORE, "yunikorn-core-v1.8.0-1.tar.gz",
                 "9c476ae7bd08b4e88b7365703fc1369d12382fc42eb6022d1bb2c902ec5bfc57",
                 f"{_GH}/yunikorn-core/archive/refs/tags/v1.8.0-1.tar.gz"),
    PinnedSource(SI, "yunikorn-scheduler-interface-v1.8.0-0.tar.gz",
                 "0e99a5ed4388fb73d2425854087111800c5be43e12ecede8cab6e2355518e32b",
                 f"{_GH}/yunikorn-scheduler-interface/archive/refs/tags/v1.8.0-0.tar.gz"),
)
BINARY = "yunikorn-scheduler"


def ldflags(version: str = VERSION) -> str:
    pkg = f"{SHIM}/pkg/conf"
    v = version.removeprefix("v")
    return (f"-s -w -X {pkg}.buildVersion={v} -X {pkg}.buildDate=2026-01-01T00:00:00Z "
            f"-X {pkg}.isPluginVersion=false")


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the k8shim directory: point its two YuniKorn requirements at the source directories, build."""
    return [["go", "mod", "edit", f"-replace={CORE}={by[CORE]}", f"-replace={SI}={by[SI]}"],
            ["go", "mod", "download"],
            ["go", "build", "-trimpath", "-ldflags", ldflags(), "-o", str(out), "./pkg/cmd/shim"]]


RECIPE = SourceBuild("yunikorn", VERSION, versions.YUNIKORN_KUBERNETES, SOURCES, BINARY, SHIM, build_commands)


def binary_path(cache: Path | None = None) -> Path:
    return RECIPE.path(cache)


def build_yunikorn(source: Path | None = None, reporter: Reporter | None = None, force: bool = False,
                   cache: Path | None = None) -> Path:
    """YuniKorn's scheduler binary (about 2.5 min to build with cold Go caches on 2 cores)."""
    return RECIPE.build(source, reporter or Silent(), force, cache)


def version_line() -> str:
    return RECIPE.version_line()
