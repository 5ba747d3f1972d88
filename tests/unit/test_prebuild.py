"""The suite's background builds (tests/support/prebuild.py): which builds the collected files need, the order the files
run in, the log's summary line, and stopping the builds with every process they started."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO
from tests.support import prebuild


def test_every_file_that_needs_a_build_exists_and_names_builds_the_suite_makes() -> None:
    for file, builds in prebuild.NEEDS.items():
        assert (REPO / file).is_file(), file
        assert builds and set(builds) <= set(prebuild.BUILDS), (file, builds)


def test_every_e2e_file_that_installs_a_scheduler_from_sources_is_listed_with_it() -> None:
    """A new file installing a scheduler from pinned sources, not listed, would build it inside the suite again
    (the cold run's 28 minutes)."""
    for path in sorted((REPO / "tests" / "e2e").glob("test_*.py")):
        rel = str(path.relative_to(REPO))
        for name in re.findall(r'\binstall\("([\w-]+)"\)', path.read_text()):
            assert name in prebuild.NEEDS.get(rel, ()), (rel, name)
    versions = (REPO / "tests/e2e/test_kubernetes_versions.py").read_text()
    assert prebuild.NEXT_KUBERNETES in versions


def test_every_e2e_file_that_runs_a_go_plugin_is_listed_with_its_build() -> None:
    """A plugin named as a variant's binary (in the file or a scenario it runs), or the Score plugin the tests
    write, is built in the background: unlisted, it would be built inside a test (gpushare's: ~5 min cold).
    WASM guests (``*-wasm``) are not kube-scheduler builds."""
    for path in sorted((REPO / "tests" / "e2e").glob("test_*.py")):
        rel, text = str(path.relative_to(REPO)), path.read_text()
        scenarios = [(REPO / s).read_text() for s in set(re.findall(r"scenarios/[\w-]+\.yaml", text))
                     if (REPO / s).is_file()]
        found = {a or b for a, b in re.findall(r'plugins" / "([\w-]+)"|\bplugins/([\w-]+)\b', text)}
        found |= {m for s in scenarios for m in re.findall(r"binary: \.\./plugins/([\w-]+)", s)}
        want = {f"plugin {n}" for n in found if not n.endswith("-wasm") and (REPO / "plugins" / n / "go.mod").is_file()}
        want |= {"plugin score"} if "write_score_plugin(" in text else set()
        assert want <= set(prebuild.BUILDS) and want <= set(prebuild.NEEDS.get(rel, ())), (rel, sorted(want))


def test_the_builds_needed_come_once_each_in_the_order_they_are_begun() -> None:
    files = ["tests/e2e/test_kai.py", "tests/unit/test_x.py", "tests/e2e/test_kubernetes_versions.py",
             "tests/e2e/test_dra.py"]
    assert prebuild.needed(files) == ["scheduler_perf", "kai", f"kubernetes {prebuild.NEXT_KUBERNETES}"]
    assert prebuild.needed(["tests/unit/test_x.py", "tests/e2e/test_run.py"]) == []


def test_files_run_build_free_e2e_first_then_the_fast_tiers_then_by_the_last_build_they_need() -> None:
    files = ["tests/e2e/test_wasm_extension.py", "tests/e2e/test_chaos.py", "tests/integration/test_b.py",
             "tests/e2e/test_kubernetes_versions.py", "tests/unit/test_a.py", "tests/e2e/test_dra.py",
             "tests/e2e/test_run.py", "tests/e2e/test_kueue.py"]
    assert prebuild.order(files) == [
        "tests/e2e/test_chaos.py", "tests/e2e/test_run.py",  # no build: the longest tier first
        "tests/integration/test_b.py", "tests/unit/test_a.py",  # collection order kept
        "tests/e2e/test_wasm_extension.py",  # ready first
        "tests/e2e/test_dra.py",  # scheduler_perf
        "tests/e2e/test_kueue.py",
        "tests/e2e/test_kubernetes_versions.py"]  # scheduler_perf and, last, the next release


def test_with_every_build_done_the_long_files_run_first_and_the_short_tiers_fill_the_end(tmp_path: Path) -> None:
    files = ["tests/e2e/test_wasm_extension.py", "tests/e2e/test_chaos.py", "tests/integration/test_b.py",
             "tests/e2e/test_kubernetes_versions.py", "tests/unit/test_a.py", "tests/e2e/test_dra.py",
             "tests/e2e/test_run.py", "tests/e2e/test_kueue.py"]
    assert prebuild.order(files, built=True) == [
        "tests/e2e/test_wasm_extension.py", "tests/e2e/test_kubernetes_versions.py", "tests/e2e/test_dra.py",
        "tests/e2e/test_kueue.py",  # the files that need a build, in collection order
        "tests/e2e/test_chaos.py", "tests/e2e/test_run.py",
        "tests/integration/test_b.py", "tests/unit/test_a.py"]
    log = tmp_path / "prebuild.log"
    log.write_text("== kai\n== kai: ready after 1s\n== kueue\n")
    assert not prebuild.all_done(log, ["kai", "kueue"])
    log.write_text(log.read_text() + "== kueue: failed after 3s: no network\n")
    assert prebuild.all_done(log, ["kai", "kueue"]) and not prebuild.all_done(log, ["kai", "volcano"])
    assert not prebuild.all_done(tmp_path / "none.log", ["kai"]) and prebuild.all_done(log, [])


def test_every_build_is_in_one_lane_scheduler_perf_after_builds_of_their_own_and_the_next_release_last() -> None:
    """scheduler_perf's test binary shares the pinned release's packages with ``make tools``' build: behind YuniKorn
    and the WASM extension (their own Kubernetes libraries) in its lane, it begins once those are compiled. The Go
    plugins, which many files need, begin their lane (behind Kueue they were not begun after 34 minutes cold). The
    next release, the longest build, is its lane's last, so that the files of the others do not wait for it."""
    in_lanes = [b for lane in prebuild.LANES for b in lane]
    assert sorted(in_lanes) == sorted(prebuild.BUILDS)
    lane = next(ln for ln in prebuild.LANES if "scheduler_perf" in ln)
    assert lane.index("yunikorn") < lane.index("scheduler_perf") < lane.index(f"kubernetes {prebuild.NEXT_KUBERNETES}")
    assert lane[-1] == f"kubernetes {prebuild.NEXT_KUBERNETES}"
    plugins = next(ln for ln in prebuild.LANES if "plugin gpufilter" in ln)
    assert all(b.startswith("plugin ") for b in plugins[:5])
    assert prebuild.lanes(["kai", "scheduler_perf", "kueue"]) == [["scheduler_perf"], ["kueue", "kai"]]
    assert prebuild.lanes(["wasm-extension"]) == [["wasm-extension"]]


def test_a_lane_done_with_its_own_builds_takes_the_others_not_yet_begun() -> None:
    assert prebuild.queues(["kai", "scheduler_perf", "kueue", "volcano"]) == [
        ["scheduler_perf", "kueue", "volcano", "kai"], ["kueue", "volcano", "kai", "scheduler_perf"]]
    assert prebuild.queues(["wasm-extension"]) == [["wasm-extension"]]
    assert all(sorted(q) == sorted(prebuild.BUILDS) for q in prebuild.queues(prebuild.BUILDS))


def test_two_lanes_build_everything_once_and_the_idle_one_takes_the_rest(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Stand-in builds (sleeps) in two lanes over :func:`queues`, as the coordinator starts them: every build runs
    once, and the lane with the short builds, done first, takes the other's last build instead of idling."""
    import threading

    built: dict[str, str] = {}
    lock, long_begun = threading.Lock(), threading.Event()

    def build(name: str, seconds: float) -> Callable[[], object]:
        def run() -> object:
            with lock:
                assert name not in built, f"{name} built twice"
                built[name] = threading.current_thread().name
            if name == "long":
                long_begun.set()
            else:  # the short lane ends only once the long one has begun its own (whichever thread started first)
                long_begun.wait(5)
            time.sleep(seconds)
            return None
        return run

    recipes = {"short": build("short", 0.05), "long": build("long", 1.0), "next": build("next", 0.05)}
    own = [["short"], ["long", "next"]]
    queues = [[*mine, *(b for other in own if other is not mine for b in other)] for mine in own]
    threads = [threading.Thread(target=prebuild._lane, args=(q, tmp_path, recipes), name=f"lane{i}")
               for i, q in enumerate(queues)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=10)
    assert built == {"short": "lane0", "long": "lane1", "next": "lane0"}
    log = capfd.readouterr().out
    assert all(f"== {b}: ready after" in log for b in recipes) and log.count("== next\n") == 1


def test_a_build_on_the_pinned_releases_packages_waits_for_the_core_toolchain(
        capfd: pytest.CaptureFixture[str]) -> None:
    """Begun with the core toolchain's build, a Go plugin compiled the same Kubernetes packages beside it (Go's
    cache shares none that two builds compile at once): a build of AFTER_CORE waits until the core is built, the
    others do not, and by hand (no ``core``) nothing waits."""
    done: list[str] = []
    answers = iter([False, False, False, True])

    def core() -> bool:
        ready = next(answers, True)
        done.append(f"core {ready}")
        return ready

    recipes: dict[str, Callable[[], object]] = {n: (lambda n=n: done.append(n)) for n in ("kueue", "plugin wasm")}
    assert prebuild._lane(["kueue", "plugin wasm"], builds=recipes, core=core, poll=0.01) == 0
    assert done == ["kueue", "core False", "core False", "core False", "core True", "plugin wasm"]
    assert capfd.readouterr().out.count("== plugin wasm: waits for the core toolchain's Kubernetes build\n") == 1
    done.clear()
    assert prebuild._lane(["plugin wasm"], builds=recipes) == 0 and done == ["plugin wasm"]
    assert {"scheduler_perf", *(b for b in prebuild.BUILDS if b.startswith("plugin "))} == prebuild.AFTER_CORE


def test_the_builds_a_session_or_make_begins_wait_for_the_core_and_pass_it_to_their_lanes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    begun: list[list[str]] = []

    class Popen:
        def __init__(self, cmd: list[str], **_: object) -> None:
            begun.append(cmd)
            self.pid = 4242

    monkeypatch.setattr(prebuild, "_running_here", lambda: False)
    monkeypatch.setattr(prebuild.subprocess, "Popen", Popen)
    assert prebuild.start(["kai"], tmp_path / "prebuild.log", watch=7) is not None
    assert begun[0][-4:] == ["--watch", "7", "--after-core", "kai"]
    lanes: list[list[list[str]]] = []
    monkeypatch.setattr(prebuild, "lowest_priority", lambda: None)
    monkeypatch.setattr(prebuild, "_coordinate", lambda commands, watch: lanes.append(commands) or 0)
    assert prebuild.main(["--watch", "7", "--after-core", "kai", "kueue"]) == 0
    assert prebuild.main(["kai"]) == 0  # by hand
    assert all("--after-core" in lane for lane in lanes[0]) and not any("--after-core" in lane for lane in lanes[1])


def test_the_shell_make_runs_the_prebuild_in_is_not_taken_for_another_sessions_builds() -> None:
    """make runs ``python -m tests.support.prebuild --for-make $PPID`` under ``/bin/sh -c``, whose command line names
    the module: that shell is the prebuild's own ancestor, not builds begun elsewhere (taken for them, it kept every
    ``make test`` from beginning its builds). Another process of the module in this checkout still counts."""
    # (under make test the suite's own background builds run beside: they count, the probe's shell must not)
    probe = "import os, tests.support.prebuild as p; print(os.getppid(), *[q.pid for q in p._builders_here()])"
    under_shell = subprocess.run(["sh", "-c", f"{sys.executable} -c '{probe}'; true"], cwd=REPO, capture_output=True,
                                 text=True, check=True)
    shell, *found = under_shell.stdout.split()
    assert shell not in found
    other = subprocess.Popen([sys.executable, "-c", "import tests.support.prebuild, time; time.sleep(30)"], cwd=REPO)
    try:
        deadline = time.monotonic() + 10
        while other.pid not in {q.pid for q in prebuild._builders_here()} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert other.pid in {q.pid for q in prebuild._builders_here()}
    finally:
        other.kill()
        other.wait()


def test_the_summary_line_gives_each_build_its_time_and_outcome(tmp_path: Path) -> None:
    log = tmp_path / "prebuild.log"
    log.write_text("== scheduler_perf\nscheduler_perf v1.36.4: cached in /c\n== scheduler_perf: ready after 0s\n"
                   "== kueue\nbuilding kueue\n== kueue: failed after 212s: go: module lookup disabled\n== volcano\n")
    assert prebuild.summary(log) == "scheduler_perf ready 0s, kueue failed 212s"
    assert prebuild.summary(tmp_path / "none.log") == "no log"


def test_nothing_starts_without_builds_or_when_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prebuild.start([], tmp_path / "a.log") is None
    monkeypatch.setenv("KWOKBENCH_PREBUILD", "0")
    assert prebuild.start(["kueue"], tmp_path / "b.log") is None
    assert not (tmp_path / "b.log").exists()
    assert prebuild.begin_for_make(tmp_path, 1) == "background builds: none (KWOKBENCH_PREBUILD=0)"
    assert not (tmp_path / prebuild.PIDFILE).exists()


def test_an_unknown_build_or_a_bad_pid_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert prebuild.main(["scheduler_perf", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: not a build of the suite: nope") and len(err.splitlines()) == 1
    for argv in (["--for-make"], ["--for-make", "x"], ["--watch", "x", "kai"], ["--lane", "--watch"]):
        assert prebuild.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.splitlines()) == 1, err


def _children(pid: int, n: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 10
    while len(kids := psutil.Process(pid).children(recursive=True)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return kids


def test_stop_ends_the_builds_and_every_process_they_started(tmp_path: Path) -> None:
    """A build is a Go toolchain's tree of processes: the whole session goes, not the Python process only."""
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    children = _children(proc.pid, 2)
    assert len(children) == 2
    assert prebuild.Running(proc.pid, tmp_path / "log", proc).stop() == "stopped before it finished"
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive
    done = subprocess.Popen(["true"], start_new_session=True)
    done.wait()
    (tmp_path / "log").write_text("== kai\n== kai: ready after 3s\n")
    assert prebuild.Running(done.pid, tmp_path / "log", done).stop() == "finished"
    (tmp_path / "log").write_text("== kai\n== kai: failed after 3s: go: no\n")
    assert prebuild.Running(done.pid, tmp_path / "log", done).stop() == "finished, some builds failed"


def test_the_builds_stop_with_every_process_when_the_process_they_watch_ends() -> None:
    """make's builds outlive its shell; when make ends (a linter failed, ^C), they must not run on."""
    watched = subprocess.Popen(["sleep", "60"])
    code = ("import sys; from tests.support import prebuild; "
            "sys.exit(prebuild._coordinate([['sleep', '60'], ['sh', '-c', 'sleep 60; sleep 1']], int(sys.argv[1])))")
    coord = subprocess.Popen([sys.executable, "-c", code, str(watched.pid)], cwd=REPO, start_new_session=True,
                             stdout=subprocess.DEVNULL)
    try:
        lanes = _children(coord.pid, 3)
        assert len(lanes) == 3  # two lanes and the shell's sleep
        watched.kill()
        watched.wait()
        assert coord.wait(timeout=15) == 1
        _, alive = psutil.wait_procs(lanes, timeout=10)
        assert not alive
    finally:
        for p in (watched, coord):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_builds_run_by_hand_stop_with_every_process_on_sigterm_and_spare_the_callers_group() -> None:
    """``python -m tests.support.prebuild NAME`` run by hand (in its caller's process group) and stopped by its pid:
    the lanes and what they started go too (they ran on to the end of their current Go build before), and the
    group it shares with its caller (this test's) is not signalled."""
    watched = subprocess.Popen(["sleep", "60"])
    code = ("import sys; from tests.support import prebuild; "
            "sys.exit(prebuild._coordinate([['sleep', '60'], ['sh', '-c', 'sleep 60; sleep 1']], int(sys.argv[1])))")
    coord = subprocess.Popen([sys.executable, "-c", code, str(watched.pid)], cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        assert os.getpgid(coord.pid) == os.getpgrp()
        lanes = _children(coord.pid, 3)
        assert len(lanes) == 3  # two lanes and the shell's sleep
        coord.terminate()
        assert coord.wait(timeout=15) == 1
        _, alive = psutil.wait_procs(lanes, timeout=10)
        assert not alive
        assert watched.poll() is None  # in this test's group: not signalled
    finally:
        for p in (watched, coord):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_the_builds_session_is_at_the_lowest_priority_and_no_other() -> None:
    """With autogroups a nice value counts only within a session: the builds' own session is niced as a whole."""
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("this kernel has no autogroups: nice 19 alone is the lowest priority")
    code = "from tests.support import prebuild; prebuild.lowest_priority(); print(open('/proc/self/autogroup').read())"
    own = subprocess.run([sys.executable, "-c", code], cwd=REPO, start_new_session=True, capture_output=True,
                         text=True, check=True)
    assert own.stdout.split()[-2:] == ["nice", "19"]
    ours = Path("/proc/self/autogroup").read_text()
    shared = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert shared.stdout.strip() == ours.strip()  # not a session's leader: the caller's session untouched


def test_a_session_under_make_takes_over_its_builds_and_no_other(tmp_path: Path) -> None:
    make = psutil.Process().parent()
    assert make is not None
    (tmp_path / prebuild.PIDFILE).write_text(json.dumps({"pid": 4242, "make": make.pid, "builds": ["kueue", "kai"]}))
    run = prebuild.adopt(tmp_path, ["kai"])
    assert run is not None and run.by_make and run.pid == 4242 and run.log == tmp_path / "prebuild.log"
    assert prebuild.adopt(tmp_path, ["kai", "volcano"]) is None  # not every build it needs
    other = subprocess.Popen(["true"])
    other.wait()
    (tmp_path / prebuild.PIDFILE).write_text(json.dumps({"pid": 4242, "make": other.pid, "builds": ["kai"]}))
    assert prebuild.adopt(tmp_path, ["kai"]) is None  # another make's
    (tmp_path / prebuild.PIDFILE).write_text("{")
    assert prebuild.adopt(tmp_path, ["kai"]) is None
    assert prebuild.adopt(tmp_path / "none", ["kai"]) is None


def test_a_test_waits_for_its_build_until_it_is_ready_or_no_build_runs(tmp_path: Path) -> None:
    """The wait a test makes before its timeout starts: while a background build of this checkout runs and the log
    has not said the build's end, it waits; the line of its end, or the builds gone, ends the wait."""
    import threading

    log = tmp_path / "prebuild.log"
    log.write_text("== kueue\n")
    assert prebuild.wait_for(["kueue"], log, poll=0.05, builders=list) < 1  # nothing runs: no wait
    fake = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "import time; time.sleep(60)",
                             "tests.support.prebuild"], cwd=REPO, start_new_session=True)

    def mine() -> list[psutil.Process]:  # this checkout's builders, but only the stand-in: make test's own runs beside
        return [p for p in prebuild._builders_here() if p.pid == fake.pid]

    def until(cond: Callable[[], bool], seconds: float = 20) -> bool:
        """``cond`` within ``seconds``: a loaded host (make test's own builds beside it) is slow to start a process."""
        end = time.monotonic() + seconds
        while not cond() and time.monotonic() < end:
            time.sleep(0.05)
        return cond()

    try:
        # found as a real build is, by its command line and folder (once `nice` has started the interpreter)
        assert until(lambda: [p.pid for p in mine()] == [fake.pid])
        done: list[float] = []
        waiter = threading.Thread(target=lambda: done.append(prebuild.wait_for(["kueue"], log, poll=0.05,
                                                                                 builders=mine)))
        waiter.start()
        time.sleep(1.0)
        assert not done  # the build runs and has not ended: still waiting
        # and no longer at the lowest priority: a test waits for it (where raising is not allowed, the log says so)
        assert until(lambda: psutil.Process(fake.pid).nice() == 0 if os.geteuid() == 0
                     else "could not raise" in log.read_text())
        log.write_text("== kueue\n== kueue: ready after 412s\n")
        waiter.join(10)
        assert done and done[0] >= 1.0
        log.write_text("== volcano\n")
        waiter = threading.Thread(target=lambda: done.append(prebuild.wait_for(["volcano"], log, poll=0.05,
                                                                                 builders=mine)))
        waiter.start()
        time.sleep(0.5)
        assert len(done) == 1
        fake.kill()  # the builds stopped before volcano: the test goes on (and kwokbench builds or says why not)
        waiter.join(10)
        assert len(done) == 2
    finally:
        fake.kill()
        fake.wait()
