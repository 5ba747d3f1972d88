"""The pid-reuse guard: kwokbench signals a cluster's process only while it still is that component.

A reused pid is simulated the way it shows up after a reboot: kwokctl's pid file names a pid that now
belongs to some other process (here a ``sleep`` started by the test).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from kwokbench.cluster import processes, watchdog
from kwokbench.cluster.kwokctl import Kwokctl
from kwokbench.cluster.processes import ComponentProcess
from kwokbench.progress import Silent
from kwokbench.store import RunDir, read_meta

SLEEP = shutil.which("sleep") or "/bin/sleep"


class Spawner:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def __call__(self, argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> psutil.Process:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return psutil.Process(p.pid)

    def alive(self, p: psutil.Process) -> bool:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE


@pytest.fixture()
def spawn() -> Iterator[Spawner]:
    s = Spawner()
    yield s
    for p in s.procs:
        p.kill()
        p.wait(10)


def _cluster(home: Path, name: str) -> Path:
    d = home / "kwok" / "clusters" / name
    (d / "pids").mkdir(parents=True)
    (d / "bin").mkdir()
    return d


def _component(spawn: Spawner, d: Path, component: str) -> psutil.Process:
    """A stand-in for a component as kwokctl starts it: ``<cluster>/bin/<component>``, in the cluster dir."""
    exe = d / "bin" / component
    if not exe.exists():
        exe.symlink_to(SLEEP)
    p = spawn([str(exe), "60"], cwd=d)
    (d / "pids" / f"{component}.pid").write_text(str(p.pid))
    return p


class Warnings(Silent):
    def __init__(self) -> None:
        self.warned: list[str] = []

    def warn(self, msg: str) -> None:
        self.warned.append(msg)


def _kwokctl(home: Path, monkeypatch: pytest.MonkeyPatch) -> Kwokctl:
    k = Kwokctl(home=home)
    monkeypatch.setattr(k, "_run", lambda *a, **kw: subprocess.CompletedProcess([], 0, "", ""))  # kwokctl itself
    return k


def test_a_pid_file_naming_another_process_is_left_alone(tmp_path: Path, spawn: Spawner,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    d = _cluster(tmp_path, "c")
    stranger = spawn([SLEEP, "60"])
    (d / "pids" / "kube-apiserver.pid").write_text(str(stranger.pid))
    k = _kwokctl(tmp_path, monkeypatch)
    assert k.pids("c") == {}
    found, notes = processes.from_pid_files(d)
    assert found == {} and len(notes) == 1
    assert f"pid {stranger.pid} now belongs to another process (sleep" in notes[0] and "left alone" in notes[0]
    rep = Warnings()
    assert k.delete("c", rep) == []
    assert spawn.alive(stranger), "an unrelated process was signalled"
    assert len(rep.warned) == 1 and "left alone" in rep.warned[0]
    assert not d.exists()


def test_the_clusters_components_are_stopped(tmp_path: Path, spawn: Spawner, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _cluster(tmp_path, "c")
    etcd, apiserver = _component(spawn, d, "etcd"), _component(spawn, d, "kube-apiserver")
    k = _kwokctl(tmp_path, monkeypatch)
    assert k.pids("c") == {"etcd": etcd.pid, "kube-apiserver": apiserver.pid}
    assert k.processes("c")["etcd"].create_time == pytest.approx(etcd.create_time())
    assert sorted(k.delete("c")) == sorted([etcd.pid, apiserver.pid])
    assert not spawn.alive(etcd) and not spawn.alive(apiserver)


def test_another_clusters_component_is_not_this_clusters(tmp_path: Path, spawn: Spawner,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """After a reboot a stale pid file may name another cluster's kube-apiserver: same name, not ours."""
    mine, other = _cluster(tmp_path, "mine"), _cluster(tmp_path, "other")
    theirs = _component(spawn, other, "kube-apiserver")
    (mine / "pids" / "kube-apiserver.pid").write_text(str(theirs.pid))
    k = _kwokctl(tmp_path, monkeypatch)
    assert k.pids("mine") == {}
    k.delete("mine")
    assert spawn.alive(theirs)
    assert k.pids("other") == {"kube-apiserver": theirs.pid}


def test_a_recorded_start_time_must_match(tmp_path: Path, spawn: Spawner) -> None:
    """A pid learnt with its start time is signalled only while the start time matches (within 1 s),
    unless the process visibly is the same component of the same cluster."""
    d = _cluster(tmp_path, "c")
    stranger = spawn([SLEEP, "60"])
    started = stranger.create_time()
    assert ComponentProcess("etcd", stranger.pid, started).process(d)[0] is not None
    assert ComponentProcess("etcd", stranger.pid, started + 0.5).process(d)[0] is not None
    reused = ComponentProcess("etcd", stranger.pid, started - 100)  # the etcd we knew started 100 s earlier
    proc, why = reused.process(d)
    assert proc is None and "not this cluster's etcd" in why
    assert processes.stop([reused], d, grace=1) == [why]
    assert spawn.alive(stranger)
    etcd = _component(spawn, d, "etcd")  # the same component restarted under a new start time is still ours
    assert ComponentProcess("etcd", etcd.pid, started - 100).process(d)[0] is not None
    assert processes.stop([ComponentProcess("etcd", etcd.pid, started - 100)], d, grace=5) == []
    assert not spawn.alive(etcd)


def test_gone_processes_need_no_word(tmp_path: Path) -> None:
    d = _cluster(tmp_path, "c")
    p = subprocess.Popen([SLEEP, "0"])
    p.wait()
    (d / "pids" / "etcd.pid").write_text(str(p.pid))
    (d / "pids" / "kwok-controller.pid").write_text("not a pid")
    assert processes.from_pid_files(d) == ({}, [])


def test_strays_without_a_pid_file_are_found_and_stopped(tmp_path: Path, spawn: Spawner,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """kwokctl killed between starting a component and writing its pid leaves a process no pid file names."""
    d = _cluster(tmp_path, "c")
    stray = _component(spawn, d, "kube-scheduler")
    (d / "pids" / "kube-scheduler.pid").unlink()
    bystander = spawn([SLEEP, "60"], cwd=d)  # e.g. a shell or `tail` in the cluster dir: not a component
    assert [(c.component, c.pid) for c in processes.strays(d)] == [("kube-scheduler", stray.pid)]
    assert _kwokctl(tmp_path, monkeypatch).delete("c") == [stray.pid]
    assert not spawn.alive(stray) and spawn.alive(bystander)


def test_a_kwokctl_still_creating_the_cluster_is_stopped_first(tmp_path: Path, spawn: Spawner,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "kwokctl").symlink_to(os.path.realpath(sys.executable))  # a python that takes any arguments
    k = _kwokctl(tmp_path, monkeypatch)
    env = {**os.environ, "KWOK_WORKDIR": str(k.workdir)}
    wait = [str(tools / "kwokctl"), "-c", "import time; time.sleep(60)"]
    create = spawn([*wait, "--name", "c", "create", "cluster"], env=env)
    other_name = spawn([*wait, "--name", "c2", "create", "cluster"], env=env)
    other_workdir = spawn([*wait, "--name=c", "create", "cluster"], env={**env, "KWOK_WORKDIR": str(tmp_path)})
    assert processes.kwokctl_commands(k.workdir, "c") == [create]
    assert k.delete("c", missing_ok=True) == []  # it had not written the cluster dir yet
    assert not spawn.alive(create) and spawn.alive(other_name) and spawn.alive(other_workdir)


def _dead_parent() -> list[str]:
    """--parent/--parent-started naming this process with another start time: a reused pid, so gone."""
    return ["--parent", str(os.getpid()), "--parent-started", str(psutil.Process().create_time() - 100)]


@pytest.mark.parametrize("existing", [False, True])
def test_watchdog_deletes_only_a_cluster_it_saw_created(existing: bool, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write_meta({"status": "running"})
    if existing:
        _cluster(tmp_path, "c")
    deleted: list[tuple[str, Any]] = []
    monkeypatch.setattr(Kwokctl, "delete", lambda self, name, rep=None, missing_ok=False:
                        deleted.append((name, missing_ok)) or [])
    monkeypatch.setattr(watchdog, "FLUSH_SECONDS", 0.0)
    started: list[list[str]] = []
    monkeypatch.setattr(watchdog.subprocess, "Popen", lambda args, **kw: started.append(args))
    watchdog.start("c", tmp_path, run.path, keep_cluster=False)
    assert ("--existing" in started[0]) is existing
    assert started[0][1:3] == ["-m", "kwokbench.cluster.watchdog"] and started[0][0] == sys.executable

    assert watchdog.main([*_dead_parent(), *started[0][started[0].index("--cluster"):]]) == 0
    assert deleted == ([] if existing else [("c", True)])
    meta = read_meta(run.path)
    assert meta["status"] == "interrupted" and "watchdog" in meta["error"]
    assert "kwokbench (pid" in (run.path / watchdog.LOG).read_text()


def test_just_after_exec_the_name_and_directory_decide(tmp_path: Path) -> None:
    """For a moment after exec /proc shows an empty command line; the kernel's 15-character name and the
    working directory still tell a component from anything else."""
    d = str(tmp_path)
    assert processes._matches([], d, tmp_path, "kube-controller-manager", "kube-controller")
    assert processes._matches([], d, tmp_path, None, "kwok")
    assert not processes._matches([], "/", tmp_path, "kube-controller-manager", "kube-controller")
    assert not processes._matches([], d, tmp_path, "etcd", "sleep")


def test_telling_line_is_a_go_panic_not_its_stack_trace(tmp_path: Path) -> None:
    log = tmp_path / "kube-scheduler.log"
    log.write_text("I1125 started\npanic: failed to get wasm plugins: guest trapped\n\ngoroutine 1 [running]:\n"
                   "main.main()\n\tsigs.k8s.io/x/cmd/scheduler/main.go:46 +0x21b\n")
    assert processes.telling_line(log) == "panic: failed to get wasm plugins: guest trapped"
    log.write_text("I1125 started\nE1125 the last word\n\n")
    assert processes.telling_line(log) == "E1125 the last word"
    assert processes.telling_line(tmp_path / "absent.log") == "(no output)"


def test_a_process_that_exits_leaving_components_running_does_not_warn(tmp_path: Path) -> None:
    """`kwokbench up` (or a test worker) exits with its components running on: their ``Popen`` objects must not
    print "subprocess … is still running" at exit (CI's log had one, under the tests' warnings-as-errors)."""
    d = _cluster(tmp_path, "c")
    code = ("import sys, warnings; from pathlib import Path; warnings.simplefilter('error');"
            "from kwokbench.cluster import processes;"
            f"p = processes.spawn(Path(sys.argv[1]), 'sleeper', ['{SLEEP}', '30'], sys.argv[1]); print(p.pid)")
    res = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, timeout=60)
    pid = int(res.stdout)
    try:
        assert res.returncode == 0 and res.stderr == "", res.stderr
        assert psutil.pid_exists(pid)  # it runs on: stopping it is `down`'s job, through its pid file
    finally:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def test_a_cluster_that_failed_to_come_up_keeps_its_logs_and_says_which_component_stopped(
        tmp_path: Path, spawn: Spawner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error of a failed bring-up names the component that had stopped, by its log's telling line, and the
    logs outlive the delete (which removes the cluster's folder, where the error used to point)."""
    d = _cluster(tmp_path, "c")
    etcd = _component(spawn, d, "etcd")
    gone = subprocess.Popen([SLEEP, "0"])
    gone.wait(10)
    (d / "pids" / "kwok-controller.pid").write_text(str(gone.pid))
    (d / "logs").mkdir()
    (d / "logs" / "kwok-controller.log").write_text("I1130 starting\npanic: listen tcp :4321: bind: address in use\n"
                                                    "goroutine 1 [running]:\n")
    (d / "logs" / "etcd.log").write_text("serving\n")
    k = _kwokctl(tmp_path, monkeypatch)
    said = k.abandon("c", tmp_path / "run" / "logs")
    assert said == ("; kwok-controller had stopped (panic: listen tcp :4321: bind: address in use)"
                    f"; its component logs are kept in {tmp_path / 'run' / 'logs'}")
    assert sorted(p.name for p in (tmp_path / "run" / "logs").iterdir()) == ["etcd.log", "kwok-controller.log"]
    assert not d.exists() and not spawn.alive(etcd)
    # without a place given the logs go under the home; a cluster with no logs adds nothing
    d = _cluster(tmp_path, "c")
    (d / "logs").mkdir()
    (d / "logs" / "etcd.log").write_text("serving\n")
    said = k.abandon("c")
    kept = list((tmp_path / "failed").glob("c-*/etcd.log"))
    assert len(kept) == 1 and said == f"; its component logs are kept in {kept[0].parent}"
    _cluster(tmp_path, "c")
    assert k.abandon("c") == ""
