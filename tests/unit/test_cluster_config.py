from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kwokbench.cli import parse_params
from kwokbench.cluster.kubeconfig import load_kubeconfig
from kwokbench.cluster.kwokctl import ClusterOptions, kwokctl_documents, scheduler_config, validate_name
from kwokbench.components import cluster_options, scheduler
from kwokbench.components.extender.component import Extender
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.plan import setup_of
from kwokbench.scenario import parse_scenario


def test_kwokctl_documents_point_at_toolchain_and_disable_limits() -> None:
    docs = kwokctl_documents({"runtime": "binary", "etcdBinary": "/c/etcd"}, ClusterOptions(name="x"),
                             {"kubeApiserverPort": 1234})
    ctl, kwok = docs
    assert ctl["kind"] == "KwokctlConfiguration"
    assert ctl["options"] == {"runtime": "binary", "etcdBinary": "/c/etcd", "kubeApiserverPort": 1234,
                              "disableQPSLimits": True}
    assert kwok["kind"] == "KwokConfiguration"
    assert kwok["options"]["nodePlayStageParallelism"] == 64


def test_kwokctl_documents_keep_limits_and_prometheus() -> None:
    ctl = kwokctl_documents({}, ClusterOptions(qps_limits=True, prometheus_port=9999), {})[0]
    assert ctl["options"] == {"disableQPSLimits": False, "prometheusPort": 9999}


def test_scheduler_config_gets_unlimited_client_qps(tmp_path: Path) -> None:
    src = tmp_path / "s.yaml"
    src.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "profiles: [{schedulerName: default-scheduler}]\n")
    def render(**kw: object) -> dict[str, object]:
        out = scheduler_config(ClusterOptions(**kw), tmp_path / "o.yaml")  # type: ignore[arg-type]
        return yaml.safe_load(out.read_text())  # type: ignore[no-any-return]

    assert render(scheduler_config=src, qps_limits=False)["clientConnection"] == {"qps": 5000, "burst": 10000}
    assert "clientConnection" not in render(scheduler_config=src, qps_limits=True)
    # a variant's own client QPS wins over both defaults, and is recorded in a generated config
    assert render(scheduler_client_qps=200, qps_limits=True)["clientConnection"] == {"qps": 200, "burst": 200}
    assert render(scheduler_config=src, scheduler_client_qps=300, scheduler_client_burst=600)[
        "clientConnection"] == {"qps": 300, "burst": 600}
    # no file: kube-scheduler's defaults, without leader election, and unlimited client QPS
    assert render() == {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "leaderElection": {"leaderElect": False}, "clientConnection": {"qps": 5000, "burst": 10000}}
    src.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "leaderElection: {leaderElect: true}\n")
    assert render(scheduler_config=src)["leaderElection"] == {"leaderElect": True}


def test_scheduler_config_appends_extenders(tmp_path: Path) -> None:
    src = tmp_path / "s.yaml"
    src.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "extenders: [{urlPrefix: 'http://other', filterVerb: f}]\n")
    ext = {"urlPrefix": "http://127.0.0.1:1234", "filterVerb": "filter"}
    for s in (src, None):
        out = scheduler_config(ClusterOptions(scheduler_config=s, scheduler_extenders=[ext]), tmp_path / "o.yaml")
        doc = yaml.safe_load(out.read_text())
        assert doc["kind"] == "KubeSchedulerConfiguration"
        assert doc["extenders"][-1] == ext
        assert len(doc["extenders"]) == (2 if s else 1)


EXTENDER = """\
schema_version: 1
name: s
cluster: {node_groups: [{name: c, count: 1}]}
schedulers: [{name: ext, extender: {rule: nodenumber, weight: 7, filter: false}}]
workloads: [{name: p, count: 1}]
"""


def test_a_variants_extender_is_in_its_scheduler_configuration_with_its_weight(tmp_path: Path) -> None:
    sc = parse_scenario(EXTENDER)
    [ext] = scheduler(setup_of(sc, tmp_path, sc.schedulers[0], None)).addons()
    assert isinstance(ext, Extender)
    copts = cluster_options(sc, tmp_path, sc.schedulers[0], "x", None, [ext])  # type: ignore[arg-type]
    doc = yaml.safe_load(scheduler_config(copts, tmp_path / "o.yaml").read_text())
    assert doc["extenders"] == [{"urlPrefix": ext.url, "weight": 7, "enableHTTPS": False, "nodeCacheCapable": False,
                                 "httpTimeout": "30s", "prioritizeVerb": "prioritize"}]  # no filter verb
    assert ext.process.rule == "nodenumber"
    for weight, message in (("0", "greater than or equal to 1"), ("101", "less than or equal to 100")):
        with pytest.raises(ScenarioError, match=f"schedulers.0.extender.weight: Input should be {message}") as e:
            parse_scenario(EXTENDER.replace("weight: 7", f"weight: {weight}"))
        assert "\n" not in str(e.value)


def test_scheduler_config_rejects_other_kinds(tmp_path: Path) -> None:
    src = tmp_path / "s.yaml"
    src.write_text("apiVersion: v1\nkind: ConfigMap\n")
    with pytest.raises(ScenarioError, match="expected kind KubeSchedulerConfiguration"):
        scheduler_config(ClusterOptions(scheduler_config=src), tmp_path / "o.yaml")


@pytest.mark.parametrize("name", ["UPPER", "has_underscore", "-lead", "x" * 41, ""])
def test_invalid_cluster_names(name: str) -> None:
    with pytest.raises(ClusterError, match="invalid cluster name"):
        validate_name(name)


def test_parse_params_types() -> None:
    assert parse_params(["gpus=8", "cpu=4000m", "labels={zone: a}", "flag=true"]) == {
        "gpus": 8, "cpu": "4000m", "labels": {"zone": "a"}, "flag": True}
    with pytest.raises(ScenarioError, match="expected key=value"):
        parse_params(["novalue"])


def test_kubeconfig_relative_paths_and_context(tmp_path: Path) -> None:
    (tmp_path / "kc.yaml").write_text(yaml.safe_dump({
        "current-context": "a",
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}},
                     {"name": "b", "context": {"cluster": "c", "user": "t"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443/",
                                               "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": {"client-certificate": "u.crt", "client-key": "u.key"}},
                  {"name": "t", "user": {"token": "s3cret"}}],
    }))
    c = load_kubeconfig(tmp_path / "kc.yaml")
    assert c.server == "https://127.0.0.1:6443"
    assert c.ca_file == tmp_path / "ca.crt" and c.key_file == tmp_path / "u.key"
    assert load_kubeconfig(tmp_path / "kc.yaml", "b").headers() == {"Authorization": "Bearer s3cret"}
    with pytest.raises(ClusterError, match="no context named 'zz'"):
        load_kubeconfig(tmp_path / "kc.yaml", "zz")
