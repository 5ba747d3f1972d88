"""Pure parts of schedulers kwokbench starts itself: scenario rules, placeholders, the stand-in
configuration, schedulerName dealing, overcommit and per-scheduler analysis."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest

from kwokbench.cluster import schedulers as own
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions
from kwokbench.cluster.schedulers import stand_in_config, version
from kwokbench.components.external import ExternalSpec, check_command, fill, manifest_files, plan
from kwokbench.errors import ScenarioError
from kwokbench.figures.placement import overcommit, pending, per_scheduler
from kwokbench.manifests import ManifestFactory, resolve_template
from kwokbench.plan import manifest_factories, pod_scheduler_names
from kwokbench.scenario import parse_scenario
from tests.support.stand_in_api import StandInApi

BASE = """
schema_version: 1
name: s
cluster: {node_groups: [{name: a, count: 1}]}
workloads: [{name: w, count: 4}]
"""


def _scenario(extra: str) -> None:
    parse_scenario(BASE + extra)


def test_external_needs_a_scheduler_name_and_external_fields_need_external() -> None:
    with pytest.raises(ScenarioError, match="binary external needs scheduler_name"):
        _scenario("schedulers: [{name: x, binary: external, command: [x]}]")
    with pytest.raises(ScenarioError, match=r"(?s)schedulers.0.command: not a setting of binary: kube-scheduler "
                                            r"\(it applies to binary: external\).*schedulers.0.ready_path"):
        _scenario("schedulers: [{name: x, command: [x], ready_path: /healthz}]")
    _scenario("schedulers: [{name: x, binary: external, scheduler_name: y, command: ['{kube_scheduler}']}]")


def test_concurrent_schedulers_rules() -> None:
    with pytest.raises(ScenarioError, match="at least two scheduler variants"):
        _scenario("concurrent_schedulers: true\nschedulers: [{name: a}]")
    with pytest.raises(ScenarioError, match="share schedulerName default-scheduler"):
        _scenario("concurrent_schedulers: true\nschedulers: [{name: a}, {name: b}]")
    with pytest.raises(ScenarioError, match="only with concurrent_schedulers"):
        parse_scenario(BASE.replace("count: 4}", "count: 4, scheduler: a}") + "schedulers: [{name: a}]")
    with pytest.raises(ScenarioError, match="no scheduler variant 'c'"):
        parse_scenario(BASE.replace("count: 4}", "count: 4, scheduler: c}")
                       + "concurrent_schedulers: true\nschedulers: [{name: a}, {name: b, scheduler_name: b}]")


def test_placeholders_are_checked_and_filled() -> None:
    v = ExternalSpec(name="x", binary="external", scheduler_name="y", command=["{kube_scheduler}", "--p={nope}"])
    with pytest.raises(ScenarioError, match=r"unknown placeholder\(s\) \{nope\}"):
        check_command(v)
    with pytest.raises(ScenarioError, match="literal brace"):
        check_command(ExternalSpec(name="x", binary="external", scheduler_name="y", command=["{oops"]))
    assert fill(["{kubeconfig}", "--port={metrics_port}", "{{literal}}"], {"kubeconfig": "/k", "metrics_port": "9"}) \
        == ["/k", "--port=9", "{literal}"]


EXTERNAL = """\
schema_version: 1
name: s
cluster: {node_groups: [{name: a, count: 1}]}
schedulers:
  - name: mine
    binary: external
    scheduler_name: mine
    command: ['{kube_scheduler}', '--config={config}', '--secure-port={metrics_port}']
    metrics_port: 10999
    metrics_path: /metrics
    metrics_scheme: https
    ready_path: /healthz
    version_command: ['{kube_scheduler}', '--version=raw', '--kubeconfig={kubeconfig}']
    manifests: [own/objects.yaml]
workloads: [{name: w, count: 4}]
"""
OBJECTS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: mine-config, namespace: kube-system}
data: {mode: fast}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mine-high}
value: 1000
"""


def test_an_external_schedulers_port_version_command_and_manifests(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sc = parse_scenario(EXTERNAL)
    [v] = sc.schedulers
    assert isinstance(v, ExternalSpec)
    info = ClusterInfo("c", tmp_path, tmp_path / "kubeconfig", 6443, 0, 0, 0, None)
    launch = plan(v, info, ClusterOptions(), "kube-scheduler", Path("/t/kube-scheduler"), tmp_path)
    config = tmp_path / "schedulers" / "mine" / "config.yaml"
    assert launch.argv == ["/t/kube-scheduler", f"--config={config}", "--secure-port=10999"]  # the fixed port
    assert (launch.metrics_url, launch.ready_url) == ("https://127.0.0.1:10999/metrics",
                                                      "https://127.0.0.1:10999/healthz")
    assert launch.version_argv == ["/t/kube-scheduler", "--version=raw", f"--kubeconfig={tmp_path / 'kubeconfig'}"]
    without = v.model_copy(update={"version_command": None, "metrics_port": None})
    free = plan(without, info, ClusterOptions(), "kube-scheduler", Path("/t/kube-scheduler"), tmp_path)
    assert free.version_argv == ["/t/kube-scheduler", "--version"] and free.argv[-1] != "--secure-port=10999"
    with pytest.raises(ScenarioError, match=re.escape("scheduler mine: manifest own/objects.yaml: no such file")):
        manifest_files(v, tmp_path)
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "objects.yaml").write_text(OBJECTS)
    api = StandInApi()
    monkeypatch.setattr(own, "Api", api)
    assert asyncio.run(own.apply_manifests(info.credentials(), manifest_files(v, tmp_path))) == [
        "ConfigMap/mine-config", "PriorityClass/mine-high"]
    assert [(m, p) for m, p, _, _ in api.requests] == [
        ("POST", "/api/v1/namespaces/kube-system/configmaps"),
        ("POST", "/apis/scheduling.k8s.io/v1/priorityclasses")]  # cluster-scoped
    with pytest.raises(ScenarioError, match=r"version_command: unknown placeholder\(s\) \{port\}"):
        check_command(v.model_copy(update={"version_command": ["{kube_scheduler}", "--p={port}"]}))
    with pytest.raises(ScenarioError, match=re.escape("schedulers.0.metrics_port: Input should be less than or "
                                                      "equal to 65535")):
        parse_scenario(EXTERNAL.replace("10999", "70000"))


def test_stand_in_config_names_its_profile_and_runs_without_leader_election(tmp_path: Path) -> None:
    doc = stand_in_config(ClusterOptions(), tmp_path / "kubeconfig", "second")
    assert doc["profiles"] == [{"schedulerName": "second"}]
    assert doc["leaderElection"] == {"leaderElect": False}
    assert doc["clientConnection"]["kubeconfig"] == str(tmp_path / "kubeconfig")
    assert doc["clientConnection"]["qps"] == 5000  # client limits as for kwokctl's scheduler
    cfg = tmp_path / "two.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "profiles: [{schedulerName: a}, {schedulerName: b}]\n")
    assert len(stand_in_config(ClusterOptions(scheduler_config=cfg), tmp_path / "k", "b")["profiles"]) == 2
    with pytest.raises(ScenarioError, match="none is named 'c'"):
        stand_in_config(ClusterOptions(scheduler_config=cfg), tmp_path / "k", "c")


def test_version_never_fails() -> None:
    assert version(["sh", "-c", "echo v1.2.3"], Path("/")) == "v1.2.3"
    assert version(["sh", "-c", "echo bad >&2; exit 4"], Path("/")).startswith("unknown (exit 4: bad")
    assert version(["/no/such/binary"], Path("/")).startswith("unknown (FileNotFoundError")


def test_pods_are_dealt_scheduler_names_in_turn() -> None:
    f = ManifestFactory(resolve_template("pod"), {}, "w", scheduler_names=["a", "b"])
    assert [orjson.loads(f.body(i))["spec"]["schedulerName"] for i in range(4)] == ["a", "b", "a", "b"]
    job = ManifestFactory(resolve_template("job"), {}, "j", scheduler_names=["c"])
    assert orjson.loads(job.body(0))["spec"]["template"]["spec"]["schedulerName"] == "c"
    kept = ManifestFactory(resolve_template("pod"), {"scheduler_name": "own"}, "w")
    assert orjson.loads(kept.body(0))["spec"]["schedulerName"] == "own"


TWO = """\
schema_version: 1
name: s
cluster: {node_groups: [{name: a, count: 1}]}
concurrent_schedulers: true
schedulers: [{name: a}, {name: b, scheduler_name: second}]
workloads: [{name: mine, count: 4, scheduler: b}, {name: shared, count: 4}]
"""


def test_a_phase_with_a_scheduler_goes_to_that_variant_alone(tmp_path: Path) -> None:
    sc = parse_scenario(TWO)
    mine, shared = manifest_factories(sc, tmp_path, "lbl")
    names = [[orjson.loads(f.body(i))["spec"]["schedulerName"] for i in range(4)] for f in (mine, shared)]
    assert names == [["second"] * 4, ["default-scheduler", "second"] * 2]
    assert pod_scheduler_names(sc, sc.workloads[0], None) == ["second"]


def _pods(rows: list[tuple[str, float, float, str]]) -> pd.DataFrame:
    return pd.DataFrame({"node": [r[0] for r in rows], "scheduled": [r[1] for r in rows],
                         "cpu_m": [r[2] for r in rows], "gpus": 0.0, "scheduler": [r[3] for r in rows],
                         "created": [r[1] - 0.5 for r in rows], "namespace": "default",
                         "name": [f"p-{i}" for i in range(len(rows))]})


NODES = pd.DataFrame({"name": ["n1", "n2"], "group": "a", "cpu_m": [2000.0, 2000.0], "gpus": 0.0,
                      "pods": [110.0, 110.0]})


def test_overcommit_names_the_scheduler_whose_binding_pushed_a_node_over() -> None:
    pods = _pods([("n1", 1.0, 1000, "a"), ("n1", 2.0, 1000, "b"), ("n1", 3.0, 1000, "b"),  # n1: 3000 of 2000
                  ("n2", 1.5, 1000, "a"), ("n2", 2.5, 1000, "a"),                          # n2: full, not over
                  ("", np.nan, 1000, "a")])                                                # pending: not counted
    o = overcommit(pods, NODES)
    assert o is not None
    assert o["nodes"] == 1 and o["pushed_over_by"] == {"b": 1} and o["by_resource"]["cpu"] == 1
    assert o["nodes_shared_by_schedulers"] == 1
    assert o["examples"][0] == {"node": "n1", "cpu_requested_m": 3000.0, "cpu_allocatable_m": 2000.0, "pods": 3,
                                "pods_allocatable": 110.0, "schedulers": {"b": 2, "a": 1}}
    # 5000 of 4000 m requested at the end: the node went over only past 100% fill
    curve = {c["fill"]: c["overcommitted_nodes"] for c in o["fill_curve"]}
    assert curve == {0.1: 0, 0.2: 0, 0.3: 0, 0.4: 0, 0.5: 0, 0.6: 0, 0.7: 0, 0.8: 0, 0.9: 0, 1.0: 0, 1.25: 1}
    assert overcommit(_pods([("n1", 1.0, 1000, "a"), ("n1", 2.0, 1000, "a")]), NODES)["nodes"] == 0  # type: ignore[index]


def test_pods_slots_overcommit_and_per_scheduler() -> None:
    nodes = NODES.assign(pods=[1.0, 1.0])
    pods = _pods([("n1", 1.0, 10, "a"), ("n1", 1.1, 10, "b")])
    o = overcommit(pods, nodes)
    assert o is not None and o["by_resource"] == {"cpu": 0, "gpus": 0, "pods": 1}
    per = per_scheduler(pods)
    assert per is not None and per["a"]["pods"] == 1 and per["b"]["latency_p50"] == pytest.approx(0.5)
    assert per_scheduler(pods.assign(scheduler="a")) is None  # one scheduler: nothing to split


def test_pending_names_a_scheduler_name_nobody_serves() -> None:
    pods = _pods([("", np.nan, 100, "nobody"), ("", np.nan, 100, "default-scheduler")])
    msg = {"default/p-1": "0/2 nodes are available: 2 Insufficient cpu."}
    out = pending(pods, msg, served={"default-scheduler"})
    assert out["reasons"] == {"no scheduler of this run serves schedulerName 'nobody'": 1, "Insufficient cpu": 1}
    assert "no FailedScheduling event" in pending(pods, {}, served=None)["reasons"]


def test_console_rows_show_overcommit_and_its_growth() -> None:
    from kwokbench.report.table import placement_rows

    pods = _pods([("n1", 1.0, 1000, "a"), ("n1", 2.0, 1000, "b"), ("n1", 3.0, 1000, "b"), ("n2", 1.5, 1000, "a")])
    pl = {"utilisation": {"nodes": 2}, "overcommit": overcommit(pods, NODES), "schedulers": per_scheduler(pods)}
    rows = {r[0]: r[1] for r in placement_rows(pl)}
    assert rows["nodes overcommitted (pushed over by)"] == "1 of 2 (b 1)"
    assert rows["nodes overcommitted as the cluster filled (share of its CPU requested)"].endswith("100%: 1")
    assert rows["scheduler a: bound / pods, latency p50 / p99"].startswith("2 / 2")


def test_a_config_is_found_beside_the_scenario_else_in_kwokbenchs_catalogue(tmp_path: Path) -> None:
    from kwokbench.components.kube_scheduler import CATALOGUE, resolve_config
    from kwokbench.errors import ScenarioError

    assert resolve_config(tmp_path, "configs/binpack.yaml") == CATALOGUE / "binpack.yaml"
    mine = tmp_path / "configs" / "binpack.yaml"
    mine.parent.mkdir()
    mine.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    assert resolve_config(tmp_path, "configs/binpack.yaml") == mine  # the scenario's own file wins
    with pytest.raises(ScenarioError, match=r"configs/nope.yaml: no such file \(relative to .*\), nor one of "
                                            r"kwokbench's own configurations \(binpack.yaml, "):
        resolve_config(tmp_path, "configs/nope.yaml")
    # scenarios/configs in a checkout is the catalogue itself
    from tests.conftest import REPO
    assert (REPO / "scenarios" / "configs").resolve() == CATALOGUE


def test_manifests_read_with_libyaml_give_the_documents_the_safe_loader_gives(tmp_path: Path) -> None:
    """``yaml_documents``: every non-empty document of a file, as PyYAML's pure-Python safe loader reads it (libyaml's
    where it is built in: the batch schedulers' CRDs parse ten times faster); a malformed file is a YAMLError."""
    import yaml

    from kwokbench.cluster.objects import yaml_documents

    text = ("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: '1', n: 2, b: true, t: ~}\n---\n"
            "---\n# only a comment\n---\nkind: CustomResourceDefinition\n"
            "spec: {versions: [{name: v1, served: true}]}\n")
    f = tmp_path / "m.yaml"
    f.write_text(text)
    assert yaml_documents(f) == [d for d in yaml.safe_load_all(text) if d] and len(yaml_documents(f)) == 2
    f.write_text("kind: [unclosed\n")
    with pytest.raises(yaml.YAMLError):
        yaml_documents(f)
