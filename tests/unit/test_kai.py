"""KAI-Scheduler, the pure parts: the ``kai:`` block and its errors (through the scenario loader), the Queue objects
in KAI's units, what is written into pods and gang PodGroups, the processes' command lines, its exit reason from a
log, and the summary section from real v0.13.0 scheduler /metrics (golden scrapes recorded from a kai-queues.yaml
run here). The processes themselves run against real clusters (tests/e2e/test_kai.py)."""

from __future__ import annotations

import gzip
import io
import json
import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.components import Setup, kai
from kwokbench.errors import ScenarioError
from kwokbench.metrics import derive
from kwokbench.plan import check_scenario, gang_factory, manifest_factories
from kwokbench.scenario import Scenario, parse_scenario

GOLDEN = Path(__file__).parent / "golden"
HEAD = "schema_version: 1\nname: s\ncluster: {node_groups: [{name: c, count: 3}]}\n"
TENANTS = ("[{name: k, binary: kai, kai: {queues: [{name: org}, {name: a, parent: org, quota: {cpu: 8, memory: 32Gi}, "
           "limit: {cpu: 20}}, {name: b, parent: org, over_quota_weight: 2, priority: 200}]}}]")
"""A KAI variant with a parent queue and two leaves under it (the second weighted and prioritised)."""


def _scenario(schedulers: str, workloads: str = "[{name: p, count: 10}]") -> Scenario:
    return parse_scenario(HEAD + f"schedulers: {schedulers}\nworkloads: {workloads}\n")


def _kai(sc: Scenario, i: int = 0, base: Path = Path()) -> kai.Kai:
    return kai.Kai(Setup(sc, base, sc.schedulers[i], None))  # type: ignore[arg-type]


def test_defaults_are_kais_installation() -> None:
    v = _scenario("[{name: k, binary: kai}]").schedulers[0]
    assert isinstance(v, kai.KaiSpec) and v.effective_scheduler_name == "kai-scheduler"
    assert v.kai.leaves() == ["default-queue"] and v.kai.schedule_period == "1s" and v.kai.status_controllers
    parent, leaf = kai.queue_objects(v.kai)
    assert parent["metadata"]["name"] == "default-parent-queue" and "parentQueue" not in parent["spec"]
    assert leaf["spec"]["parentQueue"] == "default-parent-queue"
    # no quota, unlimited, weight 1 (examples/quickstart/default-queues.yaml)
    assert leaf["spec"]["resources"]["cpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}


def test_queue_objects_are_in_kais_units_parents_first() -> None:
    v = _scenario(TENANTS).schedulers[0]
    assert isinstance(v, kai.KaiSpec)
    qs = {q["metadata"]["name"]: q for q in kai.queue_objects(v.kai)}
    assert list(qs) == ["org", "a", "b"]
    a = qs["a"]["spec"]
    assert a["parentQueue"] == "org"
    # millicpus and megabytes (10^6 bytes); what is not given: quota 0, limit -1
    assert a["resources"]["cpu"] == {"quota": 8000, "limit": 20000, "overQuotaWeight": 1}
    assert a["resources"]["memory"] == {"quota": 34359.738368, "limit": -1, "overQuotaWeight": 1}
    assert a["resources"]["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    assert qs["b"]["spec"]["priority"] == 200 and "priority" not in a  # not given: KAI's default
    assert {r["overQuotaWeight"] for r in qs["b"]["spec"]["resources"].values()} == {2}  # every resource's
    assert v.kai.leaves() == ["a", "b"]
    small = kai.KaiResources(cpu="500m", memory="512Mi", gpu=0.5).kai_units(0)
    assert small == {"cpu": 500.0, "memory": 536.870912, "gpu": 0.5}


@pytest.mark.parametrize(("schedulers", "message"), [
    ("[{name: k, binary: kai, scheduler_name: other}]", "KAI runs as schedulerName kai-scheduler only"),
    ("[{name: k, binary: kai, config: c.yaml}]", "schedulers.0.config: not a setting of binary: kai"),
    ("[{name: k, kai: {}}]", r"not a setting of binary: kube-scheduler \(it applies to binary: kai\)"),
    ("[{name: k, binary: kai, kai: {config: {actions: allocate}, config_file: c.yaml}}]",
     "give config or config_file, not both"),
    ("[{name: k, binary: kai, kai: {config: {action: allocate}}}]",
     "'action' is not a key of KAI's scheduler configuration"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, parent: nope}]}}]",
     "a's parent nope is not one of the queues"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, parent: b}, {name: b, parent: a}]}}]",
     "is its own ancestor"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a}, {name: a}]}}]", "a defined twice"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, quota: {cpu: 10}, limit: {cpu: 5}}]}}]",
     "a: cpu quota 10 is above its limit 5"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, quota: {cpu: -1}, limit: {cpu: 5}}]}}]",
     "a: cpu quota -1 is above its limit 5"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, quota: {memory: 1000}}]}}]",
     "give memory as a quantity with its unit"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, quota: {cpu: lots}}]}}]", "'lots' is not a CPU amount"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, limit: {gpu: -2}}]}}]", "GPUs are >= 0, or -1"),
    ("[{name: k, binary: kai, kai: {queues: [{name: Tenant_A}]}}]", "kai.queues.0.name"),
    ("[{name: k, binary: kai, kai: {queues: [{name: a, over_quota_weight: -1}]}}]",
     "kai.queues.0.over_quota_weight: Input should be greater than or equal to 0"),
    ("[{name: k, binary: kai, kai: {schedule_period: soon}}]", "kai.schedule_period"),
    ("[{name: k, binary: kai, kai: {scheduler_args: [--qps=5]}}]", "kwokbench sets --qps itself"),
    ("[{name: k, binary: kai, kai: {scheduler_args: [-v=4]}}]", "flags start with --"),
    ("[{name: k, binary: kai, kai: {process_args: {binder: [--qps=5]}}}]",
     "kai.process_args.binder: '--qps=5': kwokbench sets -qps itself"),
    ("[{name: k, binary: kai, kai: {process_args: {podgrouper: [max-concurrent-reconciles=5]}}}]",
     "not a flag"),
    ("[{name: k, binary: kai, kai: {process_args: {scheduler: [--v=4]}}}]", "kai.process_args.scheduler"),
    ("[{name: k, binary: kai, kai: {status_controllers: false, process_args: {queuecontroller: [-v=4]}}}]",
     "the queuecontroller does not run with status_controllers: false"),
])
def test_bad_kai_variants_are_one_line(schedulers: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as e:
        _scenario(schedulers)
    assert "\n" not in str(e.value) and str(e.value).startswith("<scenario>:4: schedulers.0")


@pytest.mark.parametrize(("workloads", "message"), [
    ("[{name: p, count: 2, kai: {queue: org}}]", "kai.queue org is a parent queue of scheduler k"),
    ("[{name: p, count: 2, kai: {queue: c}}]", "kai.queue c is not one of its queues"),
    ("[{name: p, count: 2}]", r"kai.queue: name one of scheduler k's leaf queues \(a, b\)"),
])
def test_a_workload_names_a_leaf_queue(workloads: str, message: str, tmp_path: Path) -> None:
    sc = _scenario(TENANTS, workloads)
    with pytest.raises(ScenarioError, match=message):
        check_scenario(sc, tmp_path)


def test_pods_carry_scheduler_name_and_queue(tmp_path: Path) -> None:
    sc = _scenario(TENANTS[:-1] + ", {name: d}]",
                   "[{name: p, count: 4, kai: {queue: b}}, {name: j, template: job, count: 2, kai: {queue: a}}]")
    check_scenario(sc, tmp_path)
    f, j = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    pod = json.loads(f.body(1))
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["metadata"]["labels"][kai.QUEUE_LABEL] == "b"
    assert kai.POD_GROUP_ANNOTATION not in (pod["metadata"].get("annotations") or {})  # the podgrouper's job
    job = json.loads(j.body(0))  # the Job and its pods: the podgrouper reads the top owner's label first
    assert job["metadata"]["labels"][kai.QUEUE_LABEL] == "a"
    assert job["spec"]["template"]["metadata"]["labels"][kai.QUEUE_LABEL] == "a"
    assert job["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"
    # a kube-scheduler variant: none of it
    [plain, _] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[1])
    p = json.loads(plain.body(0))
    assert p["spec"]["schedulerName"] == "default-scheduler" and kai.QUEUE_LABEL not in p["metadata"]["labels"]


def test_a_gang_is_a_kai_podgroup(tmp_path: Path) -> None:
    sc = _scenario("[{name: k, binary: kai}]", "[{name: g, count: 16, gang: {size: 8, min_member: 6}}]")
    [f] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    a, b = json.loads(f.body(0)), json.loads(f.body(8))
    assert a["metadata"]["annotations"]["pod-group-name"] == "g-lbl-gang-0"
    assert b["metadata"]["annotations"]["pod-group-name"] == "g-lbl-gang-1"
    g = gang_factory(sc.workloads[0], f, tmp_path)
    pg = json.loads(g.body(1))
    assert pg["apiVersion"] == "scheduling.run.ai/v2alpha2" and pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == "g-lbl-gang-1"
    assert pg["spec"] == {"minMember": 6, "queue": "default-queue"}
    assert pg["metadata"]["labels"][kai.QUEUE_LABEL] == "default-queue"
    assert g.namespaced_path("default") == "/apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups"


def test_client_limits() -> None:
    assert kai.client_limits(False, None, None) == (kai.UNLIMITED_CLIENT, kai.UNLIMITED_CLIENT)
    assert kai.client_limits(True, None, None) == (50, 300)  # KAI's own defaults
    assert kai.client_limits(False, 80.0, None) == (80, 80) and kai.client_limits(True, 80.0, 120) == (80, 120)


def test_scheduler_configuration_from_the_scenario_or_a_file(tmp_path: Path) -> None:
    inline = _scenario("[{name: k, binary: kai, kai: {config: {actions: 'allocate, reclaim'}}}]").schedulers[0]
    assert isinstance(inline, kai.KaiSpec)
    assert kai.scheduler_config(inline.kai, tmp_path) == {"actions": "allocate, reclaim"}
    assert kai.has_snapshot_plugin(inline.kai.config)  # tiers left out are KAI's default, which has it
    (tmp_path / "c.yaml").write_text("actions: allocate\n"
                                     "tiers: [{plugins: [{name: predicates}, {name: proportion}]}]\n")
    filed = _scenario("[{name: k, binary: kai, kai: {config_file: c.yaml}}]").schedulers[0]
    assert isinstance(filed, kai.KaiSpec)
    doc = kai.scheduler_config(filed.kai, tmp_path)
    assert doc is not None and doc["actions"] == "allocate" and not kai.has_snapshot_plugin(doc)
    assert kai.scheduler_config(kai.KaiConfig(), tmp_path) is None  # KAI's built-in default
    with pytest.raises(ScenarioError, match=re.escape("kai.config_file missing.yaml: No such file")):
        kai.scheduler_config(kai.KaiConfig(config_file="missing.yaml"), tmp_path)
    (tmp_path / "bad.yaml").write_text("- allocate\n")
    with pytest.raises(ScenarioError, match="is a mapping"):
        kai.scheduler_config(kai.KaiConfig(config_file="bad.yaml"), tmp_path)


def test_command_lines_of_its_processes(tmp_path: Path) -> None:
    sc = _scenario("[{name: k, binary: kai, kai: {schedule_period: 100ms, config: {actions: allocate}, "
                   "scheduler_args: [--detailed-fit-errors=true]}}]")
    k = _kai(sc)
    k.binary = tmp_path / "kai-scheduler"
    info = ClusterInfo("c", tmp_path, tmp_path / "kubeconfig.yaml", 1, 0, 0, 0, None)
    argv, helpers, ports = k._plan(info, tmp_path / "conf.yaml")
    assert "--leader-elect=false" in argv and "--scheduler-name=kai-scheduler" in argv
    assert f"--listen-address=127.0.0.1:{ports['metrics']}" in argv and "--schedule-period=100ms" in argv
    assert f"--scheduler-conf={tmp_path / 'conf.yaml'}" in argv and argv[-1] == "--detailed-fit-errors=true"
    assert f"--qps={kai.UNLIMITED_CLIENT}" in argv
    assert [h.role for h in helpers] == ["binder", "podgrouper", "queuecontroller", "podgroupcontroller"]
    assert [h.component for h in helpers] == ["kai-binder", "kai-podgrouper", "kai-queuecontroller",
                                              "kai-podgroupcontroller"]
    binder, grouper, queues, pgc = helpers
    assert binder.argv[0].endswith("/kai-binder") and f"--kubeconfig={info.kubeconfig}" in binder.argv
    assert all(a.startswith("-") and not a.startswith("--") for a in grouper.argv[1:])  # Go flag style
    assert "-enable-webhook=false" in queues.argv and queues.ready_url == queues.metrics_url
    assert pgc.metrics_url == "http://127.0.0.1:8080/metrics"  # where it always serves them
    assert len(set(ports.values())) == len(ports)
    tuned = _kai(_scenario("[{name: k, binary: kai, kai: {process_args: {binder: [--max-concurrent-reconciles=100], "
                           "podgrouper: [-max-concurrent-reconciles=50]}}}]"))
    tuned.binary = k.binary
    b, g, *_ = tuned._plan(info, None)[1]
    assert b.argv[-1] == "--max-concurrent-reconciles=100" and g.argv[-1] == "-max-concurrent-reconciles=50"
    assert tuned.fairness()["kai"]["process_args"] == {"binder": ["--max-concurrent-reconciles=100"],
                                                        "podgrouper": ["-max-concurrent-reconciles=50"]}
    off = _kai(_scenario("[{name: k, binary: kai, kai: {status_controllers: false}}]"))
    off.binary = k.binary
    assert [h.role for h in off._plan(info, None)[1]] == ["binder", "podgrouper"]


def test_build_commands_and_pinned_source(tmp_path: Path) -> None:
    cmds = kai.build_commands({kai.MODULE: tmp_path}, tmp_path / "out" / "kai-scheduler")
    assert cmds[0] == ["go", "mod", "download"]
    assert [c[-1] for c in cmds[1:]] == ["./cmd/scheduler", "./cmd/binder", "./cmd/podgrouper",
                                         "./cmd/queuecontroller", "./cmd/podgroupcontroller"]
    assert [c[-2] for c in cmds[1:]][1] == str(tmp_path / "out" / "kai-binder")
    assert "gitVersion=v0.13.0" in cmds[1][4]
    sums = Path(__file__).resolve().parents[3] / "shared" / "sources" / "SHA256SUMS"
    if sums.is_file():
        pinned = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
        assert pinned[kai.SOURCES[0].archive] == kai.SOURCES[0].sha256


def test_fatal_line_is_kais_own_reason(tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    log.write_text("2026-03-02T10:00:00.000Z\tINFO\tscheduler started\n"
                   "error resolving configuration from file: failed to find Action nosuch as given in the config, "
                   "ignore it\n")
    assert kai.fatal_line(log).startswith("error resolving configuration from file: failed to find Action nosuch")
    log.write_text('{"level":"info","msg":"x"}\n{"level":"error","msg":"unable to start manager","error":"boom"}\n'
                   "Error while running the app: boom")
    assert kai.fatal_line(log) == "unable to start manager boom"
    assert kai.fatal_line(tmp_path / "none.log") == "(no output)"


def test_snapshot_nodes() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("snapshot.json", json.dumps({"rawObjects": {"nodes": [{}, {}, {}]}}))
    assert kai.snapshot_nodes(buf.getvalue()) == 3
    assert kai.snapshot_nodes(b"not a zip") == -1


def _series() -> pd.DataFrame:
    rows = []
    for t, name in ((100.0, "first"), (113.6, "mid"), (130.2, "last")):
        text = gzip.decompress((GOLDEN / f"kai-{name}.prom.gz").read_bytes()).decode()
        rows.append((t, "kube-scheduler", derive.SCRAPED, "{}", 1.0))
        for n, labels, v in derive.parse_payload(text, derive.keep_of("kube-scheduler")):
            rows.append((t, "kube-scheduler", n, json.dumps(labels, sort_keys=True), v))
    return pd.DataFrame(rows, columns=["t", "component", "name", "labels", "value"])


def test_section_from_real_kai_metrics() -> None:
    """Three scrapes of KAI v0.13.0's scheduler during a kai-queues.yaml run on a busy host: capped held to its 20
    CPUs, 7 gangs of 8 placed whole — 76 pods, 27 pod groups."""
    s = _series()
    k = kai.kai_section(s, "kube-scheduler", (100.0, 130.2), {"cpu_seconds": 1.5})
    assert k is not None and k["cpu_seconds"] == 1.5
    pod = k["pod_scheduling_seconds"]
    assert pod["count"] == 76 and k["bind_request_seconds"]["count"] == 76  # one BindRequest per pod placed
    assert 1 < pod["mean"] < 60  # seconds, though the family is milliseconds
    # its buckets end at 2560 ms: most of these pods waited longer, so a quantile there is only a floor
    assert pod["top_bucket"] == 2.56 and pod["p99"] == 2.56 and 0.5 < pod["above_top_bucket_share"] <= 1
    assert k["bind_request_seconds"]["above_top_bucket_share"] == 0
    assert k["podgroups_scheduled"] == {"allocate": 27.0}  # 20 single pods + 7 gangs
    assert k["preemption_attempts"] == 0
    assert set(k["actions_seconds"]) == {"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"}
    assert k["session_seconds"]["samples"] == 3 and k["session_seconds"]["max"] >= k["session_seconds"]["mean"]
    assert "proportion" in k["plugins_seconds"]
    q = k["queues"]
    assert q["capped"]["last"]["cpu"] == 20 and q["gangs"]["last"]["cpu"] == 60 and q["org"]["last"]["cpu"] == 80
    assert q["capped"]["series"]["t"] == [0.0, 13.6, 30.2]
    rows = kai.kai_rows(k)
    assert rows[0][0].startswith("KAI pod created → BindRequest written mean")
    assert "≥ 2560 ms" in rows[0][1] and "above its top bucket" in rows[0][1]
    assert [r[0] for r in rows if "pod groups" in r[0]] == ["KAI pod groups scheduled / acted on, by action"]
    assert rows[-1] == ["KAI scheduler CPU", "1.50 s"]
    # a kube-scheduler's scrapes hold no kai_ family: no section
    assert kai.kai_section(s[s["name"] == derive.SCRAPED], "kube-scheduler", None, {}) is None
    assert kai.kai_rows(None) == []
