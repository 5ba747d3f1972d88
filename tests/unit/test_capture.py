"""capture's conversions from the API's JSON to trace rows, on objects shaped as an apiserver returns them, and
the anonymisation of a capture: no original name or label value survives, the same salt gives the same files."""

from __future__ import annotations

import copy
import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from kwokbench.capture import output
from kwokbench.capture.convert import (
    Skip,
    anonymise,
    convert,
    node_row,
    node_state,
    pod_requests,
    pod_row,
    quantity,
    skip_reason,
)
from kwokbench.trace.format import TraceNode, TracePod, read_trace, write_nodes, write_pods

GPU_NODE: dict[str, Any] = {
    "metadata": {
        "name": "gke-prod-a100-pool-7c1f-x2k9", "creationTimestamp": "2025-03-01T08:00:00Z",
        "labels": {"kubernetes.io/hostname": "gke-prod-a100-pool-7c1f-x2k9", "kubernetes.io/arch": "amd64",
                   "node.kubernetes.io/instance-type": "a2-highgpu-4g", "topology.kubernetes.io/zone": "us-central1-a",
                   "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "cloud.google.com/gke-nodepool": "a100-pool",
                   "team": "falcon-research"},
    },
    "spec": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "falcon-research", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2025-03-02T10:00:00Z"},
    ]},
    "status": {
        "capacity": {"cpu": "48", "memory": "350000000Ki", "pods": "110", "nvidia.com/gpu": "4"},
        "allocatable": {"cpu": "47810m", "memory": "339236168Ki", "pods": "110", "nvidia.com/gpu": "4",
                        "ephemeral-storage": "47093746742", "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
        "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "Unknown"}],
    },
}
CPU_NODE: dict[str, Any] = {
    "metadata": {"name": "ip-10-0-3-17.ec2.internal", "labels": {"kubernetes.io/hostname": "ip-10-0-3-17",
                                                                 "pool": "general-purpose"}},
    "spec": {"unschedulable": True, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "3920m", "memory": "15252628Ki", "pods": "58",
                               "example.com/fpga": "2"},
               "conditions": [{"type": "Ready", "status": "True"}]},
}
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def _pod(name: str, created: str, *, namespace: str = "shop", containers: list[dict[str, Any]] | None = None,
         owner: tuple[str, str] | None = None, labels: dict[str, str] | None = None,
         **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": created,
                            "uid": f"uid-{name}", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u",
                                    "controller": True, "blockOwnerDeletion": True}]
    return {"metadata": meta,
            "spec": {"containers": containers or [{"name": "main", "resources": {}}],
                     "tolerations": copy.deepcopy(DEFAULT_TOLERATIONS), "schedulerName": "default-scheduler",
                     **spec},
            "status": {"phase": "Running"}}


def _requests(**req: str) -> dict[str, Any]:
    return {"name": "c", "image": "registry.example/app:1", "resources": {"requests": req, "limits": {}}}


WEB = _pod("checkout-web-7d9f8b6c5-x7x2q", "2025-03-03T09:00:05Z", owner=("ReplicaSet", "checkout-web-7d9f8b6c5"),
           labels={"app": "checkout-web", "pod-template-hash": "7d9f8b6c5", "app.kubernetes.io/part-of": "checkout"},
           containers=[_requests(cpu="1500m", memory="2Gi"), _requests(cpu="250m", memory="1e9")],
           priorityClassName="shop-critical", nodeSelector={"pool": "general-purpose"},
           tolerations=[*DEFAULT_TOLERATIONS, {"key": "dedicated", "operator": "Equal", "value": "checkout",
                                               "effect": "NoSchedule"}])
TRAIN = _pod("falcon-train-0", "2025-03-03T09:00:00Z", namespace="falcon", owner=("Job", "falcon-train"),
             containers=[{"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "8",
                                                                       "memory": "64Gi"}}}],
             affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                        "values": ["NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3"]}]}]}}},
             tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
DAEMON = _pod("node-exporter-abcde", "2025-03-01T08:01:00Z", namespace="monitoring",
              owner=("DaemonSet", "node-exporter"), containers=[_requests(cpu="100m", memory="50Mi")])
MIRROR = _pod("kube-apiserver-master-1", "2025-03-01T07:00:00Z", namespace="kube-system",
              owner=("Node", "master-1"), containers=[_requests(cpu="250m")])
MIRROR["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "3f2a", "kubernetes.io/config.source": "file"}


# ---- quantities -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("1500m", Decimal("1.5")), ("2Gi", Decimal(2 * 1024**3)), ("1e3", Decimal(1000)), ("1E3", Decimal(1000)),
    ("100M", Decimal(10**8)), ("0.5", Decimal("0.5")), (".5", Decimal("0.5")), ("12302828Ki", Decimal(12302828 * 1024)),
    ("1.5Ti", Decimal("1.5") * 1024**4), ("250u", Decimal("0.00025")), ("2E", Decimal(2 * 10**18)), (3, Decimal(3)),
    ("+4", Decimal(4)), ("1k", Decimal(1000)), ("1e-3", Decimal("0.001")),
])
def test_quantities_are_read_exactly(text: Any, value: Decimal) -> None:
    assert quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "1Ki2", "1 Gi", "1mi", True])
def test_a_malformed_quantity_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity(bad)


# ---- nodes ----------------------------------------------------------------------------------------------------

def test_a_gpu_node_offers_its_allocatable_and_keeps_its_labels_and_own_taints() -> None:
    n = node_row(GPU_NODE)
    assert n == TraceNode(name="gke-prod-a100-pool-7c1f-x2k9", cpu_milli=47810, memory_mib=331285, gpu=4,
                          gpu_model="NVIDIA-A100-SXM4-40GB", labels=GPU_NODE["metadata"]["labels"],
                          taints=({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                                  {"key": "dedicated", "value": "falcon-research", "effect": "NoSchedule"}),
                          pods=110)
    state = node_state(GPU_NODE)
    assert (state.ready, state.cordoned, state.extended) == (False, False, ())  # Ready "Unknown" is not Ready


def test_a_cordoned_cpu_node_rounds_down_and_loses_the_condition_taint() -> None:
    n = node_row(CPU_NODE)
    assert (n.cpu_milli, n.memory_mib, n.gpu, n.gpu_model, n.taints, n.pods) == (3920, 14895, 0, None, (), 58)
    state = node_state(CPU_NODE)
    assert (state.ready, state.cordoned, state.extended) == (True, True, ("example.com/fpga",))


@pytest.mark.parametrize(("labels", "model"), [
    ({"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}, "nvidia-tesla-t4"),
    ({"k8s.amazonaws.com/accelerator": "nvidia-tesla-v100"}, "nvidia-tesla-v100"),
    ({"cloud.google.com/gke-accelerator": "nvidia-l4", "nvidia.com/gpu.product": "NVIDIA-L4"}, "NVIDIA-L4"),
    ({"accelerator": "nvidia"}, None),
])
def test_the_gpu_model_comes_from_the_first_gpu_model_label(labels: dict[str, str], model: str | None) -> None:
    node = {"metadata": {"name": "n", "labels": labels}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}}
    assert node_row(node).gpu_model == model


# ---- pods -----------------------------------------------------------------------------------------------------

def test_a_deployment_pod() -> None:
    lost: set[str] = set()
    p = pod_row(WEB, start=0.0, gpu_models=set(), dropped=lost)
    assert (p.cpu_milli, p.memory_mib) == (1750, 2048 + 954)  # 1e9 bytes is 953.67 MiB: a request rounds up
    assert p.group == "shop/Deployment/checkout-web" and p.owner_kind == "ReplicaSet"
    assert p.tolerations == ({"key": "dedicated", "operator": "Equal", "value": "checkout", "effect": "NoSchedule"},)
    assert (p.name, p.namespace, p.priority_class, p.node_selector) == (
        "checkout-web-7d9f8b6c5-x7x2q", "shop", "shop-critical", {"pool": "general-purpose"})
    assert p.labels == WEB["metadata"]["labels"] and p.lifetime_seconds is None and p.gpu_models == ()
    assert lost == set()


def test_a_gpu_pod_with_limits_only_and_an_affinity_on_the_gpu_model() -> None:
    p = pod_row(TRAIN, start=0.0, gpu_models={"NVIDIA-A100-SXM4-40GB"})
    assert (p.gpu, p.gpu_milli, p.cpu_milli, p.memory_mib) == (2, 0, 8000, 65536)
    assert p.gpu_models == ("NVIDIA-A100-SXM4-40GB",)  # H100 is in no captured node: left out
    assert p.group == "falcon/Job/falcon-train" and p.owner_kind == "Job"
    assert p.tolerations == ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    with pytest.raises(Skip, match="gpu-model"):
        pod_row(TRAIN, start=0.0, gpu_models={"NVIDIA-L4"})


def test_affinity_the_trace_cannot_hold_is_counted_as_dropped() -> None:
    pod = copy.deepcopy(TRAIN)
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms["nodeSelectorTerms"][0]["matchExpressions"].append({"key": "zone", "operator": "NotIn", "values": ["b"]})
    pod["spec"]["affinity"]["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}
    pod["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "zone",
                                                 "whenUnsatisfiable": "DoNotSchedule"}]
    lost: set[str] = set()
    p = pod_row(pod, 0.0, {"NVIDIA-A100-SXM4-40GB"}, lost)
    assert p.gpu_models == ("NVIDIA-A100-SXM4-40GB",)
    assert lost == {"node-affinity", "pod-affinity", "topology-spread"}


def test_init_containers_sidecars_and_overhead_count_as_the_scheduler_counts_them() -> None:
    pod = _pod("p", "2025-03-03T09:00:00Z", containers=[_requests(cpu="500m", memory="1Gi")],
               initContainers=[{"name": "proxy", "restartPolicy": "Always", **_requests(cpu="100m", memory="128Mi")},
                               _requests(cpu="2", memory="256Mi")],
               overhead={"cpu": "50m", "memory": "10Mi"})
    req = pod_requests(pod)
    # cpu: the init container (2) with the sidecar started before it (0.1) beats containers + sidecar (0.6)
    assert req["cpu"] == Decimal("2.15")
    assert req["memory"] == (1024 + 128 + 10) * 1024**2  # memory: containers + sidecar beat 128Mi + 256Mi
    p = pod_row(pod, 0.0, set())
    assert (p.cpu_milli, p.memory_mib) == (2150, 1162)


def test_extended_resources_and_kwokbench_gpu_shares() -> None:
    pod = _pod("p", "2025-03-03T09:00:00Z", containers=[
        _requests(cpu="1", **{"example.com/fpga": "1", "ephemeral-storage": "1Gi"}),
        _requests(cpu="1", **{"example.com/fpga": "2", "kwokbench.io/gpu-milli": "300"})])
    lost: set[str] = set()
    p = pod_row(pod, 0.0, set(), lost)
    assert (p.extended, p.gpu, p.gpu_milli) == ({"example.com/fpga": "3"}, 0, 300)
    assert lost == {"native-resources"}
    whole = _pod("w", "2025-03-03T09:00:00Z",
                 containers=[_requests(cpu="1", **{"nvidia.com/gpu": "1", "kwokbench.io/gpu-milli": "1000"})])
    assert (pod_row(whole, 0.0, set()).gpu, pod_row(whole, 0.0, set()).gpu_milli) == (1, 0)


def test_lifetime_is_known_for_deleted_and_finished_pods() -> None:
    done = copy.deepcopy(TRAIN)
    done["status"] = {"phase": "Succeeded", "containerStatuses": [
        {"name": "trainer", "state": {"terminated": {"exitCode": 0, "startedAt": "2025-03-03T09:00:02Z",
                                                     "finishedAt": "2025-03-03T10:30:00Z"}}}]}
    assert pod_row(done, 0.0, {"NVIDIA-A100-SXM4-40GB"}).lifetime_seconds == 5400
    going = copy.deepcopy(WEB)
    going["metadata"]["deletionTimestamp"] = "2025-03-03T09:02:05Z"
    assert pod_row(going, 0.0, set()).lifetime_seconds == 120
    assert pod_row(WEB, 0.0, set()).lifetime_seconds is None


def test_daemonset_and_static_pods_are_skipped() -> None:
    assert [skip_reason(p) for p in (WEB, TRAIN, DAEMON, MIRROR)] == [None, None, "daemonset", "static"]
    annotated_only = copy.deepcopy(MIRROR)
    del annotated_only["metadata"]["ownerReferences"]
    assert skip_reason(annotated_only) == "static"
    with pytest.raises(Skip, match="daemonset"):
        pod_row(DAEMON, 0.0, set())


def test_a_cluster_arrivals_count_from_the_first_captured_pod() -> None:
    bare = _pod("debug", "2025-03-03T09:00:05Z", namespace="default", containers=[_requests(cpu="10m")])
    got = convert([GPU_NODE, CPU_NODE], [WEB, MIRROR, TRAIN, DAEMON, bare])
    # the static and DaemonSet pods were created earlier but are not captured: TRAIN arrives at 0
    assert [(p.name, p.arrival_seconds) for p in got.pods] == [
        ("falcon-train-0", 0.0), ("checkout-web-7d9f8b6c5-x7x2q", 5.0), ("debug", 5.0)]
    assert got.start is not None and got.start == pytest.approx(1740992400.0)
    assert got.skipped == {"daemonset": 1, "static": 1}
    assert got.dropped == {"node-extended": 1}
    assert (got.not_ready, got.cordoned) == (("gke-prod-a100-pool-7c1f-x2k9",), ("ip-10-0-3-17.ec2.internal",))
    assert [p.group for p in got.pods] == ["falcon/Job/falcon-train", "shop/Deployment/checkout-web", None]


def _write(nodes: tuple[TraceNode, ...], pods: tuple[TracePod, ...], where: Path) -> str:
    where.mkdir()
    write_nodes(nodes, where / "nodes.csv")
    write_pods(pods, where / "pods.csv")
    return (where / "nodes.csv").read_text() + (where / "pods.csv").read_text()


def test_the_written_capture_reads_back_as_a_valid_trace(tmp_path: Path) -> None:
    got = convert([GPU_NODE, CPU_NODE], [WEB, TRAIN, DAEMON])
    _write(got.nodes, got.pods, tmp_path / "t")
    trace = read_trace(tmp_path / "t" / "pods.csv", tmp_path / "t" / "nodes.csv")
    assert trace.nodes == got.nodes
    assert trace.pods == got.pods


# ---- anonymisation --------------------------------------------------------------------------------------------

SECRETS = ["gke-prod-a100-pool-7c1f-x2k9", "ip-10-0-3-17", "a100-pool", "falcon-research", "general-purpose",
           "checkout-web", "7d9f8b6c5", "x7x2q", "shop-critical", "falcon-train", "shop", "checkout"]


def test_no_original_name_or_label_value_survives_and_the_same_salt_gives_the_same_files(tmp_path: Path) -> None:
    got = convert([GPU_NODE, CPU_NODE], [WEB, TRAIN])
    plain = _write(got.nodes, got.pods, tmp_path / "plain")
    assert [s for s in SECRETS if s not in plain] == []  # the test would see them
    anon = anonymise(got, "s3cret")
    text = _write(anon.nodes, anon.pods, tmp_path / "a") + json.dumps([anon.not_ready, anon.cordoned])
    assert [s for s in SECRETS if s in text] == []
    # what says what a node or pod is stays: public label keys and values of well-known keys, models, kinds
    for kept in ("NVIDIA-A100-SXM4-40GB", "a2-highgpu-4g", "us-central1-a", "ReplicaSet", "Job", "dedicated",
                 "nvidia.com/gpu.product", "pod-template-hash"):
        assert kept in text, kept
    again = anonymise(got, "s3cret")
    assert _write(again.nodes, again.pods, tmp_path / "b") == _write(anon.nodes, anon.pods, tmp_path / "c")
    other = anonymise(got, "another")
    assert _write(other.nodes, other.pods, tmp_path / "d") != text
    # references still hold: the NotReady node is a captured node, hostname labels equal the hashed names
    assert set(anon.not_ready) <= {n.name for n in anon.nodes}
    assert [n.labels["kubernetes.io/hostname"] == n.name for n in anon.nodes] == [True, False]  # as in the cluster
    trace = read_trace(tmp_path / "a" / "pods.csv", tmp_path / "a" / "nodes.csv")
    assert len(trace.pods) == 2 and [p.cpu_milli for p in trace.pods] == [p.cpu_milli for p in got.pods]


# ---- the directory --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("context", "name"), [
    ("kwok-e2e", "captured-kwok-e2e"),
    ("arn:aws:eks:us-east-1:123:cluster/Prod_1", "captured-arn-aws-eks-us-east-1-123-cluster-prod-1"),
    ("", "captured-cluster"), ("x" * 80, "captured-" + "x" * 51),
    ("gke_proj_zone_" + "-" * 60, "captured-gke-proj-zone"),
])
def test_the_scenario_name_is_a_dns_label(context: str, name: str) -> None:
    assert output.scenario_name(context) == name


def test_the_scenario_replays_the_capture() -> None:
    from datetime import UTC, datetime

    text = output.scenario_yaml("prod: #1", datetime(2025, 3, 4, 12, 0, tzinfo=UTC), 6, 12)
    doc = yaml.safe_load(text)
    assert doc == {
        "schema_version": 1, "name": "captured-prod-1",
        "description": "Captured from prod: #1 on 2025-03-04 by kwokbench capture (6 nodes, 12 pods)",
        "cluster": {"node_groups": [{"name": "captured", "from_trace": {"file": "nodes.csv"}}]},
        "schedulers": [{"name": "default"}],
        "workloads": [{"name": "replay", "trace": {"file": "pods.csv", "nodes": "nodes.csv", "duration_seconds": 600}}],
    }
    plain = output.scenario_yaml("kwok-e2e", datetime(2025, 3, 4, tzinfo=UTC), 6, 12)
    assert "description: Captured from kwok-e2e on 2025-03-04 by kwokbench capture (6 nodes, 12 pods)\n" in plain
    assert "      from_trace: {file: nodes.csv}\n" in plain
    assert "    trace: {file: pods.csv, nodes: nodes.csv, duration_seconds: 600}\n" in plain


def test_a_folder_that_is_not_empty_is_refused_unless_forced(tmp_path: Path) -> None:
    from kwokbench.errors import ScenarioError

    got = convert([CPU_NODE], [WEB])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ScenarioError, match="not empty"):
        output.write_capture(out, got.nodes, got.pods, "s", "w", {"format_version": 1}, force=False)
    output.write_capture(out, got.nodes, got.pods, "s", "w", {"format_version": 1}, force=True)
    assert sorted(p.name for p in out.iterdir()) == sorted([*output.FILES, "notes.txt"])
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left
    fresh = tmp_path / "deep" / "new"
    output.write_capture(fresh, got.nodes, got.pods, "s", "w", {"format_version": 1}, force=False)
    assert sorted(p.name for p in fresh.iterdir()) == sorted(output.FILES)
    changed = dataclasses.replace(got.pods[0], cpu_milli=1)
    output.write_capture(fresh, got.nodes, (changed,), "s", "w", {"format_version": 1}, force=True)
    assert read_trace(fresh / "pods.csv").pods[0].cpu_milli == 1


@pytest.mark.parametrize("gpus", [False, True])
def test_the_what_if_scenario_fills_the_cluster_with_spread_against_bin_packing(tmp_path: Path, gpus: bool) -> None:
    """It validates where the capture was written (its bin-packing configuration comes from kwokbench's own
    catalogue, not from beside it), inflates on the resource that runs out, and has no lifetimes."""
    from datetime import UTC, datetime

    from kwokbench.plan import check_scenario
    from kwokbench.scenario import load_scenario

    nodes = [GPU_NODE, CPU_NODE] if gpus else [CPU_NODE]
    got = convert(nodes, [WEB, TRAIN] if gpus else [WEB])
    out = tmp_path / "capture"
    what_if = output.what_if_yaml("prod", datetime(2025, 3, 4, tzinfo=UTC), len(got.nodes), len(got.pods), gpus)
    output.write_capture(out, got.nodes, got.pods, "s", what_if, {"format_version": 1}, force=False)
    doc = yaml.safe_load((out / output.WHAT_IF).read_text())
    assert [s.get("config") for s in doc["schedulers"]] == [None, "configs/gpu-binpack.yaml" if gpus
                                                            else "configs/binpack.yaml"]
    trace = doc["workloads"][0]["trace"]
    assert trace["inflate"] == 1.3 and trace["rate"] == 100 and trace["lifetimes"] is False
    assert doc["workloads"][0]["settle_seconds"] == 30 and doc["gates"] == [f"{'gpu' if gpus else 'cpu'}_allocation:2%"]
    assert not (out / "configs").exists()
    sc = load_scenario(out / output.WHAT_IF)
    check_scenario(sc, out)  # raises on a config it cannot find
    assert sc.workloads[0].count > len(got.pods)  # inflated
