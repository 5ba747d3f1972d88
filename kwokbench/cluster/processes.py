"""The processes of a kwokctl cluster, identified before any signal.

kwokctl's binary runtime records each component's pid in ``<cluster>/pids/<component>.pid`` and nothing
else, and a pid outlives its process: after a reboot, or once a component died unnoticed, the number
may name an unrelated process, or another cluster's kube-apiserver. So kwokbench never signals a bare
pid. When it learns one it checks that the process is that component of that cluster (its executable
is ``<cluster>/bin/<component>``, where kwokctl links every binary, or it runs in the cluster directory
under a component's name) and records the process's start time; right before a signal the pid must
still be that process (same start time within 1 s, which psutil also checks on every signal) or still
look like the component. Anything else is left alone, and the caller is told why.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

BINARIES: dict[str, tuple[str, ...]] = {
    "etcd": ("etcd",),
    "kube-apiserver": ("kube-apiserver",),
    "kube-controller-manager": ("kube-controller-manager",),
    "kube-scheduler": ("kube-scheduler",),
    "kwok-controller": ("kwok-controller", "kwok"),
    "prometheus": ("prometheus",),
    "kueue": ("kueue",),
}
"""Names a component's executable may have: kwokctl links each as ``bin/<component>``; ``kwok`` is the
kwok controller's own name."""

def binaries(component: str) -> tuple[str, ...]:
    """Executable names of ``component``; ``kwok-controller-2`` (a partition's controller, see
    :mod:`kwokbench.cluster.kwok_controllers`) runs the kwok controller's binary."""
    if component in BINARIES:
        return BINARIES[component]
    stem, _, n = component.rpartition("-")
    return BINARIES[stem] if n.isdigit() and stem in BINARIES else (component,)


START_TOLERANCE = 1.0
"""Seconds two start times of one process may differ by (psutil derives them from boot time and ticks)."""


@dataclass(frozen=True)
class ComponentProcess:
    """One component's process as kwokbench learnt it: pid plus start time, not a bare pid."""

    component: str
    pid: int
    create_time: float | None = None
    """psutil's start time of the process when its pid was learnt; None if only a pid file was known."""

    def process(self, cluster_dir: Path) -> tuple[psutil.Process | None, str]:
        """The live process if it still is this component, else None and why it is left alone ("" when
        there is nothing to say: the process is gone)."""
        try:
            p = psutil.Process(self.pid)
            if p.status() == psutil.STATUS_ZOMBIE:
                return None, ""
            started = p.create_time()
        except psutil.NoSuchProcess:
            return None, ""
        except psutil.Error as e:
            return None, f"{self.component}: pid {self.pid} cannot be inspected ({e}); left alone"
        if self.create_time is not None and abs(started - self.create_time) <= START_TOLERANCE:
            return p, ""
        if is_component(p, cluster_dir, self.component):
            return p, ""
        return None, (f"{self.component}: pid {self.pid} now belongs to another process ({describe(p)}), "
                      f"not this cluster's {self.component}; left alone")


def is_component(p: psutil.Process, cluster_dir: Path, component: str | None = None) -> bool:
    """Whether ``p`` runs ``component`` (any component when None) of the cluster in ``cluster_dir``."""
    try:
        argv, comm = p.cmdline(), p.name()
    except psutil.Error:
        return False
    cwd = None
    with contextlib.suppress(psutil.Error):
        cwd = p.cwd()
    return _matches(argv, cwd, cluster_dir, component, comm)


def _matches(argv: list[str], cwd: str | None, cluster_dir: Path, component: str | None, comm: str = "") -> bool:
    names = binaries(component) if component else tuple(n for v in BINARIES.values() for n in v)
    real = os.path.realpath(cluster_dir)
    in_cluster_dir = cwd is not None and os.path.realpath(cwd) == real
    if not argv:  # for a moment after exec the kernel shows no command line: go by the (15-character) name
        return in_cluster_dir and bool(comm) and any(n[:15] == comm for n in names)
    exe = argv[0]
    base = os.path.basename(exe)
    if os.path.dirname(exe) and os.path.realpath(os.path.dirname(exe)) == os.path.join(real, "bin"):
        return component is None or base == component or base in names
    return in_cluster_dir and base in names


def describe(p: psutil.Process) -> str:
    """``name, started HH:MM:SS`` of a process, for messages."""
    try:
        return f"{p.name()}, started {time.strftime('%H:%M:%S', time.localtime(p.create_time()))}"
    except psutil.Error:
        return "not inspectable"


def from_pid_file(cluster_dir: Path, component: str) -> tuple[ComponentProcess | None, str]:
    """The running ``component`` named by its kwokctl pid file, checked to be that component (start time
    recorded now); else None and why ("" when there is no pid file or the process is gone). A process
    kwokbench started itself has ``<component>.start`` beside the pid file: its start time identifies it."""
    f = cluster_dir / "pids" / f"{component}.pid"
    try:
        pid = int(f.read_text().strip())
    except (OSError, ValueError):
        return None, ""
    started = None  # kwokbench's own processes (external schedulers) also record their start time
    with contextlib.suppress(OSError, ValueError):
        started = float(f.with_suffix(".start").read_text().strip())
    proc, why = ComponentProcess(component, pid, started).process(cluster_dir)
    if proc is None:
        return None, why and f"{why} (from {f})"
    try:
        return ComponentProcess(component, pid, proc.create_time()), ""
    except psutil.Error:
        return None, ""


def from_pid_files(cluster_dir: Path) -> tuple[dict[str, ComponentProcess], list[str]]:
    """Every running component named by kwokctl's pid files (see :func:`from_pid_file`), and a sentence
    for each pid file that names some other process."""
    found: dict[str, ComponentProcess] = {}
    notes: list[str] = []
    for f in sorted((cluster_dir / "pids").glob("*.pid")):
        proc, why = from_pid_file(cluster_dir, f.stem)
        if proc is not None:
            found[f.stem] = proc
        elif why:
            notes.append(why)
    return found, notes


def command_lines(cluster_dir: Path) -> dict[str, list[str]]:
    """Component → the command line it runs with (paths, never file contents), of every running component the
    cluster's pid files name, kwokctl's and those kwokbench started; a process gone meanwhile is left out."""
    out: dict[str, list[str]] = {}
    for component, known in from_pid_files(cluster_dir)[0].items():
        proc = known.process(cluster_dir)[0]
        with contextlib.suppress(psutil.Error):
            if proc is not None:
                out[component] = proc.cmdline()
    return dict(sorted(out.items()))


def strays(cluster_dir: Path, known: Iterable[int] = ()) -> list[ComponentProcess]:
    """Components of the cluster that no pid file names, e.g. one kwokctl started just before it was
    killed and before it wrote the pid; found by executable and working directory."""
    skip = set(known)
    out = []
    for p in psutil.process_iter(["cmdline", "cwd", "create_time", "name"]):
        argv = p.info["cmdline"] or []
        if p.pid not in skip and _matches(argv, p.info["cwd"], cluster_dir, None, p.info["name"] or ""):
            component = os.path.basename(argv[0]) if argv else p.info["name"]
            out.append(ComponentProcess(component, p.pid, p.info["create_time"]))
    return out


def kwokctl_commands(workdir: Path, name: str) -> list[psutil.Process]:
    """kwokctl processes working on cluster ``name`` of ``workdir`` (``KWOK_WORKDIR``), e.g. a
    ``create`` that outlived its kwokbench: deleting around it would let it start components afterwards."""
    real = os.path.realpath(workdir)
    out = []
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if not argv or os.path.basename(argv[0]) != "kwokctl" or _flag(argv, "--name") != name:
            continue
        with contextlib.suppress(psutil.Error):
            wd = p.environ().get("KWOK_WORKDIR")
            if wd and os.path.realpath(wd) == real:
                out.append(p)
    return out


def _flag(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def kill_now(procs: Iterable[psutil.Process], timeout: float = 10.0) -> None:
    """SIGKILL ``procs`` (psutil objects, so a pid reused since they were found is not signalled)."""
    procs = list(procs)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=timeout)


def stop(procs: Iterable[ComponentProcess], cluster_dir: Path, grace: float = 5.0) -> list[str]:
    """SIGTERM, then SIGKILL after ``grace`` seconds, each process checked to still be its component
    first; returns a sentence for each one left alone."""
    live: list[psutil.Process] = []
    notes: list[str] = []
    for c in procs:
        p, why = c.process(cluster_dir)
        if p is not None:
            live.append(p)
        elif why:
            notes.append(why)
    for p in live:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(live, timeout=grace)
    kill_now(alive, timeout=5)
    return notes


def record(cluster_dir: Path, component: str, pid: int) -> None:
    """Write ``pids/<component>.pid`` and ``.start`` for a process kwokbench started in the cluster (an
    external scheduler): ``down``, the watchdog and the scraper then find it like kwokctl's own."""
    d = cluster_dir / "pids"
    d.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(psutil.Error):
        (d / f"{component}.start").write_text(repr(psutil.Process(pid).create_time()))
    tmp = d / f"{component}.tmp"
    tmp.write_text(str(pid))
    tmp.replace(d / f"{component}.pid")


SUN_PATH_MAX = 107
"""The longest path a unix socket can be bound at (``sun_path`` is 108 bytes with its NUL)."""
SCRATCH = "scratch-dirs"
"""The file of a cluster's directory listing the scratch directories it owns outside it (:func:`scratch_dir`)."""


def scratch_dir(cluster_dir: Path, prefix: str, max_len: int) -> Path:
    """A fresh directory outside the cluster's own that lives as long as the cluster, for a path that must stay
    short (a unix socket's, at most 107 bytes: a cluster's directory under pytest or a deep home is longer):
    under the temporary folder when ``<tmp>/<prefix>XXXXXXXX/`` plus ``max_len`` more fits, else under /tmp.
    Recorded in the cluster's :data:`SCRATCH` file, so that deleting the cluster removes it though the
    process that made it is gone (a kept cluster's scheduler uses it until ``down``)."""
    import tempfile

    base = tempfile.gettempdir()
    if len(base) + len(prefix) + 10 + max_len > SUN_PATH_MAX:
        base = "/tmp"
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    cluster_dir.mkdir(parents=True, exist_ok=True)
    with (cluster_dir / SCRATCH).open("a") as f:
        f.write(f"{d}\n")
    return d


def scratch_of(cluster_dir: Path) -> list[Path]:
    """The scratch directories the cluster's :data:`SCRATCH` file lists (read it before kwokctl deletes the
    cluster's directory, file and all)."""
    try:
        return [Path(line.strip()) for line in (cluster_dir / SCRATCH).read_text().splitlines() if line.strip()]
    except OSError:
        return []


def remove_scratch(dirs: Iterable[Path]) -> None:
    """Remove scratch directories (those already gone skipped)."""
    import shutil

    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def telling_line(log: Path) -> str:
    """The line of a component's log that says why it stopped: a Go runtime's ``panic:`` or ``fatal error:``
    line (the stack trace after it names only functions), else the last line; ``(no output)``."""
    with contextlib.suppress(OSError):
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        for ln in reversed(lines):
            if ln.startswith(("panic: ", "fatal error: ")):
                return ln[:300]
        if lines:
            return lines[-1][:300]
    return "(no output)"


_SPAWNED: list[subprocess.Popen[bytes]] = []
"""The components :func:`spawn` started, while they run (the process is stopped through its pid file, not this
object). Each spawn polls the older ones, which reaps those that exited: no zombies in a long process."""


class _Component(subprocess.Popen):  # type: ignore[type-arg]
    """A component outlives this object, and usually kwokbench (``down`` and the watchdog stop it through its
    pid file): dropping the object while it runs is intended, not the leak ``Popen``'s ResourceWarning reports
    (printed at exit, or an error under the tests' warning filter)."""

    def __del__(self) -> None:
        # Popen.__del__ warns through its ``_warn`` argument, then reaps a child that exited; only the warning
        # goes (no warnings.catch_warnings: at interpreter exit that module may be gone already)
        super().__del__(_warn=lambda *args, **kwargs: None)  # type: ignore[call-arg]


def spawn(cluster_dir: Path, component: str, argv: list[str], cwd: Path | str,
          env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a process as one more component of the cluster, the way kwokctl starts its own: output
    appended to ``logs/<component>.log``, its own session (Ctrl-C to kwokbench's group does not reach it),
    pid recorded (:func:`record`). OSError when it cannot be started."""
    log = cluster_dir / "logs" / f"{component}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = _Component(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    record(cluster_dir, component, proc.pid)
    _SPAWNED[:] = [p for p in _SPAWNED if p.poll() is None]
    _SPAWNED.append(proc)
    return proc


def usable_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def pin(proc: psutil.Process, cpus: list[int]) -> None:
    """Set the CPU affinity of every thread of ``proc`` (Linux affinity is per thread; threads created
    later inherit their creator's)."""
    for t in proc.threads():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(t.id, cpus)


def pin_components(cluster_dir: Path, scheduler: set[str], cpus: list[int]) -> dict[str, list[int]]:
    """Pin the components named in ``scheduler`` to ``cpus[:1]`` and every other component of the
    cluster to ``cpus[1:]``; returns component → CPUs (empty with fewer than two CPUs)."""
    if len(cpus) < 2:
        return {}
    out = {}
    for comp, known in from_pid_files(cluster_dir)[0].items():
        p, _ = known.process(cluster_dir)
        if p is None:
            continue
        target = cpus[:1] if comp in scheduler else cpus[1:]
        with contextlib.suppress(psutil.Error):
            pin(p, target)
            out[comp] = target
    return out
