"""The builds the e2e files wait for, begun in the background at the lowest CPU priority, so that on a cold
machine they run beside the work that needs none instead of inside the tests that need them.

``make test`` begins them first (``python -m tests.support.prebuild --for-make PID``),
beside the core toolchain's build, the linters and the Go plugins' tests, and the pytest session it runs takes them
over (:func:`adopt`); a pytest run on its own begins the ones its files need (:func:`start`). They run in two
lanes side by side (:data:`LANES`), niced (the tests' and the toolchain's processes keep the CPU they ask for; the
builds take what is left), and the files that need them run last, in the order they are ready (:func:`order`). A
test of such a file waits for its builds' end before its timeout starts (:func:`wait_for`), and a kwokbench that
reaches a build still in progress waits for it (``toolchain.install.build_lock``) rather than building it again.
Warm, every build is found cached in a few seconds.

``python -m tests.support.prebuild NAME...`` runs the named builds; a build that fails is one line in its log and the
next is tried (the test that needs it then fails with kwokbench's own message). They stop, with every process
they began, when the process they watch ends (the session, or make) or when sent SIGTERM. ``KWOKBENCH_PREBUILD=0``
turns them off."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import psutil

from kwokbench.progress import Silent, Update

NEXT_KUBERNETES = "v1.37.2"
"""The second release the versions file runs beside the pinned one."""


def _scheduler_perf() -> object:
    from kwokbench.toolchain.scheduler_perf import ensure_scheduler_perf

    return ensure_scheduler_perf(_Log())


def _kubernetes_next() -> object:
    from kwokbench.toolchain import Toolchain

    # the release's own binaries only: kwok and etcd are the core toolchain's, which ``make tools`` builds beside
    # this at full priority (built here first, at the lowest, they would hold it up behind their lock)
    tc = Toolchain(kubernetes=NEXT_KUBERNETES)
    tc.components = [c for c in tc.components if c.name == "kubernetes"]
    return tc.install("source", _Log())


def _kueue() -> object:
    from kwokbench.components.kueue.build import build_kueue

    return build_kueue(_Log())


def _from_sources(name: str) -> Callable[[], object]:
    def build() -> object:
        from kwokbench.scheduler_kinds import source_built
        from tests.support.sources import SOURCES

        return source_built()[name].build(SOURCES, _Log())
    return build


def _plugin(name: str) -> Callable[[], object]:
    def build() -> object:
        from kwokbench.toolchain.plugin import build_scheduler

        return build_scheduler(Path(__file__).resolve().parents[2] / "plugins" / name, _Log())
    return build


def _score_plugins() -> object:
    """The Score plugin the e2e tests write, as it is and slowed (tests/support/plugins.py): built by content, so
    these builds are the ones the tests find."""
    import tempfile

    from kwokbench.toolchain.plugin import build_scheduler
    from tests.support.plugins import SPINS, write_score_plugin

    with tempfile.TemporaryDirectory(prefix="kwokbench-prebuild-") as tmp:
        return [build_scheduler(write_score_plugin(Path(tmp) / f"spin-{us}", spin_us=us), _Log()) for us in SPINS]


BUILDS: dict[str, Callable[[], object]] = {
    "plugin gpufilter": _plugin("gpufilter"),
    "plugin score": _score_plugins,
    "plugin nodenumber": _plugin("nodenumber"),
    "plugin wasm": _plugin("wasm"),
    "plugin gpushare": _plugin("gpushare"),
    "yunikorn": _from_sources("yunikorn"),
    "wasm-extension": _from_sources("wasm-extension"),
    "scheduler_perf": _scheduler_perf,
    "kueue": _kueue,
    "volcano": _from_sources("volcano"),
    "kai": _from_sources("kai"),
    f"kubernetes {NEXT_KUBERNETES}": _kubernetes_next,
}
"""Every build the e2e files need beyond the core toolchain (``make tools``), in the order they are ready on a cold
machine when ``make test`` begins them (measured: docs/development/tests.md); the files that need them run in
that order (:func:`rank`)."""

LANES: tuple[tuple[str, ...], ...] = (
    ("yunikorn", "wasm-extension", "scheduler_perf", f"kubernetes {NEXT_KUBERNETES}"),
    ("plugin gpufilter", "plugin score", "plugin nodenumber", "plugin wasm", "plugin gpushare", "kueue", "volcano",
     "kai"),
)
"""The builds run side by side, each lane one after another, and a lane that has finished its own takes the next
of the other's not yet begun (:func:`queues`: the cold run of 2026-11-29 left one lane idle for half an hour while
the other still had Kueue, Volcano and KAI to build). Two lanes: a single Go build leaves a core idle
while it downloads modules and while it links (one thread).
The Go plugins (each a kube-scheduler of the pinned release with the plugin compiled in, sharing ``make tools``'
compiled packages) come first in theirs: many files need them, and behind Kueue (the cold run of 2026-11-29 at
7ecbd57 tried that order) they were not begun after 34 minutes. Their lane waits for ``make tools``' Kubernetes
build before them (:data:`AFTER_CORE`), leaving its CPU to that build, the suite's first critical path.
scheduler_perf follows YuniKorn and the WASM extension in its lane (each on Kubernetes libraries of its own, they
share nothing with ``make tools``' build) so that it finds the pinned release's packages compiled by ``make tools``
(its test binary shares them) instead of compiling them beside it. The next release, the
longest build (28 of the lane's 46 minutes cold on 2026-11-29), comes last: one file needs it, and the files of the
builds before it run while it builds instead of after it."""

NEEDS: dict[str, tuple[str, ...]] = {
    "tests/e2e/test_variants.py": ("plugin gpufilter",),
    "tests/e2e/test_wasm.py": ("plugin gpufilter", "plugin wasm"),
    "tests/e2e/test_gpushare.py": ("plugin gpushare",),
    "tests/e2e/test_bottleneck.py": ("plugin score",),
    "tests/e2e/test_duet.py": ("plugin score",),
    "tests/e2e/test_action.py": ("plugin score", "plugin nodenumber"),
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


AFTER_CORE = frozenset({"plugin gpufilter", "plugin score", "plugin nodenumber", "plugin wasm", "plugin gpushare",
                        "scheduler_perf"})
"""The builds that compile the pinned Kubernetes release's packages, as the core toolchain's build (``make tools``)
does. Begun by make or a session, a lane waits for that build before them: Go's cache does not share a package that
two builds compile at the same time, and the cold run of 2026-11-29 at bcb8b34, whose lane began the Go plugins
beside it, compiled the release twice (the first plugin took 593 s, pytest began 5 minutes later than with them
begun after it)."""


def core_built() -> bool:
    """Whether the core toolchain's Kubernetes release is in the cache (its folder appears whole, when built)."""
    from kwokbench.toolchain import Toolchain

    tc = Toolchain()
    return tc.component("kubernetes").dir(tc.cache).is_dir()


def needed(files: Iterable[str]) -> list[str]:
    """The builds ``files`` need, in :data:`BUILDS`' order."""
    want = {b for f in files for b in NEEDS.get(f, ())}
    return [b for b in BUILDS if b in want]


def rank(file: str, built: bool = False) -> tuple[int, int]:
    """Where a file runs. While builds are under way: the build-free e2e files first (the longest tier), then the
    unit and integration tiers, then the files that need a build, by the last build they need. With every build
    done (``built``: a warm machine, CI with its caches), the longest files first and the many short ones last, to
    fill the end, when the other worker has no file left: the files that need a build (the e2e tier's longest),
    then the other e2e files, then the unit and integration tiers (measured: docs/development/tests.md)."""
    builds = NEEDS.get(file)
    e2e = file.startswith("tests/e2e/")
    if built:
        return (0 if builds else 1 if e2e else 2), 0
    if builds:
        return 2, max(list(BUILDS).index(b) for b in builds)
    return (0 if e2e else 1), 0


def order(files: list[str], built: bool = False) -> list[str]:
    """``files`` (each once, in collection order) in the order they run (:func:`rank`; ties keep their order)."""
    return sorted(files, key=lambda f: rank(f, built))


def all_done(log: Path, builds: Iterable[str]) -> bool:
    """Whether the log of the background builds has each of ``builds`` ready (or failed): a warm machine's builds,
    each found cached within seconds of ``make test``'s first step, are done before pytest begins."""
    return not _left(_read(log), builds)


def _left(text: str, builds: Iterable[str]) -> list[str]:
    """Those of ``builds`` the log's ``text`` does not say ready or failed."""
    return [b for b in builds if not re.search(rf"^== {re.escape(b)}: (ready|failed) after", text, flags=re.M)]


def say(line: str) -> None:
    """One whole line to the log: the lanes share it, and a ``print`` may reach it in two writes (a lane's line
    was seen cut by another's)."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


class _Log(Silent):
    """What a build reports, as lines of the log."""

    def info(self, msg: str) -> None:
        say(msg)

    def cached(self, what: str, where: str) -> None:
        say(f"{what}: cached in {where}")

    @contextlib.contextmanager
    def status(self, msg: str) -> Iterator[Update]:
        say(msg)
        yield lambda _detail: None


def lanes(builds: Iterable[str]) -> list[list[str]]:
    """``builds`` split into :data:`LANES` (each lane's own order), the empty lanes left out."""
    want = set(builds)
    return [kept for lane in LANES if (kept := [b for b in lane if b in want])]


def queues(builds: Iterable[str]) -> list[list[str]]:
    """What each lane walks: its own builds (:func:`lanes`), then the other lanes' in their order. A build is
    claimed by the first lane to reach it (:func:`claim`), so a lane that has finished its own takes the next build
    of another that this one has not begun."""
    own = lanes(builds)
    return [[*mine, *(b for other in own if other is not mine for b in other)] for mine in own]


def claim(claims: Path, name: str) -> bool:
    """Whether this lane is the first to reach build ``name``: one file per build in ``claims``, created or not
    atomically (``O_EXCL``), so two lanes never begin the same build."""
    try:
        os.close(os.open(claims / re.sub(r"[^\w.-]", "_", name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


PIDFILE = "prebuild.json"
"""Beside the log: which process ``make test`` began the builds in, the make it ends with, and the builds."""


@dataclasses.dataclass
class Running:
    """The background builds of this session: begun by it (``proc``) or by the ``make test`` that runs it."""

    pid: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    by_make: bool = False

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            p = psutil.Process(self.pid)
            return p.status() != psutil.STATUS_ZOMBIE and "tests.support.prebuild" in " ".join(p.cmdline())
        except psutil.Error:
            return False

    def stop(self) -> str:
        """Stop the builds if they still run (the suite ended first: interrupted, or a build nothing waited for),
        with every process they started; a line for the suite's summary."""
        if self.alive():
            for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, sig)
                if self._wait(wait):
                    break
            return "stopped before it finished"
        if self.proc is not None:
            self.proc.wait()
        failed = re.search(r"^== .+: failed after", _read(self.log), flags=re.M)
        return "finished, some builds failed" if failed else "finished"

    def _wait(self, timeout: float) -> bool:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        with contextlib.suppress(psutil.Error):
            psutil.Process(self.pid).wait(timeout=timeout)
        return not self.alive()


def start(builds: list[str], log: Path, watch: int | None = None) -> Running | None:
    """The background process running ``builds`` (None when there are none or ``KWOKBENCH_PREBUILD=0``): its own
    session (stopped with its Go builds by :meth:`Running.stop`), niced to 19, output to ``log``; it stops them
    itself when process ``watch`` (default: this one) ends."""
    if not builds or os.environ.get("KWOKBENCH_PREBUILD", "1") == "0":
        return None
    if _running_here():  # another session's builds of this checkout: theirs to finish, and their log to write
        return None
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    with log.open("ab") as out:  # appended to: two lanes write it
        proc = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "tests.support.prebuild",
                                 "--watch", str(watch or os.getpid()), "--after-core", *builds],
                                cwd=Path(__file__).resolve().parents[2], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return Running(proc.pid, log, proc)


def begin_for_make(folder: Path, make: int) -> str:
    """``make test``'s first step: every build the suite needs, begun beside the core toolchain's (``make tools``)
    and the linters, stopped when ``make`` (pid ``make``) ends; the session pytest starts takes them over
    (:func:`adopt`). Returns the line make prints."""
    log = folder / "prebuild.log"
    run = start(needed(NEEDS), log, watch=make)
    if run is None:
        if os.environ.get("KWOKBENCH_PREBUILD", "1") == "0":
            return "background builds: none (KWOKBENCH_PREBUILD=0)"
        return f"background builds: already running for this checkout (process {_builders_here()[0].pid})"
    assert run.proc is not None
    run.proc.returncode = 0  # not ours to wait for: make's shell ends first; the adopting session stops it
    (folder / PIDFILE).write_text(json.dumps({"pid": run.pid, "make": make, "builds": needed(NEEDS)}) + "\n")
    return f"background builds begun: {', '.join(needed(NEEDS))} (log: {log})"


def adopt(folder: Path, builds: list[str]) -> Running | None:
    """The builds ``make test`` began (:func:`begin_for_make`) if this process runs under that make and they
    cover ``builds``; None otherwise."""
    try:
        info = json.loads((folder / PIDFILE).read_text())
        make, pid, begun = int(info["make"]), int(info["pid"]), set(info["builds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if make not in {p.pid for p in psutil.Process().parents()} or not set(builds) <= begun:
        return None
    return Running(pid, folder / "prebuild.log", by_make=True)


def _read(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


def _builders_here() -> list[psutil.Process]:
    """The background builds' coordinator and lanes of this checkout (begun by ``make test`` or by a session): not
    this process nor its ancestors — make runs ``python -m tests.support.prebuild --for-make`` under a shell whose
    command line names the module too (dash does not replace itself with the command), and that shell, taken for
    another session's builds, kept ``make test`` from beginning any from aa65fe1 to 2026-11-29)."""
    root = str(Path(__file__).resolve().parents[2])
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    out = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        with contextlib.suppress(psutil.Error):
            if "tests.support.prebuild" in " ".join(proc.info["cmdline"] or ()) and proc.info["cwd"] == root \
                    and proc.pid not in mine:
                out.append(proc)
    return out


def _running_here() -> bool:
    return bool(_builders_here())


def raise_priority(log: Path, builders: Callable[[], list[psutil.Process]] | None = None) -> None:
    """A test waits for the builds: they no longer run at the lowest priority (the tests they yielded to are
    waiting on them). Every process of their session to nice 0, and the session's autogroup; what cannot be
    raised (not allowed here) is a line of the log."""
    sessions = {os.getsid(p.pid) for p in (builders or _builders_here)() if p.is_running()}
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getsid(proc.pid) in sessions:
                try:
                    proc.nice(0)
                except psutil.AccessDenied:
                    with log.open("a") as f:
                        f.write(f"== could not raise build process {proc.pid} to nice 0 (not allowed)\n")
    for sid in sessions:
        try:
            Path(f"/proc/{sid}/autogroup").write_text("0")
        except OSError as e:
            with log.open("a") as f:
                f.write(f"== could not raise the builds' session {sid} to nice 0 ({e.strerror})\n")


def wait_for(builds: Iterable[str], log: Path, poll: float = 5.0,
             builders: Callable[[], list[psutil.Process]] | None = None) -> float:
    """Until each of ``builds`` is ready (or failed) in ``log``, or no background build of this checkout runs;
    the seconds waited. A test calls it before its timeout starts (tests/conftest.py): on a slow machine a niced
    build can take longer than any test's own limit, and that wait is the build's time, not the test's.
    ``builders``: the build processes to watch (default: this checkout's; a unit test gives its own stand-in, so
    a real background build beside it is not waited for)."""
    t0, raised = time.monotonic(), False
    while True:
        left = _left(_read(log), builds)
        if not left or not log.exists() or not (builders or _builders_here)():
            return time.monotonic() - t0
        if not raised:
            raise_priority(log, builders)
            raised = True
        time.sleep(poll)


def summary(log: Path) -> str:
    """Each build's time from the log (``name 512s``), comma-separated; ``nothing ran`` for an empty log."""
    if not log.exists():
        return "no log"
    done = [f"{m[0]} {m[1]} {m[2]}s" for m in re.findall(r"^== (.+): (ready|failed) after (\d+)s", _read(log),
                                                          flags=re.M)]
    return ", ".join(done) or "nothing ran"


def _lane(names: list[str], claims: Path | None = None,
          builds: dict[str, Callable[[], object]] | None = None, core: Callable[[], bool] | None = None,
          poll: float = 5.0) -> int:
    """One lane: its builds one after another (with ``claims``, each one no other lane has claimed), until the
    process that began it (the coordinator) is gone. With ``core`` (whether the core toolchain is built), a build
    of :data:`AFTER_CORE` waits for it. ``builds``: the recipes by name (default :data:`BUILDS`; a unit test gives
    stand-ins)."""
    parent, failed, recipes = os.getppid(), 0, BUILDS if builds is None else builds
    for name in names:
        if os.getppid() != parent:
            return 1
        if claims is not None and not claim(claims, name):
            continue
        if core is not None and name in AFTER_CORE and not core():
            say(f"== {name}: waits for the core toolchain's Kubernetes build")
            while not core():
                if os.getppid() != parent:
                    return 1
                time.sleep(poll)
        t0 = time.monotonic()
        say(f"== {name}")
        try:
            recipes[name]()
        except Exception as e:  # one line; the test that needs it fails with its own message
            failed += 1
            say(f"== {name}: failed after {time.monotonic() - t0:.0f}s: {str(e).splitlines()[0] if str(e) else e!r}")
            continue
        say(f"== {name}: ready after {time.monotonic() - t0:.0f}s")
    return 1 if failed else 0


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def lowest_priority() -> None:
    """Nice 19 for this session's scheduling group too: with the kernel's autogroups (``sched_autogroup_enabled``,
    on here), a process's nice value counts only against its own session's, and a session of its own (ours, to be
    stopped whole) would otherwise share the CPU evenly with the tests' and the toolchain's (the first cold run of
    make's early builds: the core Kubernetes build took twice its time). Only a session's leader (begun by
    :func:`start`) does it: run by hand, the terminal's own session would be slowed."""
    if os.getsid(0) != os.getpid():
        return
    try:
        Path("/proc/self/autogroup").write_text("19")
    except OSError as e:  # said, not swallowed: the builds then share the CPU evenly with the tests
        say(f"== could not lower the builds' session to nice 19 ({e.strerror}): they compete with the tests")


def _coordinate(commands: list[list[str]], watch: int) -> int:
    """The lanes (``commands``) side by side; when process ``watch`` (the suite, or make) ends first, or this one is
    sent SIGTERM (stopped by hand), every build is stopped: the lanes and their Go processes."""
    procs = [subprocess.Popen(cmd, stdin=subprocess.DEVNULL) for cmd in commands]
    told: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: told.append(signum))
    while any(p.poll() is None for p in procs):
        if told or not _alive(watch):
            say("== stopped: sent SIGTERM" if told else f"== stopped: process {watch} ended first")
            _stop_lanes(procs)
            return 1
        time.sleep(1)
    return 1 if any(p.returncode for p in procs) else 0


def _stop_lanes(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to the lanes and every process under them, SIGKILL to what is left after :data:`GRACE`. A session's
    leader (begun by :func:`start`) signals its whole group, which also holds the Go processes begun meanwhile; run
    by hand, the group is the caller's (a script's, say), so the lanes' trees are signalled instead, lanes first
    (a lane that saw its Go build end would begin the next)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        if any(p.poll() is None for p in procs):  # a Go build that ignores SIGTERM: killed, with its children
            say(f"== a lane did not stop within {GRACE:.0f}s of SIGTERM: SIGKILL")
            os.killpg(os.getpgrp(), signal.SIGKILL)
        return
    tree: list[psutil.Process] = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            lane = psutil.Process(p.pid)
            tree += [lane, *lane.children(recursive=True)]
    for proc in sorted(tree, key=lambda q: q.pid not in {p.pid for p in procs}):
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(tree, timeout=GRACE)
    if alive:
        say(f"== a lane did not stop within {GRACE:.0f}s of SIGTERM: SIGKILL")
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    for p in procs:
        p.wait()


GRACE = 30.0
"""Seconds the lanes have after SIGTERM before SIGKILL."""

USAGE = ("python -m tests.support.prebuild [--watch PID] [--after-core] BUILD... | "
         "--lane [--claims DIR] [--after-core] BUILD... | "
         f"--for-make MAKE_PID (builds: {', '.join(BUILDS)})")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--for-make"]:
        if len(argv) != 2 or not argv[1].isdigit():
            print(f"error: --for-make takes make's pid ({USAGE})", file=sys.stderr)
            return 2
        folder = Path(__file__).resolve().parents[2] / ".pytest_cache"
        print(begin_for_make(folder, int(argv[1])), flush=True)
        return 0
    lane, watch, claims = argv[:1] == ["--lane"], os.getppid(), None
    names = argv[1:] if lane else argv
    if lane and names[:1] == ["--claims"]:
        if len(names) < 2 or not Path(names[1]).is_dir():
            print(f"error: --claims takes a folder ({USAGE})", file=sys.stderr)
            return 2
        claims, names = Path(names[1]), names[2:]
    if names[:1] == ["--watch"]:
        if len(names) < 2 or not names[1].isdigit():
            print(f"error: --watch takes a pid ({USAGE})", file=sys.stderr)
            return 2
        watch, names = int(names[1]), names[2:]
    after_core = names[:1] == ["--after-core"]
    names = names[1:] if after_core else names
    unknown = [n for n in names if n not in BUILDS]
    if unknown:
        print(f"error: not a build of the suite: {unknown[0]} (one of: {', '.join(BUILDS)})", file=sys.stderr)
        return 2
    if lane:
        return _lane(names, claims, core=core_built if after_core else None)
    lowest_priority()
    flag = ["--after-core"] if after_core else []
    with tempfile.TemporaryDirectory(prefix="kwokbench-prebuild-claims-") as shared:
        return _coordinate([[sys.executable, "-m", "tests.support.prebuild", "--lane", "--claims", shared, *flag, *q]
                            for q in queues(names)], watch)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
