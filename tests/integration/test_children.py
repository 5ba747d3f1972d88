"""kwokbench's child processes when kwokbench is killed at the worst moments (CI failures, each): the
pod watch against an apiserver that never answers (its cluster torn down under it) must still stop and
exit, and a child must exit when its parent is killed while the child is still starting, or while the
parent waits for the child's first signal. Each one left would hold kwokbench's stdout open.
(Against a real cluster: tests/e2e/test_interrupt.py.)"""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.load.child import context
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
    # long enough for the spawned child to start and be refused at least once on a loaded CI host (2 s was not:
    # CI stopped a child that had not yet tried, and it recorded no error)
    assert not w.wait_synced(10)
    errors = w.stop(timeout=30)
    assert not w._proc.is_alive() and w._proc.exitcode == 0
    assert any("retrying" in e for e in errors), errors
    assert (tmp_path / "pods.parquet").exists()  # an empty timeline, written as on any stop


PARENT = """
import sys, time
from pathlib import Path
from tests.integration.test_children import _refused
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
from tests.integration.test_children import _refused
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


KILLED_WHILE_WAITING = """
import os, sys, time
from pathlib import Path
from kwokbench.metrics.scrape import Scraper
s = Scraper([], {}, Path(sys.argv[1]), interval=0.2)
print(s._proc.pid, flush=True)
s.wait_started(60)  # killed in here, before the child (still importing) signals it started
time.sleep(600)
"""


def test_parent_killed_while_waiting_for_the_child_to_start(tmp_path: Path) -> None:
    """A multiprocessing.Event set by the child while its killed parent was waiting on it blocked the
    child for ever (Event.set waits for every waiter to wake)."""
    # the child sleeps 3 s before anything (a sitecustomize in the forkserver makes each of its forks sleep),
    # so the kill lands while the parent waits and before the child signals: the order that deadlocked
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(
        "import os, sys, time\nif 'multiprocessing.forkserver' in ' '.join(sys.orig_argv):\n"
        "    os.register_at_fork(after_in_child=lambda: time.sleep(3))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(slow), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_WAITING, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).parents[2], env=env)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(1)  # the parent is waiting; the child is still asleep
    finally:
        parent.kill()
        parent.wait(10)
        if parent.stdout:
            parent.stdout.close()
    assert _gone(child, 20), "the scrape child outlived kwokbench"
    assert (tmp_path / "procs.parquet").exists()  # it flushed what it had


def _nothing() -> None:
    pass


def _a_child_of_its_own() -> None:
    p = context().Process(target=_nothing)
    p.start()
    p.join(30)
    sys.exit(p.exitcode)


def test_a_fork_of_a_process_with_a_forkserver_starts_children_of_its_own() -> None:
    """A duet's sides are forks of kwokbench (runner.together_in_clusters). A side whose kwokbench had already
    started the forkserver could not use it (multiprocessing waits on the server, which is not the side's child):
    the side starts a server of its own."""
    first = context().Process(target=_nothing)
    first.start()
    first.join(30)
    assert first.exitcode == 0
    side = multiprocessing.get_context("fork").Process(target=_a_child_of_its_own)
    side.start()
    side.join(60)
    assert side.exitcode == 0
