"""Ctrl-C and kill -9 in the middle of a real run: no cluster process survives, the partial run is kept.
kill -9 at any moment of the bring-up too: the watchdog exists before the first process of the run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from kwokbench.cluster import ClusterInfo, Kwokctl
from kwokbench.cluster.objects import delete_labelled
from kwokbench.labels import RUN_LABEL
from kwokbench.store import load_run, read_meta
from tests.conftest import REPO, alive, kwokbench


def _start_run(out: Path) -> subprocess.Popen[str]:
    # 3000 pods at 100/s: 30 s of submission, so the signal lands mid-run
    return subprocess.Popen(
        [sys.executable, "-m", "kwokbench", "run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(out),
         "--set", "cluster.node_groups.0.count=50", "--set", "workloads.0.count=3000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL, cwd=REPO)


def _wait_mid_run(out: Path, k: Kwokctl, proc: subprocess.Popen[str]) -> tuple[Path, str, dict[str, int]]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = list((out / "quickstart").glob("*/")) if (out / "quickstart").exists() else []
        if runs and (runs[0] / "meta.json").exists():  # the folder exists a moment before its meta.json
            run = runs[0]
            cluster = f"kb-{read_meta(run)['run_label']}"
            pids = k.pids(cluster)
            # mid-run: the cluster is up and the watch has seen pods
            if len(pids) == 5 and (run / "scrapes").exists():
                time.sleep(4)
                return run, cluster, pids
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.5)
    raise AssertionError("the run did not get going within 120 s")


def _gone(pids: dict[str, int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive_pids = [p for p in pids.values() if alive(p)]
        if not alive_pids:
            return []
        time.sleep(0.5)
    return alive_pids


@pytest.fixture()
def started(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = _start_run(tmp_path)
    yield proc
    if proc.poll() is None:  # a failed assertion must not leave a run going into the next test
        proc.kill()
    proc.communicate(timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_tears_down_and_keeps_partial_run(sig: int, kwokctl: Kwokctl, tmp_path: Path,
                                                    started: subprocess.Popen[str]) -> None:
    proc = started
    run, cluster, pids = _wait_mid_run(tmp_path, kwokctl, proc)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert _gone(pids, 10) == []
    assert cluster not in kwokctl.names()
    stored = load_run(run)
    assert stored.meta["status"] == "interrupted"
    assert 0 < len(stored.pods) < 3000 and stored.summary is not None
    assert (run / "procs.parquet").exists()
    kwokbench("report", str(run), "-o", str(tmp_path / "rep"), check=True)


def test_kill_9_is_cleaned_up_by_the_watchdog(kwokctl: Kwokctl, tmp_path: Path,
                                              started: subprocess.Popen[str]) -> None:
    proc = started
    run, cluster, pids = _wait_mid_run(tmp_path, kwokctl, proc)
    children = {" ".join(c.cmdline())[-90:]: c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _gone(pids, 60) == [], "cluster processes survived kill -9"
    survivors = _gone(children, 30)
    assert survivors == [], [name for name, pid in children.items() if pid in survivors]
    deadline = time.monotonic() + 30
    while cluster in kwokctl.names() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster not in kwokctl.names()
    meta = read_meta(run)
    assert meta["status"] == "interrupted" and "watchdog" in meta["error"]
    # the watch child flushed its timeline when its parent died: report can read the partial run
    assert (run / "pods.parquet").exists()
    kwokbench("report", str(run), "-o", str(tmp_path / "rep"), check=True)


def test_kill_9_on_a_reused_cluster_reads_as_interrupted(cluster: ClusterInfo, kwokctl: Kwokctl,
                                                          tmp_path: Path) -> None:
    """No watchdog touches a cluster kwokbench did not create: nobody is left to mark the run, so a
    reader recognises it by its dead owner process; the cluster itself is untouched."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kwokbench", "run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path),
         "--cluster", cluster.name, "--set", "workloads.0.count=3000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL, cwd=REPO)
    label = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            runs = list((tmp_path / "quickstart").glob("*/")) if (tmp_path / "quickstart").exists() else []
            if runs and (runs[0] / "meta.json").exists() and (runs[0] / "scrapes").exists():
                break
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.5)
        else:
            pytest.fail("the run did not start measuring within 60 s")
        run = runs[0]
        label = read_meta(run)["run_label"]
        time.sleep(3)
        children = {" ".join(c.cmdline())[-90:]: c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert _gone(children, 30) == []
        assert read_meta(run)["status"] == "running"  # as written: nobody was left to change it
        stored = load_run(run)
        assert stored.meta["status"] == "interrupted" and "killed" in stored.meta["error"]
        assert cluster.name in kwokctl.names() and len(kwokctl.pids(cluster.name)) == 5
        kwokbench("report", str(run), "-o", str(tmp_path / "rep"), check=True)
        gate = kwokbench("gate", "--baseline", str(run), "--candidate", str(run))
        assert gate.returncode != 0 and "interrupted" in gate.stdout + gate.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        if label:  # the killed run's pods would crowd the session cluster's nodes for later tests
            asyncio.run(delete_labelled(cluster.credentials(), f"{RUN_LABEL}={label}", wait_seconds=120))


# -- kill -9 while the cluster comes up ---------------------------------------------------------------

def _run_in_own_home(out: Path, home: Path, nodes: int) -> subprocess.Popen[str]:
    """A run with its own KWOKBENCH_HOME, so that every process of it can be found by that path."""
    return subprocess.Popen(
        [sys.executable, "-m", "kwokbench", "run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(out),
         "--set", f"cluster.node_groups.0.count={nodes}"],
        env={**os.environ, "KWOKBENCH_HOME": str(home), "COLUMNS": "200"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL, cwd=REPO)


def _of_run(home: Path) -> dict[int, str]:
    """Live processes of the runs under ``home``: named by a cluster's pid file, or with ``home`` in their
    command line (components run from ``<home>/kwok/clusters/<name>/bin``, kwokctl gets
    ``<home>/configs/…``, the watchdog ``--home``)."""
    found: dict[int, str] = {}
    for f in home.glob("kwok/clusters/*/pids/*.pid"):
        with contextlib.suppress(OSError, ValueError, psutil.Error):
            p = psutil.Process(int(f.read_text().strip()))
            if p.status() != psutil.STATUS_ZOMBIE:
                found[p.pid] = f"{f.stem} (pid file)"
    for p in psutil.process_iter(["cmdline", "status"]):
        argv = p.info["cmdline"] or []
        if p.info["status"] != psutil.STATUS_ZOMBIE and any(str(home) in a for a in argv):
            found[p.pid] = " ".join(argv)[:150]
    return found


def _none_left(home: Path, timeout: float) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    while (left := _of_run(home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _kill_9_and_check(proc: subprocess.Popen[str], home: Path, out: Path) -> tuple[Path | None, str]:
    """kill -9 the run; within 30 s no process of it is left (its own children included: one holding
    kwokbench's stdout would also keep this pipe open), no cluster, and a stored run is interrupted."""
    children = {}
    with contextlib.suppress(psutil.Error):
        children = {c.pid: " ".join(c.cmdline())[-120:] for c in psutil.Process(proc.pid).children(recursive=True)}
    os.kill(proc.pid, signal.SIGKILL)
    survivors: list[int] = []
    try:
        proc.wait(30)
        survivors = _gone({name: pid for pid, name in children.items()}, 30)
        assert survivors == [], [children[p] for p in survivors]
        output, _ = proc.communicate(timeout=30)
    finally:  # a failure here must not leak into later tests (a process, an open pipe)
        for pid in survivors:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
        if proc.stdout and not proc.stdout.closed:
            proc.stdout.close()
    left = _none_left(home, 30)
    assert left == {}, f"left 30 s after kill -9: {left}\n{output}"
    assert list(home.glob("kwok/clusters/*")) == []
    runs = sorted(out.glob("quickstart/*/meta.json"))
    if not runs:
        return None, output
    meta = read_meta(runs[0].parent)
    assert meta["status"] == "interrupted" and "watchdog" in meta["error"], meta
    return runs[0].parent, output


def _kwokctl_creating(home: Path) -> bool:
    """kwokctl is creating the cluster and has started a component."""
    creating = any(argv and argv[0].endswith("kwokctl") and "create" in argv and any(str(home) in a for a in argv)
                   for argv in (p.info["cmdline"] for p in psutil.process_iter(["cmdline"])))
    return creating and any(home.glob("kwok/clusters/*/pids/*.pid"))


@pytest.mark.parametrize("when", ["2 s", "run stored", "kwokctl create"])
def test_kill_9_during_bring_up_leaves_no_process(when: str, tmp_path: Path) -> None:
    """2 s after start kwokctl is usually starting components here; "run stored" waits until the run's folder
    exists and a component has a pid file (on an idle host about 5 s in: nodes are being created; a fixed 5 s
    came too early on a loaded one); "kwokctl create" waits for kwokctl itself: a kwokctl that outlives
    kwokbench would start more."""
    home, out = tmp_path / "home", tmp_path / "out"
    proc = _run_in_own_home(out, home, nodes=100)
    try:
        if when == "kwokctl create":
            assert _poll(lambda: _kwokctl_creating(home), 60), "kwokctl create never ran"
        elif when == "run stored":
            assert _poll(lambda: any(out.glob("quickstart/*/meta.json"))
                         and any(home.glob("kwok/clusters/*/pids/*.pid")), 60), "the run never started its cluster"
        else:
            time.sleep(float(when.split()[0]))
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        started = _of_run(home)
    finally:
        run, output = _kill_9_and_check(proc, home, out)
    if when != "2 s":  # by then the run exists and its watchdog (at least) is running
        assert run is not None and started, output


def _poll(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_kill_9_during_node_creation_of_5000_nodes(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    proc = _run_in_own_home(out, home, nodes=5000)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout or []], daemon=True)
    reader.start()
    output = ""
    try:
        deadline = time.monotonic() + 120
        while "creating 5000 nodes" not in output:
            assert time.monotonic() < deadline and proc.poll() is None, f"node creation did not start:\n{output}"
            with contextlib.suppress(queue.Empty):
                output += lines.get(timeout=1)
        time.sleep(1)
        components = {f.stem for f in home.glob("kwok/clusters/*/pids/*.pid")}
        assert components == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                              "kwok-controller"}
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        reader.join(30)
        if proc.stdout:
            proc.stdout.close()
    left = _none_left(home, 30)
    assert left == {}, f"left 30 s after kill -9 during node creation: {left}"
    assert list(home.glob("kwok/clusters/*")) == []
    [meta] = out.glob("quickstart/*/meta.json")
    assert read_meta(meta.parent)["status"] == "interrupted"
