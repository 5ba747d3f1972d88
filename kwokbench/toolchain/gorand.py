"""Draws from Go's ``math/rand``, draw for draw: a program that seeded it (the FGD paper's simulator shuffles and
resamples its pod list with it) replays exactly only with its own generator, whose state tables are Go's.

``gorand_go/main.go`` (standard library only) is built on first use into the cache, keyed by its source's hash, and
answers one request per line; :class:`GoRand` is its Python face. Building needs the ``go`` that builds the
toolchain; a failure is a ToolchainError, one line.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from kwokbench.errors import ToolchainError

SOURCE = Path(__file__).with_name("gorand_go") / "main.go"


def binary() -> Path:
    """The built helper, built now when the cache lacks this source's build."""
    from kwokbench.toolchain.install import _go_env, cache_dir, check_go, put_in_place

    key = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    final = cache_dir() / "toolchain" / f"gorand-{key}" / "gorand"
    if final.is_file():
        return final
    check_go()
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as work:
        out = Path(work) / "gorand"
        try:
            subprocess.run(["go", "build", "-trimpath", "-o", str(out), str(SOURCE)], cwd=work, env=_go_env(),
                           capture_output=True, text=True, timeout=600, check=True)
        except subprocess.CalledProcessError as e:
            last = (e.stderr or e.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise ToolchainError(f"building {SOURCE.name} of gorand failed: {last[0]}") from e
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ToolchainError(f"building gorand failed: {e}") from e
        return put_in_place(out, final)


class GoRand:
    """``rand.New(rand.NewSource(seed))`` of Go, in a helper process (closed on exit of a ``with``)."""

    def __init__(self, seed: int) -> None:
        self._proc = subprocess.Popen([str(binary())], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      bufsize=1)
        self._send(str(int(seed)))

    def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def _ask(self, line: str) -> list[int]:
        self._send(line)
        assert self._proc.stdout is not None
        answer = self._proc.stdout.readline()
        if not answer:
            raise ToolchainError(f"gorand stopped answering (exit {self._proc.poll()}) at {line!r}")
        return [int(x) for x in answer.split()]

    def next_int(self) -> int:
        """``rand.Int()``."""
        return self._ask("I")[0]

    def intn(self, n: int) -> int:
        """``rand.Intn(n)``."""
        return self._ask(f"N {n}")[0]

    def shuffle(self, n: int) -> list[int]:
        """``rand.Shuffle(n, swap)`` applied to ``0..n-1``: position i holds the index that went there."""
        return self._ask(f"S {n}") if n > 0 else []

    def perm(self, n: int) -> list[int]:
        """``rand.Perm(n)``."""
        return self._ask(f"P {n}") if n > 0 else []

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> GoRand:
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
