from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kwokbench.cli import parse_params
from kwokbench.cluster.kubeconfig import load_kubeconfig
from kwokbench.cluster.kwokctl import ClusterOptions, kwokctl_documents, scheduler_config_with_qps, validate_name
from kwokbench.errors import ClusterError, ScenarioError


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
    out = yaml.safe_load(scheduler_config_with_qps(src, tmp_path / "o.yaml", qps_limits=False).read_text())
    assert out["clientConnection"] == {"qps": 5000, "burst": 10000}
    kept = yaml.safe_load(scheduler_config_with_qps(src, tmp_path / "k.yaml", qps_limits=True).read_text())
    assert "clientConnection" not in kept


def test_scheduler_config_rejects_other_kinds(tmp_path: Path) -> None:
    src = tmp_path / "s.yaml"
    src.write_text("apiVersion: v1\nkind: ConfigMap\n")
    with pytest.raises(ScenarioError, match="expected kind KubeSchedulerConfiguration"):
        scheduler_config_with_qps(src, tmp_path / "o.yaml", False)


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
