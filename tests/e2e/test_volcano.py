"""Volcano as a first-class variant, on real clusters: built once from the pinned archive beside the repo
(``../shared/sources``), its two processes started against each run's cluster, measured through its /metrics;
gangs placed whole or not at all; Volcano Jobs made into pods by its own job controller; a queue's capability
holding; and the bad inputs: a tampered archive, an invalid queue (Volcano's own Queue schema), a configuration it
refuses, a flag it refuses at start — each one line, exit 2, no process left. Small clusters (≤ 100 nodes, ≤ 500
pods) and figures as ratios: the host is shared."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from kwokbench.cluster import processes as processes_module
from tests.conftest import REPO, assert_one_line_error, kwokbench
from tests.support.sources import ENV, SOURCES, install, only_run, processes

ARCHIVE = "volcano-v1.15.1.tar.gz"
CONF_FILE = "../tests/e2e/data/volcano-scheduler.conf"
"""A whole volcano-scheduler.conf, relative to the scenario (scenarios/)."""
pytestmark = pytest.mark.skipif(not (SOURCES / ARCHIVE).is_file(),
                                reason=f"the pinned Volcano source is not in {SOURCES}")


def _volcano_processes() -> list[psutil.Process]:
    return processes(lambda exe: exe.endswith(("/vc-scheduler", "/vc-controller-manager", "/vc-agent-scheduler")))


@pytest.fixture(scope="module")
def built(kb_home: Path) -> Iterator[None]:
    """Volcano built from the pinned archive (a few minutes cold), then reused from the cache; every run of this
    module in its own KWOKBENCH_HOME (``status`` and ``down`` see only these clusters)."""
    install("volcano")
    yield
    assert not _volcano_processes(), "a Volcano process outlived its run"


def _plugins(conf: str) -> set[str]:
    return {p["name"] for t in yaml.safe_load(conf)["tiers"] for p in t["plugins"]}


def _scenario(tmp_path: Path, schedulers: str, nodes: int = 5) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(f"schema_version: 1\nname: bad\ncluster: {{node_groups: [{{name: c, count: {nodes}}}], "
                    f"controller_manager: false}}\nschedulers: {schedulers}\nworkloads: [{{name: p, count: 5}}]\n")
    return path


def test_volcano_binds_every_pod_is_measured_and_down_stops_it(built: None, kb_home: Path, tmp_path: Path) -> None:
    """Its configuration from a whole file (``volcano.conf_file``: the chart's without overcommit), which the
    plugins in its metrics show it read."""
    res = kwokbench("run", str(REPO / "scenarios/volcano.yaml"), "--variant", "volcano", "--out", str(tmp_path),
                    "--set", "workloads.0.count=300", "--set", f"schedulers.1.volcano.conf_file={CONF_FILE}",
                    "--profile", "scheduler", "--keep-cluster", env=ENV, check=True)
    run = only_run(tmp_path / "volcano")
    cluster = run.meta["cluster"]["name"]
    # the kept Volcano's socket directory (outside the cluster's: a socket's path is short) is the cluster's
    scratch = processes_module.scratch_of(kb_home / "kwok" / "clusters" / cluster)
    try:
        assert scratch and all(d.is_dir() for d in scratch)
        assert run.meta["status"] == "complete"
        [sched] = run.meta["schedulers"]
        assert sched["kind"] == "volcano" and sched["scheduler_name"] == "volcano"
        assert sched["version"].startswith("volcano v1.15.1") and "sha256:06f81ed1" in sched["version"]
        assert sched["controller_manager"]["component"] == "vc-controller-manager"
        fair = run.meta["fairness"]["volcano"]
        assert fair["skew_to_control_plane"] == 1 and "binpack" in fair["scheduler_conf"]
        assert set(run.pods["scheduler"]) == {"volcano"}
        s = run.summary
        assert s is not None and s["pods_scheduled"] == 300, res.stdout
        v = s["volcano"]
        # its own metrics: sessions (how long each takes depends on the host: no absolute figure), the actions in
        # them (each shorter than the session holding it), every pod bound in its own metric
        sess = v["session_seconds"]
        assert sess["count"] >= 3 and sess["p99"] >= sess["p50"] > 0
        assert all(a["mean"] <= sess["mean"] for a in v["action_seconds"].values()), v["action_seconds"]
        assert v["task_latency_seconds"]["Bound"]["count"] >= 0.95 * 300  # the last ones may miss the last scrape
        assert {"enqueue", "allocate", "backfill"} <= set(v["action_seconds"])
        # conf_file: the file it was given is the scenario's, and the plugins it ran each session are that file's
        # (the chart's and its own built-in fallback both have overcommit)
        assert f"--scheduler-conf={sched['conf']}" in run.meta["command_lines"]["kube-scheduler"]
        assert Path(sched["conf"]).read_text() == (REPO / "scenarios" / CONF_FILE).read_text() == fair["scheduler_conf"]
        assert set(v["plugin_seconds"]["OnSessionOpen"]) == _plugins(fair["scheduler_conf"]), v["plugin_seconds"]
        assert v["queues"]["default"]["allocated_milli_cpu_peak"] == 300 * 100
        # the pg-controller creates a PodGroup per pod and patches the pod to name it; each session's close writes
        # the PodGroups' status (Pending → Inqueue → Running): the apiserver's writes per pod show it all
        writes = s["apiserver"]["writes"]["per_pod"]
        assert writes["pods/binding"] == 1.0 and 1.9 <= writes["pods"] <= 2.1, writes
        assert 2.0 <= writes["podgroups"] <= 4.5, writes
        procs = s["processes"]
        assert procs["kube-scheduler"]["cpu_seconds"] and procs["vc-controller-manager"]["cpu_seconds"]
        prof = s["profiles"]["kube-scheduler"]  # pprof from its metrics server
        assert prof.get("file") and prof["top"], prof
        # --keep-cluster keeps both processes with the cluster; down stops them
        live = _volcano_processes()
        assert {p.name() for p in live} >= {"vc-scheduler", "vc-controller-manager"}
    finally:
        kwokbench("down", cluster, check=True)
    assert not _volcano_processes()
    assert not any(d.exists() for d in scratch)  # each run left one in /tmp before


def test_the_agent_scheduler_binds_bare_pods_alone(built: None, tmp_path: Path) -> None:
    """Volcano's agent-scheduler as its own benchmark runs bare pods: it alone, no sessions or PodGroups,
    one binding per pod; measured by the apiserver and its CPU (it serves no /metrics). 12 s here. Run from pytest's
    deep temporary folders, this is also the check that its klog socket is bound (CI's path was 112 bytes long)."""
    kwokbench("run", str(REPO / "scenarios/volcano.yaml"), "--variant", "volcano-agent", "--out", str(tmp_path),
              "--set", "workloads.0.count=300",
              "--set", "schedulers.2.volcano.agent_scheduler_args=[--scheduler-worker-count=2]", env=ENV, check=True)
    run = only_run(tmp_path / "volcano")
    [sched] = run.meta["schedulers"]
    assert Path(sched["argv"][0]).name == "vc-agent-scheduler" and "--scheduler-name=volcano" in sched["argv"]
    # agent_scheduler_args: the running process's command line (read from the process) carries the flag, which it
    # took (a flag it refuses makes it exit at start)
    ran = run.meta["command_lines"]["kube-scheduler"]
    assert Path(ran[0]).name == "vc-agent-scheduler" and ran[-1] == "--scheduler-worker-count=2", ran
    assert run.meta["fairness"]["volcano"]["agent_scheduler"]["args"] == ["--scheduler-worker-count=2"]
    s = run.summary
    assert s is not None and "controller_manager" not in sched and "volcano" not in s  # it alone; no /metrics
    assert run.meta["fairness"]["volcano"]["agent_scheduler"]["conf"].startswith('actions: "allocate"')
    assert s["pods_scheduled"] == 300 and set(run.pods["scheduler"]) == {"volcano"}
    writes = s["apiserver"]["writes"]["per_pod"]
    assert writes["pods/binding"] == 1.0 and "podgroups" not in writes, writes  # no PodGroup per pod
    assert s["processes"]["kube-scheduler"]["cpu_seconds"] > 0  # its CPU, as the run's scheduler
    assert not _volcano_processes()


def test_gangs_are_placed_whole_or_not_at_all(built: None, tmp_path: Path) -> None:
    """12 gangs of 8 one-CPU pods on 80 CPUs: Volcano's gang plugin binds a gang whole or leaves it pending. Its
    configuration is the variant's own actions, tiers and configurations (no backfill, no overcommit or binpack):
    the actions and plugins it reports running are those."""
    res = kwokbench("run", str(REPO / "scenarios/volcano-gangs.yaml"), "--variant", "volcano", "--out", str(tmp_path),
                    "--set", "workloads.0.settle_seconds=10",  # ends 10 s after the last bind
                    "--set", "schedulers.1.volcano.actions=[enqueue, allocate]",
                    "--set", "schedulers.1.volcano.tiers=[{plugins: [{name: priority}, {name: gang, enablePreemptable: "
                             "false}, {name: conformance}]}, {plugins: [{name: drf, enablePreemptable: false}, "
                             "{name: predicates}, {name: proportion}, {name: nodeorder}]}]",
                    "--set", "schedulers.1.volcano.configurations=[{name: allocate, arguments: "
                             "{predicateErrorCacheEnable: true}}]", env=ENV)
    assert res.returncode == 0, res.stderr
    run = only_run(tmp_path / "volcano-gangs")
    [g] = run.summary["placement"]["gangs"]
    assert g["gangs"] == 12 and g["partial"] == 0, g
    assert 1 <= g["complete"] <= 10, g  # 80 CPUs hold at most 10 gangs of 8
    v = run.summary["volcano"]
    assert v["task_latency_seconds"]["Bound"]["count"] == 8 * g["complete"]
    # what vc-scheduler ran each session is the variant's configuration, not the chart's or its built-in fallback
    # (both with backfill and overcommit); the configurations rode in the same file, which it accepted
    conf = run.meta["fairness"]["volcano"]["scheduler_conf"]
    assert set(v["action_seconds"]) == {"enqueue", "allocate"}, v["action_seconds"]
    assert set(v["plugin_seconds"]["OnSessionOpen"]) == _plugins(conf) == {
        "priority", "gang", "conformance", "drf", "predicates", "proportion", "nodeorder"}, v["plugin_seconds"]
    assert yaml.safe_load(conf)["configurations"] == [{"name": "allocate",
                                                       "arguments": {"predicateErrorCacheEnable": True}}]
    [sched] = run.meta["schedulers"]
    assert f"--scheduler-conf={sched['conf']}" in run.meta["command_lines"]["kube-scheduler"]


def test_volcano_jobs_are_placed_by_their_own_controller_whole_or_not_at_all(built: None, tmp_path: Path) -> None:
    """Five Volcano Jobs (batch.volcano.sh) of 8 four-CPU pods on 64 CPUs: vc-controller-manager's job controller
    makes each Job's PodGroup, and its pods once vc-scheduler enqueued it; two Jobs fit whole (16 pods), the
    others wait whole in the queue with no pod made. What kwokbench submitted were the Jobs."""
    res = kwokbench("run", str(REPO / "scenarios/volcano.yaml"), "--variant", "volcano", "--out", str(tmp_path),
                    "--set", "cluster.node_groups.0.count=2", "--set", "cluster.controller_manager=true",
                    "--set", "workloads.0.template=volcano-job", "--set", "workloads.0.count=5",
                    "--set", "workloads.0.params={replicas: 8, cpu: '4', memory: 1Gi}",
                    "--set", "workloads.0.settle_seconds=10",  # ends 10 s after the last bind
                    "--set", "workloads.0.complete_after=10m", env=ENV)  # kwok would complete a Job's pods at once
    assert res.returncode == 0, res.stdout + res.stderr
    run = only_run(tmp_path / "volcano")
    s = run.summary
    assert s is not None and s["pods_expected"] == 40 and s["pods_scheduled"] == 16, (s["pods_expected"],
                                                                                     s["pods_scheduled"])
    [phase] = run.meta["phases"]
    assert phase["kind"] == "VolcanoJob" and phase["pods_expected"] == 40
    bound = run.pods[run.pods["scheduled"].notna()]
    jobs = bound["name"].str.rsplit("-worker-", n=1).str[0].value_counts()
    assert len(jobs) == 2 and set(jobs) == {8}, jobs  # two Jobs whole, none partly
    assert set(run.pods["scheduler"]) == {"volcano"}
    writes = s["apiserver"]["writes"]["per_pod"]
    assert writes.get("podgroups", 0) > 0, writes  # the Jobs' PodGroups, made by the job controller


def test_a_queue_is_held_to_its_capability(built: None, tmp_path: Path) -> None:
    """tenant-a (capability 20 CPUs) and tenant-b (30) each submit 40 one-CPU pods on 160 CPUs: each gets exactly
    its capability, the rest wait in its queue."""
    res = kwokbench("run", str(REPO / "scenarios/volcano-queues.yaml"), "--out", str(tmp_path),
                    "--set", "workloads.1.settle_seconds=8", env=ENV)  # not the 20 s time-out: 8 s without a bind
    assert res.returncode == 0, res.stderr
    run = only_run(tmp_path / "volcano-queues")
    placed = run.pods[run.pods["scheduled"].notna()].groupby("workload").size().to_dict()
    assert placed == {"tenant-a": 20, "tenant-b": 30}
    q = run.summary["volcano"]["queues"]
    assert q["tenant-a"]["allocated_milli_cpu_peak"] == 20_000 and q["tenant-a"]["request_milli_cpu_peak"] == 40_000
    assert q["tenant-b"]["allocated_milli_cpu_peak"] == 30_000
    assert len(q["tenant-a"]["series"]["t"]) >= 5  # a series over time


def test_tampered_archive_is_refused_before_anything_is_built(built: None, tmp_path: Path) -> None:
    src = tmp_path / "sources"
    src.mkdir()
    bad = src / ARCHIVE
    shutil.copyfile(SOURCES / ARCHIVE, bad)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    res = kwokbench("tools", "install", "volcano", "--source", str(src))
    assert_one_line_error(res, "is not the pinned 06f81ed19cabc6d2")
    assert "building volcano" not in res.stdout + res.stderr  # refused before the build starts
    doctor = kwokbench("tools", "doctor")
    assert "volcano" in doctor.stdout and "from pinned archives" in doctor.stdout  # the good build is still there


@pytest.mark.parametrize(("volcano", "needle"), [
    # the apiserver checks the Queue against Volcano's own CRD schema (weight 1–65535)
    ("{queues: [{name: a, weight: 0}]}", "Volcano's Queue schema refused queue a: Queue.scheduling.volcano.sh "
                                         "\"a\" is invalid: spec.weight"),
    # vc-scheduler would log this and fall back to its built-in configuration
    ("{actions: 'enqueue, allocate, nonsense'}", "vc-scheduler refused its configuration: failed to find Action"),
    # a flag its command line refuses: it exits at start
    ("{scheduler_args: [--schedule-period=banana]}", "vc-scheduler exited with code 2 after"),
], ids=["invalid-queue", "invalid-conf", "bad-flag"])
def test_what_volcano_refuses_is_its_own_one_line(built: None, tmp_path: Path, volcano: str, needle: str) -> None:
    scenario = _scenario(tmp_path, f"[{{name: vc, binary: volcano, volcano: {volcano}}}]")
    res = kwokbench("run", str(scenario), "--out", str(tmp_path / "out"), env=ENV)
    assert_one_line_error(res, needle)
    assert not _volcano_processes()
    run = only_run(tmp_path / "out" / "bad")  # the run is recorded as failed, with the reason
    assert run.meta["status"] == "failed" and needle.split(":")[0] in run.meta["error"]
    status = kwokbench("status")
    assert run.meta["cluster"]["name"] not in status.stdout + status.stderr  # its cluster is gone
