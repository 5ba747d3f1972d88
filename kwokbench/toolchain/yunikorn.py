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
from typing import Any

from kwokbench.errors import ToolchainError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import versions
from kwokbench.toolchain.install import _go_env, cache_dir, check_go, put_in_place, run_logged, staged
from kwokbench.toolchain.sources import (
    PinnedSource,
    default_source,
    locate,
    origins,
    peek_origins,
    read_record,
    sha256_of,
    write_record,
)

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


def binary_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "toolchain" / f"yunikorn-{VERSION}" / BINARY


def ldflags(version: str = VERSION) -> str:
    pkg = f"{SHIM}/pkg/conf"
    v = version.removeprefix("v")
    return (f"-s -w -X {pkg}.buildVersion={v} -X {pkg}.buildDate=2026-01-01T00:00:00Z "
            f"-X {pkg}.isPluginVersion=false")


def build_commands(shim: Path, core: Path, si: Path, out: Path) -> list[list[str]]:
    """Run in the k8shim directory: point its two YuniKorn requirements at the source directories, build."""
    return [["go", "mod", "edit", f"-replace={CORE}={core}", f"-replace={SI}={si}"],
            ["go", "mod", "download"],
            ["go", "build", "-trimpath", "-ldflags", ldflags(), "-o", str(out), "./pkg/cmd/shim"]]


def build_record(binary: Path) -> dict[str, Any] | None:
    """The build's record if ``binary`` is the one it describes (``None``: not built, or not that build)."""
    rec = read_record(binary)
    if rec is None or rec.get("version") != VERSION or not binary.is_file():
        return None
    return rec if rec.get("binary_sha256") == sha256_of(binary) else None


def build_yunikorn(source: Path | None = None, reporter: Reporter | None = None, force: bool = False,
                   cache: Path | None = None) -> Path:
    """YuniKorn's scheduler binary; built when missing, when ``force``, or when ``source`` holds other
    sources than those of the cached build (about 2.5 min with cold Go caches on 2 cores)."""
    rep = reporter or Silent()
    final = binary_path(cache)
    given = source if source is not None else default_source()
    rec = build_record(final)
    if rec is not None and not force and (source is None or peek_origins(SOURCES, source) == rec.get("sources")):
        rep.cached(f"yunikorn {VERSION}", str(final.parent))
        return final
    check_go()
    with staged(final, "yunikorn") as (work, log):
        found = locate(SOURCES, given, work, cache or cache_dir())
        by = {f.source.module: f.dir for f in found}
        out = work / "out" / BINARY
        with rep.status(f"building yunikorn {VERSION} from {given or 'upstream sources'} (log: {log})") as update, \
                log.open("w") as logf:
            for cmd in build_commands(by[SHIM], by[CORE], by[SI], out):
                run_logged(cmd, by[SHIM], _go_env(), logf, update)
        if not out.is_file() or out.read_bytes()[:4] != b"\x7fELF":
            raise ToolchainError(f"the yunikorn build wrote no binary (see {log})")
        put_in_place(out, final)
        write_record(final.parent, {"version": VERSION, "kubernetes": versions.YUNIKORN_KUBERNETES,
                                    "sources": origins(found), "binary_sha256": sha256_of(final)})
    return final


def version_line(cache: Path | None = None) -> str:
    """What the fairness manifest says of the YuniKorn it ran."""
    rec = build_record(binary_path(cache)) or {}
    src = ", ".join(f"{m.rsplit('/', 1)[-1]} {o[:23]}" for m, o in sorted((rec.get("sources") or {}).items()))
    return f"yunikorn {VERSION} (Kubernetes libraries {versions.YUNIKORN_KUBERNETES}; {src or 'sources unknown'})"


class _Recipe:
    version = VERSION

    def build(self, source: Path | None, rep: Reporter, force: bool) -> Path:
        return build_yunikorn(source, rep, force)

    def status(self) -> tuple[bool, str, str]:
        path = binary_path()
        rec = build_record(path)
        if rec is None:
            return False, str(path), "not built" if not path.exists() else "not the recorded build"
        origin = ", ".join(sorted({o.split(":")[0] for o in (rec.get("sources") or {}).values()}))
        return True, str(path), f"(from {'pinned archives' if origin == 'sha256' else 'source checkouts'})"


RECIPE = _Recipe()
