"""Placement quality, the extender's rule and gang naming: pure functions on small frames."""

from __future__ import annotations

import pandas as pd
import pytest

from kwokbench.components.extender import server as extender
from kwokbench.figures.placement import failed_scheduling_reasons, gpu_rule, placement
from kwokbench.scenario.quantity import quantity

NODES = pd.DataFrame([
    {"name": "small-0", "group": "small", "cpu_m": 1500.0, "gpus": 0.0, "pods": 110.0},
    {"name": "cpu-0", "group": "cpu", "cpu_m": 32000.0, "gpus": 0.0, "pods": 110.0},
    {"name": "gpu-0", "group": "gpu", "cpu_m": 64000.0, "gpus": 8.0, "pods": 110.0},
    {"name": "gpu-1", "group": "gpu", "cpu_m": 64000.0, "gpus": 8.0, "pods": 110.0},
])


def pod(name: str, workload: str, node: str, cpu_m: float = 1000.0, gpus: float = 0.0) -> dict[str, object]:
    return {"namespace": "default", "name": name, "workload": workload, "node": node, "cpu_m": cpu_m, "gpus": gpus,
            "scheduled": 1.0 if node else float("nan"), "created": 0.0}


def test_quantities() -> None:
    assert quantity("500m") == 0.5 and quantity("8") == 8 and quantity(2) == 2
    assert quantity("2Gi") == 2 * 1024**3 and quantity("1k") == 1000
    with pytest.raises(ValueError):
        quantity("lots")


@pytest.mark.parametrize(("kind", "cpu_m", "gpus", "ok"), [
    ("GPU-intensive", 64000, 8, True), ("GPU-intensive", 64000, 0, False),
    ("CPU-intensive", 2000, 0, True), ("CPU-intensive", 1999, 8, False), (None, 1, 0, True), ("batch", 1, 0, True),
])
def test_gpu_rule(kind: str | None, cpu_m: float, gpus: float, ok: bool) -> None:
    assert (gpu_rule(kind, cpu_m, gpus) == "") is ok


def test_utilisation_fragmentation_and_rule_violations() -> None:
    pods = pd.DataFrame([
        pod("g-0", "gpu-work", "gpu-0", gpus=6), pod("g-1", "gpu-work", "small-0", gpus=0),
        pod("c-0", "cpu-work", "cpu-0", cpu_m=16000), pod("c-1", "cpu-work", "small-0", cpu_m=500),
        pod("c-2", "cpu-work", ""),
    ])
    phases = [{"name": "gpu-work", "labels": {"workload-type": "GPU-intensive"}},
              {"name": "cpu-work", "labels": {"workload-type": "CPU-intensive"}}]
    out = placement(pods, NODES, phases, {"default/c-2": "0/4 nodes are available: 4 Insufficient cpu."})
    u = out["utilisation"]
    assert u["nodes"] == 4 and u["nodes_used"] == 3
    # CPU requested/allocatable: small-0 1500/1500, cpu-0 16000/32000, gpu-0 1000/64000, gpu-1 0
    assert u["cpu"]["p50"] == pytest.approx((0.5 + 1000 / 64000) / 2)
    assert u["cpu"]["mean"] == pytest.approx((1 + 0.5 + 1000 / 64000) / 4)
    assert u["gpu"]["mean"] == pytest.approx(6 / 16)
    # gpu-0 has 2 free (< the largest request, 6): stranded; gpu-1 has 8 free: usable
    assert out["gpu_fragmentation"] == {"largest_request": 6.0, "free_gpus": 10.0, "stranded_gpus": 2.0,
                                        "stranded_share": 0.2, "nodes_fitting_largest": 1}
    v = out["rule_violations"]
    assert v["pods_checked"] == 4 and v["violations"] == 2
    assert v["by_type"] == {"GPU-intensive": 1, "CPU-intensive": 1}
    assert out["pending"] == {"pods": 1, "reasons": {"Insufficient cpu": 1}}
    assert out["gangs"] == []


def test_gang_completeness() -> None:
    # gangs of 3: gang 0 complete, gang 1 partly placed (1 of 3), gang 2 not placed
    nodes = ["n", "n", "n", "n", "", "", "", "", ""]
    pods = pd.DataFrame([pod(f"gangs-ab12cd-{i}", "gangs", node) for i, node in enumerate(nodes)])
    [g] = placement(pods, NODES, [{"name": "gangs", "count": 9, "gang": {"size": 3, "min_member": 3}}], {})["gangs"]
    # one gang whole, placed 1 s after the phase's first member was created: 1 gang per second
    assert g.pop("time_to_place") == {"gangs": 1, "p50": 1.0, "p90": 1.0, "max": 1.0, "per_second": 1.0}
    assert g.pop("held_by_partial")["end_pods"] == 1
    assert g == {"phase": "gangs", "gangs": 3, "size": 3, "min_member": 3, "complete": 1, "partial": 1,
                 "unplaced": 1, "pods_in_partial_gangs": 1}
    # minMember 1: any placed member completes its gang
    [g1] = placement(pods, NODES, [{"name": "gangs", "count": 9, "gang": {"size": 3, "min_member": 1}}], {})["gangs"]
    assert (g1["complete"], g1["partial"], g1["unplaced"]) == (2, 0, 1)


def test_gang_time_to_place_counts_from_the_last_member_to_the_min_member_th_bound() -> None:
    rows = [  # gang 0: members created at 0, 1, 2; bound at 5, 3, 9 -> 2nd bound (5) - last created (2) = 3 s
        {**pod(f"g-ab-{i}", "g", "n"), "created": c, "scheduled": s}
        for i, (c, s) in enumerate([(0, 5), (1, 3), (2, 9)])
    ] + [  # gang 1: bound before its last member came (a scheduler placing it by minMember 2 of 3): 0, not < 0
        {**pod(f"g-ab-{i}", "g", "n"), "created": c, "scheduled": s} for i, (c, s) in zip(
            range(3, 6), [(10, 11), (10, 11.5), (12, float("nan"))], strict=True)
    ] + [  # gang 2: one member bound, not whole: left out
        {**pod("g-ab-6", "g", "n"), "created": 20.0, "scheduled": 21.0}, pod("g-ab-7", "g", ""), pod("g-ab-8", "g", "")]
    [g] = placement(pd.DataFrame(rows), NODES, [{"name": "g", "count": 9, "gang": {"size": 3, "min_member": 2}}],
                    {})["gangs"]
    assert (g["complete"], g["partial"], g["unplaced"]) == (2, 1, 0)
    # two whole gangs, the first member created at 0 and the last of them placed at 11.5 (gang 1's 2nd bound)
    assert g["time_to_place"] == {"gangs": 2, "p50": 1.5, "p90": pytest.approx(2.7), "max": 3.0,
                                  "per_second": pytest.approx(2 / 11.5)}


def test_pods_held_by_partly_placed_gangs_over_time() -> None:
    # gangs of 3 (all 3 needed), one CPU each: gang 0 bound at 1, 2, 3 (whole at 3); gang 1 at 4 and 5, its third
    # never, and the member bound at 4 deleted at 6
    rows = [{**pod(f"g-ab-{i}", "g", "n" if s == s else ""), "created": 0.0, "scheduled": s, "cpu_m": 1000.0,
             "deleted_at": d}
            for i, (s, d) in enumerate([(1, None), (2, None), (3, None), (4, 6), (5, None), (float("nan"), None)])]
    [g] = placement(pd.DataFrame(rows), NODES, [{"name": "g", "count": 6, "gang": {"size": 3}}], {})["gangs"]
    h = g["held_by_partial"]
    assert h["series"] == {"t": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "pods": [0, 1, 2, 0, 1, 2, 1],
                           "cpu_m": [0.0, 1000.0, 2000.0, 0.0, 1000.0, 2000.0, 1000.0]}
    assert (h["peak_pods"], h["peak_cpu_m"], h["peak_at"], h["end_pods"], h["end_cpu_m"]) == (2, 2000.0, 2.0, 1, 1000.0)


def test_failed_scheduling_reasons() -> None:
    msg = ("0/50 nodes are available: 10 Insufficient cpu, 40 node(s) didn't match Pod's node affinity/selector. "
           "no new claims to deallocate, preemption: 0/50 nodes are available: 50 No preemption victims found.")
    assert failed_scheduling_reasons(msg) == {"Insufficient cpu": 10,
                                              "node(s) didn't match Pod's node affinity/selector": 40}
    pre = ("0/50 nodes are available: pre-filter pod gangs-f751ce-264 cannot find enough sibling pods, "
           "current pods number: 1, minMember of group: 12. no new claims")
    other = pre.replace("gangs-f751ce-264", "gangs-f751ce-9").replace("number: 1", "number: 7")
    assert failed_scheduling_reasons(pre) == failed_scheduling_reasons(other)  # one kind of reason
    assert failed_scheduling_reasons("rejection in Unreserve") == {"rejection in Unreserve": 1}
    assert failed_scheduling_reasons("") == {}


def _node(name: str, cpu: str, gpus: str | None = None) -> dict[str, object]:
    alloc = {"cpu": cpu, **({"nvidia.com/gpu": gpus} if gpus else {})}
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def test_extender_filter_and_prioritize_follow_the_plugin_rule() -> None:
    nodes = {"items": [_node("small", "1500m"), _node("cpu", "32"), _node("gpu", "64", "8")]}
    gpu_pod = {"metadata": {"name": "p", "labels": {"workload-type": "GPU-intensive"}}}
    cpu_pod = {"metadata": {"name": "q", "labels": {"workload-type": "CPU-intensive"}}}
    res = extender.filter_result({"Pod": gpu_pod, "Nodes": nodes})
    assert [n["metadata"]["name"] for n in res["Nodes"]["items"]] == ["gpu"]
    assert set(res["FailedAndUnresolvableNodes"]) == {"small", "cpu"} and res["Error"] == ""
    res = extender.filter_result({"Pod": cpu_pod, "Nodes": nodes})
    assert [n["metadata"]["name"] for n in res["Nodes"]["items"]] == ["cpu", "gpu"]
    assert extender.priorities({"Pod": gpu_pod, "Nodes": nodes}) == [
        {"Host": "small", "Score": 0}, {"Host": "cpu", "Score": 0}, {"Host": "gpu", "Score": 10}]
    assert extender.priorities({"Pod": cpu_pod, "Nodes": nodes})[2] == {"Host": "gpu", "Score": 0}


def test_held_by_partial_series_is_thinned_keeping_peak_and_end() -> None:
    # 800 gangs of 2, one member each bound at t = i: 800 changes, held pods rising to 800
    rows = [{**pod(f"g-ab-{2 * i}", "g", "n"), "created": 0.0, "scheduled": float(i + 1), "cpu_m": 1000.0}
            for i in range(800)] + [pod(f"g-ab-{2 * i + 1}", "g", "") for i in range(800)]
    [g] = placement(pd.DataFrame(rows), NODES, [{"name": "g", "count": 1600, "gang": {"size": 2}}], {})["gangs"]
    h = g["held_by_partial"]
    assert len(h["series"]["t"]) <= 501 and h["series"]["t"][-1] == 800.0 and h["series"]["pods"][-1] == 800
    assert (h["peak_pods"], h["end_pods"]) == (800, 800) and max(h["series"]["pods"]) == 800
