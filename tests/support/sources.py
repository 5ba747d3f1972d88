"""What the e2e tests of schedulers built from pinned sources (YuniKorn, the reference WASM extension) share:
where the archives are, the environment that points kwokbench at them, and the processes a run must not leave."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import psutil

from kwokbench.store import StoredRun, load_run
from tests.conftest import REPO, kwokbench

SOURCES = Path(os.environ.get("KWOKBENCH_SOURCES") or REPO.parent / "shared" / "sources")
ENV = {"KWOKBENCH_SOURCES": str(SOURCES)}


def only_run(root: Path) -> StoredRun:
    [path] = sorted(p for p in root.iterdir() if p.is_dir())
    return load_run(path)


def processes(binary: Callable[[str], bool]) -> list[psutil.Process]:
    """Live processes whose executable path (argv[0]) ``binary`` accepts."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if cmd and binary(cmd[0]):
            out.append(p)
    return out


def install(name: str) -> None:
    """``tools install NAME`` from the pinned archives (built cold the first time), then again: reused from the
    cache."""
    kwokbench("tools", "install", name, "--source", str(SOURCES), check=True, timeout=1200)
    again = kwokbench("tools", "install", name, "--source", str(SOURCES), check=True)
    assert "cached" in again.stdout + again.stderr
