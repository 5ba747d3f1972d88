"""Ctrl-C and kill -9 in the middle of a real run: no cluster process survives, the partial run is kept."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kwokbench.cluster import ClusterInfo, Kwokctl
from kwokbench.cluster.objects import delete_labelled
from kwokbench.load.watcher import RUN_LABEL
from kwokbench.store import load_run, read_meta
from tests.conftest import REPO, kwokbench


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
        alive = [p for p in pids.values() if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
        if not alive:
            return []
        time.sleep(0.5)
    return alive


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
