"""The pod-watch child against an apiserver that never answers (its cluster torn down under it): it
must still stop when told to, and exit by itself when kwokbench is killed, or it keeps retrying the
first list forever, holding kwokbench's stdout open. (Against a real apiserver: tests/e2e.)"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.load.watcher import Watcher


def _refused() -> Credentials:
    with socket.socket() as s:  # a port nobody listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return Credentials(server=f"https://127.0.0.1:{port}", ca_file=None, cert_file=None, key_file=None)


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


def test_stop_before_the_first_list_succeeded(tmp_path: Path) -> None:
    w = Watcher(_refused(), "run", ["a"], tmp_path / "pods.parquet")
    assert not w.wait_synced(2)
    errors = w.stop(timeout=30)
    assert not w._proc.is_alive() and w._proc.exitcode == 0
    assert any("retrying" in e for e in errors), errors
    assert (tmp_path / "pods.parquet").exists()  # an empty timeline, written as on any stop


PARENT = """
import sys, time
from pathlib import Path
from tests.integration.test_watch_child import _refused
from kwokbench.load.watcher import Watcher
w = Watcher(_refused(), "run", ["a"], Path(sys.argv[1]))
print(w._proc.pid, flush=True)
time.sleep(600)
"""


def test_parent_killed_before_the_first_list_succeeded(tmp_path: Path) -> None:
    out = tmp_path / "pods.parquet"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(out)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[2])
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(2)  # the child is up and failing its list
        assert psutil.pid_exists(child)
    finally:
        parent.kill()
        parent.wait(10)
    assert _gone(child, 15), "the watch child outlived kwokbench"
    assert out.exists()  # it flushed what it had, as after a kill mid-run
    if parent.stdout:
        parent.stdout.close()


PARENT_KILLED_AT_ONCE = """
import os, signal, sys
from pathlib import Path
from tests.integration.test_watch_child import _refused
from kwokbench.load.watcher import Watcher
w = Watcher(_refused(), "run", ["a"], Path(sys.argv[1]))
print(w._proc.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # the child is still importing: it starts as an orphan
"""


def test_parent_killed_while_the_child_is_still_starting(tmp_path: Path) -> None:
    """The CI failure: a child that read its parent's pid only once it ran took init for its parent."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT_KILLED_AT_ONCE, str(tmp_path / "pods.parquet")],
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    out, _ = parent.communicate(timeout=30)
    child = int(out.split()[0])
    assert _gone(child, 20), "the watch child outlived kwokbench"
