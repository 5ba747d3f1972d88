"""The cluster lifecycle against real kwokctl clusters: nodes, binding, metrics, teardown, bad input."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl
from kwokbench.cluster.api import Api
from kwokbench.cluster.lifecycle import bring_up
from kwokbench.cluster.nodes import NodeGroup, create_nodes, is_ready
from kwokbench.errors import ClusterError
from kwokbench.manifests import resolve_template
from kwokbench.metrics.parse import BINDING, sum_samples
from tests.conftest import alive, assert_one_line_error, kwokbench
from tests.e2e.conftest import E2E_NODES


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _get(info: ClusterInfo, path: str, **params: str) -> Any:
    async with Api(info.credentials()) as api:
        return await api.json("GET", path, params=params or None)


async def _metrics(info: ClusterInfo) -> str:
    async with Api(info.credentials()) as api:
        status, body = await api.raw("GET", "/metrics")
        assert status == 200
        return body.decode()


def test_nodes_are_ready(cluster: ClusterInfo) -> None:
    nodes = run(_get(cluster, "/api/v1/nodes", labelSelector="kwokbench.io/node-group=default"))["items"]
    assert len(nodes) == E2E_NODES
    assert all(is_ready(n) for n in nodes)
    assert nodes[0]["status"]["allocatable"]["cpu"] == "32"
    assert nodes[0]["status"]["allocatable"]["pods"] == "110"


def test_pod_is_bound_by_real_scheduler_and_runs(cluster: ClusterInfo) -> None:
    before = sum_samples(run(_metrics(cluster)), "apiserver_request_total", BINDING)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e2e-bind", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "fake",
                                    "resources": {"requests": {"cpu": "100m"}}}]}}

    async def create_and_wait() -> dict[str, Any]:
        async with Api(cluster.credentials()) as api:
            await api.json("POST", "/api/v1/namespaces/default/pods", pod)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                got: dict[str, Any] = await api.json("GET", "/api/v1/namespaces/default/pods/e2e-bind")
                if got["status"].get("phase") == "Running":
                    return got
                await asyncio.sleep(0.2)
        raise AssertionError("pod did not become Running within 60s")

    got = run(create_and_wait())
    assert got["spec"]["nodeName"].startswith("kb-default-")
    after = sum_samples(run(_metrics(cluster)), "apiserver_request_total", BINDING)
    assert after >= before + 1


def test_scheduler_metrics_endpoint_serves_scheduler_metrics(cluster: ClusterInfo) -> None:
    async def fetch() -> str:
        creds = cluster.credentials()
        sched = type(creds)(f"https://127.0.0.1:{cluster.scheduler_port}", None, creds.cert_file, creds.key_file,
                            insecure=True)
        async with Api(sched) as api:
            status, body = await api.raw("GET", "/metrics")
            assert status == 200
            return body.decode()

    text = run(fetch())
    assert "scheduler_schedule_attempts_total" in text


def test_up_refuses_existing_name_and_leaves_it_alone(cluster: ClusterInfo, kwokctl: Kwokctl) -> None:
    pids = kwokctl.pids("e2e")
    res = kwokbench("up", "--name", "e2e", "--nodes", "1")
    assert_one_line_error(res, "already exists")
    assert kwokctl.pids("e2e") == pids


def test_up_refuses_port_in_use(kwokctl: Kwokctl) -> None:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        res = kwokbench("up", "--name", "busy", "--nodes", "1", "--apiserver-port", str(port))
    assert_one_line_error(res, f"port {port} is already in use")
    assert "busy" not in kwokctl.names()


def test_undefined_template_variable_creates_no_cluster(kwokctl: Kwokctl, tmp_path: Path) -> None:
    tpl = tmp_path / "bad.yaml.j2"
    tpl.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: {{ name }}\n  labels: {x: '{{ zone }}'}\n")
    res = kwokbench("up", "--name", "badtpl", "--nodes", "2", "--node-template", str(tpl))
    assert_one_line_error(res, "'zone' is undefined")
    assert "badtpl" not in kwokctl.names()


def test_unknown_template_file(kwokctl: Kwokctl) -> None:
    res = kwokbench("up", "--name", "nofile", "--node-template", "does-not-exist.yaml.j2")
    assert_one_line_error(res, "template not found: does-not-exist.yaml.j2")


def test_nodes_wait_ends_when_the_kwok_controller_has_stopped(kwokctl: Kwokctl, tmp_path: Path) -> None:
    """A kwok controller that has stopped makes no node Ready: the wait says so within seconds, with the line of its
    log that says why, instead of running to its 300 s timeout; the abandoned cluster's logs are kept. ~10 s."""
    info = bring_up(kwokctl, ClusterOptions(name="nokwok"), []).cluster
    try:
        kwok = kwokctl.processes("nokwok")["kwok-controller"].process(info.dir)[0]
        assert kwok is not None
        kwok.kill()
        kwok.wait(10)
        t = time.monotonic()
        with pytest.raises(ClusterError) as err:
            run(create_nodes(info.credentials(), [NodeGroup("default", 3, resolve_template("node"), {})],
                             stopped=lambda: kwokctl.stopped("nokwok")))
        assert time.monotonic() - t < 60
        assert str(err.value).startswith("only 0/3 nodes became Ready: kwok-controller had stopped (")
    finally:
        said = kwokctl.abandon("nokwok", tmp_path / "logs")
    assert said.startswith("; kwok-controller had stopped (") and said.endswith(f"kept in {tmp_path / 'logs'}")
    assert (tmp_path / "logs" / "kwok-controller.log").exists()
    assert "nokwok" not in kwokctl.names()


def test_up_status_down_leaves_no_process(kwokctl: Kwokctl) -> None:
    res = kwokbench("up", "--name", "life", "--nodes", "20", "--param", "gpus=8", check=True)
    assert "20 Ready nodes" in res.stdout
    assert "kube-scheduler metrics" in res.stdout
    pids = kwokctl.pids("life")
    assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}
    nodes = run(_get(kwokctl.info("life"), "/api/v1/nodes"))["items"]
    assert {n["status"]["allocatable"]["nvidia.com/gpu"] for n in nodes} == {"8"}
    st = kwokbench("status", check=True)
    assert "life" in st.stdout and "20" in st.stdout

    kwokbench("down", "life", check=True)
    alive_pids = [pid for pid in pids.values() if alive(pid)]
    assert alive_pids == []
    assert "life" not in kwokctl.names()
    assert_one_line_error(kwokbench("down", "life"), "no kwokbench cluster named 'life'")
