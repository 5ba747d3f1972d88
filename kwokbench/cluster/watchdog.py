"""Tear a run's cluster down even when kwokbench itself is killed (SIGKILL, OOM, a closed terminal).

``kwokbench run`` (and ``sweep``, once per cluster) starts this as a detached process (its own session,
so Ctrl-C in the terminal does not reach it) *before* the cluster is created, so a kill at any moment
is covered, including while kwokctl is still starting components. It polls the parent; if the parent
disappears before it was told the run ended, it marks the run ``interrupted`` (the watch and scrape
children flush what they measured when they see their parent go), then removes whatever exists of the
cluster: a kwokctl still creating it is killed, then the cluster is deleted and each of its processes
stopped, each one checked first to still be that component (:mod:`kwokbench.cluster.processes`). A
cluster that already existed when the watchdog started is not the run's and is never touched. A normal
end terminates the watchdog. What it did is appended to ``watchdog.log`` in the run directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from kwokbench.progress import Silent, Update

LOG = "watchdog.log"
FLUSH_SECONDS = 3.0
"""How long the watch and scrape children get to write what they have before the cluster goes."""


def start(cluster: str, home: Path, run_dir: Path, keep_cluster: bool) -> subprocess.Popen[bytes]:
    """Start the watchdog of cluster ``cluster`` (in kwokbench's workdir under ``home``) for the run in
    ``run_dir``; call it before the cluster is created. It deletes the cluster on a kill only if the
    cluster does not exist yet now, i.e. if this run is the one that creates it."""
    from kwokbench.cluster.kwokctl import Kwokctl

    me = psutil.Process()
    args = [sys.executable, "-m", "kwokbench.cluster.watchdog", "--parent", str(me.pid),
            "--parent-started", repr(me.create_time()), "--cluster", cluster, "--home", str(home),
            "--run-dir", str(run_dir)]
    if keep_cluster:
        args.append("--keep-cluster")
    if Kwokctl(home=home).cluster_dir(cluster).exists():
        args.append("--existing")
    return subprocess.Popen(args, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(guard: subprocess.Popen[bytes]) -> None:
    """End a watchdog whose run ended normally (whatever it had to clean up was cleaned up)."""
    guard.terminate()
    guard.wait(10)


def _parent(pid: int, started: float | None) -> psutil.Process | None:
    """The parent, if it is still the process that started us (a reused pid is not)."""
    try:
        p = psutil.Process(pid)
        if started is not None and abs(p.create_time() - started) > 1.0:
            return None
        return p
    except psutil.Error:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--parent-started", type=float)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--keep-cluster", action="store_true")
    ap.add_argument("--existing", action="store_true", help="the cluster existed before the run: never delete it")
    a = ap.parse_args(argv)
    parent = _parent(a.parent, a.parent_started)
    # is_running() compares the start time too, so a pid reused after the parent died reads as gone
    while parent is not None and parent.is_running() and parent.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.5)
    log = _Log(a.run_dir / LOG)
    log.write(f"kwokbench (pid {a.parent}) is gone; cleaning up cluster {a.cluster}")
    from kwokbench.cluster import processes
    from kwokbench.cluster.kwokctl import Kwokctl
    from kwokbench.errors import KwokbenchError
    from kwokbench.store import RunDir, read_meta

    k = Kwokctl(home=a.home)
    delete = not (a.keep_cluster or a.existing)
    if delete:  # a kwokctl create that outlived kwokbench would go on starting components: stop it at once
        running = processes.kwokctl_commands(k.workdir, a.cluster)
        processes.kill_now(running)
        if running:
            log.write(f"killed kwokctl still working on {a.cluster} (pid {', '.join(str(p.pid) for p in running)})")
    time.sleep(FLUSH_SECONDS)
    with contextlib.suppress(KwokbenchError, OSError):
        if read_meta(a.run_dir).get("status") == "running":
            RunDir(a.run_dir).update_meta(status="interrupted",
                                          error="kwokbench was killed; cleaned up by its watchdog")
            log.write("marked the run interrupted")
    if not delete:
        log.write("cluster kept (" + ("--keep-cluster" if a.keep_cluster else "it existed before the run") + ")")
        return 0
    try:
        pids = k.delete(a.cluster, log, missing_ok=True)
        log.write(f"deleted cluster {a.cluster} ({len(pids)} processes)")
    except KwokbenchError as e:
        log.write(f"deleting cluster {a.cluster}: {e} (its processes were stopped and its directory removed)")
    return 0


class _Log(Silent):
    """A reporter that appends to a file: the watchdog has no terminal."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, msg: str) -> None:
        with contextlib.suppress(OSError), self.path.open("a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {msg}\n")

    @contextlib.contextmanager
    def status(self, msg: str) -> Iterator[Update]:
        self.write(msg)
        yield lambda _detail: None

    def info(self, msg: str) -> None:
        self.write(msg)

    def warn(self, msg: str) -> None:
        self.write("warning: " + msg)


if __name__ == "__main__":
    sys.exit(main())
