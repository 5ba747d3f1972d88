"""Several kwok controllers: node partitions, their command lines, validation (no cluster needed)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from kwokbench.cluster import kwok_controllers as kc
from kwokbench.cluster import processes
from kwokbench.cluster.kwokctl import ClusterOptions, kwokctl_documents
from kwokbench.cluster.nodes import NodeGroup, node_bodies
from kwokbench.components import cluster_options
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.manifests import ManifestFactory, resolve_template
from kwokbench.plan import node_groups
from kwokbench.scenario import parse_scenario

KWOKCTL_ARGV = [
    "/h/kwok/clusters/c/bin/kwok-controller", "--manage-all-nodes=true", "--kubeconfig=/h/kwok/clusters/c/kubeconfig",
    "--config=/h/kwok/clusters/c/kwok.yaml", "--tls-cert-file=/h/pki/admin.crt",
    "--tls-private-key-file=/h/pki/admin.key",
    "--node-ip=10.0.0.1", "--node-name=localhost", "--node-port=40001", "--server-address=0.0.0.0:40001",
    "--node-lease-duration-seconds=40", "--manage-all-nodes=false",
    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
    "--manage-nodes-with-label-selector=kwokbench.io/kwok-partition=0",
]


def _flags(argv: list[str], name: str) -> list[str]:
    return [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]


@pytest.mark.parametrize("k", ["1", "2", "16", " 4 ", 8])
def test_counts_from_1_to_16(k: object) -> None:
    assert kc.check_count(k) == int(str(k))


@pytest.mark.parametrize("k", ["0", "17", "-1", "two", "1.5", "", True, 0, 17])
def test_other_counts_are_one_line(k: object) -> None:
    with pytest.raises(ScenarioError, match=r"^--kwok-controllers .*: expected a whole number from 1 to 16$"):
        kc.check_count(k)


def test_partitions_are_round_robin_and_even() -> None:
    for n, k in [(10, 4), (200, 2), (20000, 16), (3, 8)]:
        counts = Counter(kc.partition_of(j, k) for j in range(n))
        assert set(counts) == set(range(min(n, k)))
        assert max(counts.values()) - min(counts.values()) <= 1
        assert sum(counts.values()) == n


def test_every_node_of_every_group_gets_its_partition_label() -> None:
    template = resolve_template("node")
    groups = [NodeGroup("cpu", 5, template, {"labels": {"team": "a"}}), NodeGroup("gpu", 4, template, {"gpus": 8})]
    factories = [(g, ManifestFactory(g.template, {**g.params, "group": g.name}, f"kb-{g.name}")) for g in groups]
    nodes = [(name, orjson.loads(body)) for _, name, body in node_bodies(factories, partitions=3)]
    assert [n for n, _ in nodes] == [*(f"kb-cpu-{i}" for i in range(5)), *(f"kb-gpu-{i}" for i in range(4))]
    parts = [doc["metadata"]["labels"][kc.PARTITION_LABEL] for _, doc in nodes]
    assert parts == ["0", "1", "2", "0", "1", "2", "0", "1", "2"]  # dealt over all groups, not per group
    first = nodes[0][1]["metadata"]
    assert first["labels"]["team"] == "a" and first["labels"]["kwokbench.io/node-group"] == "cpu"
    assert first["annotations"]["kwok.x-k8s.io/node"] == "fake"
    # one controller: bodies untouched, no partition label
    one = [orjson.loads(b) for _, _, b in node_bodies(factories)]
    assert all(kc.PARTITION_LABEL not in d["metadata"]["labels"] for d in one)


def test_with_partition_on_a_node_without_labels() -> None:
    doc = orjson.loads(kc.with_partition(b'{"kind":"Node","metadata":{"name":"n"}}', 5))
    assert doc["metadata"] == {"name": "n", "labels": {kc.PARTITION_LABEL: "5"}}


def test_kwokctls_controller_is_partition_0() -> None:
    ctl = kwokctl_documents({}, ClusterOptions(kwok_controllers=3), {})[0]
    [patch] = [p for p in ctl["componentsPatches"] if p["name"] == "kwok-controller"]
    assert patch["extraArgs"][-1] == {"key": "manage-nodes-with-label-selector",
                                      "value": "kwokbench.io/kwok-partition=0"}
    one = kwokctl_documents({}, ClusterOptions(), {})[0]
    [patch] = [p for p in one["componentsPatches"] if p["name"] == "kwok-controller"]
    assert all(a["key"] != "manage-nodes-with-label-selector" for a in patch["extraArgs"])


def test_partition_command_lines_from_kwokctls() -> None:
    launches = kc.plan(KWOKCTL_ARGV, 4, [50001, 50002, 50003])
    assert [(la.partition, la.component, la.port) for la in launches] == [
        (1, "kwok-controller-1", 50001), (2, "kwok-controller-2", 50002), (3, "kwok-controller-3", 50003)]
    for la in launches:
        argv = la.argv
        assert argv[0] == KWOKCTL_ARGV[0]
        assert _flags(argv, "manage-nodes-with-label-selector") == [f"kwokbench.io/kwok-partition={la.partition}"]
        assert _flags(argv, "manage-nodes-with-annotation-selector") == ["kwok.x-k8s.io/node=fake"]
        assert _flags(argv, "manage-all-nodes") == ["false"]
        assert _flags(argv, "server-address") == [f"127.0.0.1:{la.port}"]
        assert _flags(argv, "node-port") == [str(la.port)]
        for same in ("kubeconfig", "config", "tls-cert-file", "node-lease-duration-seconds", "node-ip"):
            assert _flags(argv, same) == _flags(KWOKCTL_ARGV, same)
        assert la.metrics_url == f"http://127.0.0.1:{la.port}/metrics"
    assert kc.plan(KWOKCTL_ARGV, 1, []) == []
    with pytest.raises(ValueError):
        kc.plan(KWOKCTL_ARGV, 3, [1])


def test_attached_command_lines() -> None:
    argv = kc.attached_argv(Path("/t/kwok"), Path("/k.yaml"), Path("/s.yaml"), "kwokbench.io/attached=a", 1, 2, 7000)
    assert _flags(argv, "manage-nodes-with-label-selector") == [
        "kwokbench.io/attached=a,kwokbench.io/kwok-partition=1"]
    assert _flags(argv, "server-address") == ["127.0.0.1:7000"] and _flags(argv, "manage-all-nodes") == ["false"]
    one = kc.attached_argv(Path("/t/kwok"), Path("/k.yaml"), Path("/s.yaml"), "kwokbench.io/attached=a", 0, 1, 7000)
    assert _flags(one, "manage-nodes-with-label-selector") == ["kwokbench.io/attached=a"]


def test_a_partitions_controller_is_a_component_of_the_cluster(tmp_path: Path) -> None:
    assert processes.binaries("kwok-controller-3") == processes.BINARIES["kwok-controller"]
    assert processes.binaries("scheduler-fast") == ("scheduler-fast",)
    exe = str(tmp_path / "bin" / "kwok-controller")
    assert processes._matches([exe, "--node-port=1"], "/", tmp_path, "kwok-controller-2")
    assert not processes._matches([exe], "/", tmp_path, "kube-apiserver")


def test_endpoints_of_started_controllers(tmp_path: Path) -> None:
    assert kc.endpoints(tmp_path) == {}
    (tmp_path / kc.STATE).write_bytes(orjson.dumps([{"component": "kwok-controller-1", "port": 4242}]))
    assert kc.endpoints(tmp_path) == {"kwok-controller-1": "http://127.0.0.1:4242/metrics"}


def test_a_controller_that_exits_is_one_line_naming_its_log(tmp_path: Path) -> None:
    launch = kc.Launch(1, [sys.executable, "-c", "print('bad flag'); raise SystemExit(3)"], port=1)
    with pytest.raises(ClusterError, match=r"kwok-controller-1 exited with code 3 at start: bad flag \(log: .*"):
        kc.start([launch], tmp_path, tmp_path, timeout=20)
    assert (tmp_path / "pids" / "kwok-controller-1.pid").exists()
    assert not (tmp_path / kc.STATE).exists()


SCENARIO = """\
schema_version: 1
name: s
cluster:
  node_groups: [{name: a, count: 10}]
  kwok_controllers: {k}
workloads: [{name: w, count: 1}]
schedulers: [{name: default}]
"""


def test_scenario_field() -> None:
    assert parse_scenario(SCENARIO.replace("  kwok_controllers: {k}\n", "")).cluster.kwok_controllers == 1
    assert parse_scenario(SCENARIO.replace("{k}", "4")).cluster.kwok_controllers == 4


@pytest.mark.parametrize(("k", "needle"), [
    ("0", "greater than or equal to 1"), ("17", "less than or equal to 16"), ("two", "valid integer"),
    ("1.5", "valid integer"), ("true", "valid integer"),
])
def test_scenario_field_out_of_range(k: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=f"cluster.kwok_controllers: .*{needle}") as e:
        parse_scenario(SCENARIO.replace("{k}", k))
    assert "\n" not in str(e.value)


THREE = """\
schema_version: 1
name: s
cluster:
  node_groups: [{name: a, count: 4}, {name: b, count: 2}]
  kwok_controllers: 3
workloads: [{name: w, count: 1}]
"""


def test_the_scenarios_count_reaches_kwokctl_and_the_nodes(tmp_path: Path) -> None:
    sc = parse_scenario(THREE)
    copts = cluster_options(sc, tmp_path, sc.schedulers[0], "x", None)  # type: ignore[arg-type]
    assert copts.kwok_controllers == 3
    [patch] = [p for p in kwokctl_documents({}, copts, {})[0]["componentsPatches"] if p["name"] == "kwok-controller"]
    assert patch["extraArgs"][-1]["value"] == "kwokbench.io/kwok-partition=0"  # kwokctl's own takes partition 0
    factories = [(g, ManifestFactory(g.template, {**g.params, "group": g.name}, f"kb-{g.name}"))
                 for g in node_groups(sc, tmp_path)]
    parts = [orjson.loads(b)["metadata"]["labels"][kc.PARTITION_LABEL]
             for _, _, b in node_bodies(factories, partitions=copts.kwok_controllers)]
    assert parts == ["0", "1", "2", "0", "1", "2"]
