"""Apache YuniKorn as a first-class variant, on real clusters: built from the pinned sources beside the repo
(``../shared/sources``), configured from a scenario's ``yunikorn:`` block, measured through its REST server;
queues capped at their configured share; gangs placed whole or not at all; and the bad inputs: a corrupt
archive, an invalid queue configuration (YuniKorn's own message), its fixed port already taken."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO, alive, assert_one_line_error, kwokbench
from tests.support.sources import ENV, SOURCES, install, only_run, processes

pytestmark = pytest.mark.skipif(not (SOURCES / "yunikorn-k8shim-v1.8.0.tar.gz").is_file(),
                                reason=f"the pinned YuniKorn sources are not in {SOURCES}")


def _yunikorn_processes() -> list[psutil.Process]:
    return processes(lambda exe: exe.endswith("/yunikorn-scheduler"))


@pytest.fixture(scope="module")
def built() -> Iterator[None]:
    """YuniKorn built from the pinned archives (about 2.5 min cold), then reused from the cache."""
    install("yunikorn")
    yield
    assert not _yunikorn_processes(), "a YuniKorn process outlived its run"


def test_yunikorn_binds_every_pod_and_is_measured(built: None, tmp_path: Path) -> None:
    """Its queues from a whole queues.yaml (``yunikorn.queues_file``): root.default declared with a guarantee and a
    max, which its own queue metrics report."""
    kwokbench("run", str(REPO / "scenarios/yunikorn-vs-kube-scheduler.yaml"), "--variant", "yunikorn-100ms",
              "--out", str(tmp_path), "--set", "cluster.node_groups.0.count=100", "--set", "workloads.0.count=500",
              "--set", "workloads.0.arrival.qps=200",
              "--set", "schedulers.2.yunikorn.queues_file=../tests/e2e/data/yunikorn-queues.yaml",
              "--profile", "scheduler", env=ENV, check=True)
    run = only_run(tmp_path / "yunikorn-vs-kube-scheduler")
    assert run.meta["status"] == "complete"
    [sched] = run.meta["schedulers"]
    assert sched["kind"] == "yunikorn" and sched["scheduler_name"] == "yunikorn"
    assert sched["version"].startswith("yunikorn v1.8.0") and "sha256:9e048bec" in sched["version"]
    fair = run.meta["fairness"]
    assert fair["yunikorn"]["configs"]["service.schedulingInterval"] == "100ms"
    assert fair["yunikorn"]["skew_to_control_plane"] == 2 and fair["scheduler_client_qps"] == 100000.0
    assert set(run.pods["scheduler"]) == {"yunikorn"}
    s = run.summary
    assert s is not None and s["pods_scheduled"] == 500
    y = s["yunikorn"]
    # its own metrics: every pod one allocation, 5 applications of 100 pods (the scenario's pods_per_app)
    assert y["allocation_attempts"].get("allocated") == 500
    assert y["applications"].get("new") == 5 and y["applications"].get("accepted") == 5
    assert y["scheduling_latency_seconds"]["count"] > 0
    assert y["queues"]["root.default"]["allocated_peak"]["pods"] == 500
    # queues_file: the queue as that file declares it (vcore in millicores), as YuniKorn reports it
    assert fair["yunikorn"]["configs"]["queues.yaml"] == (REPO / "tests/e2e/data/yunikorn-queues.yaml").read_text()
    assert y["queues"]["root.default"]["guaranteed"] == {"vcore": 100_000}, y["queues"]["root.default"]
    assert y["queues"]["root.default"]["max"] == {"vcore": 1_000_000}, y["queues"]["root.default"]
    # its shim posts three events per pod (Scheduling, Scheduled, PodBindSuccessful) where kube-scheduler
    # posts one (test_run): the apiserver's write counts show it
    writes = s["apiserver"]["writes"]["per_pod"]
    assert writes["pods/binding"] == 1.0 and 2.5 <= writes["events"] <= 3.0, writes
    assert (s["processes"].get("kube-scheduler") or {}).get("cpu_seconds")  # its CPU, as the run's scheduler
    prof = s["profiles"]["kube-scheduler"]  # pprof from its REST server
    assert prof.get("file") and prof["top"], prof
    assert not alive(sched["pid"])


def test_two_queues_are_held_to_their_configured_shares(built: None, tmp_path: Path) -> None:
    """tenant-a (max 100 CPUs) over-submits 150 one-CPU pods, tenant-b (max 60) submits 80: each gets
    exactly its max, the rest wait in its queue."""
    res = kwokbench("run", str(REPO / "scenarios/yunikorn-queues.yaml"), "--out", str(tmp_path),
                    "--set", "workloads.1.settle_seconds=8", env=ENV)  # not the 20 s time-out: 8 s without a bind
    assert res.returncode == 0, res.stderr
    run = only_run(tmp_path / "yunikorn-queues")
    placed = run.pods[run.pods["scheduled"].notna()].groupby("workload").size().to_dict()
    assert placed == {"tenant-a": 100, "tenant-b": 60}
    q = run.summary["yunikorn"]["queues"]
    assert q["root.tenant-a"]["allocated_peak"]["vcore"] == 100_000 and q["root.tenant-a"]["max"]["vcore"] == 100_000
    assert q["root.tenant-b"]["allocated_peak"]["vcore"] == 60_000
    assert q["root.tenant-a"]["guaranteed"]["vcore"] == 80_000
    assert q["root.tenant-a"]["share_of_guarantee_mean"]["vcore"] > 0.5
    assert len(q["root.tenant-a"]["series"]["t"]) >= 5  # a series over time, for the report


def test_gangs_are_placed_whole_or_not_at_all(built: None, tmp_path: Path) -> None:
    """8 gangs of 12 one-CPU pods on 80 CPUs: YuniKorn's task groups reserve a gang whole (placeholders)
    before any member binds, so no gang is left partly placed. The partition's placement rules are the variant's
    (``yunikorn.placement_rules``): every application in root.gangs, whatever queue its pods' label names."""
    res = kwokbench("run", str(REPO / "scenarios/yunikorn-gangs.yaml"), "--variant", "yunikorn", "--out",
                    str(tmp_path), "--set", "cluster.node_groups.0.count=10", "--set", "workloads.0.count=96",
                    "--set", "workloads.0.settle_seconds=10",  # ends 10 s after the last bind
                    "--set", "schedulers.2.yunikorn.placement_rules=[{name: fixed, value: root.gangs, create: true}]",
                    env=ENV)
    assert res.returncode == 0, res.stderr
    run = only_run(tmp_path / "yunikorn-gangs")
    [g] = run.summary["placement"]["gangs"]
    assert g["gangs"] == 8 and g["partial"] == 0, g
    assert 1 <= g["complete"] <= 6, g  # 80 CPUs hold at most 6 gangs of 12
    # the pods are labelled root.default; the fixed rule put their applications in root.gangs, made for them
    assert set(run.pods["scheduler"]) == {"yunikorn"}
    q = run.summary["yunikorn"]["queues"]
    assert "root.gangs" in q and "root.default" not in q, sorted(q)
    assert q["root.gangs"]["allocated_peak"]["pods"] >= 12 * g["complete"], q["root.gangs"]


def test_corrupt_archive_is_refused_and_the_cached_build_kept(built: None, tmp_path: Path) -> None:
    src = tmp_path / "sources"
    shutil.copytree(SOURCES, src)
    bad = src / "yunikorn-core-v1.8.0-1.tar.gz"
    bad.chmod(0o644)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    res = kwokbench("tools", "install", "yunikorn", "--source", str(src))
    assert_one_line_error(res, "is not the pinned 9c476ae7bd08b4e8")
    doctor = kwokbench("tools", "doctor")
    assert "from pinned archives" in doctor.stdout  # the good build is still there


def test_invalid_queue_configuration_is_yunikorns_own_one_line(built: None, tmp_path: Path) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text("schema_version: 1\nname: bad\ncluster: {node_groups: [{name: c, count: 5}]}\n"
                        "schedulers: [{name: yk, binary: yunikorn, yunikorn: {queues: [{name: a, "
                        "guaranteed: {vcore: 100}, max: {vcore: 10}}]}}]\nworkloads: [{name: p, count: 5}]\n")
    res = kwokbench("run", str(scenario), "--out", str(tmp_path / "out"), env=ENV)
    assert_one_line_error(res, "guaranteed resource map is larger than maximum resource map for queue a")
    assert "YuniKorn exited with code" in res.stderr
    assert not _yunikorn_processes()
    run = only_run(tmp_path / "out" / "bad")  # the run is recorded as failed, with the reason
    assert run.meta["status"] == "failed" and "guaranteed resource map" in run.meta["error"]
    status = kwokbench("status")
    assert run.meta["cluster"]["name"] not in status.stdout + status.stderr  # its cluster is gone


def test_its_fixed_port_taken_is_one_line(built: None, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", 9080))
        s.listen()
        res = kwokbench("run", str(REPO / "scenarios/yunikorn-queues.yaml"), "--out", str(tmp_path), env=ENV)
    assert_one_line_error(res, "port 9080 is taken")
    assert not _yunikorn_processes()
    # found before the cluster was created: the run never recorded one (no kubeconfig)
    run = only_run(tmp_path / "yunikorn-queues")
    assert run.meta["status"] == "failed" and "kubeconfig" not in run.meta["cluster"]
