"""Tear a run's cluster down even when kwokbench itself is killed (SIGKILL, OOM, a closed terminal).

``kwokbench run`` starts this as a detached process (its own session, so Ctrl-C in the terminal does
not reach it) right after creating a cluster. It polls the parent; if the parent disappears before
it was told the run ended, it marks the run ``interrupted`` (the watch and scrape children flush what
they measured when they see their parent go), then deletes the cluster. A normal end terminates it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil


def start(cluster: str, home: Path, run_dir: Path, keep_cluster: bool) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "kwokbench.cluster.watchdog", "--parent", str(os.getpid()), "--cluster", cluster,
            "--home", str(home), "--run-dir", str(run_dir)]
    if keep_cluster:
        args.append("--keep-cluster")
    return subprocess.Popen(args, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--keep-cluster", action="store_true")
    a = ap.parse_args(argv)
    try:
        parent = psutil.Process(a.parent)
    except psutil.Error:
        parent = None
    while parent is not None and parent.is_running() and parent.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.5)
    time.sleep(3)  # let the watch/scrape children notice and write what they have
    from kwokbench.cluster.kwokctl import Kwokctl
    from kwokbench.errors import KwokbenchError
    from kwokbench.store import RunDir, read_meta

    with contextlib.suppress(KwokbenchError, OSError):
        if read_meta(a.run_dir).get("status") == "running":
            RunDir(a.run_dir).update_meta(status="interrupted",
                                          error="kwokbench was killed; cleaned up by its watchdog")
    if not a.keep_cluster:
        k = Kwokctl(home=a.home)
        with contextlib.suppress(KwokbenchError):
            if a.cluster in k.names():
                k.delete(a.cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
