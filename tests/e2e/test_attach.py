"""Bring your own cluster: a second kwokctl cluster (without its own kwok controller) stands in for an
existing cluster; kwokbench attaches, runs on it, and `down` removes exactly what it labelled."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl, bring_up
from kwokbench.cluster.api import Api
from kwokbench.store import load_run
from tests.conftest import REPO, alive, assert_one_line_error, kwokbench


@pytest.fixture()
def existing(tmp_path: Path, kwokctl: Kwokctl) -> Iterator[ClusterInfo]:
    k = Kwokctl(kwokctl.toolchain, tmp_path / "other-home")
    info = bring_up(k, ClusterOptions(name="existing", disable=["kwok-controller"]), []).cluster

    async def seed() -> None:  # objects of "someone else" that must survive
        async with Api(info.credentials()) as api:
            await api.json("POST", "/api/v1/namespaces", {"metadata": {"name": "team-a"}})
            await api.json("POST", "/api/v1/namespaces/team-a/configmaps", {"metadata": {"name": "keep-me"}})
            await api.json("POST", "/api/v1/nodes", {"metadata": {"name": "real-node-1"}})
            await api.json("POST", "/api/v1/namespaces/default/pods", {
                "metadata": {"name": "real-pod"},
                "spec": {"nodeName": "real-node-1", "containers": [{"name": "c", "image": "x"}]}})
    asyncio.run(seed())
    yield info
    k.delete("existing")


async def _names(info: ClusterInfo, path: str) -> set[str]:
    async with Api(info.credentials()) as api:
        return {i["metadata"]["name"] for i in (await api.json("GET", path))["items"]}


def test_attach_run_and_down_touch_only_labelled_objects(existing: ClusterInfo, tmp_path: Path) -> None:
    env = {"KWOKBENCH_HOME": str(tmp_path / "kb-home")}
    kc = str(existing.kubeconfig)
    # no terminal and no --yes: refused before anything is created
    assert_one_line_error(kwokbench("up", "--kubeconfig", kc, "--name", "byo", "--nodes", "5", env=env),
                          "without --yes-this-is-a-test-cluster")
    assert asyncio.run(_names(existing, "/api/v1/nodes")) == {"real-node-1"}
    res = kwokbench("up", "--kubeconfig", kc, "--name", "byo", "--nodes", "5", "--yes-this-is-a-test-cluster",
                    env=env, check=True)
    assert "5 Ready fake nodes" in " ".join(res.stdout.split())
    nodes = asyncio.run(_names(existing, "/api/v1/nodes"))
    assert nodes == {"real-node-1", *(f"kb-byo-default-{i}" for i in range(5))}
    assert "byo" in kwokbench("status", env=env, check=True).stdout

    kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", "byo", "--out", str(tmp_path / "r"),
              "--set", "workloads.0.count=50", "--set", "workloads.0.arrival.qps=25",
              "--set", "workloads.0.namespace=kb-load", env=env, check=True)
    [run_dir] = (tmp_path / "r" / "quickstart").iterdir()
    run = load_run(run_dir)
    assert run.summary is not None and run.summary["pods_scheduled"] == 50
    assert set(run.pods["node"]) <= {f"kb-byo-default-{i}" for i in range(5)}  # pinned to the fake nodes
    assert run.summary["metrics_missing"] == ["kube-scheduler", "kube-controller-manager", "etcd"]
    assert run.summary["binding_rate"]["available"]  # the apiserver's /metrics through the kubeconfig
    assert "kubeconfig" not in {p.name for p in run_dir.iterdir()}  # key material never copied

    # binary: external without a command selects the scheduler already running there by its name
    sc = tmp_path / "theirs.yaml"
    sc.write_text((REPO / "scenarios/quickstart.yaml").read_text().replace(
        "  - name: default\n", "  - {name: theirs, binary: external, scheduler_name: default-scheduler}\n"))
    kwokbench("run", str(sc), "--cluster", "byo", "--out", str(tmp_path / "t"), "--set", "workloads.0.count=20",
              "--set", "workloads.0.arrival.qps=20", "--set", "workloads.0.namespace=kb-load", env=env, check=True)
    [theirs] = (tmp_path / "t" / "quickstart").iterdir()
    t = load_run(theirs)
    assert t.summary is not None and t.summary["pods_scheduled"] == 20 and "schedulers" not in t.meta
    assert set(t.pods["scheduler"]) == {"default-scheduler"}
    # ... and a command is refused there (kwokbench does not start schedulers on someone's cluster)
    sc.write_text(sc.read_text().replace("scheduler_name: default-scheduler}",
                                         "scheduler_name: x, command: [sleep, '60']}"))
    assert_one_line_error(kwokbench("run", str(sc), "--cluster", "byo", "--out", str(tmp_path / "t2"), env=env),
                          "on an attached cluster kwokbench does not start schedulers")

    pid = int(json.loads((tmp_path / "kb-home/attached/byo/attach.json").read_text())["kwok_pid"])
    res = kwokbench("down", "byo", env=env, check=True)
    assert "detached byo: deleted 70 pods, 0 jobs, 5 nodes, 1 namespaces" in res.stderr
    assert asyncio.run(_names(existing, "/api/v1/nodes")) == {"real-node-1"}
    assert asyncio.run(_names(existing, "/api/v1/pods")) == {"real-pod"}
    assert asyncio.run(_names(existing, "/api/v1/namespaces/team-a/configmaps")) >= {"keep-me"}
    assert "team-a" in asyncio.run(_names(existing, "/api/v1/namespaces"))
    assert not alive(pid)
    assert not (tmp_path / "kb-home/attached/byo").exists()


def test_attach_to_an_unreachable_apiserver_is_one_line(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: x, cluster: "
                  "{server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
                  "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n")
    res = kwokbench("up", "--kubeconfig", str(kc), "--name", "gone", "--yes-this-is-a-test-cluster",
                    env={"KWOKBENCH_HOME": str(tmp_path / "h"), "HOME": os.environ.get("HOME", "")})
    assert_one_line_error(res, "cannot reach the apiserver https://127.0.0.1:1 of kubeconfig")
    assert not (tmp_path / "h" / "attached" / "gone").exists()
