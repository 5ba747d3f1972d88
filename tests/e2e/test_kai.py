"""NVIDIA KAI-Scheduler as a first-class variant, on real clusters: built from the pinned source beside the repo
(``../shared/sources``), its queues from a scenario's ``kai:`` block, its five processes started as the cluster's
and measured through the scheduler's /metrics; a queue held to its limit and gangs placed whole or not at all; and
the bad inputs: a tampered archive, a configuration KAI refuses (its own message), a queue it would drop."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from kwokbench.store import load_run
from tests.conftest import REPO, assert_one_line_error, kwokbench
from tests.support.sources import ENV, SOURCES, install, only_run, processes

pytestmark = pytest.mark.skipif(not (SOURCES / "kai-scheduler-v0.13.0.tar.gz").is_file(),
                                reason=f"the pinned KAI-Scheduler source is not in {SOURCES}")
ROLES = ("kai-scheduler", "kai-binder", "kai-podgrouper", "kai-queuecontroller", "kai-podgroupcontroller")


def _kai_processes() -> list[psutil.Process]:
    return processes(lambda exe: "/kai-v0.13.0/kai-" in exe)


@pytest.fixture(scope="module")
def built() -> Iterator[None]:
    """KAI built from the pinned archive (about 2 min cold), then reused from the cache."""
    install("kai")
    yield
    assert not _kai_processes(), "a KAI process outlived its run"


def test_kai_binds_every_pod_is_measured_and_down_leaves_nothing(built: None, kb_home: Path, tmp_path: Path) -> None:
    kwokbench("run", str(REPO / "scenarios/kai.yaml"), "--variant", "kai", "--out", str(tmp_path), "--profile",
              "scheduler", "--keep-cluster", env=ENV, check=True)
    run = only_run(tmp_path / "kai")
    try:
        _check_measured(run.meta, run.pods, run.summary)
        # kept with its cluster (--keep-cluster) until `down`
        alive = {Path(p.info["cmdline"][0]).name for p in _kai_processes()}
        assert alive == set(ROLES), alive
    finally:
        down = kwokbench("down", run.meta["cluster"]["name"])
    assert down.returncode == 0, down.stderr
    assert not _kai_processes()  # `down` leaves none of its processes


def _check_measured(meta: dict[str, Any], pods: Any, s: dict[str, Any] | None) -> None:
    assert meta["status"] == "complete"
    [sched] = meta["schedulers"]
    assert sched["kind"] == "kai" and sched["scheduler_name"] == "kai-scheduler"
    assert sched["version"].startswith("kai v0.13.0") and "sha256:518caaa1" in sched["version"]
    assert set(sched["helpers"]) == {"binder", "podgrouper", "queuecontroller", "podgroupcontroller"}
    fair = meta["fairness"]
    assert fair["kai"]["skew_to_control_plane"] == 2 and fair["scheduler_client_qps"] == 100000.0
    assert [q["name"] for q in fair["kai"]["queues"]] == ["default-parent-queue", "default-queue"]
    assert set(pods["scheduler"]) == {"kai-scheduler"}
    assert s is not None and s["pods_scheduled"] == 300 and s["pods_expected"] == 300
    k = s["kai"]
    # its own account: every pod once through its histogram, one pod group per bare pod, placed by allocate.
    # The scraper's last scrape may precede the last bindings by a second on a loaded host: counts within 5%
    pod, binds = k["pod_scheduling_seconds"]["count"], k["bind_request_seconds"]["count"]
    assert 285 <= pod <= 300 and binds == pod, k
    assert 285 <= k["podgroups_scheduled"].get("allocate", 0) <= 300, k["podgroups_scheduled"]
    assert "allocate" in k["actions_seconds"] and k["session_seconds"]["samples"] >= 2
    assert "default-queue" in k["queues"]
    # what each pod costs the apiserver: a PodGroup (podgrouper), a BindRequest (scheduler), a binding (binder),
    # against one binding and one event per pod for kube-scheduler
    writes = s["apiserver"]["writes"]["per_pod"]
    assert writes["pods/binding"] >= 0.95 and writes["bindrequests"] >= 0.95 and writes["podgroups"] >= 0.95, writes
    assert sum(writes.values()) > 6, writes
    procs = s["processes"]
    assert procs["kube-scheduler"]["cpu_seconds"] > 0  # its scheduler, measured as the run's scheduler
    assert all((procs.get(f"kai-{r}") or {}).get("cpu_seconds") for r in ("binder", "podgrouper")), procs
    prof = s["profiles"]["kube-scheduler"]  # pprof from its profiler port
    assert prof.get("file") and prof["top"], prof


def test_kai_tuned_as_its_scale_test_beside_kai_shipped(built: None, kb_home: Path, tmp_path: Path) -> None:
    """KAI as shipped and as its scale test tunes it (the binder's concurrency, consolidation off), each on a fresh
    cluster (33 s here): both bind every pod, and each process got the flags its variant names. The tuned one here
    also runs sessions every 500 ms and without the status controllers (``kai.schedule_period``,
    ``kai.status_controllers``)."""
    kwokbench("run", str(REPO / "scenarios/kai.yaml"), "--variant", "kai", "--variant", "kai-tuned", "--out",
              str(tmp_path), "--set", "workloads.0.count=100", "--set", "schedulers.2.kai.schedule_period=500ms",
              "--set", "schedulers.2.kai.status_controllers=false", env=ENV, check=True)
    runs = {r.meta["variant"]["name"]: r for r in (load_run(d) for d in (tmp_path / "kai").iterdir() if d.is_dir())}
    assert set(runs) == {"kai", "kai-tuned"}
    for name, run in runs.items():
        assert run.summary is not None and run.meta["status"] == "complete", name
        assert run.summary["pods_scheduled"] == 100, name
        [sched] = run.meta["schedulers"]
        tuned = name == "kai-tuned"
        assert ("--max-consolidation-preemptees=0" in sched["argv"]) is tuned
        assert ("--max-concurrent-reconciles=100" in sched["helpers"]["binder"]["argv"]) is tuned
        assert not any("max-concurrent" in a for a in sched["helpers"]["podgrouper"]["argv"])
        # the processes as they ran (command lines read from them): the scheduler's period, and the status
        # controllers running only where the variant keeps them
        ran = run.meta["command_lines"]
        assert f"--schedule-period={'500ms' if tuned else '1s'}" in ran["kube-scheduler"], ran["kube-scheduler"]
        status = {"kai-queuecontroller", "kai-podgroupcontroller"}
        assert (status & set(ran)) == (set() if tuned else status), sorted(ran)
        assert not (tuned and status & set(run.summary["processes"])), run.summary["processes"]
        assert set(sched["helpers"]) == {"binder", "podgrouper"} | (set() if tuned else {"queuecontroller",
                                                                                             "podgroupcontroller"})
    assert runs["kai-tuned"].meta["fairness"]["kai"]["process_args"] == {
        "binder": ["--max-concurrent-reconciles=100"]}
    tuned = runs["kai-tuned"].meta["fairness"]["kai"]
    assert tuned["schedule_period"] == "500ms" and tuned["status_controllers"] is False


def test_a_queue_is_held_to_its_limit_and_gangs_are_placed_whole(built: None, kb_home: Path,
                                                                  tmp_path: Path) -> None:
    """capped (limit 20 CPUs) over-submits 30 one-CPU pods; then 8 gangs of 8 meet the 60 CPUs left: the limit
    holds, and no gang is left partly placed."""
    res = kwokbench("run", str(REPO / "scenarios/kai-queues.yaml"), "--out", str(tmp_path), env=ENV)
    assert res.returncode == 0, res.stderr
    run = only_run(tmp_path / "kai-queues")
    placed = run.pods[run.pods["scheduled"].notna()].groupby("workload").size().to_dict()
    assert placed.get("capped") == 20, placed
    [g] = run.summary["placement"]["gangs"]
    assert g["gangs"] == 8 and g["partial"] == 0, g
    assert 1 <= g["complete"] <= 7 and placed.get("gangs", 0) == 8 * g["complete"], (g, placed)
    assert {"capped", "gangs"} <= set(run.summary["kai"]["queues"])


def test_tampered_archive_is_refused_before_anything_is_built(built: None, tmp_path: Path) -> None:
    src = tmp_path / "sources"
    src.mkdir()
    bad = src / "kai-scheduler-v0.13.0.tar.gz"
    shutil.copyfile(SOURCES / bad.name, bad)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    res = kwokbench("tools", "install", "kai", "--source", str(src))
    assert_one_line_error(res, "is not the pinned 518caaa10fcf32f6")
    assert "a corrupt or different archive is never built" in res.stderr
    doctor = kwokbench("tools", "doctor")
    assert "kai" in doctor.stdout and "from pinned archives" in doctor.stdout  # the good build is still there


def test_a_configuration_kai_refuses_is_its_own_one_line(built: None, kb_home: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text("schema_version: 1\nname: bad\ncluster: {node_groups: [{name: c, count: 5}]}\n"
                        "schedulers: [{name: k, binary: kai, kai: {config: {actions: 'allocate, nosuch'}}}]\n"
                        "workloads: [{name: p, count: 5}]\n")
    res = kwokbench("run", str(scenario), "--out", str(tmp_path / "out"), env=ENV)
    assert_one_line_error(res, "failed to find Action nosuch")
    assert "KAI's scheduler exited" in res.stderr
    assert not _kai_processes()
    run = only_run(tmp_path / "out" / "bad")  # the run is recorded as failed, with the reason
    assert run.meta["status"] == "failed" and "failed to find Action nosuch" in run.meta["error"]
    status = kwokbench("status")
    assert run.meta["cluster"]["name"] not in status.stdout + status.stderr  # its cluster is gone


@pytest.mark.parametrize(("queues", "needle"), [
    ("[{name: a, parent: nope}]", "a's parent nope is not one of the queues"),
    ("[{name: a, quota: {cpu: 10}, limit: {cpu: 4}}]", "a: cpu quota 10 is above its limit 4"),
])
def test_a_queue_kai_would_drop_is_one_line_before_any_cluster(kb_home: Path, tmp_path: Path, queues: str,
                                                               needle: str) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text("schema_version: 1\nname: bad\ncluster: {node_groups: [{name: c, count: 5}]}\n"
                        f"schedulers: [{{name: k, binary: kai, kai: {{queues: {queues}}}}}]\n"
                        "workloads: [{name: p, count: 5}]\n")
    res = kwokbench("run", str(scenario), "--out", str(tmp_path / "out"), env=ENV)
    assert_one_line_error(res, needle)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())  # nothing started
