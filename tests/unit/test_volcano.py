"""Volcano, the pure parts: its settings and their errors (through the scenario loader), the rendered
volcano-scheduler.conf and Queue objects, what it writes into pods and gang PodGroups, its reasons from its logs,
the summary section from real v1.15.1 ``/metrics`` payloads (golden files recorded from a run here), and its pinned
source. The processes themselves run against real clusters (tests/e2e/test_volcano.py)."""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kwokbench import scheduler_kinds
from kwokbench.cluster import processes
from kwokbench.components import Setup
from kwokbench.components import volcano as vc
from kwokbench.errors import ScenarioError
from kwokbench.metrics import derive
from kwokbench.plan import check_scenario, gang_factory, manifest_factories
from kwokbench.scenario import Scenario, parse_scenario

GOLDEN = Path(__file__).parent / "golden"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "sources"
HEAD = "schema_version: 1\nname: s\ncluster: {node_groups: [{name: c, count: 3}]}\n"


def _scenario(schedulers: str, workloads: str = "[{name: p, count: 10}]") -> Scenario:
    return parse_scenario(HEAD + f"schedulers: {schedulers}\nworkloads: {workloads}\n")


def _kind(sc: Scenario, tmp_path: Path, i: int = 0) -> vc.Volcano:
    return vc.Volcano(Setup(sc, tmp_path, sc.schedulers[i], None))  # type: ignore[arg-type]


def test_it_is_a_registered_kind() -> None:
    k = scheduler_kinds.registry()["volcano"]
    assert k is vc.Volcano and k.recipe is vc.RECIPE and "volcano" in scheduler_kinds.workload_blocks()
    assert scheduler_kinds.with_sections()["volcano"] is vc.Volcano


def test_default_configuration_is_the_charts(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano}]")
    v = sc.schedulers[0]
    assert v.effective_scheduler_name == "volcano" and v.volcano is None
    conf = yaml.safe_load(vc.scheduler_conf(v.volcano, tmp_path))
    assert conf == {"actions": "enqueue, allocate, backfill", "tiers": vc.DEFAULT_TIERS}
    assert vc.queue_objects(v.volcano) == []
    assert _kind(sc, tmp_path).queues() == ["default"]


def test_default_tiers_match_the_pinned_chart() -> None:
    archive = SHARED / vc.SOURCES[0].archive
    if not archive.is_file():
        pytest.skip(f"no {archive}")
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers()
                      if m.name.endswith("installer/helm/chart/volcano/config/volcano-scheduler.conf"))
        f = tar.extractfile(member)
        assert f is not None
        chart = yaml.safe_load(f.read())
    assert chart == {"actions": vc.DEFAULT_ACTIONS, "tiers": vc.DEFAULT_TIERS}


def test_actions_tiers_and_configurations_are_rendered(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {actions: [enqueue, allocate, preempt, backfill], "
                   "tiers: [{plugins: [{name: gang, enablePreemptable: false}, {name: binpack, arguments: "
                   "{binpack.weight: 10}}]}], configurations: [{name: enqueue, arguments: "
                   "{overcommit-factor: 1.5}}]}}]")
    conf = yaml.safe_load(vc.scheduler_conf(sc.schedulers[0].volcano, tmp_path))
    assert conf["actions"] == "enqueue, allocate, preempt, backfill"
    assert conf["tiers"] == [{"plugins": [{"name": "gang", "enablePreemptable": False},
                                          {"name": "binpack", "arguments": {"binpack.weight": 10}}]}]
    assert conf["configurations"] == [{"name": "enqueue", "arguments": {"overcommit-factor": 1.5}}]


def test_conf_file_is_read_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "v.conf").write_text('actions: "allocate"\n')
    spec = _scenario("[{name: v, binary: volcano, volcano: {conf_file: v.conf}}]").schedulers[0].volcano
    assert vc.scheduler_conf(spec, tmp_path) == 'actions: "allocate"\n'
    assert spec is not None
    with pytest.raises(ScenarioError, match=re.escape("volcano.conf_file missing.conf")):
        vc.scheduler_conf(spec.model_copy(update={"conf_file": "missing.conf"}), tmp_path)


def test_queues_become_queue_objects() -> None:
    spec = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a, weight: 3, capability: {cpu: 20, "
                     "memory: 80Gi}, guarantee: {cpu: 4}, deserved: {cpu: 10}, reclaimable: false, priority: 2}, "
                     "{name: b}]}}]").schedulers[0].volcano
    a, b = vc.queue_objects(spec)
    assert a["apiVersion"] == "scheduling.volcano.sh/v1beta1" and a["kind"] == "Queue"
    assert a["metadata"]["name"] == "a"
    # quantities stay strings for the apiserver to parse; guarantee is spec.guarantee.resource
    assert a["spec"] == {"weight": 3, "reclaimable": False, "capability": {"cpu": "20", "memory": "80Gi"},
                         "deserved": {"cpu": "10"}, "guarantee": {"resource": {"cpu": "4"}}, "priority": 2}
    # weight and reclaimable written out: no admission webhook defaults them
    assert b["spec"] == {"weight": 1, "reclaimable": True}


@pytest.mark.parametrize(("schedulers", "message"), [
    ("[{name: v, binary: volcano, scheduler_name: other}]", "Volcano serves schedulerName volcano only"),
    ("[{name: v, binary: volcano, config: c.yaml}]", "schedulers.0.config: not a setting of binary: volcano"),
    ("[{name: v, volcano: {}}]", r"not a setting of binary: kube-scheduler \(it applies to binary: volcano\)"),
    ("[{name: v, binary: volcano, volcano: {conf_file: v.conf, tiers: []}}]", "give conf_file or tiers, not both"),
    ("[{name: v, binary: volcano, volcano: {queues: [{name: root}]}}]", "queue root is Volcano's own"),
    ("[{name: v, binary: volcano, volcano: {queues: [{name: a}, {name: a}]}}]", "volcano.queues: a given twice"),
    ("[{name: v, binary: volcano, volcano: {queues: [{name: A_b}]}}]", "String should match pattern"),
    ("[{name: v, binary: volcano, volcano: {queues: [{name: a, limit: {cpu: 1}}]}}]", "limit: Extra inputs"),
    ("[{name: v, binary: volcano, volcano: {tiers: [{plugins: [{enablePreemptable: true}]}]}}]",
     r"tiers\.0\.plugins\.0\.name: Field required"),
    ("[{name: v, binary: volcano, volcano: {scheduler_args: [v=3]}}]", "'v=3' is not a flag"),
    ("[{name: v, binary: volcano, volcano: {schedule_period_seconds: 0}}]", "greater than 0"),
    ("[{name: v, binary: volcano, volcano: {agent_scheduler_args: [--scheduler-worker-count=2]}}]",
     "agent_scheduler_args: set agent_scheduler: true too"),
    ("[{name: v, binary: volcano, volcano: {agent_scheduler: true, agent_scheduler_args: [--kube-api-qps=5]}}]",
     "kwokbench sets --kube-api-qps itself"),
    ("[{name: v, binary: volcano, volcano: {agent_scheduler: true, queues: [{name: a}], "
     "schedule_period_seconds: 0.1}}]",
     "volcano: queues, schedule_period_seconds: settings of vc-scheduler or its controllers"),
])
def test_bad_volcano_variants_are_one_line(schedulers: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as e:
        _scenario(schedulers)
    assert "\n" not in str(e.value).strip() or str(e.value).count("\n") <= 1


def test_a_workload_must_name_a_queue_of_the_variant(tmp_path: Path) -> None:
    ok = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a}]}}]",
                   "[{name: p, count: 2, volcano: {queue: a}}, {name: q, count: 2}]")
    check_scenario(ok, tmp_path)
    bad = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a}]}}]",
                    "[{name: p, count: 2, volcano: {queue: b}}]")
    with pytest.raises(ScenarioError, match=re.escape("volcano.queue b is not a queue of scheduler v (its queues: "
                                                      "default, a)")):
        check_scenario(bad, tmp_path)
    # a kube-scheduler variant of the same scenario ignores the block
    check_scenario(_scenario("[{name: d}]", "[{name: p, count: 2, volcano: {queue: b}}]"), tmp_path)


def test_client_limits() -> None:
    off = vc.client_limits(False, None, None)
    assert off == {"scheduler": (vc.UNLIMITED_CLIENT,) * 2, "controller_manager": (vc.UNLIMITED_CLIENT,) * 2}
    assert vc.client_limits(True, None, None) == {"scheduler": (2000, 2000), "controller_manager": (50, 100)}
    assert vc.client_limits(True, 80.0, None)["scheduler"] == (80, 80)
    assert vc.client_limits(False, 80.0, 120)["scheduler"] == (80, 120)


def test_pods_carry_scheduler_name_and_queue(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a}]}}]",
                   "[{name: p, count: 4, volcano: {queue: a}}, {name: q, count: 2}]")
    f, g = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    pod = json.loads(f.body(3))
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {vc.QUEUE_ANNOTATION: "a"}  # no group: the pg-controller makes one
    assert json.loads(g.body(0))["metadata"]["annotations"] == {vc.QUEUE_ANNOTATION: "default"}
    sc2 = _scenario("[{name: d}]", "[{name: p, count: 4, volcano: {queue: a}}]")
    plain = json.loads(manifest_factories(sc2, tmp_path, "lbl", variant=sc2.schedulers[0])[0].body(0))
    assert plain["spec"]["schedulerName"] == "default-scheduler" and "annotations" not in plain["metadata"]


def test_a_gang_is_one_volcano_podgroup(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a}]}}]",
                   "[{name: g, count: 16, gang: {size: 8, min_member: 6}, params: {cpu: 500m, memory: 1Gi}, "
                   "volcano: {queue: a}}]")
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    a, b = json.loads(f.body(7)), json.loads(f.body(8))
    assert a["metadata"]["annotations"][vc.GROUP_ANNOTATION] == "g-lbl-gang-0"
    assert b["metadata"]["annotations"][vc.GROUP_ANNOTATION] == "g-lbl-gang-1"
    pg = json.loads(gang_factory(sc.workloads[0], f, tmp_path).body(1))
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == "g-lbl-gang-1"
    # minResources as Volcano's job controller writes them: minMember × the pod's requests
    assert pg["spec"] == {"minMember": 6, "queue": "a", "minResources": {"cpu": "3000m", "memory": "6442450944"}}


def test_gangs_are_refused_with_concurrent_schedulers(tmp_path: Path) -> None:
    sc = parse_scenario(HEAD + "concurrent_schedulers: true\nschedulers: [{name: d}, {name: v, binary: volcano}]\n"
                        "workloads: [{name: g, count: 16, gang: {size: 8}}]\n")
    with pytest.raises(ScenarioError, match=r"Volcano's gangs .* do not run with concurrent_schedulers"):
        check_scenario(sc, tmp_path)


def test_the_agent_scheduler_takes_bare_pods_only(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {agent_scheduler: true, "
                   "agent_scheduler_args: [--scheduler-worker-count=2]}}]",
                   "[{name: p, count: 4, volcano: {queue: a}}]")
    check_scenario(sc, tmp_path)  # the phase's queue is not the agent's business
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    pod = json.loads(f.body(0))
    assert pod["spec"]["schedulerName"] == "volcano" and "annotations" not in pod["metadata"]
    v = _kind(sc, tmp_path).fairness()["volcano"]
    assert v["agent_scheduler"] == {"conf": vc.AGENT_CONF, "args": ["--scheduler-worker-count=2"]}
    assert yaml.safe_load(vc.AGENT_CONF) == {"actions": "allocate",
                                             "tiers": [{"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}]}
    gangs = _scenario("[{name: v, binary: volcano, volcano: {agent_scheduler: true}}]",
                      "[{name: g, count: 16, gang: {size: 8}}]")
    with pytest.raises(ScenarioError, match="agent-scheduler places pods one at a time, not gangs"):
        check_scenario(gangs, tmp_path)


def test_fairness_records_version_skew_conf_and_queues(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a, capability: {cpu: 4}}]}}]")
    f = _kind(sc, tmp_path).fairness()
    assert f["scheduler_client_qps"] == float(vc.UNLIMITED_CLIENT)
    v = f["volcano"]
    assert v["version"] == "v1.15.1" and v["kubernetes"] == "v1.35.3" and v["skew_to_control_plane"] == 1
    assert yaml.safe_load(v["scheduler_conf"])["actions"] == vc.DEFAULT_ACTIONS
    assert v["queues"][0]["spec"]["capability"] == {"cpu": "4"}
    assert v["admission_webhooks"] is False and v["controller_manager"]["controllers"] == "*,-sharding-controller"
    assert vc.Volcano.fairness_from == {"volcano": ("binary", "volcano")}


def test_fatal_line_is_volcanos_own_reason(tmp_path: Path) -> None:
    log = tmp_path / "v.log"
    log.write_text("I1125 15:30:00.000000   12 server.go:10] starting\n"
                   "F1125 15:30:01.000000   12 cache.go:514] failed to init root queue: connection refused\n"
                   "goroutine 1 [running]:\n")
    assert vc.fatal_line(log) == "failed to init root queue: connection refused"
    log.write_text('invalid argument "x" for "--schedule-period" flag: time: invalid duration "x"\n'
                   "Usage of vc-scheduler:\n      --version   Show version and quit\n")
    assert vc.fatal_line(log) == 'invalid argument "x" for "--schedule-period" flag: time: invalid duration "x"'
    log.write_text("plain last line\n")
    assert vc.fatal_line(log) is None and vc.fatal_line(tmp_path / "none.log") is None


def test_refused_configuration_is_its_own_line(tmp_path: Path) -> None:
    log = tmp_path / "v.log"
    log.write_text("I1125 15:30:00.000000   12 x.go:1] up\n"
                   "E1125 15:30:00.100000   12 scheduler.go:190] Scheduler config actions: enqueue, nonsense\n"
                   "tiers:\n- plugins:\n  - name: gang is invalid: failed to find Action  nonsense\n")
    assert vc.refused_configuration(log) == "failed to find Action  nonsense"
    log.write_text("E1125 15:30:01.000000   12 framework.go:45] Failed to get plugin gangg.\n")
    assert vc.refused_configuration(log) == "no plugin named gangg (it skips it every session)"
    log.write_text("I1125 15:30:00.000000   12 x.go:1] up\n")
    assert vc.refused_configuration(log) is None


def _series() -> pd.DataFrame:
    rows = []
    for t, name in ((100.0, "first"), (110.0, "last")):
        text = gzip.decompress((GOLDEN / f"volcano-{name}.prom.gz").read_bytes()).decode()
        rows.append((t, "kube-scheduler", derive.SCRAPED, "{}", 1.0))
        for n, labels, v in derive.parse_payload(text, derive.keep_of("kube-scheduler")):
            rows.append((t, "kube-scheduler", n, json.dumps(labels, sort_keys=True), v))
    return pd.DataFrame(rows, columns=["t", "component", "name", "labels", "value"])


def test_section_from_real_volcano_metrics() -> None:
    """A volcano-queues run: 40 one-CPU pods each in queues tenant-a (capability 20 CPUs) and tenant-b (30)."""
    s = _series()
    v = vc.volcano_section(s, "kube-scheduler", (100.0, 110.0), {"cpu_seconds": 0.5})
    assert v is not None and v["cpu_seconds"] == 0.5
    sess = v["session_seconds"]
    assert sess["count"] >= 5 and 0 < sess["mean"] < 1  # seconds, though the family says milliseconds
    assert {"enqueue", "allocate", "backfill"} <= set(v["action_seconds"])
    assert "gang" in v["plugin_seconds"]["OnSessionOpen"]
    assert v["task_latency_seconds"]["Bound"]["count"] == 50  # the pods it bound in the run
    assert v["unschedulable_jobs_max"] == 30  # the PodGroups (one per pod) beyond both capabilities
    assert "volcano_schedule_attempts_total" not in vc.KEEP  # declared, never incremented by vc-scheduler
    a, b = v["queues"]["tenant-a"], v["queues"]["tenant-b"]
    assert a["allocated_milli_cpu_peak"] == 20_000 and a["request_milli_cpu_peak"] == 40_000
    assert b["allocated_milli_cpu_peak"] == 30_000 and b["request_milli_cpu_peak"] == 40_000
    assert a["series"]["t"] == [0.0, 10.0]
    rows = dict(vc.volcano_rows(v))
    assert rows["Volcano queue tenant-a: allocated peak CPU / requested peak CPU; share"].startswith("20 / 40")
    assert "allocate" in rows["Volcano actions: mean / p99 per session"]
    # a kube-scheduler's scrapes hold no volcano_ family: no section
    assert vc.volcano_section(s[s["name"] == derive.SCRAPED], "kube-scheduler", None, {}) is None
    assert vc.volcano_rows(None) == []


def test_gang_resources_multiply_quantities() -> None:
    assert vc.gang_resources({"cpu": "100m", "memory": "128Mi"}, 8) == {"cpu": "800m", "memory": "1073741824"}
    assert vc.gang_resources({"cpu": "2", "nvidia.com/gpu": "1"}, 4) == {"cpu": "8000m", "nvidia.com/gpu": "4"}


def test_pinned_source_matches_the_shared_checksums() -> None:
    sums = SHARED / "SHA256SUMS"
    if not sums.is_file():
        pytest.skip("no ../shared/sources beside the repo")
    pinned = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
    assert pinned[vc.SOURCES[0].archive] == vc.SOURCES[0].sha256
    assert vc.SOURCES[0].upstream == "github.com/volcano-sh/volcano at tag v1.15.1"  # what to check out


def test_build_commands_and_crds(tmp_path: Path) -> None:
    src = tmp_path / "volcano"
    for d in vc.CRD_DIRS:
        (src / d).mkdir(parents=True)
        (src / d / f"{d.split('/')[2]}.yaml").write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "out").mkdir()
    vc.copy_crds({vc.MODULE: src}, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "crds").iterdir()) == ["jobflow.yaml", "volcano.yaml"]
    cmds = vc.build_commands({vc.MODULE: src}, tmp_path / "out" / "vc-scheduler")
    assert cmds[1][-1] == "./cmd/scheduler" and cmds[2][-1] == "./cmd/controller-manager"
    assert cmds[2][-2] == str(tmp_path / "out" / "vc-controller-manager")
    assert cmds[3][-2:] == [str(tmp_path / "out" / "vc-agent-scheduler"), "./cmd/agent-scheduler"]
    assert "volcano.sh/volcano/pkg/version.Version=v1.15.1" in cmds[1][4]


def test_the_klog_socket_fits_a_unix_socket_path_wherever_the_run_lives(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """CI's run directory put the agent-scheduler's socket at 112 bytes: its bind failed silently and the
    scheduler never looked ready. The socket directory is short whatever TMPDIR is."""
    import tempfile

    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    cluster = tmp_path / "cluster"
    made = [vc.socket_dir(cluster) for _ in range(2)]
    for d in made:
        assert d.is_dir() and len(str(d / vc.AGENT_SOCKET)) <= vc.SUN_PATH_MAX
    # the cluster owns them: deleting it removes them though the process that made them is gone (--keep-cluster
    # then `down` left one behind in /tmp per run)
    assert processes.scratch_of(cluster) == made
    processes.remove_scratch(processes.scratch_of(cluster))
    assert not any(d.exists() for d in made)


def test_a_volcano_job_is_one_object_of_its_tasks_pods_in_the_variants_queue(tmp_path: Path) -> None:
    sc = _scenario("[{name: v, binary: volcano, volcano: {queues: [{name: a}]}}]",
                   "[{name: j, count: 3, template: volcano-job, params: {replicas: 8, min_available: 6, cpu: 500m}, "
                   "volcano: {queue: a}}]")
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    assert (f.kind, f.pods_per_object()) == ("VolcanoJob", 8)
    assert f.namespaced_path("default") == "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
    job = json.loads(f.body(2))
    assert job["apiVersion"] == "batch.volcano.sh/v1alpha1" and job["metadata"]["name"] == "j-lbl-2"
    spec = job["spec"]
    # every field Volcano's admission webhook would default, written (kwokbench runs none)
    assert (spec["queue"], spec["schedulerName"], spec["minAvailable"], spec["maxRetry"]) == ("a", "volcano", 6, 3)
    [task] = spec["tasks"]
    assert (task["name"], task["replicas"], task["minAvailable"]) == ("worker", 8, 6)
    pod = task["template"]
    assert pod["spec"]["schedulerName"] == "volcano"
    labels = pod["metadata"]["labels"]
    assert labels["kwokbench.io/run"] == "lbl" and labels["kwokbench.io/workload"] == "j"
    assert pod["metadata"]["annotations"] == {vc.QUEUE_ANNOTATION: "a"}
    assert f.labels_of_pods()["kwokbench.io/workload"] == "j"


def test_a_volcano_job_is_refused_by_a_scheduler_that_does_not_run_it(tmp_path: Path) -> None:
    for variants in ("[{name: d}]", "[{name: v, binary: volcano, volcano: {agent_scheduler: true}}]"):
        sc = _scenario(variants, "[{name: j, count: 3, template: volcano-job}]")
        with pytest.raises(ScenarioError, match=r"workload j: template volcano-job makes a VolcanoJob, which "
                                                r"scheduler \w+ does not run \(it runs: Job, Pod\)"):
            manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
