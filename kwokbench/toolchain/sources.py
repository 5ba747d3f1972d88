"""Schedulers built from pinned source archives, for modules the Go module proxy will not serve.

The module proxy refuses a few modules (YuniKorn's three, kube-scheduler-wasm-extension) but serves every
one of their dependencies. Such a scheduler is built from its upstream sources: ``git archive`` tarballs of
the pinned tag or commit, each pinned by sha256 here, like a package cache. kwokbench looks for them

1. in ``--source PATH`` (``tools install … --source``) or, without it, ``$KWOKBENCH_SOURCES``: a
   directory holding the archives (checked against the pinned sha256: a mismatch is refused, never
   built), or holding source *directories* (a checkout: it is built as it is and the build records a hash
   of its Go files instead of the archive's sha256); ``PATH`` may also be one archive or one directory
   when the scheduler needs only one;
2. else in ``$KWOKBENCH_CACHE/sources``, where a user may keep the archives once.

Nothing is downloaded: upstream serves no tarball byte-identical to a pinned ``git archive`` (another prefix and
compression), so a missing source is one line naming the archive's sha256 and the repository and tag to check out.

What was built from what is written next to the binary (``BUILD.json``) and into every run's fairness
manifest; a cached build is reused only when it came from the same sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwokbench.errors import ToolchainError

if TYPE_CHECKING:
    from kwokbench.progress import Reporter

SOURCES_ENV = "KWOKBENCH_SOURCES"
BUILD_RECORD = "BUILD.json"


@dataclass(frozen=True)
class PinnedSource:
    """One upstream Go module, as a pinned archive."""

    module: str
    """Its Go module path (the ``module`` line of its go.mod, e.g. github.com/apache/yunikorn-core)."""
    archive: str
    """File name of the pinned archive."""
    sha256: str
    upstream: str
    """The repository and tag or commit the archive is ``git archive`` of, for a user to check out (upstream serves
    no archive byte-identical to the pinned one: its tarballs differ in prefix and compression)."""
    subdir: str = ""
    """Where the module's go.mod is inside the archive's top directory ("" for the top)."""


@dataclass(frozen=True)
class Located:
    """A pinned source found on this host: its module directory once extracted, and where it came from."""

    source: PinnedSource
    dir: Path
    origin: str
    """``sha256:<hex>`` of the verified archive, or ``dir:<hash of its Go files>`` of a checkout."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _module_of(gomod: Path) -> str | None:
    try:
        m = re.search(r"^module\s+(\S+)", gomod.read_text(errors="replace"), flags=re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def tree_hash(root: Path) -> str:
    """Hash of the Go files and module files under ``root`` (what changes a build from a checkout)."""
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.is_file() and (f.suffix == ".go" or f.name in ("go.mod", "go.sum")) and ".git" not in f.parts:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def _find_dir(root: Path, s: PinnedSource) -> Path | None:
    """A source directory of module ``s`` at ``root`` or one level below it."""
    for d in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        cand = d / s.subdir if s.subdir else d
        if _module_of(cand / "go.mod") == s.module:
            return cand
    return None


def default_source() -> Path | None:
    env = os.environ.get(SOURCES_ENV)
    return Path(env).expanduser() if env else None


def locate(sources: Sequence[PinnedSource], given: Path | None, work: Path, cache: Path) -> list[Located]:
    """Every pinned source as a module directory under ``work`` (archives are extracted there).

    ``given`` is ``--source`` (or ``$KWOKBENCH_SOURCES``): a directory of archives or checkouts, or one
    archive or checkout. A missing one is looked for in the cache (``cache/sources``, where a user may keep them)."""
    if given is not None and not given.exists():
        raise ToolchainError(f"--source {given}: no such file or directory")
    out = []
    for s in sources:
        found = _from_given(s, given, work, single=len(sources) == 1) if given is not None else None
        if found is None:
            found = _from_cache(s, cache, work, given)
        out.append(found)
    return out


def _from_given(s: PinnedSource, given: Path, work: Path, single: bool) -> Located | None:
    if given.is_file():  # one archive: the source it is named after (or the only one wanted), sha256 checked
        return _extract(s, given, work) if given.name == s.archive or single else None
    archive = given / s.archive
    if archive.is_file():
        return _extract(s, archive, work)
    d = _find_dir(given, s)
    if d is None:
        return None
    # a checkout is built from a copy: the build edits go.mod (replaces), never the user's files
    dest = work / "src" / d.name
    shutil.copytree(d, dest, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    return Located(s, dest, f"dir:{tree_hash(d)}")


def _from_cache(s: PinnedSource, cache: Path, work: Path, given: Path | None) -> Located:
    cached = cache / "sources" / s.archive
    if cached.is_file():
        return _extract(s, cached, work)
    where = f" in {given}" if given is not None else " given"
    raise ToolchainError(f"{s.module}: neither {s.archive} nor a checkout of it{where}; give {SOURCES_ENV} or "
                         f"--source DIR holding the pinned archive (sha256 {s.sha256[:16]}…) or a checkout of "
                         f"{s.upstream}")


def extract_all(tar: tarfile.TarFile, dest: Path) -> None:
    """Every member of ``tar`` under ``dest``: Python's ``data`` filter where it has one (3.11.4 and later); before
    that (Debian 12's 3.11.2) the same refusals by hand (:func:`refuse_escapes`), then the extraction."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    refuse_escapes(tar, dest)
    tar.extractall(dest)  # every member checked above


def refuse_escapes(tar: tarfile.TarFile, dest: Path) -> None:
    """TarError for a member that would land outside ``dest`` (an absolute or ``..`` path, a link pointing out of
    it) or that is not a file, folder or link (a device, a fifo)."""
    root = dest.resolve()
    for m in tar.getmembers():
        target = (root / m.name).resolve()
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            raise tarfile.TarError(f"{m.name}: not a file, folder or link")
        if not target.is_relative_to(root):
            raise tarfile.TarError(f"{m.name}: outside the folder it is extracted to")
        if m.issym() or m.islnk():
            link = ((target.parent if m.issym() else root) / m.linkname).resolve()
            if not link.is_relative_to(root):
                raise tarfile.TarError(f"{m.name}: a link to {m.linkname}, outside the folder it is extracted to")


def _extract(s: PinnedSource, archive: Path, work: Path) -> Located:
    got = sha256_of(archive)
    if got != s.sha256:
        raise ToolchainError(f"{archive}: sha256 {got[:16]}… is not the pinned {s.sha256[:16]}… of {s.module}; "
                             "a corrupt or different archive is never built")
    dest = work / "src" / s.archive.removesuffix(".tar.gz").removesuffix(".tgz")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            extract_all(tar, dest)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ToolchainError(f"{archive}: cannot extract: {e}") from e
    d = _find_dir(dest, s)
    if d is None:
        raise ToolchainError(f"{archive}: holds no go.mod of {s.module}")
    return Located(s, d, f"sha256:{got}")


def peek_origins(sources: Sequence[PinnedSource], given: Path) -> dict[str, str] | None:
    """What :func:`origins` of a build from ``given`` would be, without extracting anything (an archive's
    identity is its sha256); None when ``given`` does not hold them all."""
    out = {}
    for s in sources:
        if given.is_file():
            if given.name != s.archive and len(sources) > 1:
                return None
            out[s.module] = f"sha256:{sha256_of(given)}"
        elif (given / s.archive).is_file():
            out[s.module] = f"sha256:{sha256_of(given / s.archive)}"
        elif given.is_dir() and (d := _find_dir(given, s)) is not None:
            out[s.module] = f"dir:{tree_hash(d)}"
        else:
            return None
    return out


def origins(found: Sequence[Located]) -> dict[str, str]:
    return {f.source.module: f.origin for f in found}


def read_record(binary: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((binary.parent / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(dest_dir: Path, record: dict[str, Any]) -> None:
    (dest_dir / BUILD_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")




@dataclass(frozen=True)
class SourceBuild:
    """How one scheduler is built from its pinned sources: a recipe's data (:func:`build` runs it)."""

    name: str
    version: str
    kubernetes: str
    """The Kubernetes libraries it is built on (recorded: its skew to the control plane)."""
    sources: tuple[PinnedSource, ...]
    binary: str
    workdir: str
    """Module (of ``sources``) whose directory the commands run in."""
    commands: Callable[[dict[str, Path], Path], list[list[str]]]
    """Module → its source directory, output path → the commands that build it."""
    extras: Callable[[dict[str, Path], Path], None] | None = None
    """Copies more files next to the binary (e.g. example guests), given the sources and that directory."""

    def path(self, cache: Path | None = None) -> Path:
        from kwokbench.toolchain.install import cache_dir

        return (cache or cache_dir()) / "toolchain" / f"{self.name}-{self.version}" / self.binary

    def record(self, cache: Path | None = None) -> dict[str, Any] | None:
        """The build's record if the cached binary is the one it describes (None: not built, or not that)."""
        binary = self.path(cache)
        rec = read_record(binary)
        if rec is None or rec.get("version") != self.version or not binary.is_file():
            return None
        return rec if rec.get("binary_sha256") == sha256_of(binary) else None

    def build(self, source: Path | None, rep: Reporter, force: bool = False, cache: Path | None = None) -> Path:
        """The binary; built when missing, when ``force``, or when ``source`` holds other sources than those of
        the cached build. ``source`` None: ``$KWOKBENCH_SOURCES``, then the cache's ``sources`` folder."""
        from kwokbench.toolchain.install import build_lock

        final = self.path(cache)
        given = source if source is not None else default_source()

        def current() -> bool:
            rec = self.record(cache)
            return rec is not None and not force and (source is None or peek_origins(self.sources, source)
                                                      == rec.get("sources"))
        if current():
            rep.cached(f"{self.name} {self.version}", str(final.parent))
            return final
        with build_lock(final.parent.parent, final.parent.name, rep):
            if current():  # built by another kwokbench while this one waited
                rep.cached(f"{self.name} {self.version}", str(final.parent))
                return final
            return self._build(given, rep, final, cache)

    def _build(self, given: Path | None, rep: Reporter, final: Path, cache: Path | None) -> Path:
        from kwokbench.toolchain.install import _go_env, cache_dir, check_go, put_in_place, run_logged, staged

        check_go()
        with staged(final, self.name) as (work, log):
            found = locate(self.sources, given, work, cache or cache_dir())
            by = {f.source.module: f.dir for f in found}
            out = work / "out" / self.binary
            with rep.status(f"building {self.name} {self.version} from {given or 'the cached sources'} "
                            f"(log: {log})") as update, log.open("w") as logf:
                for cmd in self.commands(by, out):
                    run_logged(cmd, by[self.workdir], _go_env(), logf, update)
            if not out.is_file() or out.read_bytes()[:4] != b"\x7fELF":
                raise ToolchainError(f"the {self.name} build wrote no binary (see {log})")
            if self.extras is not None:
                self.extras(by, out.parent)
            for extra in out.parent.iterdir():
                if extra != out:
                    dest = final.parent / extra.name
                    shutil.rmtree(dest, ignore_errors=True)
                    final.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(extra), dest)
            put_in_place(out, final)
            write_record(final.parent, {"version": self.version, "kubernetes": self.kubernetes,
                                        "sources": origins(found), "binary_sha256": sha256_of(final)})
        return final

    def status(self) -> tuple[bool, str, str]:
        path, rec = self.path(), self.record()
        if rec is None:
            return False, str(path), "not built" if not path.exists() else "not the recorded build"
        kinds = {o.split(":")[0] for o in (rec.get("sources") or {}).values()}
        return True, str(path), f"(from {'pinned archives' if kinds == {'sha256'} else 'source checkouts'})"

    def version_line(self) -> str:
        """What the fairness manifest says of the build it ran."""
        rec = self.record() or {}
        src = ", ".join(f"{m.rsplit('/', 1)[-1]} {o[:23]}" for m, o in sorted((rec.get("sources") or {}).items()))
        return f"{self.name} {self.version} (Kubernetes libraries {self.kubernetes}; {src or 'sources unknown'})"
