"""Components' flags: entries as a scenario writes them, kwokbench's own kube-scheduler flags refused, and every
flag written into kwokctl's configuration as a component patch (never through kwokctl's ``--extra-args``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench import flags
from kwokbench.cluster.kwokctl import ClusterOptions, kwokctl_documents
from kwokbench.errors import ScenarioError
from kwokbench.scenario import parse_scenario

BASE = """\
schema_version: 1
name: f
cluster:
  node_groups: [{name: cpu, count: 1}]
CLUSTER_EXTRA
schedulers:
  - name: a
VARIANT_EXTRA
workloads: [{name: w, count: 1, arrival: {type: qps, qps: 10}}]
"""


def _scenario(cluster_extra: str = "", variant_extra: str = "") -> str:
    return BASE.replace("CLUSTER_EXTRA", cluster_extra).replace("VARIANT_EXTRA", variant_extra)


def _patches(opts: ClusterOptions, more: list[str] = ()) -> dict[str, list[str]]:  # type: ignore[assignment]
    ctl = kwokctl_documents({}, opts, {}, more)[0]
    out: dict[str, list[str]] = {}
    for p in ctl["componentsPatches"]:
        out.setdefault(p["name"], []).extend(f"{a['key']}={a['value']}" for a in p.get("extraArgs", []))
    return out


def test_a_component_named_after_a_repeated_one_keeps_its_flags() -> None:
    """kwokctl v0.8.0's --extra-args crashed on exactly this order (kwok-controller twice, then kube-scheduler
    twice: index out of range); as patches each component gets its own flags, in order."""
    got = _patches(ClusterOptions(extra_args=["kube-scheduler=v=2", "kube-apiserver=v=3",
                                              "kube-scheduler=feature-gates=A=true,B=false"]))
    assert got["kube-scheduler"][-2:] == ["v=2", "feature-gates=A=true,B=false"]
    assert got["kube-scheduler"][0].startswith("authorization-always-allow-paths=")  # kwokbench's default first
    assert got["kube-apiserver"][-1] == "v=3"
    assert got["kwok-controller"][:2] == ["manage-all-nodes=false",
                                          "manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"]
    # every component once, in the order first named
    names = [p["name"] for p in kwokctl_documents({}, ClusterOptions(gogc=None), {})[0]["componentsPatches"]]
    assert len(names) == len(set(names))


def test_more_flags_and_kwok_configs_reach_their_components() -> None:
    got = _patches(ClusterOptions(kwok_configs=[Path("/c/a.yaml")]), ["prometheus=storage.tsdb.path=/d"])
    assert got["kwok-controller"][-1] == "config=/c/a.yaml"
    assert got["prometheus"] == ["storage.tsdb.path=/d"]


def test_entries_split_and_checked() -> None:
    assert flags.split_flag("--v=3") == ("v", "3")
    assert flags.split_flag("feature-gates=A=true") == ("feature-gates", "A=true")
    assert flags.split_component_flag("kube-scheduler=feature-gates=A=true") == ("kube-scheduler", "feature-gates",
                                                                                 "A=true")
    assert flags.for_component(["kube-scheduler=v=2", "etcd=x=1", "kube-scheduler=v=4"], "kube-scheduler") == \
        ["v=2", "v=4"]
    with pytest.raises(ValueError, match="not key=value"):
        flags.split_flag("profiling")
    with pytest.raises(ValueError, match="no component 'kube-shceduler'"):
        flags.split_component_flag("kube-shceduler=v=2")
    with pytest.raises(ValueError, match="not component=key=value"):
        flags.split_component_flag("kube-apiserver")
    with pytest.raises(ValueError, match="not a flag name"):
        flags.split_flag("V =2")


@pytest.mark.parametrize("flag", ["config=/x", "kubeconfig=/k", "secure-port=1", "bind-address=0.0.0.0",
                                  "leader-elect=true", "leader-elect-lease-duration=1s", "kube-api-qps=5",
                                  "authorization-always-allow-paths=/x"])
def test_flags_kwokbench_sets_are_refused_in_one_line(flag: str) -> None:
    key = flag.partition("=")[0]
    for text in (_scenario(variant_extra=f"    extra_args: ['{flag}']"),
                 _scenario(cluster_extra=f"  extra_args: ['kube-scheduler={flag}']")):
        with pytest.raises(ScenarioError) as e:
            parse_scenario(text, "s.yaml")
        msg = str(e.value)
        assert "\n" not in msg and f"--{key} is set by kwokbench" in msg, msg


def test_scenario_flags_normalised_and_other_components_free() -> None:
    sc = parse_scenario(_scenario(
        cluster_extra="  extra_args: ['kube-apiserver=secure-port=1', 'etcd=quota-backend-bytes=1']",
        variant_extra="    extra_args: ['--v=3', 'feature-gates=SchedulerAsyncAPICalls=true']"), "s.yaml")
    assert sc.cluster.extra_args == ["kube-apiserver=secure-port=1", "etcd=quota-backend-bytes=1"]
    assert sc.schedulers[0].extra_args == ["v=3", "feature-gates=SchedulerAsyncAPICalls=true"]  # type: ignore[attr-defined]
    with pytest.raises(ScenarioError, match="no component 'scheduler'"):
        parse_scenario(_scenario(cluster_extra="  extra_args: ['scheduler=v=2']"), "s.yaml")
