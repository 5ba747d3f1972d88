"""``kwokbench tools build-wasm DIR``: a WebAssembly scheduler-plugin guest, compiled by the standard Go
toolchain (``GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared``) into the cache.

The guest runs inside the ``Wasm`` host plugin (``plugins/wasm``), which is compiled into a kube-scheduler
once; a changed guest is a new ``.wasm`` (seconds), never a new scheduler. The cache key hashes the guest's
Go sources and module files, those of every local module its go.mod replaces it with (the guest SDK), and
the Go version: ``$KWOKBENCH_CACHE/wasm/<dir name>-<key>/guest.wasm``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from kwokbench.errors import ScenarioError, ToolchainError
from kwokbench.progress import Reporter, Silent
from kwokbench.toolchain.install import _go_env, cache_dir, check_go, put_in_place, run_logged, staged

WASM_MAGIC = b"\0asm"
HOST_PLUGIN = "Wasm"
"""The host plugin's name in KubeSchedulerConfiguration profiles (plugins/wasm ``Name``)."""


def _sources(path: Path) -> list[Path]:
    return sorted(f for f in path.rglob("*") if f.is_file() and (f.suffix == ".go" or f.name in ("go.mod", "go.sum"))
                  and "testdata" not in f.relative_to(path).parts and not f.name.endswith("_test.go"))


def local_replaces(gomod: Path) -> list[Path]:
    """Directories of the local modules a go.mod replaces requirements with (``=> ../x``)."""
    out = []
    for m in re.finditer(r"=>\s+(\.{1,2}/\S*|/\S+)\s*$", gomod.read_text(), flags=re.M):
        out.append((gomod.parent / m.group(1)).resolve())
    return out


def module_root(path: Path) -> Path | None:
    """The directory of the go.mod that ``path`` belongs to (itself or an ancestor)."""
    for d in [path, *path.parents]:
        if (d / "go.mod").is_file():
            return d
    return None


def guest_dir(path: Path) -> Path:
    """Check that ``path`` is a guest: a main package in a Go module; ScenarioError (one line) otherwise."""
    if not path.is_dir():
        raise ScenarioError(f"wasm guest {path}: no such directory")
    if module_root(path.resolve()) is None:
        raise ScenarioError(f"wasm guest {path}: no go.mod (a guest is a Go module whose main package imports "
                            "the guest SDK, plugins/wasm/guest)")
    if not any(re.search(r"^package\s+main\b", f.read_text(errors="replace"), flags=re.M)
               for f in path.glob("*.go")):
        raise ScenarioError(f"wasm guest {path}: no package main")
    return path.resolve()


def guest_key(path: Path) -> str:
    h = hashlib.sha256(_go_version().encode())
    mod = module_root(path.resolve()) or path
    for root in [path, *local_replaces(mod / "go.mod")]:
        for f in _sources(root):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def _go_version() -> str:
    try:
        return subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, timeout=30,
                              env=_go_env()).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def guest_binary(path: Path, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "wasm" / f"{path.name}-{guest_key(path)}" / "guest.wasm"


def build_guest(path: Path, reporter: Reporter | None = None, force: bool = False,
                cache: Path | None = None) -> Path:
    """The guest at ``path`` as a ``.wasm`` in the cache; built once per version of its sources."""
    rep = reporter or Silent()
    path = guest_dir(path)
    check_go()
    final = guest_binary(path, cache)
    if final.exists() and not force and final.read_bytes()[:4] == WASM_MAGIC:
        rep.cached(f"wasm guest {path.name}", str(final.parent))
        return final
    env = {**_go_env(), "GOOS": "wasip1", "GOARCH": "wasm", "CGO_ENABLED": "0"}
    with staged(final, path.name) as (work, log):
        with rep.status(f"building wasm guest {path} (log: {log})") as update, log.open("w") as logf:
            run_logged(["go", "build", "-trimpath", "-buildmode=c-shared", "-o", str(work / "guest.wasm"), "."],
                       path, env, logf, update)
        out = work / "guest.wasm"
        if not out.exists() or out.read_bytes()[:4] != WASM_MAGIC:
            raise ToolchainError(f"go build of {path} wrote no WebAssembly module (see {log})")
        put_in_place(out, final)
    return final
