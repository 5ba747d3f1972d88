"""What the apiserver would refuse for its shape alone is refused when templates are rendered, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.manifests import MAX_OBJECT_BYTES, ManifestFactory, bad_quantities, is_quantity, resolve_template


@pytest.mark.parametrize("q", ["1", "100m", "0.5", ".5", "5.", "+2", "-1", "1.5Gi", "128Mi", "1Ki", "2Ei", "1n",
                               "3u", "1k", "1M", "1G", "1T", "1P", "1E", "1e3", "1E-2", "2.5e+6", 32, 0.25, None])
def test_quantities_kubernetes_accepts(q: object) -> None:
    assert is_quantity(q)


@pytest.mark.parametrize("q", ["abc", "", " 1", "1 ", "1K", "1kb", "1gi", "1Gib", "1.2.3", ".", "e3", "1e", "1e1.5",
                               "0x10", "1_000", "Infinity", True, float("nan"), [1], {"a": 1}])
def test_not_quantities(q: object) -> None:
    assert not is_quantity(q)


def test_bad_quantities_names_the_field() -> None:
    doc = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}},
                                   {"resources": {"requests": {"cpu": "2"}, "limits": {"memory": "lots"}}}],
                    "volumes": [{"emptyDir": {"sizeLimit": "big"}}], "overhead": {"cpu": "x"}},
           "status": {"allocatable": {"cpu": "abc"}},
           "metadata": {"labels": {"requests": "not a resource list"}}}
    assert list(bad_quantities(doc)) == [("spec.containers[1].resources.limits.memory", "lots"),
                                         ("spec.volumes[0].emptyDir.sizeLimit", "big"), ("spec.overhead.cpu", "x"),
                                         ("status.allocatable.cpu", "abc")]


def test_node_param_that_is_not_a_quantity_names_group_and_field() -> None:
    with pytest.raises(ScenarioError) as e:
        ManifestFactory(resolve_template("node"), {"cpu": "abc", "group": "cpu"}, "kb-cpu")
    assert str(e.value).startswith("node group cpu: status.allocatable.cpu: 'abc' is not a Kubernetes quantity")
    assert "\n" not in str(e.value)


def test_workload_param_that_is_not_a_quantity_names_the_workload() -> None:
    labels = {"kwokbench.io/run": "validate", "kwokbench.io/workload": "pods"}
    with pytest.raises(ScenarioError, match=r"^workload pods: spec\.template\.spec\.containers\[0\]\.resources"
                                            r"\.requests\.memory: '1 GB' is not a Kubernetes quantity"):
        ManifestFactory(resolve_template("job"), {"memory": "1 GB"}, "pods-validate", labels=labels)
    # a JSON number is a quantity too
    ManifestFactory(resolve_template("pod"), {"cpu": 0.5}, "p", labels=labels)


def test_object_over_the_apiserver_limit_is_refused(tmp_path: Path) -> None:
    t = tmp_path / "big.yaml.j2"
    t.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: '{{ name }}'\n  annotations:\n"
                 "    blob: '{{ \"x\" * size }}'\n")
    ManifestFactory(t, {"size": MAX_OBJECT_BYTES - 200}, "p")  # just under: fine
    with pytest.raises(ScenarioError) as e:
        ManifestFactory(t, {"size": 2 * 2**20}, "big", labels={"kwokbench.io/workload": "big"})
    assert str(e.value) == ("workload big: template big.yaml.j2 renders a 2.0 MiB Pod; the apiserver refuses "
                            "objects over 1.5 MiB")
