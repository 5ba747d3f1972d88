"""What a running ``go`` command is doing, read from the lines it prints, for a progress line that shows
the build is alive.

A first toolchain build spends minutes compiling, and ``go build`` prints nothing while it compiles, so
the last line it printed ("go: downloading golang.org/x/exp …") stayed on screen for minutes. With
``-v`` Go prints each package's import path as it starts compiling it; counted against the packages
``go list -deps`` finds for the same targets, that is "compiling packages k of n". A main package of the
command printed means its compile is about to end in a link, which for kube-apiserver is the longest
single step. Everything here is pure except :func:`count_packages`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_VALUE_FLAGS = frozenset({"-o", "-ldflags", "-gcflags", "-asmflags", "-tags", "-mod", "-modfile", "-p", "-pkgdir",
                          "-toolexec", "-overlay", "-pgo", "-buildmode", "-installsuffix", "-exec", "-coverpkg",
                          "-covermode", "-run"})
"""``go build`` / ``install`` / ``test`` flags whose value is the next argument (when not given with ``=``)."""
_PACKAGE = re.compile(r"[A-Za-z0-9_.~+\-]+(/[A-Za-z0-9_.~+\-]+)*")


def _subcommand(cmd: Sequence[str]) -> str:
    return cmd[1] if len(cmd) > 1 and Path(cmd[0]).name == "go" else ""


def targets(cmd: Sequence[str]) -> list[str]:
    """The package arguments of a ``go build`` / ``install`` / ``test`` command (its flags and their values
    skipped), as given: ``./pkg/cmd/shim``, ``sigs.k8s.io/kwok/cmd/kwok@v0.8.0``."""
    if _subcommand(cmd) not in ("build", "install", "test"):
        return []
    out, skip = [], False
    for arg in cmd[2:]:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _VALUE_FLAGS
        else:
            out.append(arg)
    return out


def verbose(cmd: Sequence[str]) -> list[str]:
    """``cmd`` with ``-v`` when it is a ``go build`` or ``go install`` (Go then names each package it
    compiles); other commands as they are (``go test -v`` is the test binary's flag, not the build's)."""
    if _subcommand(cmd) in ("build", "install") and "-v" not in cmd:
        return [*cmd[:2], "-v", *cmd[2:]]
    return list(cmd)


def label(cmd: Sequence[str]) -> str:
    """A short name of the command for the progress line: ``go build kube-apiserver``, ``go get``; another
    command as it is (shortened)."""
    sub = _subcommand(cmd)
    if not sub:
        return " ".join(cmd)[:80]
    if sub == "mod" and len(cmd) > 2:
        return f"go mod {cmd[2]}"
    if "-o" in cmd[:-1]:
        return f"go {sub} {Path(cmd[cmd.index('-o') + 1]).name}"
    names = [t.split("@")[0].rstrip("/").rsplit("/", 1)[-1] for t in targets(cmd)]
    return f"go {sub} {', '.join(names)}" if names and names != ["."] else f"go {sub}"


@dataclass
class GoSteps:
    """The step a ``go`` command is at, from each line it prints (:meth:`step`)."""

    command: str
    """The command's :func:`label`, which every step starts with."""
    mains: frozenset[str] = frozenset()
    """Import paths of the command's targets: once one of them compiles, its link follows."""
    packages: int | None = None
    """Packages of the build (``go list -deps``), when known; set from another thread while Go runs."""
    go: bool = True
    """False for another command, whose last line is its step."""
    downloaded: int = 0
    compiled: int = 0

    @classmethod
    def of(cls, cmd: Sequence[str]) -> GoSteps:
        return cls(label(cmd), frozenset(t.split("@")[0] for t in targets(cmd)), go=bool(_subcommand(cmd)))

    def step(self, line: str) -> str | None:
        """The step after ``line``, or None when the line says nothing new (an error line, a blank)."""
        line = line.strip()
        if not self.go:
            return line or None
        if line.startswith("go: downloading "):
            self.downloaded += 1
            module = line.removeprefix("go: downloading ").split(" ")[0]
            return f"{self.command}: downloading {self.downloaded} modules ({module})"
        if line.startswith(("go: finding ", "go: added ", "go: upgraded ", "go: found ")):
            return f"{self.command}: resolving modules"
        if line.startswith("#") or not _PACKAGE.fullmatch(line):
            return None  # "# pkg" heads a compiler error; errors and notes have spaces or colons
        self.compiled += 1
        of = f" of {self.packages}" if self.packages and self.packages >= self.compiled else ""
        if line in self.mains or any(line.endswith("/" + m.removeprefix("./")) for m in self.mains
                                     if m.startswith("./")):
            return f"{self.command}: compiled {self.compiled}{of} packages, linking {line.rsplit('/', 1)[-1]}"
        return f"{self.command}: compiling packages {self.compiled}{of}"


def count_packages(cmd: Sequence[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> int | None:
    """How many packages ``cmd`` (a ``go build`` or ``install``) builds, by ``go list -deps`` of its targets
    with the same build tags; None when Go cannot say (``pkg@version`` targets, an error, a timeout)."""
    pkgs = targets(cmd)
    if not pkgs or any("@" in p for p in pkgs) or _subcommand(cmd) not in ("build", "install"):
        return None
    tags = [f"-tags={cmd[i + 1]}" for i, a in enumerate(cmd[:-1]) if a == "-tags"]
    tags += [a for a in cmd if a.startswith("-tags=")]
    try:
        res = subprocess.run(["go", "list", "-deps", *tags, *pkgs], cwd=cwd, env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    return len(lines) if res.returncode == 0 and lines else None
