"""Scenarios that replay a trace (pure): from_trace node groups, a trace workload's pods and times, its
manifests, what it offered, and the figures of a cluster under pressure (kwokbench.figures.allocation)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.figures.allocation import allocated_vs_arrived, allocation, at_arrived, pod_class
from kwokbench.plan import manifest_factories
from kwokbench.runner import trace_offered
from kwokbench.scenario import load_scenario
from kwokbench.trace.kube import DELETE_AFTER_ANNOTATION, GPU_PRODUCT_LABEL

GOLDEN = Path(__file__).parent / "golden" / "trace"


def _written(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    """Scenario ``text`` as a file beside the golden trace's tables."""
    for f in GOLDEN.iterdir():
        shutil.copy(f, tmp_path / f.name)
    p = tmp_path / name
    p.write_text(text)
    return p


def _scenario(tmp_path: Path, workload: str, nodes: str = "{file: nodes.csv}", name: str = "s.yaml") -> Path:
    return _written(tmp_path, f"schema_version: 1\nname: t\ncluster:\n  node_groups:\n    - name: tr\n"
                              f"      from_trace: {nodes}\nworkloads:\n  - name: replay\n    trace: {workload}\n", name)


HALVED = """\
schema_version: 1
name: t
cluster:
  node_groups: [{name: tr, from_trace: {file: nodes.csv}}]
workloads:
  - name: replay
    trace: {file: pods.csv, time_scale: 0.5}
"""


def test_trace_nodes_become_groups_of_identical_nodes(tmp_path: Path) -> None:
    sc = load_scenario(_scenario(tmp_path, "{file: pods.csv}"))
    groups = sc.cluster.node_groups
    assert sum(g.count for g in groups) == 3 and [g.name for g in groups] == ["tr-0", "tr-1", "tr-2"]
    gpu8 = next(g for g in groups if g.params["gpus"] == 8)
    assert gpu8.params["labels"][GPU_PRODUCT_LABEL] == "A100"
    assert gpu8.params["extended"] == {"kwokbench.io/gpu-milli": "8000"}
    assert gpu8.params["cpu"] == "64000m" and gpu8.params["taints"] == [{"key": "gpu", "value": "true",
                                                                        "effect": "NoSchedule"}]


def test_a_trace_workload_gets_its_pods_and_their_times(tmp_path: Path) -> None:
    sc = load_scenario(_written(tmp_path, HALVED))
    w = sc.workloads[0]
    assert w.count == 4 and w.template == "trace-pod"
    assert w.trace_offsets == [0.0, 6.25, 15.0, 15.0]  # arrivals 0, 12.5, 30, 30 halved
    assert [p.lifetime_seconds for p in w.trace_pods] == [None, 30.0, 300.0, 300.0]
    at_rate = load_scenario(_scenario(tmp_path, "{file: pods.csv, rate: 2, limit: 3}", name="r.yaml")).workloads[0]
    assert at_rate.count == 3 and at_rate.trace_offsets == [0.0, 0.5, 1.0]


def test_trace_pods_render_with_their_requests_affinity_and_lifetime(tmp_path: Path) -> None:
    sc = load_scenario(_scenario(tmp_path, "{file: pods.csv}"))
    [f] = manifest_factories(sc, tmp_path, "abc")
    docs = [orjson.loads(f.body(i)) for i in range(4)]
    infer, web, train = docs[0], docs[1], docs[2]
    res = infer["spec"]["containers"][0]["resources"]
    assert res["requests"]["kwokbench.io/gpu-milli"] == "250" and res["limits"]["kwokbench.io/gpu-milli"] == "250"
    assert res["limits"]["example.com/fpga"] == "1" and "cpu" not in res["limits"]
    assert infer["spec"]["nodeSelector"] == {"zone": "a"} and DELETE_AFTER_ANNOTATION not in infer["metadata"].get(
        "annotations", {})
    assert web["metadata"]["annotations"][DELETE_AFTER_ANNOTATION] == "60.000s"
    terms = train["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["A100", "H100"]
    assert train["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "2"
    assert train["spec"]["priorityClassName"] == "high" and train["metadata"]["labels"]["app"] == "train"
    assert [d["metadata"]["name"] for d in docs] == [f"replay-abc-{i}" for i in range(4)]


def test_inflate_needs_the_nodes_and_reaches_the_target(tmp_path: Path) -> None:
    sc = load_scenario(_scenario(tmp_path, "{file: pods.csv, inflate: 1.0, seed: 1}"))
    pods = sc.workloads[0].trace_pods
    gpus = sum(p.gpu + p.gpu_milli / 1000 for p in pods)
    assert 10 <= gpus <= 12 and len(pods) > 4  # 12 GPUs of capacity, approached from below
    p = tmp_path / "n.yaml"
    p.write_text("schema_version: 1\nname: t\ncluster: {node_groups: [{name: a, count: 1}]}\n"
                 "workloads: [{name: r, trace: {file: pods.csv, inflate: 1.3}}]\n")
    with pytest.raises(ScenarioError, match=r"trace\.inflate needs the trace.s nodes"):
        load_scenario(p)


NODES_TABLE = """\
schema_version: 1
name: t
cluster: {node_groups: [{name: a, count: 3}]}
workloads:
  - name: replay
    trace: {file: pods.csv, nodes: nodes.csv, inflate: 1.0, seed: 1}
"""


def test_the_traces_nodes_table_is_the_capacity_inflate_measures_without_from_trace_groups(tmp_path: Path) -> None:
    sc = load_scenario(_written(tmp_path, NODES_TABLE))
    assert [(g.name, g.count) for g in sc.cluster.node_groups] == [("a", 3)]  # the cluster as given
    pods = sc.workloads[0].trace_pods
    # the same resampling as with the table as from_trace node groups: its 12 GPUs, the same seed
    from_groups = load_scenario(_scenario(tmp_path, "{file: pods.csv, inflate: 1.0, seed: 1}", name="g.yaml"))
    assert [p.name for p in pods] == [p.name for p in from_groups.workloads[0].trace_pods] and len(pods) > 4
    (tmp_path / "s.yaml").write_text(NODES_TABLE.replace("nodes.csv", "missing.csv"))
    with pytest.raises(ScenarioError, match=re.escape("missing.csv")) as e:
        load_scenario(tmp_path / "s.yaml")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("workload", "message"), [
    ("{file: nope.csv}", "nope.csv"),
    ("{file: pods.csv, rate: 5, time_scale: 2}", "give one of rate, time_scale, duration_seconds"),
])
def test_bad_trace_workloads_are_one_line(tmp_path: Path, workload: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as e:
        load_scenario(_scenario(tmp_path, workload))
    assert "\n" not in str(e.value)


def test_count_and_arrival_do_not_apply_to_a_trace(tmp_path: Path) -> None:
    p = _scenario(tmp_path, "{file: pods.csv}\n    count: 5")
    with pytest.raises(ScenarioError, match="count do not apply to a trace workload"):
        load_scenario(p)


def test_what_a_trace_offered_says_its_busiest_second() -> None:
    offered = trace_offered(np.array([0.0, 0.1, 0.2, 5.5, 9.0]))
    assert offered == {"pods": 5, "span_seconds": 9.0, "mean_per_second": 5 / 9.0, "peak_per_second": 3,
                       "busiest_second": 0}


def _nodes() -> pd.DataFrame:
    return pd.DataFrame({"name": ["g0", "g1", "c0"], "group": "x", "cpu_m": [8000.0, 8000.0, 8000.0],
                         "gpus": [2.0, 1.0, 0.0], "pods": [110.0] * 3, "mem_mi": [1024.0] * 3,
                         "gpu_milli": [2000.0, 1000.0, 0.0], "gpu_model": ["T4", "T4", ""]})


def _pods(rows: list[tuple[float, float, float, str, float, float, float]]) -> pd.DataFrame:
    created, sched, deleted, node, cpu, gpus, milli = zip(*rows, strict=True)
    return pd.DataFrame({"created": created, "scheduled": sched, "deleted_at": deleted, "node": node,
                         "cpu_m": cpu, "mem_mi": 0.0, "gpus": gpus, "gpu_milli": milli})


def test_allocation_rises_and_falls_with_lifetimes() -> None:
    nan = np.nan
    pods = _pods([(0, 1, 50, "g0", 1000, 1, 1000), (0, 2, 50, "g0", 1000, 1, 1000), (10, 11, nan, "g1", 0, 0, 500)])
    a = allocation(pods, _nodes())
    assert a is not None and a["peak"]["gpu"] == pytest.approx(2.5 / 3) and a["final"]["gpu"] == pytest.approx(0.5 / 3)
    assert a["deleted"] == 2 and a["pending"]["final"] == 0
    assert a["latency_by_class"]["one-gpu"]["pods"] == 2 and a["latency_by_class"]["shared-gpu"]["p50"] == 1.0


def test_free_gpus_no_pending_pod_fits_are_fragmented() -> None:
    nan = np.nan
    # g0 holds one whole GPU, g1 a 600-milli share; a 2-GPU pod waits: it fits neither (g0 has 1 free, g1 0.4)
    pods = _pods([(0, 0, nan, "g0", 0, 1, 1000), (0, 0, nan, "g1", 0, 0, 600), (1, nan, nan, "", 0, 2, 2000)])
    a = allocation(pods, _nodes())
    assert a is not None and a["gpu_fragmentation"]["final_gpus"] == pytest.approx(1.4)
    assert a["pending"]["final"] == 1
    # a 300-milli pod waiting would fit g0 and g1: nothing is fragmented
    fits = _pods([(0, 0, nan, "g0", 0, 1, 1000), (0, 0, nan, "g1", 0, 0, 600), (1, nan, nan, "", 0, 0, 300)])
    b = allocation(fits, _nodes())
    assert b is not None and b["gpu_fragmentation"]["final_gpus"] == 0


def test_two_tenants_cpu_over_time_by_workload() -> None:
    nan = np.nan
    # tenant a: 2 pods of 4 CPUs bound at 1 and 2; tenant b: 1 pod of 8 CPUs bound at 5, one pod of 8 never bound
    pods = _pods([(0, 1, nan, "g0", 4000, 0, 0), (0, 2, nan, "g0", 4000, 0, 0), (0, 5, nan, "g1", 8000, 0, 0),
                  (0, nan, nan, "", 8000, 0, 0)]).assign(workload=["a", "a", "b", "b"])
    a = allocation(pods, _nodes())
    assert a is not None
    t = a["by_workload"]
    assert t["a"]["final_cores"] == 8 and t["b"]["final_cores"] == 8 and t["a"]["final_share"] == pytest.approx(8 / 24)
    assert t["a"]["series"]["cpu"][0] == 0 and t["b"]["series"]["pending"][-1] == 1
    assert len(t["a"]["series"]["cpu"]) == len(a["series"]["t"])
    # one workload: nothing to split
    one = allocation(pods.assign(workload="a"), _nodes())
    assert one is not None and "by_workload" not in one


def test_allocation_against_arrived_workload() -> None:
    curve = allocated_vs_arrived(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1000.0, 1000.0, 1000.0, 1000.0]),
                                 np.array([True, True, False, True]), 2000.0)
    assert at_arrived(curve, 100) == 100.0 and at_arrived(curve, 150) == 100.0 and at_arrived(curve, 200) == 150.0
    assert pod_class(np.array([0, 1, 0, 4.0]), np.array([0, 1000, 250, 4000.0])).tolist() == [
        "cpu-only", "one-gpu", "shared-gpu", "multi-gpu"]


def test_the_lifetime_stage_deletes_running_pods_after_their_annotation() -> None:
    from kwokbench.cluster.stages import delete_after_stage

    st = delete_after_stage()["spec"]
    keys = [e["key"] for e in st["selector"]["matchExpressions"]]
    assert f'.metadata.annotations["{DELETE_AFTER_ANNOTATION}"]' in keys and ".status.phase" in keys
    assert st["delay"]["durationFrom"]["expressionFrom"] == f'.metadata.annotations["{DELETE_AFTER_ANNOTATION}"]'
    assert st["next"] == {"delete": True}


def test_a_cluster_gets_the_stages_its_workloads_need(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs that complete after a delay and a trace with lifetimes: both kwok configs, whatever else is imported
    (kwokbench.components.kueue.component once shadowed the cluster module of the same name)."""
    import kwokbench.components.kueue.component  # noqa: F401
    from kwokbench.components import cluster_options

    monkeypatch.setenv("KWOKBENCH_HOME", str(tmp_path / "home"))
    sc = load_scenario(_scenario(tmp_path, "{file: pods.csv}\n  - name: jobs\n    template: job\n    count: 1\n"
                                           "    complete_after: 4s"))
    copts = cluster_options(sc, tmp_path, sc.schedulers[0], "x", None)  # type: ignore[arg-type]
    assert sorted(p.name for p in copts.kwok_configs) == ["kwok-complete-after.yaml", "kwok-delete-after.yaml"]
