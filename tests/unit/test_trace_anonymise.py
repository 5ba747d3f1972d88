"""Anonymising a trace: no original name or value survives, references still match, same salt same output."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.trace.anonymise import Anonymiser, anonymise, keep_value
from kwokbench.trace.format import Trace, TraceNode, TracePod, read_trace, write_nodes, write_pods

SECRETS = ["payments-train", "team-falcon", "prod-critical", "falcon-gang", "rack-77", "secret-host-1",
           "secret-host-2", "batch-pool", "dedicated-falcon", "payments-train-7f9c", "payments-job"]
TRACE = Trace(
    pods=(
        TracePod(name="payments-train", namespace="team-falcon", priority_class="prod-critical",
                 arrival_seconds=0, cpu_milli=1000, memory_mib=512, gpu=1, gpu_models=("A100",),
                 labels={"app": "payments-train", "kwokbench.io/qos": "LS", "statefulset.kubernetes.io/pod-name":
                         "payments-train-7f9c", "batch.kubernetes.io/job-name": "payments-job"},
                 node_selector={"pool": "batch-pool", "kubernetes.io/hostname": "secret-host-1"},
                 tolerations=({"key": "dedicated", "operator": "Equal", "value": "dedicated-falcon",
                               "effect": "NoSchedule"},),
                 group="falcon-gang", group_min_member=1, owner_kind="Job"),
        TracePod(name="web", arrival_seconds=1, cpu_milli=100, memory_mib=64, priority_class="system-node-critical",
                 labels={"rack": "rack-77"}),
    ),
    nodes=(
        TraceNode(name="secret-host-1", cpu_milli=64000, memory_mib=1024, gpu=8, gpu_model="A100",
                  labels={"pool": "batch-pool", "kubernetes.io/hostname": "secret-host-1",
                          "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "p4d.24xlarge",
                          "topology.kubernetes.io/zone": "us-east-1a", "nvidia.com/gpu.product": "A100",
                          "rack": "rack-77"},
                  taints=({"key": "dedicated", "value": "dedicated-falcon", "effect": "NoSchedule"},)),
        TraceNode(name="secret-host-2", cpu_milli=1000, memory_mib=1024, labels={"kubernetes.io/hostname":
                                                                                  "secret-host-2"}),
    ),
    source=Path("captured.csv"), format="kwokbench")


def _written(trace: Trace, where: Path) -> str:
    where.mkdir()
    write_pods(trace.pods, where / "pods.csv")
    write_nodes(trace.nodes, where / "nodes.csv")
    return (where / "pods.csv").read_text() + (where / "nodes.csv").read_text()


def test_no_original_name_or_value_survives(tmp_path: Path) -> None:
    plain = _written(TRACE, tmp_path / "plain")
    assert [s for s in SECRETS if s not in plain] == []  # the test would see them
    text = _written(anonymise(TRACE, "s3cret"), tmp_path / "anon")
    assert [s for s in SECRETS if s in text] == []
    for kept in ("amd64", "p4d.24xlarge", "us-east-1a", "A100", "LS", "system-node-critical", "Job", "dedicated",
                 "pool", "rack", "kubernetes.io/hostname"):
        assert kept in text, kept
    again = read_trace(tmp_path / "anon" / "pods.csv", tmp_path / "anon" / "nodes.csv")  # still a valid trace
    assert len(again.pods) == 2 and len(again.nodes) == 2


def test_references_still_match_after_hashing() -> None:
    anon = anonymise(TRACE, "s3cret")
    pod, node = anon.pods[0], anon.nodes[0]
    assert node.labels["kubernetes.io/hostname"] == node.name == pod.node_selector["kubernetes.io/hostname"]
    assert pod.node_selector["pool"] == node.labels["pool"] != "batch-pool"
    assert pod.tolerations[0]["value"] == node.taints[0]["value"] != "dedicated-falcon"
    assert pod.labels["kwokbench.io/qos"] == "LS" and pod.namespace != "team-falcon"
    assert anon.pods[1].namespace == "default" and anon.pods[1].priority_class == "system-node-critical"
    assert (pod.gpu, pod.gpu_models, pod.group_min_member, node.gpu_model) == (1, ("A100",), 1, "A100")


def test_same_salt_same_output_other_salt_other_output() -> None:
    assert anonymise(TRACE, "one") == anonymise(TRACE, "one")
    one, two = anonymise(TRACE, "one"), anonymise(TRACE, "two")
    assert one.pods[0].name != two.pods[0].name and one.nodes[0].labels["rack"] != two.nodes[0].labels["rack"]
    assert len(Anonymiser("one").hash("payments-train")) == 16
    assert Anonymiser("x" * 200).hash("a") != Anonymiser("x" * 199).hash("a")  # long salts count in full
    assert Anonymiser("one").hash("") == ""


def test_empty_salt_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"^anonymise: an empty salt"):
        anonymise(TRACE, "")


@pytest.mark.parametrize(("key", "kept"), [
    ("kubernetes.io/arch", True), ("node.kubernetes.io/instance-type", True), ("topology.kubernetes.io/zone", True),
    ("nvidia.com/gpu.product", True), ("nvidia.com/gpu.memory", True), ("kwokbench.io/qos", True),
    ("kubernetes.io/hostname", False), ("statefulset.kubernetes.io/pod-name", False), ("app", False),
    ("example.com/team", False), ("evilkubernetes.io/x", False),
])
def test_keep_list(key: str, kept: bool) -> None:
    assert keep_value(key) is kept
