"""Two kwok controllers sharing 200 fake nodes on a real kwokctl cluster.

Each controller renews the leases of the nodes it manages with its own identity (kwok's
``hostname_<uuid>``), so the holders of the node leases show who manages which node: every node of
partition i must be held by one and the same controller, and the two partitions by different ones. A
pod bound to a node of partition 1 becomes Running, so the extra controller plays pod stages too. After
``delete`` no controller is left running.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl, NodeGroup, bring_up
from kwokbench.cluster.api import Api
from kwokbench.cluster.kwok_controllers import PARTITION_LABEL
from kwokbench.cluster.nodes import is_ready
from kwokbench.manifests import resolve_template
from tests.conftest import alive

NODES, K = 200, 2
NAME = "e2e-kwok2"


@pytest.fixture(scope="module")
def two(kwokctl: Kwokctl) -> Iterator[ClusterInfo]:
    groups = [NodeGroup("a", NODES // 2, resolve_template("node"), {}),
              NodeGroup("b", NODES // 2, resolve_template("node"), {"cpu": 8})]
    res = bring_up(kwokctl, ClusterOptions(name=NAME, kwok_controllers=K), groups)
    assert res.nodes is not None and res.nodes.ready == NODES
    yield res.cluster
    kwokctl.delete(NAME, missing_ok=True)  # the last test deleted it already


async def _get(info: ClusterInfo, path: str, **params: str) -> Any:
    async with Api(info.credentials()) as api:
        return await api.json("GET", path, params=params or None)


def test_every_node_is_ready_in_its_partition(two: ClusterInfo) -> None:
    nodes = asyncio.run(_get(two, "/api/v1/nodes"))["items"]
    assert len(nodes) == NODES and all(is_ready(n) for n in nodes)
    parts = Counter(n["metadata"]["labels"][PARTITION_LABEL] for n in nodes)
    assert parts == {"0": NODES // K, "1": NODES // K}


def test_each_controller_holds_the_leases_of_its_half(two: ClusterInfo) -> None:
    nodes = asyncio.run(_get(two, "/api/v1/nodes"))["items"]
    partition = {n["metadata"]["name"]: n["metadata"]["labels"][PARTITION_LABEL] for n in nodes}
    deadline = time.monotonic() + 60
    while True:  # a lease is created by the first renewal: give every node one
        leases = asyncio.run(_get(two, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"))["items"]
        holders: dict[str, set[str]] = defaultdict(set)
        for lease in leases:
            name = lease["metadata"]["name"]
            if name in partition:
                holders[partition[name]].add(lease["spec"].get("holderIdentity", ""))
        if sum(1 for lease in leases if lease["metadata"]["name"] in partition) == NODES or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert set(holders) == {"0", "1"}
    assert all(len(h) == 1 and "" not in h for h in holders.values()), holders
    assert holders["0"] != holders["1"]


def test_the_second_controller_is_a_process_of_the_cluster(two: ClusterInfo, kwokctl: Kwokctl) -> None:
    pids = kwokctl.pids(NAME)
    assert {"kwok-controller", "kwok-controller-1"} <= set(pids)
    url = two.metrics_endpoints()["kwok-controller-1"]
    with urllib.request.urlopen(url.replace("/metrics", "/healthz"), timeout=5) as r:
        assert r.status == 200
    assert (two.dir / "logs" / "kwok-controller-1.log").exists()


def test_a_pod_on_partition_1_runs(two: ClusterInfo) -> None:
    node = asyncio.run(_get(two, "/api/v1/nodes", labelSelector=f"{PARTITION_LABEL}=1"))["items"][0]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-partition-1", "namespace": "default"},
           "spec": {"nodeName": node["metadata"]["name"], "containers": [{"name": "c", "image": "fake"}]}}

    async def create_and_wait() -> str:
        async with Api(two.credentials()) as api:
            await api.json("POST", "/api/v1/namespaces/default/pods", pod)
            for _ in range(60):
                got = await api.json("GET", "/api/v1/namespaces/default/pods/on-partition-1")
                if got.get("status", {}).get("phase") == "Running":
                    return "Running"
                await asyncio.sleep(0.5)
            return str(got.get("status", {}).get("phase"))

    assert asyncio.run(create_and_wait()) == "Running"


def test_delete_stops_every_controller(kwokctl: Kwokctl, two: ClusterInfo) -> None:
    """Last in this module (the fixture's delete then finds nothing)."""
    pids = kwokctl.pids(NAME)
    kwokctl.delete(NAME)
    assert not any(alive(p) for c, p in pids.items() if c.startswith("kwok-controller"))
