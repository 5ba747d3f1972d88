"""The builds the e2e files wait for, begun at the suite's start in one background process at the lowest CPU
priority, so that on a cold machine they run beside the tests that need none instead of inside the tests that
need them.

Cold, the builds inside the suite took about 28 of its 38 minutes (2026-11-27), each begun only when a worker
reached the file that needs it, and under pytest-xdist's default order (the files with most tests first) the last
ones began in the suite's final third, where little was left to run beside them. Here they are begun at once, one
after another in :data:`BUILDS`' order, niced (the tests' processes keep the CPU they ask for; the builds take what
is left), and the files that need them run last, in that order (:func:`order`), so each has had the longest time to
be built. A test reaching a build still in progress waits for it (``toolchain.install.build_lock``) rather than
building it again. Warm, every build is found cached in a few seconds.

``python -m tests.prebuild NAME...`` runs the named builds; a build that fails is one line in its log and the
next is tried (the test that needs it then fails with kwokbench's own message). ``KWOKBENCH_PREBUILD=0`` turns it
off."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from kwokbench.progress import Silent, Update

NEXT_KUBERNETES = "v1.37.2"
"""The second release the versions file runs beside the pinned one."""


def _scheduler_perf() -> object:
    from kwokbench.toolchain.scheduler_perf import ensure_scheduler_perf

    return ensure_scheduler_perf(_Log())


def _kubernetes_next() -> object:
    from kwokbench.toolchain import Toolchain

    return Toolchain(kubernetes=NEXT_KUBERNETES).install("source", _Log())


def _kueue() -> object:
    from kwokbench.toolchain.kueue import build_kueue

    return build_kueue(_Log())


def _from_sources(name: str) -> Callable[[], object]:
    def build() -> object:
        from kwokbench.kind import source_built
        from tests.e2e.sources import SOURCES

        return source_built()[name].build(SOURCES, _Log())
    return build


BUILDS: dict[str, Callable[[], object]] = {
    "scheduler_perf": _scheduler_perf,
    f"kubernetes {NEXT_KUBERNETES}": _kubernetes_next,
    "kueue": _kueue,
    "volcano": _from_sources("volcano"),
    "yunikorn": _from_sources("yunikorn"),
    "kai": _from_sources("kai"),
    "wasm-extension": _from_sources("wasm-extension"),
}
"""Every build the e2e files need beyond the core toolchain (``make tools``), in the order they are begun: the
one most files need first, then by the time each took cold (the longest first)."""

NEEDS: dict[str, tuple[str, ...]] = {
    "tests/e2e/test_ceiling.py": ("scheduler_perf",),
    "tests/e2e/test_dra.py": ("scheduler_perf",),
    "tests/e2e/test_kubernetes_versions.py": ("scheduler_perf", f"kubernetes {NEXT_KUBERNETES}"),
    "tests/e2e/test_kueue.py": ("kueue",),
    "tests/e2e/test_volcano.py": ("volcano",),
    "tests/e2e/test_yunikorn.py": ("yunikorn",),
    "tests/e2e/test_kai.py": ("kai",),
    "tests/e2e/test_wasm_extension.py": ("wasm-extension",),
}
"""The test files that need a build of :data:`BUILDS` (paths from the repository's root)."""


def needed(files: Iterable[str]) -> list[str]:
    """The builds ``files`` need, in :data:`BUILDS`' order."""
    want = {b for f in files for b in NEEDS.get(f, ())}
    return [b for b in BUILDS if b in want]


def rank(file: str) -> tuple[int, int]:
    """Where a file runs: the build-free e2e files first (the longest tier), then the unit and integration tiers,
    then the files that need a build, by the last build they need."""
    builds = NEEDS.get(file)
    if builds:
        return 2, max(list(BUILDS).index(b) for b in builds)
    return (0 if file.startswith("tests/e2e/") else 1), 0


def order(files: list[str]) -> list[str]:
    """``files`` (each once, in collection order) in the order they run (:func:`rank`; ties keep their order)."""
    return sorted(files, key=rank)


class _Log(Silent):
    """What a build reports, as lines of the log."""

    def info(self, msg: str) -> None:
        print(msg, flush=True)

    def cached(self, what: str, where: str) -> None:
        print(f"{what}: cached in {where}", flush=True)

    @contextlib.contextmanager
    def status(self, msg: str) -> Iterator[Update]:
        print(msg, flush=True)
        yield lambda _detail: None


def start(builds: list[str], log: Path) -> subprocess.Popen[bytes] | None:
    """The background process running ``builds`` (None when there are none or ``KWOKBENCH_PREBUILD=0``): its own
    session (stopped with its Go builds by :func:`stop`), niced to 19, output to ``log``."""
    if not builds or os.environ.get("KWOKBENCH_PREBUILD", "1") == "0":
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        return subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "tests.prebuild", *builds],
                                cwd=Path(__file__).resolve().parent.parent, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> str:
    """Stop the background builds if they still run (the suite ended first: interrupted, or a build nothing
    waited for); a line for the suite's summary."""
    import signal

    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return "stopped before it finished"
    return "finished" if proc.returncode == 0 else f"finished, some builds failed (exit {proc.returncode})"


def summary(log: Path) -> str:
    """Each build's time from the log (``name 512s``), comma-separated; ``nothing ran`` for an empty log."""
    import re

    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "no log"
    done = [f"{m[0]} {m[1]} {m[2]}s" for m in re.findall(r"^== (.+): (ready|failed) after (\d+)s", text, flags=re.M)]
    return ", ".join(done) or "nothing ran"


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in BUILDS]
    if unknown:
        print(f"error: not a build of the suite: {unknown[0]} (one of: {', '.join(BUILDS)})", file=sys.stderr)
        return 2
    parent, failed = os.getppid(), 0
    for name in names:
        if os.getppid() != parent:  # the suite is gone: leave the rest to the next one
            return 1
        t0 = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            BUILDS[name]()
        except Exception as e:  # one line; the test that needs it fails with its own message
            failed += 1
            print(f"== {name}: failed after {time.monotonic() - t0:.0f}s: {str(e).splitlines()[0] if str(e) else e!r}",
                  flush=True)
            continue
        print(f"== {name}: ready after {time.monotonic() - t0:.0f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
