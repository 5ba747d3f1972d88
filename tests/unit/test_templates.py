from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.manifests import POD_GROUP_LABEL, ManifestFactory, collection_path, render_manifest, resolve_template


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
