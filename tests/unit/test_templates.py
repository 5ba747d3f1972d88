from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.manifests import POD_GROUP_LABEL, ManifestFactory, collection_path, render_manifest, resolve_template
from kwokbench.plan import gang_factory, manifest_factories, node_groups
from kwokbench.scenario import load_scenario


def test_builtin_node_template_defaults() -> None:
    f = ManifestFactory(resolve_template("node"), {"group": "g"}, "kb-g")
    node = orjson.loads(f.body(7))
    assert node["metadata"]["name"] == "kb-g-7"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "kb-g-7"
    assert node["status"]["allocatable"] == {"cpu": "32", "memory": "256Gi", "pods": "110"}
    assert node["spec"]["taints"] == []


def test_node_template_gpus_labels_taints() -> None:
    params = {"gpus": 8, "cpu": "4", "labels": {"zone": "a"}, "taints": [{"key": "gpu", "value": "true"}]}
    node = orjson.loads(ManifestFactory(resolve_template("node"), params, "n").body(0))
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert node["status"]["capacity"]["cpu"] == "4"
    assert node["metadata"]["labels"]["zone"] == "a"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]


def test_a_node_carries_the_labels_kube_controller_manager_would_add() -> None:
    """kube-controller-manager's node lifecycle controller gives every node the deprecated beta.kubernetes.io/arch
    and /os labels equal to the kubernetes.io ones: a node created without them gets a label write during the run,
    and each such write made kube-scheduler re-run PreEnqueue for every gated DRA pod (5000 nodes, 2026-11-30)."""
    node = orjson.loads(ManifestFactory(resolve_template("node"), {"extended": {"example.com/fpga": 2}}, "n").body(0))
    labels, info = node["metadata"]["labels"], node["status"]["nodeInfo"]
    assert labels["beta.kubernetes.io/arch"] == labels["kubernetes.io/arch"] == info["architecture"]
    assert labels["beta.kubernetes.io/os"] == labels["kubernetes.io/os"] == info["operatingSystem"]
    assert node["status"]["allocatable"]["example.com/fpga"] == node["status"]["capacity"]["example.com/fpga"] == "2"
    assert resolve_template("node").read_text().count("(extended | default({})).items()") == 1


def test_fast_path_and_per_object_fallback(tmp_path: Path) -> None:
    plain = tmp_path / "p.yaml.j2"
    plain.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: '{{ name }}'}\n")
    indexed = tmp_path / "i.yaml.j2"
    indexed.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: '{{ name }}', labels: {i: '{{ index % 2 }}'}}\n")
    fast = ManifestFactory(plain, {}, "p")
    slow = ManifestFactory(indexed, {}, "p")
    assert fast._fast is not None and slow._fast is None
    assert orjson.loads(slow.body(3))["metadata"] == {"name": "p-3", "labels": {"i": "1"}}
    assert orjson.loads(fast.body(3))["metadata"] == {"name": "p-3"}


def test_undefined_variable_is_an_error(tmp_path: Path) -> None:
    t = tmp_path / "t.yaml.j2"
    t.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: '{{ name }}-{{ missing }}'}\n")
    with pytest.raises(ScenarioError, match="'missing' is undefined"):
        render_manifest(t, {"name": "x"})


def test_invalid_yaml_and_invalid_manifest(tmp_path: Path) -> None:
    t = tmp_path / "t.yaml.j2"
    t.write_text("apiVersion: v1\nkind: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML at line"):
        render_manifest(t, {})
    t.write_text("apiVersion: v1\nmetadata: {}\n")
    with pytest.raises(ScenarioError, match=r"lacks kind, metadata\.name"):
        render_manifest(t, {})


def test_syntax_error_has_line(tmp_path: Path) -> None:
    t = tmp_path / "t.yaml.j2"
    t.write_text("a: 1\nb: {% if %}\n")
    with pytest.raises(ScenarioError, match=r"t.yaml.j2:2: template syntax error"):
        render_manifest(t, {})


def test_unknown_template_lists_builtins() -> None:
    with pytest.raises(ScenarioError, match=r"builtin templates: .*node"):
        resolve_template("nope.yaml.j2")


def test_collection_paths() -> None:
    assert collection_path("v1", "Node", "x") == "/api/v1/nodes"
    assert collection_path("v1", "Pod", "ns") == "/api/v1/namespaces/ns/pods"
    assert collection_path("batch/v1", "Job", "ns") == "/apis/batch/v1/namespaces/ns/jobs"
    assert collection_path("scheduling.x-k8s.io/v1alpha1", "PodGroup", "ns") == \
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"
    # Kubernetes' own guess for a kind ending in s or y (an external scheduler's manifests may hold any kind)
    assert collection_path("scheduling.k8s.io/v1", "PriorityClass", None) == \
        "/apis/scheduling.k8s.io/v1/priorityclasses"
    assert collection_path("networking.k8s.io/v1", "NetworkPolicy", "ns") == \
        "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies"


def test_gang_members_carry_their_pod_group_label_on_the_fast_path() -> None:
    f = ManifestFactory(resolve_template("pod"), {}, "gangs-ab12cd", labels={"kwokbench.io/run": "ab12cd"},
                        gang_size=4)
    assert f._fast is not None  # one render, names and groups spliced in
    groups = [orjson.loads(f.body(i))["metadata"]["labels"][POD_GROUP_LABEL] for i in range(9)]
    assert groups == ["gangs-ab12cd-gang-0"] * 4 + ["gangs-ab12cd-gang-1"] * 4 + ["gangs-ab12cd-gang-2"]
    assert f.group_prefix == "gangs-ab12cd-gang"
    assert POD_GROUP_LABEL not in f.labels_of_pods() and f.labels_of_pods()["kwokbench.io/run"] == "ab12cd"
    # a PodGroup factory with that prefix names PodGroup k exactly like the label of its members
    pg = ManifestFactory(resolve_template("podgroup"), {"min_member": 4}, f.group_prefix)
    assert orjson.loads(pg.body(2))["metadata"]["name"] == groups[8]
    assert pg.kind == "PodGroup" and orjson.loads(pg.body(0))["spec"]["minMember"] == 4


def test_a_kind_names_the_gang_in_an_annotation_too() -> None:
    """A scheduler kind that finds a pod's PodGroup by an annotation gets the gang's name there as well."""
    f = ManifestFactory(resolve_template("pod"), {}, "g", gang_size=2, gang_annotations=("example.io/group",),
                        pod_annotations={"a": "b"})
    docs = [orjson.loads(f.body(i)) for i in range(3)]
    assert [d["metadata"]["annotations"].get("example.io/group") for d in docs] == ["g-gang-0", "g-gang-0", "g-gang-1"]
    assert all(d["metadata"]["annotations"]["a"] == "b" for d in docs)
    plain = ManifestFactory(resolve_template("pod"), {}, "p", gang_annotations=("example.io/group",))
    assert "example.io/group" not in (orjson.loads(plain.body(0))["metadata"].get("annotations") or {})


def test_node_selector_is_merged_into_pods_and_job_templates() -> None:
    sel = {"kwokbench.io/attached": "byo"}
    pod = orjson.loads(ManifestFactory(resolve_template("pod"), {}, "p", node_selector=sel).body(0))
    assert pod["spec"]["nodeSelector"] == sel
    job = orjson.loads(ManifestFactory(resolve_template("job"), {}, "j", node_selector=sel).body(0))
    assert job["spec"]["template"]["spec"]["nodeSelector"] == sel
    assert "nodeSelector" not in orjson.loads(ManifestFactory(resolve_template("pod"), {}, "p").body(0))["spec"]


OWN_TEMPLATES = """\
schema_version: 1
name: s
cluster:
  node_groups:
    - {name: big, count: 2, template: big-node.yaml.j2, params: {cpu: 96}}
    - {name: std, count: 1}
workloads:
  - name: g
    count: 8
    gang: {size: 4, min_member: 3, template: my-podgroup.yaml.j2, schedule_timeout_seconds: 90}
"""
BIG_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: {{ name }}
  labels: {kwokbench.io/node-group: "{{ group }}", example.io/shape: big}
status:
  allocatable: {cpu: "{{ cpu }}", pods: "110"}
"""
MY_PODGROUP = """\
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: {{ name }}
  labels: {example.io/made-by: me}
spec:
  minMember: {{ min_member }}
  scheduleTimeoutSeconds: {{ schedule_timeout_seconds }}
"""


def test_a_scenarios_own_node_and_podgroup_templates_beside_it(tmp_path: Path) -> None:
    (tmp_path / "big-node.yaml.j2").write_text(BIG_NODE)
    (tmp_path / "my-podgroup.yaml.j2").write_text(MY_PODGROUP)
    (tmp_path / "s.yaml").write_text(OWN_TEMPLATES)
    sc = load_scenario(tmp_path / "s.yaml")
    big, std = node_groups(sc, tmp_path)
    node = orjson.loads(ManifestFactory(big.template, {**big.params, "group": big.name}, "kb-big").body(1))
    assert node["metadata"]["labels"] == {"kwokbench.io/node-group": "big", "example.io/shape": "big"}
    assert node["status"]["allocatable"] == {"cpu": "96", "pods": "110"}
    assert std.template == resolve_template("node")  # a group without one: the builtin
    [members] = manifest_factories(sc, tmp_path, "lbl", variant=sc.schedulers[0])
    pg = orjson.loads(gang_factory(sc.workloads[0], members, tmp_path).body(1))
    assert pg["metadata"]["name"] == "g-lbl-gang-1" and pg["metadata"]["labels"]["example.io/made-by"] == "me"
    assert pg["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 90}
    builtin = load_scenario(tmp_path / "s.yaml", ["workloads.0.gang={size: 4}"])
    [members] = manifest_factories(builtin, tmp_path, "lbl", variant=builtin.schedulers[0])
    assert orjson.loads(gang_factory(builtin.workloads[0], members, tmp_path).body(0))["spec"] == {
        "minMember": 4, "scheduleTimeoutSeconds": 30}  # the builtin podgroup: min_member the size, 30 s
    (tmp_path / "cm.yaml.j2").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ name }}'}\n")
    other = load_scenario(tmp_path / "s.yaml", ["workloads.0.gang={size: 4, template: cm.yaml.j2}"])
    with pytest.raises(ScenarioError, match=re.escape("gang.template cm.yaml.j2 makes a ConfigMap, not a PodGroup")):
        gang_factory(other.workloads[0], members, tmp_path)
    volcano = load_scenario(tmp_path / "s.yaml", ["schedulers=[{name: v, binary: volcano}]"])
    with pytest.raises(ScenarioError, match=re.escape(
            "workload g: gang.template my-podgroup.yaml.j2 would not be used: scheduler v makes its own PodGroups "
            "(volcano-podgroup); leave gang.template out")):
        manifest_factories(volcano, tmp_path, "lbl", variant=volcano.schedulers[0])
    (tmp_path / "s.yaml").write_text(OWN_TEMPLATES.replace("big-node.yaml.j2", "nope.yaml.j2"))
    with pytest.raises(ScenarioError, match=re.escape("template not found: nope.yaml.j2")):
        node_groups(load_scenario(tmp_path / "s.yaml"), tmp_path)
