"""KAI-Scheduler's build from its pinned source (`kwokbench tools install kai`): the commands, the version
stamp, the CRDs copied beside them."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

from kwokbench.cluster import processes
from kwokbench.components.kai.settings import BINARY, CRDS, HELPERS, KUBERNETES, MODULE, SOURCES, VERSION
from kwokbench.toolchain.sources import SourceBuild


def ldflags(version: str = VERSION) -> str:
    """As KAI's Makefile stamps it (``build/makefile/golang.mk``), the date fixed: the scheduler prints it at start."""
    pkg = f"{MODULE}/pkg/scheduler/version"
    return (f"-s -w -X {pkg}.gitVersion={version} -X {pkg}.gitCommit=5d35eca -X {pkg}.gitTreeState=clean "
            f"-X {pkg}.buildDate=2026-03-02T00:00:00Z")


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the extracted archive: the scheduler as ``out``, the other commands beside it."""
    del by
    build = ["go", "build", "-trimpath", "-ldflags", ldflags()]
    return [["go", "mod", "download"],
            [*build, "-o", str(out), "./cmd/scheduler"],
            *([*build, "-o", str(out.parent / f"kai-{c}"), f"./cmd/{c}"] for c in HELPERS)]


def copy_crds(by: dict[str, Path], dest: Path) -> None:
    src = by[MODULE] / "deployments" / "kai-scheduler" / "crds"
    (dest / CRDS).mkdir()
    for f in sorted(src.glob("*.yaml")):
        shutil.copyfile(f, dest / CRDS / f.name)


RECIPE = SourceBuild("kai", VERSION, KUBERNETES, SOURCES, BINARY, MODULE, build_commands, copy_crds)


def crd_files() -> list[Path]:
    return sorted((RECIPE.path().parent / CRDS).glob("*.yaml"))


def fatal_line(log: Path) -> str:
    """Why a KAI process stopped, from its log: the last error its zap logger wrote (console or JSON), a Go
    panic, else its last line (the commands print their fatal error last)."""
    with contextlib.suppress(OSError):
        text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))  # the scheduler logs in colour
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for ln in reversed(lines[-40:]):
            if ln.startswith(("panic: ", "fatal error: ")):
                return ln[:400]
            if ln.startswith("{") and '"level"' in ln:
                with contextlib.suppress(ValueError):
                    d = json.loads(ln)
                    if str(d.get("level", "")).lower() in ("error", "fatal", "panic", "dpanic"):
                        return " ".join(str(x) for x in (d.get("msg"), d.get("error")) if x)[:400]
            elif re.match(r"^\S+\s+(ERROR|FATAL|PANIC|DPANIC)\s", ln):
                return re.sub(r"\s+", " ", ln.split(None, 2)[2])[:400]
    return re.sub(r"\s+", " ", processes.telling_line(log))


