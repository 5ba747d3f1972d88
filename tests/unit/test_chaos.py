"""Chaos analysis (pure): node picking, recovery time, lost pods."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kwokbench.cluster import chaos
from kwokbench.cluster.chaos import NODE_GROUP_LABEL, pick_nodes
from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.errors import ScenarioError
from kwokbench.figures.chaos import pods_lost, rate_from_pods, recovery, rescheduling
from kwokbench.scenario import parse_scenario
from tests.support.stand_in_api import StandInApi


def test_pick_nodes_is_a_deterministic_spread_share() -> None:
    names = [f"n-{i:02d}" for i in range(10)]
    assert pick_nodes(names, 0.3) == ["n-00", "n-03", "n-06"]
    assert pick_nodes(list(reversed(names)), 0.3) == ["n-00", "n-03", "n-06"]
    assert pick_nodes(names, 0.01) == ["n-00"]  # at least one
    assert pick_nodes(names, 1.0) == names and pick_nodes([], 0.5) == []


def _rate() -> pd.DataFrame:
    # 100/s for 20 s, nothing for 5 s (the event at t=20, ending at t=22), 100/s again from t=25
    t = np.arange(1.0, 41.0)
    return pd.DataFrame({"t": t, "rate": np.where((t > 20) & (t <= 25), 0.0, 100.0)})


def test_recovery_time_from_the_binding_rate() -> None:
    pods = pd.DataFrame({"node": ["a", "b", "a"], "scheduled": [1.0, 2.0, 30.0], "created": [0.5, 1.5, 29.0]})
    [r] = recovery([{"action": "restart-scheduler", "t": 20.0, "ended": 22.0, "component": "kube-scheduler"}],
                   _rate(), pods)
    assert r["rate_before"] == 100.0 and r["recovered"]
    assert r["recovery_seconds"] == pytest.approx(8.0)  # 3-s mean back at 90% at t=28
    [n] = recovery([{"action": "nodes-not-ready", "t": 20.0, "ended": 21.0, "nodes": ["a"]}], _rate(), pods)
    assert n["pods_on_affected_nodes"] == 2 and n["nodes"] == 1
    never = _rate().assign(rate=lambda d: np.where(d["t"] > 20, 0.0, 100.0))
    [x] = recovery([{"action": "restart-apiserver", "t": 20.0, "ended": 21.0}], never, pods)
    assert x["recovery_seconds"] is None and not x["recovered"]
    [late] = recovery([{"action": "restart-apiserver", "t": 40.5, "ended": 41.0}], _rate(), pods)
    assert late["recovered"] is None and not late["load_after"]  # no pod arrived after it
    # arrivals that stop within the smoothing window after the end cannot show a rate back at its level: no verdict
    stop = _rate().assign(rate=lambda d: np.where(d["t"] > 20, 0.0, 100.0))
    tail = pd.concat([pods.iloc[:2], pd.DataFrame({"node": ["b"], "scheduled": [np.nan], "created": [23.5]})])
    [short] = recovery([{"action": "delete-nodes", "t": 20.0, "ended": 21.0}], stop, tail)
    assert short["recovered"] is None and not short["load_after"]
    tail.loc[tail.index[-1], "created"] = 24.5  # arrivals went on past the window: now it reads NOT recovered
    [long] = recovery([{"action": "delete-nodes", "t": 20.0, "ended": 21.0}], stop, tail)
    assert long["recovered"] is False and long["load_after"]
    [s] = recovery([{"action": "delete-nodes", "at_seconds": 50, "skipped": True}], _rate(), pods)
    assert s["recovery_seconds"] is None and s["skipped"]


def test_pods_lost_and_rate_from_pods() -> None:
    pods = pd.DataFrame({"scheduled": [1.2, np.nan, np.nan, 2.5], "deleted": [False, True, False, True]})
    # one deleted before it was ever scheduled, one never seen at all (5 accepted, 4 seen); one still pending
    assert pods_lost(pods, created=5) == 2
    assert pods_lost(pods.iloc[:0], created=3) == 3
    rate = rate_from_pods(pods)
    assert list(rate["rate"]) == [1.0, 1.0] and list(rate["t"]) == [2.0, 3.0]


COMPACT = """\
schema_version: 1
name: s
cluster: {node_groups: [{name: cpu, count: 3}]}
workloads: [{name: p, count: 1}]
chaos: [{at_seconds: 5, action: restart-apiserver, down_seconds: 1, compact_etcd: true}]
"""


def test_chaos_events_are_validated() -> None:
    base = ("schema_version: 1\nname: s\ncluster: {node_groups: [{name: cpu, count: 3}]}\n"
            "workloads: [{name: p, count: 1}]\n")
    sc = parse_scenario(base + "chaos: [{at_seconds: 5, action: restart-scheduler, down_seconds: 2}]\n")
    assert sc.chaos[0].action == "restart-scheduler" and sc.chaos[0].share == 0.1
    with pytest.raises(ScenarioError, match="no node group 'gpu'"):
        parse_scenario(base + "chaos: [{at_seconds: 5, action: delete-nodes, group: gpu}]\n")
    with pytest.raises(ScenarioError, match="action"):
        parse_scenario(base + "chaos: [{at_seconds: 5, action: reboot-everything}]\n")
    assert parse_scenario(COMPACT).chaos[0].compact_etcd
    with pytest.raises(ScenarioError, match=re.escape("compact_etcd: only with restart-apiserver (the action is "
                                                      "restart-scheduler)")):
        parse_scenario(base + "chaos: [{at_seconds: 5, action: restart-scheduler, compact_etcd: true}]\n")


def test_etcd_is_found_on_the_apiservers_command_line_and_a_failed_compaction_is_recorded() -> None:
    cmd = ["kube-apiserver", "--etcd-prefix=/registry", "--etcd-servers=http://127.0.0.1:32765,http://x:2379"]
    assert chaos.etcd_server(cmd) == "http://127.0.0.1:32765"
    assert chaos.etcd_server(["kube-apiserver", "--etcd-servers", "http://127.0.0.1:2379/"]) == \
        "http://127.0.0.1:2379"
    # a failure is the event's record, never raised into the restart (the apiserver must come back regardless)
    assert chaos.compact_etcd(["kube-apiserver"]) == {
        "compact_error": "compacting etcd: the apiserver's command line names no --etcd-servers"}
    assert "not plain HTTP" in chaos.compact_etcd(["x", "--etcd-servers=https://127.0.0.1:2379"])["compact_error"]
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert "Connection refused" in chaos.compact_etcd(["x", f"--etcd-servers=http://127.0.0.1:{port}"],
                                                      timeout=2)["compact_error"]


GROUPS = """\
schema_version: 1
name: s
cluster: {node_groups: [{name: cpu, count: 4}, {name: gpu, count: 4}]}
workloads: [{name: p, count: 1}]
chaos:
  - {at_seconds: 5, action: delete-nodes, share: 0.5, group: gpu}
  - {at_seconds: 9, action: delete-nodes, share: 0.25}
"""


def _nodes(groups: dict[str, int]) -> StandInApi:
    """An apiserver holding ``groups``' nodes (kb-<group>-<i>), listing those a node-group selector picks."""
    nodes = [(f"kb-{g}-{i}", g) for g, n in groups.items() for i in range(n)]
    return StandInApi(lambda path, params: [{"metadata": {"name": n}} for n, g in nodes if (params or {}).get(
        "labelSelector") in (None, f"{NODE_GROUP_LABEL}={g}")])


def test_a_node_action_with_a_group_touches_only_that_groups_nodes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sc = parse_scenario(GROUPS)
    info = ClusterInfo("c", tmp_path, tmp_path / "kubeconfig", 1, 0, 0, 0, None)
    api = _nodes({"cpu": 4, "gpu": 4})
    monkeypatch.setattr(chaos, "Api", api)
    assert asyncio.run(chaos._nodes_action(info, sc.chaos[0])) == {"nodes": ["kb-gpu-0", "kb-gpu-2"]}
    assert api.requests == [("GET", "/api/v1/nodes", {"labelSelector": "kwokbench.io/node-group=gpu"}, None),
                            ("DELETE", "/api/v1/nodes/kb-gpu-0", None, None),
                            ("DELETE", "/api/v1/nodes/kb-gpu-2", None, None)]
    api.requests.clear()
    assert asyncio.run(chaos._nodes_action(info, sc.chaos[1])) == {"nodes": ["kb-cpu-0", "kb-gpu-0"]}  # any group
    assert api.requests[0] == ("GET", "/api/v1/nodes", None, None)


def test_rescheduling_counts_evictions_and_controller_replacements() -> None:
    pods = pd.DataFrame({
        "workload": ["jobs"] * 4 + ["bare"] * 2, "node": ["a", "b", "b", "", "a", "c"],
        "created": [1.0, 2.0, 9.0, 10.0, 1.0, 2.0], "scheduled": [1.5, 2.5, 9.5, np.nan, 1.2, 2.2],
        "deleted": [True, False, False, False, True, False]})
    phases = [{"name": "jobs", "pods_expected": 2}, {"name": "bare", "pods_expected": 2}]
    # pods on node a were evicted (one Job pod, one bare pod); the Job made 2 replacements, 1 scheduled so far
    assert rescheduling(pods, phases, {"a"}) == {"pods_evicted": 2, "pods_replaced": 2, "replacements_scheduled": 1}
    assert rescheduling(pods.iloc[:0], phases, {"a"})["pods_replaced"] == 0
