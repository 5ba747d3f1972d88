"""Build (or download) and verify the binaries of a kwokctl ``--runtime binary`` cluster.

Binaries live in a version-keyed cache, ``$KWOKBENCH_CACHE/toolchain/<component>-<version>/``
(default ``~/.cache/kwokbench``). A binary that is present and answers ``--version`` with the pinned
version is never rebuilt. Builds go into a temporary directory and are moved into place only when
every binary of the component is built, so an interrupted build never leaves a half toolchain.

Kubernetes cannot be ``go install``-ed: its go.mod replaces every ``k8s.io/*`` staging module with
``./staging/...``. We generate a wrapper module whose replace block is derived from that version's
own go.mod (the same parse as cluster-autoscaler's ``hack/submodule-k8s.sh``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kwokbench.errors import ToolchainError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain import provenance, versions
from kwokbench.toolchain.gosteps import GoSteps, count_packages, targets, verbose

Source = Literal["auto", "source", "release"]
RELEASE_PROBE_URL = "https://dl.k8s.io/release/stable.txt"


def cache_dir() -> Path:
    return Path(os.environ.get("KWOKBENCH_CACHE", "~/.cache/kwokbench")).expanduser()


@dataclass(frozen=True)
class Binary:
    name: str
    version_args: tuple[str, ...]
    expect: str
    """Substring the version output must contain (the pinned version). With no ``version_args`` the
    entry is a data file (e.g. a CRD) and its content must contain ``expect``."""


@dataclass(frozen=True)
class Component:
    name: str
    version: str
    binaries: tuple[Binary, ...]
    build: Callable[[Component, Path], list[list[str]]] = field(compare=False)
    """Returns the commands that build every binary of the component into the given output dir."""
    optional: bool = False
    """Not needed by a stock cluster: built by ``tools install`` and by runs whose variants use it."""
    post: Callable[[Component, Path], None] | None = field(default=None, compare=False)
    """Runs after the build commands (in the build's output dir), e.g. to copy manifests."""
    substitutes: tuple[tuple[str, str], ...] = ()
    """Kubernetes only: (staging module, version) built instead of the release's own version of that module, which
    the module proxy refuses (:mod:`.provenance`; recorded in the build's ``build.json``)."""

    def dir(self, cache: Path) -> Path:
        return cache / "toolchain" / f"{self.name}-{self.version}"


@dataclass(frozen=True)
class BinaryStatus:
    component: str
    binary: str
    version: str
    path: Path
    ok: bool
    problem: str = ""


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never let go try to download another toolchain (the network only has the module proxy);
    # static binaries run anywhere on the host.
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    flags = env.get("GOFLAGS", "") + " -mod=mod"
    if "-gcflags" not in flags:
        # every binary is linked stripped (-ldflags "-s -w"): the DWARF the compiler would write only for the link
        # to drop is not written (the same code; 8% less CPU for etcd's build on the project's machine)
        flags += " " + NO_DWARF
    env["GOFLAGS"] = flags.strip()
    return env


def go_needed(gomod_text: str) -> tuple[int, int, int] | None:
    """The Go release a go.mod asks for (its ``go`` line), as (1, minor, patch); None without one."""
    m = re.search(r"^go (\d+)\.(\d+)(?:\.(\d+))?\s*$", gomod_text, flags=re.M)
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def go_env_for(kubernetes: str) -> dict[str, str]:
    """The Go environment to build against Kubernetes ``kubernetes``: the local Go, or, when the release's go.mod
    asks for a newer Go (v1.38 asks for 1.27.0), that Go release (``GOTOOLCHAIN=go1.27.0``), which the go command
    fetches from the module proxy as the module golang.org/toolchain and runs for this build only."""
    env = _go_env()
    try:
        need = go_needed(_download_gomod("k8s.io/kubernetes", kubernetes))
    except ToolchainError:  # the build's own first step says why
        return env
    if need is not None and need[:2] > go_version()[:2]:
        env["GOTOOLCHAIN"] = f"go{need[0]}.{need[1]}.{need[2]}"
    return env


NO_DWARF = "-gcflags=all=-dwarf=false"
"""Also in the Makefile's Go plugin tests, which then share the compiled Kubernetes packages of ``make tools``."""


def go_version() -> tuple[int, int, str]:
    """(major, minor, raw) of the ``go`` on PATH; ToolchainError when missing or unreadable."""
    go = shutil.which("go")
    if go is None:
        raise ToolchainError(
            "Go is not on PATH: building the toolchain from source needs Go >= "
            f"{versions.MIN_GO[0]}.{versions.MIN_GO[1]} (or use `kwokbench tools install --from release`)"
        )
    try:
        raw = subprocess.run([go, "version"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (subprocess.SubprocessError, OSError) as e:
        raise ToolchainError(f"`go version` failed: {e}") from e
    return parse_go_version(raw)


def parse_go_version(raw: str) -> tuple[int, int, str]:
    m = re.search(r"go(\d+)\.(\d+)(?:\.\d+|rc\d+|beta\d+)?", raw)
    if not m:
        raise ToolchainError(f"cannot read the Go version from {raw.strip()!r}")
    return int(m.group(1)), int(m.group(2)), m.group(0)


def check_go() -> str:
    major, minor, raw = go_version()
    if (major, minor) < versions.MIN_GO:
        raise ToolchainError(
            f"Go {raw[2:]} is too old: kwok {versions.KWOK} and Kubernetes {versions.KUBERNETES} need Go >= "
            f"{versions.MIN_GO[0]}.{versions.MIN_GO[1]}"
        )
    return raw


# ---- build recipes -------------------------------------------------------------------------------


def _build_kwok(c: Component, out: Path) -> list[list[str]]:
    mod = "sigs.k8s.io/kwok"
    return [
        ["go", "install", "-trimpath", "-ldflags", "-s -w",
         f"{mod}/cmd/kwok@{c.version}", f"{mod}/cmd/kwokctl@{c.version}"],
    ]


KWOK_STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml")
"""The stages kwokctl gives its kwok controller; a kwok started by kwokbench itself (bring your own
cluster) needs them too (``kwok`` alone refuses to start without stages)."""


def _copy_kwok_stages(c: Component, out: Path) -> None:
    src = _download_module("sigs.k8s.io/kwok", c.version)["Dir"] / "kustomize" / "stage"
    docs = []
    for rel in KWOK_STAGES:
        f = src / rel
        if not f.is_file():
            raise ToolchainError(f"{f} is missing; the kwok module layout changed")
        docs.append(f.read_text().strip().removeprefix("---").strip())
    (out / "stages.yaml").write_text("\n---\n".join(docs) + "\n")


def _build_etcd(c: Component, out: Path) -> list[list[str]]:
    # etcd's own go.mod files replace ../api etc., so `go install` refuses them; a wrapper module
    # needs no replaces because server/v3 already requires api/client/pkg at the same version.
    mods = {
        "etcd": "go.etcd.io/etcd/server/v3",
        "etcdctl": "go.etcd.io/etcd/etcdctl/v3",
        "etcdutl": "go.etcd.io/etcd/etcdutl/v3",
    }
    cmds = [["go", "mod", "init", "kwokbench.local/etcdbuild"],
            ["go", "get", "-tool", *[f"{m}@{c.version}" for m in mods.values()]]]
    cmds += [["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / name), m] for name, m in mods.items()]
    return cmds


def kubernetes_ldflags(version: str, build_date: str = "2026-01-01T00:00:00Z") -> str:
    """Version stamping as upstream ``hack/lib/version.sh`` does it (never a v0.x string: kwokctl
    would then treat the binaries as pre-1.13 and drop flags)."""
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)(?:-(?:alpha|beta|rc)\.\d+)?", version)  # v1.36.0-rc.0 too
    if not m:
        raise ToolchainError(f"not a Kubernetes release version: {version!r}")
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={m.group(1)}",
                  f"-X {pkg}.gitMinor={m.group(2)}", f"-X {pkg}.gitTreeState=clean",
                  f"-X {pkg}.buildDate={build_date}"]
    return " ".join(flags)


def staging_replaces(gomod_text: str) -> list[str]:
    """The ``k8s.io/X`` modules that k8s.io/kubernetes' go.mod replaces with ``./staging/...``."""
    return re.findall(r"^\s*(?:replace\s+)?(k8s\.io/\S+)\s+=>\s+\./staging/", gomod_text, flags=re.M)


def kubernetes_wrapper(module: str, version: str, substitutes: Mapping[str, str] | None = None) -> list[list[str]]:
    """Commands that start a wrapper module able to build ``k8s.io/kubernetes@version`` packages:
    every staging module it replaces with ``./staging/X`` replaced by the published ``X@v0.N.P`` (or by the
    version ``substitutes`` names for it)."""
    staging = "v0." + version.removeprefix("v1.")
    subs = dict(substitutes or {})
    mods = staging_replaces(_download_gomod("k8s.io/kubernetes", version))
    if not mods:
        raise ToolchainError(f"k8s.io/kubernetes@{version} go.mod has no ./staging replaces; recipe is out of date")
    stray = sorted(set(subs) - set(mods))
    if stray:
        raise ToolchainError(f"--substitute {stray[0]}: not a staging module of Kubernetes {version} (those are "
                             f"k8s.io/api, k8s.io/kube-proxy, …: its go.mod's ./staging replaces)")
    return [["go", "mod", "init", module],
            ["go", "mod", "edit", "-go=1.26.0", "-godebug=default=go1.26"],
            ["go", "mod", "edit", *[f"-replace={m}={m}@{subs.get(m, staging)}" for m in mods]]]


def _build_kubernetes(c: Component, out: Path) -> list[list[str]]:
    cmds = kubernetes_wrapper("kwokbench.local/k8sbuild", c.version, dict(c.substitutes))
    bins = [b.name for b in c.binaries]
    cmds.append(["go", "get", "-tool", *[f"k8s.io/kubernetes/cmd/{b}@{c.version}" for b in bins]])
    ld = kubernetes_ldflags(c.version)
    cmds += [["go", "build", "-trimpath", "-ldflags", ld, "-o", str(out / b), f"k8s.io/kubernetes/cmd/{b}"]
             for b in bins]
    return cmds


def version_replaces(gomod_text: str) -> list[tuple[str, str, str]]:
    """``(old, new, version)`` of every ``old => new vX`` replace of a go.mod (directory replaces skipped)."""
    return re.findall(r"^\s*(?:replace\s+)?(\S+)(?:\s+v\S+)?\s+=>\s+(\S+)\s+(v\S+)\s*$", gomod_text, flags=re.M)


def _build_scheduler_plugins(c: Component, out: Path) -> list[list[str]]:
    # `go install` refuses a module with replaces, so copy its (version) replaces into a wrapper
    mod = "sigs.k8s.io/scheduler-plugins"
    replaces = version_replaces(_download_module(mod, c.version)["GoMod"].read_text())
    if not replaces:
        raise ToolchainError(f"{mod}@{c.version} go.mod has no version replaces; the recipe is out of date")
    return [["go", "mod", "init", "kwokbench.local/spbuild"],
            ["go", "mod", "edit", *[f"-replace={a}={b}@{v}" for a, b, v in replaces]],
            ["go", "get", "-tool", f"{mod}/cmd/scheduler@{c.version}"],
            ["go", "build", "-trimpath", "-ldflags", kubernetes_ldflags(versions.SCHEDULER_PLUGINS_KUBERNETES),
             "-o", str(out / "kube-scheduler"), f"{mod}/cmd/scheduler"]]


SCHEDULER_PLUGINS_CRDS = ("coscheduling", "capacityscheduling")
"""PodGroup and ElasticQuota (``manifests/<plugin>/crd.yaml`` in the module)."""


def _copy_scheduler_plugins_crds(c: Component, out: Path) -> None:
    """The CRDs (PodGroup, ElasticQuota, …) ship in the module zip: copy them next to the binary."""
    src = _download_module("sigs.k8s.io/scheduler-plugins", c.version)["Dir"] / "manifests"
    (out / "crds").mkdir()
    for plugin in SCHEDULER_PLUGINS_CRDS:
        f = src / plugin / "crd.yaml"
        if not f.is_file():
            raise ToolchainError(f"{f} is missing; the scheduler-plugins module layout changed")
        shutil.copyfile(f, out / "crds" / f"{plugin}.yaml")


def _download_module(module: str, version: str) -> dict[str, Path]:
    """``go mod download`` one module; returns its ``GoMod`` file and source ``Dir`` in the module cache."""
    try:
        res = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                             capture_output=True, text=True, timeout=600, env=_go_env(), check=False)
        info = json.loads(res.stdout or "{}")
    except (subprocess.SubprocessError, OSError, ValueError) as e:
        raise ToolchainError(f"could not download {module}@{version}: {e}") from e
    newer_go = "requires go >=" in str(info.get("Error", "")) and Path(info.get("GoMod", "")).is_file()
    if ("Error" in info and not newer_go) or "GoMod" not in info:  # a newer Go's module is read all the same
        raise ToolchainError(f"could not download {module}@{version}: {info.get('Error', res.stderr.strip())}")
    return {"GoMod": Path(info["GoMod"]), "Dir": Path(info.get("Dir", ""))}


def _download_gomod(module: str, version: str) -> str:
    return _download_module(module, version)["GoMod"].read_text()


def components(kubernetes: str = versions.KUBERNETES, substitutes: Mapping[str, str] | None = None) -> list[Component]:
    kv, ev = kubernetes, versions.ETCD.removeprefix("v")
    return [
        Component("kwok", versions.KWOK, (
            Binary("kwokctl", ("--version",), f"version {versions.KWOK}"),
            Binary("kwok", ("--version",), f"version {versions.KWOK}"),
            Binary("stages.yaml", (), "name: node-heartbeat-with-lease"),
        ), _build_kwok, post=_copy_kwok_stages),
        Component("etcd", versions.ETCD, (
            Binary("etcd", ("--version",), f"etcd Version: {ev}"),
            Binary("etcdctl", ("version",), f"etcdctl version: {ev}"),
            Binary("etcdutl", ("version",), f"etcdutl version: {ev}"),
        ), _build_etcd),
        Component("kubernetes", kv, (
            Binary("kube-apiserver", ("--version",), f"Kubernetes {kv}"),
            Binary("kube-controller-manager", ("--version",), f"Kubernetes {kv}"),
            Binary("kube-scheduler", ("--version",), f"Kubernetes {kv}"),
            Binary("kubectl", ("version", "--client"), f"Client Version: {kv}"),
        ), _build_kubernetes, substitutes=tuple(sorted((substitutes or {}).items()))),
        Component("scheduler-plugins", versions.SCHEDULER_PLUGINS, (
            Binary("kube-scheduler", ("--version",), f"Kubernetes {versions.SCHEDULER_PLUGINS_KUBERNETES}"),
            Binary("crds/coscheduling.yaml", (), "kind: PodGroup"),
        ), _build_scheduler_plugins, optional=True, post=_copy_scheduler_plugins_crds),
    ]


OPTIONAL = tuple(c.name for c in components() if c.optional)


# ---- the toolchain --------------------------------------------------------------------------------


_CHECKED: dict[tuple[Any, ...], BinaryStatus] = {}
"""Binary checks of this process, by path, mtime, ctime, size and the version expected."""

ANSWERED = "answered.json"
"""In the cache's toolchain folder: the binaries that answered their version, each by path, mtime, ctime, size and
the answer expected, so that a later kwokbench process does not start them again (every run, ``up`` and sweep did:
for the twelve, 0.5 s and 0.13 CPU-seconds on a quiet host, 0.75 s and 0.66 under load, 2026-12-01). A binary
rebuilt, replaced, touched or given other permissions has another mtime or ctime and is asked again; a failed
answer is never recorded."""


def _answered(cache: Path) -> set[str]:
    try:
        got = json.loads((cache / "toolchain" / ANSWERED).read_text())
    except (OSError, ValueError):
        return set()
    return {k for k in got if isinstance(k, str)} if isinstance(got, list) else set()


def _remember_answered(cache: Path, key: str) -> None:
    """Add ``key``, keeping only the entries whose binary is still as it was; written whole and renamed, so a
    reader never sees half a file (two writers at once: one's entry is lost, and asked again next time)."""
    keep = {key}
    for k in _answered(cache):
        with contextlib.suppress(OSError, ValueError, TypeError):
            path, mtime, ctime, size = json.loads(k)[:4]
            st = Path(path).stat()
            if (st.st_mtime_ns, st.st_ctime_ns, st.st_size) == (mtime, ctime, size):
                keep.add(k)
    folder = cache / "toolchain"
    with contextlib.suppress(OSError):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{ANSWERED}.")
        with os.fdopen(fd, "w") as f:
            json.dump(sorted(keep), f)
        os.replace(tmp, folder / ANSWERED)


class Toolchain:
    """The cached binaries and how to hand them to kwokctl."""

    def __init__(self, cache: Path | None = None, kubernetes: str = versions.KUBERNETES,
                 substitutes: Mapping[str, str] | None = None) -> None:
        self.cache = cache or cache_dir()
        self.kubernetes = kubernetes
        """The control plane's release (kube-apiserver, -controller-manager, -scheduler, kubectl)."""
        self.components = components(kubernetes, substitutes)

    def for_kubernetes(self, kubernetes: str) -> Toolchain:
        """The same cache with another Kubernetes release (its binaries in their own folder)."""
        return self if kubernetes == self.kubernetes else Toolchain(self.cache, kubernetes)

    @property
    def core(self) -> list[Component]:
        return [c for c in self.components if not c.optional]

    def component(self, name: str) -> Component:
        return next(c for c in self.components if c.name == name)

    def path(self, binary: str, component: str | None = None) -> Path:
        for c in ([self.component(component)] if component else self.core):
            for b in c.binaries:
                if b.name == binary:
                    return c.dir(self.cache) / b.name
        raise KeyError(binary)

    def build_record(self) -> dict[str, Any] | None:
        """What this release's build departs in from its own, checked modules (its ``build.json``), or None."""
        return provenance.read(self.component("kubernetes").dir(self.cache))

    def scheduler_plugins_crds(self) -> list[Path]:
        """PodGroup, ElasticQuota, … CRD manifests of the scheduler-plugins build."""
        return sorted((self.component("scheduler-plugins").dir(self.cache) / "crds").glob("*.yaml"))

    @property
    def release_marker(self) -> Path:
        return self.cache / "toolchain" / f"release-{versions.KWOK}-{self.kubernetes}"

    def check(self, optional: bool = True) -> list[BinaryStatus]:
        return [self._check_binary(c, b) for c in (self.components if optional else self.core) for b in c.binaries]

    def _check_binary(self, c: Component, b: Binary) -> BinaryStatus:
        """Whether the binary is there and says its version: asked once for a file unchanged since, in this process
        and, once it answered, in later ones (:data:`ANSWERED`)."""
        path = c.dir(self.cache) / b.name
        try:
            st = path.stat()
        except OSError:
            return BinaryStatus(c.name, b.name, c.version, path, False, "not built")
        key = (str(path), st.st_mtime_ns, st.st_ctime_ns, st.st_size, b.expect, tuple(b.version_args or ()))
        if key not in _CHECKED:
            stored = json.dumps(key)
            if b.version_args and stored in _answered(self.cache):
                _CHECKED[key] = BinaryStatus(c.name, b.name, c.version, path, True)
            else:
                _CHECKED[key] = self._run_check(c, b, path)
                if b.version_args and _CHECKED[key].ok:
                    _remember_answered(self.cache, stored)
        return _CHECKED[key]

    @staticmethod
    def _run_check(c: Component, b: Binary, path: Path) -> BinaryStatus:
        if not b.version_args:  # a data file (e.g. a CRD manifest): its content must match
            text = path.read_text(errors="replace")
            ok = b.expect in text
            return BinaryStatus(c.name, b.name, c.version, path, ok, "" if ok else f"lacks {b.expect!r}")
        try:
            res = subprocess.run([str(path), *b.version_args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return BinaryStatus(c.name, b.name, c.version, path, False, f"does not run: {e}")
        text = res.stdout + res.stderr
        if b.expect not in text:
            first = text.strip().splitlines()[0] if text.strip() else f"exit {res.returncode}, no output"
            return BinaryStatus(c.name, b.name, c.version, path, False, f"wrong version: {first[:80]}")
        return BinaryStatus(c.name, b.name, c.version, path, True)

    def mode(self) -> Literal["source", "release"] | None:
        """Which installed toolchain ``up`` will use: built binaries first, then a release install."""
        if all(s.ok for s in self.check(optional=False)):
            return "source"
        if self.release_marker.exists() and self._check_binary(self.components[0], self.components[0].binaries[0]).ok:
            return "release"
        return None

    # -- install --

    def install(self, source: Source = "auto", reporter: Reporter | None = None, force: bool = False,
                extras: Sequence[str] = ()) -> str:
        """Make every core binary (and the optional ``extras`` components) available; returns the mode
        used. Idempotent and cheap when cached."""
        rep = reporter or Silent()
        wanted = [c for c in self.components if not c.optional or c.name in extras]
        if source == "auto":
            extras_ok = all(self._check_binary(c, b).ok for c in wanted if c.optional for b in c.binaries)
            if not force and self.mode() is not None and extras_ok:
                return self.mode() or "source"
            source = "release" if shutil.which("go") is None and _downloads_reachable() else "source"
        if source == "release":
            if extras:
                raise ToolchainError(f"{', '.join(extras)} can only be built from source (needs Go)")
            self._install_release(rep)
            return "release"
        check_go()
        for c in wanted:
            if not force and self._built(c):
                rep.cached(f"{c.name} {c.version}", str(c.dir(self.cache)))
                continue
            final = c.dir(self.cache)
            with build_lock(final.parent, final.name, rep):
                if not force and self._built(c):  # built by another kwokbench while this one waited
                    rep.cached(f"{c.name} {c.version}", str(final))
                    continue
                if c.name == "kubernetes":
                    check_on_proxy(c.version, dict(c.substitutes))
                self._build(c, rep)
            bad = [s for s in (self._check_binary(c, b) for b in c.binaries) if not s.ok]
            if bad:
                raise ToolchainError(f"{c.name} {c.version} built but {bad[0].binary} is unusable: {bad[0].problem}")
        return "source"

    def _built(self, c: Component) -> bool:
        return all(self._check_binary(c, b).ok for b in c.binaries)

    def _build(self, c: Component, rep: Reporter) -> None:
        final = c.dir(self.cache)
        work = self.cache / "build" / f"{c.name}-{c.version}"
        log = self.cache / "build" / f"{c.name}-{c.version}.log"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        out = Path(tempfile.mkdtemp(prefix=f".{c.name}-", dir=final.parent if final.parent.exists() else None))
        final.parent.mkdir(parents=True, exist_ok=True)
        env = go_env_for(c.version) if c.name == "kubernetes" else _go_env()
        env["GOBIN"] = str(out)
        if env["GOTOOLCHAIN"] != "local":
            rep.info(f"{c.name} {c.version} asks for a newer Go than this host's: built with {env['GOTOOLCHAIN']} "
                     "(from the module proxy)")
        try:
            with rep.status(f"building {c.name} {c.version} from Go modules (log: {log})") as update, \
                    log.open("w") as logf:
                for cmd in c.build(c, out):
                    run_logged(cmd, work, env, logf, update)
                if c.post is not None:
                    c.post(c, out)
                if c.name == "kubernetes":
                    self._record(c, work, env, out, rep)
            if final.exists():
                shutil.rmtree(final)
            out.rename(final)
        finally:
            shutil.rmtree(out, ignore_errors=True)

    @staticmethod
    def _record(c: Component, work: Path, env: dict[str, str], out: Path, rep: Reporter) -> None:
        """``build.json`` where the build departs from the release's own, checked modules (:mod:`.provenance`)."""
        subs = dict(c.substitutes)
        pkgs = [f"k8s.io/kubernetes/cmd/{b.name}" for b in c.binaries]
        gosum = (work / "go.sum").read_text() if (work / "go.sum").is_file() else ""
        doc = provenance.write(out, c.version, subs, provenance.imported_from(work, env, pkgs, list(subs)),
                               provenance.unchecked(gosum, _go_settings(env)))
        if doc is not None:
            rep.info(f"Kubernetes {c.version} built with {provenance.describe(doc)} (recorded in "
                     f"{c.dir(Path(''))}/{provenance.RECORD})")

    def _install_release(self, rep: Reporter) -> None:
        """Download kwokctl and kwok; kwokctl then downloads the official Kubernetes/etcd binaries itself."""
        if not _downloads_reachable():
            raise ToolchainError(
                "--from release needs dl.k8s.io and github.com, which are unreachable from here; "
                "use --from source (needs Go)")
        kwok = self.components[0]
        d = kwok.dir(self.cache)
        d.mkdir(parents=True, exist_ok=True)
        base = f"https://github.com/kubernetes-sigs/kwok/releases/download/{kwok.version}"
        for name in ("kwokctl", "kwok"):
            with rep.status(f"downloading {name} {kwok.version}"):
                tmp = d / f".{name}.part"
                try:
                    urllib.request.urlretrieve(f"{base}/{name}-linux-amd64", tmp)
                except OSError as e:
                    raise ToolchainError(f"downloading {name} failed: {e}") from e
                tmp.chmod(0o755)
                tmp.rename(d / name)
        self.release_marker.touch()

    # -- kwokctl configuration --

    def kwokctl_options(self) -> dict[str, object]:
        """The ``options`` of a KwokctlConfiguration that point kwokctl at this toolchain."""
        mode = self.mode()
        if mode is None:
            raise ToolchainError("the toolchain is not installed: run `kwokbench tools install`")
        opts: dict[str, object] = {
            "runtime": "binary",
            "kubeVersion": self.kubernetes,
            "etcdVersion": versions.ETCD.removeprefix("v"),
            "kwokControllerBinary": str(self.path("kwok")),
            "quietPull": True,
        }
        prom = shutil.which("prometheus")
        if prom:
            opts["prometheusBinary"] = prom
        if mode == "source":
            kube = self.components[2].dir(self.cache)
            opts.update({
                "kubeBinaryPrefix": str(kube),
                "kubeApiserverBinary": str(kube / "kube-apiserver"),
                "kubeControllerManagerBinary": str(kube / "kube-controller-manager"),
                "kubeSchedulerBinary": str(kube / "kube-scheduler"),
                "kubectlBinary": str(kube / "kubectl"),
                "etcdBinary": str(self.path("etcd")),
                "etcdctlBinary": str(self.path("etcdctl")),
                "etcdutlBinary": str(self.path("etcdutl")),
            })
        return opts


@contextlib.contextmanager
def staged(final: Path, name: str) -> Iterator[tuple[Path, Path]]:
    """A build of the cache entry ``final``: a temporary work directory beside the cache (removed
    afterwards, whatever happens) and the build's log path. The caller moves its output into place with
    :func:`put_in_place` only once it is complete, so the cache never holds a half-built file."""
    root = final.parent.parent
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{name}-", dir=root))
    try:
        yield work, root / f"{final.parent.name}.log"
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def build_lock(root: Path, name: str, rep: Reporter | None = None) -> Iterator[None]:
    """Held while one process builds the cache entry ``name`` under ``root`` (a cache folder): another kwokbench
    building the same entry waits, then finds it built. Without it two builds of one entry (two test workers
    measuring a ceiling at once, CI's failure) each replaced the other's finished entry, under a run using it."""
    import fcntl

    locks = root / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{name}.lock").open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if rep is not None:
                rep.info(f"waiting for another kwokbench's build of {name}")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def put_in_place(built: Path, final: Path) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    built.replace(final)
    return final


def run_logged(cmd: Sequence[str], cwd: Path, env: dict[str, str], logf: object,
                update: Callable[[str], None]) -> None:
    """Run a build command, its output into ``logf``; ``update`` gets the step Go is at (:mod:`.gosteps`:
    modules downloaded, packages compiled of how many, linking) rather than its last line, which for a
    silent compile stayed "go: downloading …" for minutes. ToolchainError with the last lines on failure."""
    tail: deque[str] = deque(maxlen=25)
    steps = GoSteps.of(cmd)
    run = verbose(cmd)  # Go names each package it compiles: what "compiling packages k of n" counts
    print("$ " + " ".join(run), file=logf, flush=True)  # type: ignore[call-overload]
    update(steps.command)
    try:
        proc = subprocess.Popen(run, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
    except OSError as e:
        raise ToolchainError(f"cannot run {cmd[0]}: {e}") from e
    if targets(cmd):  # n of "k of n", found beside the build rather than before it
        threading.Thread(target=lambda: setattr(steps, "packages", count_packages(cmd, cwd, env)),
                         name="kwokbench-go-list", daemon=True).start()
    assert proc.stdout is not None
    with proc.stdout:  # a silent step still gets a heartbeat (with the elapsed time) from the reporter
        for line in proc.stdout:
            logf.write(line)  # type: ignore[attr-defined]
            tail.append(line.rstrip())
            step = steps.step(line)
            if step is not None:
                update(step)
    rc = proc.wait()
    if rc != 0:
        raise ToolchainError(
            f"`{' '.join(cmd)[:160]}` failed with exit {rc}; last lines of the Go output:\n  " + "\n  ".join(tail)
            + sumdb_hint(tail))


def sumdb_hint(lines: Sequence[str]) -> str:
    """For a build Go refused because the checksum database has no record of a module (``verifying module: M@V:
    reading …/lookup/M@V: 404``): the modules and the setting that lets Go fetch them unchecked."""
    mods = sorted({m[1] for ln in lines if (m := re.search(r"verifying (?:go\.mod|module): ([^@\s]+)@\S+: reading "
                                                           r"\S+/lookup/\S+: 404", ln))})
    if not mods:
        return ""
    return (f"\nthe checksum database has no record of {', '.join(mods)}; Go fetches "
            f"{'it' if len(mods) == 1 else 'them'} unchecked with GONOSUMDB={','.join(mods)} added to its setting "
            "(kwokbench records each unchecked module's hash in the build's build.json)")


def on_proxy(tag: str) -> bool:
    """Whether Go can build k8s.io/kubernetes at ``tag`` from the module proxy (:func:`proxy_problem`)."""
    return proxy_problem(tag) is None


def proxy_problem(tag: str, substitutes: Mapping[str, str] | None = None) -> str | None:
    """Why Go cannot fetch k8s.io/kubernetes at ``tag``, or None: the module proxy lacks it (asked for the tag
    itself: the proxy's version list here omits most tags it serves), or the checksum database has no record of it,
    without which Go refuses the download (seen for v1.36.0-beta.0 and v1.37.0-rc.0, which the proxy serves)."""
    env = _go_env()
    try:
        res = subprocess.run(["go", "list", "-m", "-json", f"k8s.io/kubernetes@{tag}"], capture_output=True,
                             text=True, timeout=120, env=env, cwd=tempfile.gettempdir(), check=False)
    except (subprocess.SubprocessError, OSError) as e:
        raise ToolchainError(f"could not ask the Go module proxy for Kubernetes {tag}: {e}") from e
    if res.returncode != 0:
        if re.search(r"not available|unknown revision|invalid version|\b(403|404|410)\b", res.stderr):
            return "is not on the Go module proxy"
        last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
        raise ToolchainError(f"could not ask the Go module proxy for Kubernetes {tag}: {last}")
    settings = _go_settings(env)
    sumdb = _sumdb_lookup(settings, f"k8s.io/kubernetes@{tag}")
    if sumdb is not None and not sumdb:
        return ("is on the Go module proxy, but the checksum database has no record of it, so Go will not fetch it "
                "(GONOSUMDB=k8s.io/kubernetes, Go's own setting, fetches it unchecked; the build records what it "
                "did not check)")
    refused = [m for m in _staging_refused(settings, tag) if m.split("@")[0] not in (substitutes or {})]
    if refused:
        hint = _substitute_hint(settings, refused)
        return (f"is on the Go module proxy, but {len(refused)} of the modules it is built from "
                f"{'is' if len(refused) == 1 else 'are'} not "
                f"({', '.join(refused[:3])}{', …' if len(refused) > 3 else ''})" + hint)
    return None


def _substitute_hint(settings: dict[str, str], refused: Sequence[str]) -> str:
    """``; --substitute MOD@VER … builds it with …`` naming, for each refused staging module, the first release of
    the same minor the proxy lists (the refused version's code is not this; the build records what it imports)."""
    proxy = _proxy_url(settings)
    found: list[str] = []
    for mv in refused:
        mod, ver = mv.split("@")
        minor = ".".join(ver.split("-")[0].split(".")[:2]) + "."
        try:
            with urllib.request.urlopen(f"{proxy}/{mod}/@v/list", timeout=30) as r:
                listed = [v for v in r.read().decode().split() if v.startswith(minor) and "-" not in v]
        except (OSError, ValueError):
            return ""
        if not listed:
            return ""
        found.append(f"{mod}@{min(listed, key=lambda v: tuple(int(x) for x in v[1:].split('.')))}")
    return (f"; `--substitute {' --substitute '.join(found)}` builds it with {'those' if len(found) > 1 else 'that'} "
            "instead (kwokbench records which packages the binaries import from it)")


GO_SETTINGS = ("GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOSUMCHECK")


def _go_settings(env: dict[str, str]) -> dict[str, str]:
    """The go command's module settings (one ``go env -json``; {} when it cannot answer)."""
    try:
        out = subprocess.run(["go", "env", "-json", *GO_SETTINGS], capture_output=True, text=True, timeout=30,
                             env=env, check=False).stdout
        got = json.loads(out or "{}")
    except (subprocess.SubprocessError, OSError, ValueError):
        return {}
    return {k: str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def _proxy_url(settings: dict[str, str]) -> str:
    raw = settings.get("GOPROXY", "")
    return next((p for p in re.split(r"[,|]", raw) if p.startswith("http")), "").rstrip("/")


def _staging_refused(settings: dict[str, str], tag: str) -> list[str]:
    """The staging modules (``k8s.io/api``… at ``v0.N.P``) of k8s.io/kubernetes ``tag`` that the module proxy does
    not serve: a build needs every one (this machine's proxy refuses some of the pre-release tags', e.g.
    k8s.io/cri-client@v0.36.0-rc.0). Asked over HTTP, at once; [] when the proxy cannot be asked."""
    from concurrent.futures import ThreadPoolExecutor

    proxy = _proxy_url(settings)
    if not proxy:
        return []
    try:
        with urllib.request.urlopen(f"{proxy}/k8s.io/kubernetes/@v/{tag}.mod", timeout=60) as r:
            mods = staging_replaces(r.read().decode())
    except (OSError, ValueError):
        return []
    staging = "v0." + tag.removeprefix("v1.")

    def refused(mod: str) -> bool:
        try:
            with urllib.request.urlopen(f"{proxy}/{mod}/@v/{staging}.info", timeout=30):
                return False
        except urllib.error.HTTPError as e:
            e.close()
            return e.code in (403, 404, 410)
        except (OSError, ValueError):
            return False

    mods = [m for m in mods if m not in NOT_IMPORTED]
    with ThreadPoolExecutor(8) as pool:
        return [f"{m}@{staging}" for m, bad in zip(mods, pool.map(refused, mods), strict=True) if bad]


NOT_IMPORTED = frozenset({"k8s.io/sample-apiserver", "k8s.io/sample-cli-plugin", "k8s.io/sample-controller",
                          "k8s.io/code-generator"})
"""Staging modules no binary kwokbench builds imports (the proxy refuses k8s.io/sample-cli-plugin@v0.36.0, and
v1.36.0 builds)."""


def _sumdb_lookup(settings: dict[str, str], module: str) -> bool | None:
    """Whether the checksum database (through the module proxy, as the go command asks it) knows ``module@version``;
    None when Go does not check it here (GOSUMDB=off, GONOSUMDB/GOPRIVATE/GONOSUMCHECK covering k8s.io, no proxy) or
    the answer is neither yes nor no."""
    db = (settings.get("GOSUMDB", "").split() or [""])[0]
    skip = ",".join(settings.get(n, "") for n in ("GONOSUMDB", "GOPRIVATE", "GONOSUMCHECK"))
    proxy = _proxy_url(settings)
    if not db or db == "off" or "k8s.io" in skip or not proxy:
        return None
    try:
        with urllib.request.urlopen(f"{proxy}/sumdb/{db}/lookup/{module}", timeout=30) as r:
            return bool(r.status == 200)
    except urllib.error.HTTPError as e:
        e.close()
        return False if e.code in (404, 410) else None
    except (OSError, ValueError):
        return None


def check_on_proxy(tag: str, substitutes: Mapping[str, str] | None = None) -> None:
    """Before a build: ToolchainError naming the nearest releases when Go cannot fetch ``tag`` (the patch releases
    just below and above it, then the next minor's first)."""
    problem = proxy_problem(tag, substitutes)
    if problem is None:
        return
    minor, patch, pre = versions.tag_key(tag)[:3]
    first = patch if pre < 3 else patch + 1  # after v1.36.0-rc.0 comes v1.36.0
    below = next((t for t in (f"v1.{minor}.{p}" for p in range(first - 1, -1, -1)) if on_proxy(t)), None)
    above = next((t for t in [*(f"v1.{minor}.{p}" for p in range(first, first + 2)), f"v1.{minor + 1}.0",
                              f"v1.{minor + 1}.0-rc.0", f"v1.{minor + 1}.0-alpha.0"] if on_proxy(t)), None)
    near = [t for t in (below, above) if t and t != tag]
    raise ToolchainError(f"Kubernetes {tag} {problem}"
                         + (f"; the nearest releases it has: {', '.join(near)}" if near else ""))


def _downloads_reachable(timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(RELEASE_PROBE_URL, timeout=timeout) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False
