"""The suite's background builds (tests/prebuild.py): which builds the collected files need, the order the files
run in, the log's summary line, and stopping the builds with every process they started."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests import prebuild
from tests.conftest import REPO


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


def test_the_builds_needed_come_once_each_in_the_order_they_are_begun() -> None:
    files = ["tests/e2e/test_kai.py", "tests/unit/test_x.py", "tests/e2e/test_kubernetes_versions.py",
             "tests/e2e/test_dra.py"]
    assert prebuild.needed(files) == ["scheduler_perf", f"kubernetes {prebuild.NEXT_KUBERNETES}", "kai"]
    assert prebuild.needed(["tests/unit/test_x.py", "tests/e2e/test_run.py"]) == []


def test_files_run_build_free_e2e_first_then_the_fast_tiers_then_by_the_last_build_they_need() -> None:
    files = ["tests/e2e/test_wasm_extension.py", "tests/e2e/test_action.py", "tests/integration/test_b.py",
             "tests/e2e/test_kubernetes_versions.py", "tests/unit/test_a.py", "tests/e2e/test_dra.py",
             "tests/e2e/test_run.py", "tests/e2e/test_kueue.py"]
    assert prebuild.order(files) == [
        "tests/e2e/test_action.py", "tests/e2e/test_run.py",  # no build: the longest tier first
        "tests/integration/test_b.py", "tests/unit/test_a.py",  # collection order kept
        "tests/e2e/test_dra.py",  # scheduler_perf, begun first
        "tests/e2e/test_kubernetes_versions.py",  # its last build, the next release, second
        "tests/e2e/test_kueue.py", "tests/e2e/test_wasm_extension.py"]


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


def test_an_unknown_build_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert prebuild.main(["scheduler_perf", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: not a build of the suite: nope") and len(err.splitlines()) == 1


def test_stop_ends_the_builds_and_every_process_they_started() -> None:
    """A build is a Go toolchain's tree of processes: the whole session goes, not the Python process only."""
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(psutil.Process(proc.pid).children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    children = psutil.Process(proc.pid).children()
    assert len(children) == 2
    assert prebuild.stop(proc) == "stopped before it finished"
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive
    done = subprocess.Popen(["true"], start_new_session=True)
    done.wait()
    assert prebuild.stop(done) == "finished"
