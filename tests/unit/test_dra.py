"""DRA objects as kwokbench renders them (slices, classes, claims, pods), the scenario's DRA checks, and the
claims' figures from a claim timeline. The objects' acceptance by a real apiserver is tests/e2e/test_dra.py's."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from kwokbench.cluster import devices
from kwokbench.cluster.claims import allocated_devices, claim_objects, pod_claims
from kwokbench.cluster.nodes import NodeGroup, node_bodies, with_slices
from kwokbench.errors import ScenarioError
from kwokbench.figures.claims import claims_rows, claims_section, counters_section, overlapping
from kwokbench.manifests import ManifestFactory, resolve_template
from kwokbench.plan import manifest_factories, node_groups
from kwokbench.scenario import load_scenario, parse_scenario
from tests.conftest import REPO

DRA = REPO / "scenarios" / "dra.yaml"
SHARED = REPO / "scenarios" / "dra-shared.yaml"


def test_a_node_publishes_one_slice_per_driver_with_its_devices() -> None:
    specs = [{"driver": "gpu.example.com", "count": 2, "name": "gpu", "attributes": {"model": "H100", "mig": False,
                                                                                     "memory_gb": 80},
              "capacity": {"memory": "80Gi"}, "shared": False, "device_class": None},
             {"driver": "nic.example.com", "count": 1, "name": "nic", "attributes": {}, "capacity": {"milli": 1000},
              "shared": True, "device_class": "rdma"}]
    [(gname, gpu), (nname, nic)] = [(n, orjson.loads(b)) for n, b in devices.slice_bodies("kb-gpu-3", "gpu", specs)]
    assert (gname, nname) == ("kb-gpu-3-gpu.example.com", "kb-gpu-3-nic.example.com")
    assert gpu["apiVersion"] == "resource.k8s.io/v1" and gpu["kind"] == "ResourceSlice"
    assert gpu["metadata"]["labels"] == {"kwokbench.io/node-group": "gpu"}
    assert gpu["spec"]["nodeName"] == "kb-gpu-3" and gpu["spec"]["driver"] == "gpu.example.com"
    assert gpu["spec"]["pool"] == {"name": "kb-gpu-3", "generation": 1, "resourceSliceCount": 1}
    assert gpu["spec"]["devices"][1] == {
        "name": "gpu-1", "capacity": {"memory": {"value": "80Gi"}},
        "attributes": {"model": {"string": "H100"}, "mig": {"bool": False}, "memory_gb": {"int": 80},
                       "index": {"int": 1}}}
    assert nic["spec"]["devices"] == [{"name": "nic-0", "attributes": {"index": {"int": 0}},
                                       "capacity": {"milli": {"value": "1000"}}, "allowMultipleAllocations": True}]
    assert devices.device_classes(specs) == [
        devices.device_class("gpu.example.com", "gpu.example.com"), devices.device_class("rdma", "nic.example.com")]
    assert devices.device_class("rdma", "nic.example.com")["spec"]["selectors"] == [
        {"cel": {"expression": 'device.driver == "nic.example.com"'}}]


NAMED = """\
schema_version: 1
name: s
cluster:
  node_groups:
    - name: gpu
      count: 2
      devices: [{driver: gpu.example.com, count: 2, name: card, device_class: big-gpu, shared: true,
                 capacity: {milli: 1000}}]
workloads:
  - name: p
    count: 2
    claims: [{name: g, first_available: [{name: half, device_class: big-gpu, count: 2, capacity: {milli: 500}}]}]
"""


def test_devices_named_and_classed_as_the_scenario_says_and_an_alternatives_count_and_capacity() -> None:
    sc = parse_scenario(NAMED)
    [group] = node_groups(sc, REPO)
    [(_, body)] = devices.slice_bodies("kb-gpu-0", "gpu", group.devices)
    assert [d["name"] for d in orjson.loads(body)["spec"]["devices"]] == ["card-0", "card-1"]
    # the class claims ask for is the one given, selecting the driver's devices (not a class named after the driver)
    assert devices.device_classes(group.devices) == [devices.device_class("big-gpu", "gpu.example.com")]
    [(_, tmpl)] = claim_objects(sc.workloads[0], "p-r1", "r1")
    assert tmpl["spec"]["spec"]["devices"]["requests"] == [{"name": "g", "firstAvailable": [
        {"name": "half", "deviceClassName": "big-gpu", "allocationMode": "ExactCount", "count": 2,
         "capacity": {"requests": {"milli": "500"}}}]}]
    for old, new, message in (
            ("first_available: [{name: half, device_class: big-gpu", "first_available: [{name: half, "
             "device_class: gpu.example.com", "no node group's devices offer class gpu.example.com (offered: big-gpu)"),
            ("count: 2, capacity: {milli: 500}", "count: 3, capacity: {milli: 500}",
             "first_available.0.count: 3 devices, but no node has more than 2 of class big-gpu"),
            ("{milli: 500}", "{milli: 1500}", "first_available.0.capacity.milli: 1500 is more than any device of class "
                                              "big-gpu has (1000)"),
            ("name: card,", "name: Card,", "devices.0.name: String should match pattern")):
        with pytest.raises(ScenarioError, match=re.escape(message)) as e:
            parse_scenario(NAMED.replace(old, new))
        assert "\n" not in str(e.value)


def test_each_node_is_followed_by_its_slices_and_other_groups_have_none() -> None:
    sc = load_scenario(DRA, ["cluster.node_groups.0.count=3"])
    groups = [*node_groups(sc, DRA.parent), NodeGroup("cpu", 2, resolve_template("node"), {})]
    factories = [(g, ManifestFactory(g.template, {**g.params, "group": g.name}, f"kb-{g.name}")) for g in groups]
    order = [(path.rsplit("/", 1)[-1], name) for path, name, _ in with_slices(factories, node_bodies(factories))]
    assert order == [("nodes", "kb-gpu-0"), ("resourceslices", "ResourceSlice kb-gpu-0-gpu.kwokbench.io"),
                     ("nodes", "kb-gpu-1"), ("resourceslices", "ResourceSlice kb-gpu-1-gpu.kwokbench.io"),
                     ("nodes", "kb-gpu-2"), ("resourceslices", "ResourceSlice kb-gpu-2-gpu.kwokbench.io"),
                     ("nodes", "kb-cpu-0"), ("nodes", "kb-cpu-1")]


def _pods(path: Path, overrides: list[str], n: int) -> list[dict[str, object]]:
    sc = load_scenario(path, overrides)
    [f] = manifest_factories(sc, path.parent, "r1")
    return [orjson.loads(f.body(i)) for i in range(n)]


def test_a_claim_per_pod_comes_from_the_workloads_template() -> None:
    pods = _pods(DRA, [], 2)
    for p in pods:
        assert p["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "train-r1-gpu"}]
        assert p["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    sc = load_scenario(DRA)
    [(path, tmpl)] = claim_objects(sc.workloads[0], "train-r1", "r1")
    assert path == "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
    assert tmpl["metadata"]["name"] == "train-r1-gpu"
    assert tmpl["spec"]["metadata"]["labels"] == {"kwokbench.io/run": "r1", "kwokbench.io/workload": "train"}
    assert tmpl["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.kwokbench.io", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": 'device.attributes["gpu.kwokbench.io"].model == "H100"'}}]}}]


@pytest.mark.parametrize("count,shared_by", [(5, 2), (7, 3), (4, 4)])
def test_shared_claims_are_made_once_and_named_by_consecutive_pods(count: int, shared_by: int) -> None:
    over = [f"workloads.0.count={count}", f"workloads.0.claims.0.shared_by={shared_by}"]
    pods = _pods(SHARED, over, count)
    names = [p["spec"]["resourceClaims"][0]["resourceClaimName"] for p in pods]  # the fast path's bodies
    assert names == [f"share-r1-gpu-{i // shared_by}" for i in range(count)]
    sc = load_scenario(SHARED, over)
    objs = claim_objects(sc.workloads[0], "share-r1", "r1")
    assert [o["metadata"]["name"] for _, o in objs] == [f"share-r1-gpu-{k}" for k in
                                                       range(math.ceil(count / shared_by))]
    assert objs[0][1]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {"requests": {"milli": "250"}}
    assert pod_claims(sc.workloads[0], "share-r1")[0].shared_by == shared_by


@pytest.mark.parametrize("override,message", [
    ("workloads.0.claims.0.device_class=nope", "no node group's devices offer class nope (offered: gpu.kwokbench.io)"),
    ("workloads.0.claims.0.count=9", "9 devices, but no node has more than 8 of class gpu.kwokbench.io"),
    ("workloads.0.claims.0.capacity.memory=81Gi", "81Gi is more than any device of class gpu.kwokbench.io has"),
    ("workloads.0.claims.0.capacity.milli=10", "no device of class gpu.kwokbench.io has a milli capacity"),
    ("workloads.0.claims.0.capacity.memory=lots", "'lots' is not a Kubernetes quantity"),
    ("cluster.node_groups.0.devices=[{count: 2}]", "devices.0.driver: Field required"),
    ("cluster.node_groups.0.devices=[{driver: x.io, count: 1, shared: true}]", "shared devices need a capacity"),
    ("cluster.node_groups.0.devices.0.count=200", "less than or equal to 128"),
    ("cluster.node_groups.0.devices.0.driver=Not_A_Domain", "String should match pattern"),
    ("workloads.0.claims=[{name: a, device_class: gpu.kwokbench.io}, {name: a, device_class: gpu.kwokbench.io}]",
     "claim names must differ"),
    ("cluster.controller_manager=false", "made from its template by kube-controller-manager"),
])
def test_claims_nothing_could_satisfy_are_refused_before_any_cluster(override: str, message: str) -> None:
    override = override.replace("capacity.memory=81Gi", "capacity={memory: 81Gi}").replace(
        "capacity.milli=10", "capacity={milli: 10}").replace("capacity.memory=lots", "capacity={memory: lots}")
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_scenario(DRA, [override])


def test_a_jobs_pods_each_get_a_claim_from_the_template_and_no_other_kind_takes_claims() -> None:
    """kubernetes#140877's churn is Jobs whose pods come and go: each pod of a Job gets its own claim from the
    workload's ResourceClaimTemplate (made by kube-controller-manager); a claim several pods share cannot be put on
    a Job's pods, and a kind without a Job's pod template takes no claims."""
    [job] = _pods(DRA, ["workloads.0.template=job", "workloads.0.params.parallelism=1"], 1)
    assert job["kind"] == "Job" and "resourceClaims" not in job["spec"]
    spec = job["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "train-r1-gpu"}]
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    with pytest.raises(ScenarioError, match="claim gpu shared_by 2 on a Job's pods: a Job's pods get a claim each"):
        _pods(DRA, ["workloads.0.template=job", "workloads.0.claims.0.shared_by=2"], 1)
    with pytest.raises(ScenarioError, match="delete_after applies to Pod templates, template job makes a Job"):
        _pods(DRA, ["workloads.0.template=job", "workloads.0.delete_after=5s"], 1)


def test_allocated_devices_of_a_claim() -> None:
    claim = {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "kb-gpu-0", "device": "gpu-3"}]}}}}
    assert allocated_devices(claim) == ["gpu.example.com/kb-gpu-0/gpu-3"]
    assert allocated_devices({"status": {}}) == []


def _claims(rows: list[tuple[str, float, float | None, float | None, str, bool]]) -> pd.DataFrame:
    return pd.DataFrame([{"namespace": "default", "name": n, "workload": "w", "pod": f"p-{n}", "seen": s,
                          "allocated": a, "reserved": a, "released": d, "deleted": d, "devices": dev, "shareable": sh,
                          "api_created": None} for n, s, a, d, dev, sh in rows])


def test_a_device_held_by_two_whole_claims_at_once_is_found() -> None:
    ok = _claims([("a", 0, 1, 5, "d/p/gpu-0", False), ("b", 0, 6, None, "d/p/gpu-0", False),  # reused after
                  ("c", 0, 1, None, "d/p/gpu-1", True), ("e", 0, 1, None, "d/p/gpu-1", True)])      # shared
    assert overlapping(ok) == {}
    bad = _claims([("a", 0, 1, None, "d/p/gpu-0 d/p/gpu-1", False), ("b", 0, 2, None, "d/p/gpu-1", False)])
    assert overlapping(bad) == {"d/p/gpu-1": 2}


def test_claims_section_counts_and_times_each_pods_stages() -> None:
    claims = _claims([("a", 10.0, 10.5, None, "d/p/gpu-0", False), ("b", 10.0, None, None, "", False)])
    pods = pd.DataFrame([{"name": "p-a", "created": 9.9, "scheduled": 10.6, "running": 11.0}])
    s = claims_section(claims, pods)
    assert (s["claims"], s["allocated"], s["never_allocated"], s["devices_allocated"]) == (2, 1, 1, 1)
    assert s["seen_to_allocated"]["max"] == pytest.approx(0.5)
    st = s["pod_stages"]
    assert st["pods"] == 1 and st["created_to_allocated"]["max"] == pytest.approx(0.6)
    assert st["allocated_to_bound"]["max"] == pytest.approx(0.1) and st["bound_to_running"]["max"] == pytest.approx(0.4)


def test_the_shipped_dra_scenarios_are_valid() -> None:
    for path in (DRA, SHARED):
        parse_scenario(path.read_text(), str(path))


def test_console_rows_and_gate_metrics_of_a_run_with_claims() -> None:
    from kwokbench.compare.gate import METRICS
    from kwokbench.figures.claims import claims_rows

    claims = _claims([("a", 10.0, 10.5, None, "d/p/gpu-0", False), ("b", 10.0, 10.6, None, "d/p/gpu-0", False)])
    pods = pd.DataFrame([{"name": "p-a", "created": 9.9, "scheduled": 10.6, "running": 11.0},
                         {"name": "p-b", "created": 9.9, "scheduled": 10.7, "running": 11.0}])
    section = claims_section(claims, pods)
    rows = dict(map(tuple, claims_rows(section)))  # type: ignore[arg-type]
    assert rows["DRA claims allocated; devices given; held twice at once"].endswith("1 DEVICES HELD TWICE")
    assert rows["DRA pod stages p50 / p99: created → claim allocated → bound → Running"].startswith("650 ms / ")
    summary = {"claims": section}
    assert METRICS["devices_given_twice"].get(summary) == 1.0
    assert METRICS["claim_allocation_p50"].get(summary) == pytest.approx(0.65)
    assert METRICS["devices_given_twice"].get({}) is None and claims_rows(None) == []


def test_a_second_claim_object_for_the_same_pod_claim_is_extra_not_unallocated() -> None:
    """kube-controller-manager made 11 duplicate claims of 1200 pods under load (tests/e2e/test_dra.py)."""
    claims = _claims([("a1", 0, 1, None, "d/p/gpu-0", False), ("a2", 0, None, None, "", False)])
    claims["pod"] = ["p-a", "p-a"]
    claims["pod_claim"] = ["gpu", "gpu"]
    s = claims_section(claims)
    assert (s["claims"], s["allocated"], s["never_allocated"], s["extra_claims"]) == (1, 1, 0, 1)
    claims["pod_claim"] = ["gpu", "nic"]  # two claims of the pod: the second is left unallocated
    s = claims_section(claims)
    assert (s["claims"], s["allocated"], s["never_allocated"], s["extra_claims"]) == (2, 1, 1, 0)


def test_pods_bound_with_a_claim_never_allocated_are_flagged() -> None:
    """What YuniKorn v1.8.0 does with a pod's claims (measured in docs/results/dra.md): binds, never allocates."""
    from kwokbench.compare.gate import METRICS
    from kwokbench.figures.claims import claims_rows

    claims = _claims([("a", 0, None, None, "", False), ("b", 0, None, None, "", False)])
    claims["pod_claim"] = ["gpu", "gpu"]
    pods = pd.DataFrame([{"name": "p-a", "created": 0.0, "scheduled": 1.0, "running": 1.1},
                         {"name": "p-b", "created": 0.0, "scheduled": None, "running": None}])
    s = claims_section(claims, pods)
    assert s["bound_unallocated"] == 1 and s["never_allocated"] == 2
    assert any(r[0] == "DRA: PODS BOUND WITH A CLAIM NEVER ALLOCATED" for r in claims_rows(s))
    assert METRICS["bound_unallocated"].get({"claims": s}) == 1.0


def test_the_capacity_shared_claims_hold_at_once_is_summed_per_device() -> None:
    from kwokbench.figures.claims import peak_consumed

    claims = _claims([("a", 0, 1, 5, "d/p/gpu-0", True), ("b", 0, 2, None, "d/p/gpu-0", True),
                      ("c", 0, 5, None, "d/p/gpu-0", True), ("e", 0, 1, None, "d/p/gpu-1 d/p/gpu-2", False)])
    claims["consumed"] = ["milli=600", "milli=300", "milli=700", "- -"]
    # a (600) and b (300) at once: 900; a released at 5 as c (700) came: 1000, never 1600
    assert peak_consumed(claims) == {"d/p/gpu-0": 1000.0}
    assert claims_section(claims)["shared_peak_milli"] == 1000.0


def test_a_shared_device_consumed_beyond_its_capacity_at_some_moment_is_found_and_gates() -> None:
    """Each shared device's consumption against its own capacity (the scenario's spec), at every moment: two claims
    of 600 milli on a 1000-milli GPU at once overdraw it, though one is gone by the end; one after the other do not."""
    from kwokbench.compare.gate import METRICS
    from kwokbench.figures.claims import claims_rows, shared_overconsumed

    groups = [{"name": "g", "devices": [{"driver": "d", "count": 2, "shared": True,
                                         "capacity": {"milli": 1000, "memory": "16Gi"}}]}]
    pool = "d/kb-g-0/"
    at_once = _claims([("a", 0, 1, 5, pool + "gpu-0", True), ("b", 0, 2, None, pool + "gpu-0", True),
                       ("c", 0, 1, None, pool + "gpu-1", True)])
    at_once["consumed"] = ["milli=600,memory=4Gi", "milli=600,memory=4Gi", "milli=1000,memory=16Gi"]
    assert shared_overconsumed(at_once, groups) == {pool + "gpu-0": {"milli": 1200.0}}
    s = claims_section(at_once, None, groups)
    assert s["shared_overconsumed"] == {pool + "gpu-0": {"milli": 1200.0}}
    assert METRICS["overbooked"].get({"claims": s}) == 1.0
    assert ["DRA: SHARED DEVICES CONSUMED BEYOND THEIR CAPACITY", "1 (e.g. d/kb-g-0/gpu-0: milli 1200 at once)"] in \
        claims_rows(s)
    in_turn = at_once.copy()
    in_turn["allocated"] = [1.0, 5.0, 1.0]  # b allocated as a was released: a release before a take
    assert claims_section(in_turn, None, groups)["shared_overconsumed"] == {}
    assert METRICS["overbooked"].get({"claims": claims_section(in_turn, None, groups)}) == 0.0


def test_a_trace_in_its_dra_form() -> None:
    """Alibaba-like rows: nodes get their GPUs as shareable devices of 1000 milli (their node-level counts stay,
    requested by no pod), pods a claim template of their shape and their demand as an annotation."""
    from kwokbench.load.watcher import pod_resources
    from kwokbench.trace.format import TraceNode, TracePod
    from kwokbench.trace.kube import (
        dra_claim_shape,
        dra_node_devices,
        dra_pod_params,
        dra_template_name,
    )

    node = TraceNode(name="n", cpu_milli=64000, memory_mib=262144, gpu=2, gpu_model="V100M16")
    assert dra_node_devices(node) == [{"driver": "gpu.kwokbench.io", "count": 2, "name": "gpu",
                                       "attributes": {"model": "V100M16"}, "capacity": {"milli": 1000},
                                       "shared": True}]
    assert dra_node_devices(TraceNode(name="c", cpu_milli=1, memory_mib=1)) == []
    shared = TracePod(name="s", arrival_seconds=0, cpu_milli=100, memory_mib=64, gpu_milli=250,
                      gpu_models=("V100M16", "T4"))
    whole = TracePod(name="w", arrival_seconds=0, cpu_milli=100, memory_mib=64, gpu=2)
    assert dra_claim_shape(shared) == (1, 250, ("T4", "V100M16")) and dra_claim_shape(whole) == (2, 0, ())
    from kwokbench.cluster.claims import claim_spec, trace_claim

    def dra_claim_spec(shape: tuple[int, int, tuple[str, ...]]) -> dict[str, Any]:
        return claim_spec(trace_claim(shape))

    spec = dra_claim_spec((1, 250, ("T4", "V100M16")))["devices"]["requests"][0]["exactly"]
    assert spec["capacity"] == {"requests": {"milli": "250"}} and spec["count"] == 1
    cel = 'device.attributes["gpu.kwokbench.io"].model in ["T4", "V100M16"]'
    assert spec["selectors"] == [{"cel": {"expression": cel}}]
    assert "capacity" not in dra_claim_spec((2, 0, ()))["devices"]["requests"][0]["exactly"]  # whole devices
    params = dra_pod_params(shared)
    assert "kwokbench.io/gpu-milli" not in params["requests"] and "affinity" not in params
    assert params["claims"] == [{"name": "gpu", "template": dra_template_name((1, 250, ("T4", "V100M16")))}]
    pod = {"metadata": {"annotations": params["annotations"]}, "spec": {"containers": [{"resources": {}}]}}
    assert pod_resources(pod)["gpu_milli"] == 250 and pod_resources(pod)["gpus"] == 0
    assert dra_pod_params(whole)["annotations"] == {"kwokbench.io/gpu-demand": "2,2000"}
    assert "claims" not in dra_pod_params(TracePod(name="c", arrival_seconds=0, cpu_milli=1, memory_mib=1))


MIG = {"driver": "mig.example.com", "count": 2, "name": "gpu", "attributes": {"model": "A100"}, "capacity": {},
       "shared": False, "device_class": None, "counters": {"memory": "40Gi"},
       "partitions": [{"name": "1g", "count": 4, "consumes": {"memory": "10Gi"}, "capacity": {}},
                      {"name": "2g", "count": 2, "consumes": {"memory": "20Gi"}, "capacity": {"memory": "20Gi"}}]}


def test_partitionable_devices_draw_on_a_counter_set_published_in_a_slice_of_its_own() -> None:
    [(dname, dev), (cname, cnt)] = [(n, orjson.loads(b)) for n, b in devices.slice_bodies("kb-mig-0", "mig", [MIG])]
    assert (dname, cname) == ("kb-mig-0-mig.example.com", "kb-mig-0-mig.example.com-counters")
    for s in (dev, cnt):  # one pool of two slices, the node's
        assert s["spec"]["pool"] == {"name": "kb-mig-0", "generation": 1, "resourceSliceCount": 2}
        assert s["spec"]["nodeName"] == "kb-mig-0"
    assert "sharedCounters" not in dev["spec"] and "devices" not in cnt["spec"]  # one or the other (1.35 on)
    assert cnt["spec"]["sharedCounters"] == [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}},
                                             {"name": "gpu-1", "counters": {"memory": {"value": "40Gi"}}}]
    devs = {d["name"]: d for d in dev["spec"]["devices"]}
    assert len(devs) == 2 * (1 + 4 + 2)
    # the device whole draws all of its counter set; each partition its share, of its own device's set
    assert devs["gpu-1"]["consumesCounters"] == [{"counterSet": "gpu-1", "counters": {"memory": {"value": "40Gi"}}}]
    assert devs["gpu-1"]["attributes"] == {"model": {"string": "A100"}, "index": {"int": 1},
                                           "profile": {"string": "whole"}}
    assert devs["gpu-1-2g-1"] == {"name": "gpu-1-2g-1", "capacity": {"memory": {"value": "20Gi"}},
                                  "attributes": {"model": {"string": "A100"}, "index": {"int": 1},
                                                 "profile": {"string": "2g"}},
                                  "consumesCounters": [{"counterSet": "gpu-1",
                                                        "counters": {"memory": {"value": "20Gi"}}}]}
    assert devices.device_classes([MIG]) == [devices.device_class("mig.example.com", "mig.example.com")]


def test_a_slice_holds_at_most_64_devices_with_counters_and_8_counter_sets() -> None:
    spec = {**MIG, "count": 10, "partitions": [{**MIG["partitions"][0], "count": 7}]}  # 80 devices, 10 sets
    bodies = [(n, orjson.loads(b)) for n, b in devices.slice_bodies("n", "g", [spec])]
    assert [n for n, _ in bodies] == ["n-mig.example.com", "n-mig.example.com-1", "n-mig.example.com-counters",
                                      "n-mig.example.com-counters-1"]
    assert [len(b["spec"].get("devices") or b["spec"]["sharedCounters"]) for _, b in bodies] == [64, 16, 8, 2]
    assert {b["spec"]["pool"]["resourceSliceCount"] for _, b in bodies} == {4}
    names = [d["name"] for _, b in bodies for d in b["spec"].get("devices") or []]
    assert len(set(names)) == 80


PARTS = ("cluster.node_groups.0.devices=[{driver: gpu.kwokbench.io, count: 8, counters: {memory: 80Gi}, "
         "partitions: [{name: 1g, count: 7, consumes: {memory: 10Gi}}]}]")


@pytest.mark.parametrize(("override", "message"), [
    ("cluster.node_groups.0.devices=[{driver: x.io, count: 1, partitions: [{name: a, count: 2, consumes: {m: 1}}]}]",
     "partitions draw on the device's counters: give counters too"),
    (PARTS.replace("consumes: {memory", "consumes: {slices"), "consumes slices, which is none of the device's"),
    (PARTS.replace("10Gi", "90Gi"), "consumes 90Gi of memory, more than a device has (80Gi)"),
    (PARTS.replace("count: 8,", "count: 8, shared: true, capacity: {milli: 1000},"), "shared (consumable capacity) "
     "or partitioned, not both"),
    (PARTS.replace("name: 1g", "name: a-much-longer-profile-name"), "String should have at most 20 characters"),
    (PARTS + "\0cluster.kubernetes_version=v1.35.4", "partitions need Kubernetes v1.36.0 or later"),
    ("workloads.0.claims=[{name: g}]", "claim g: give device_class or first_available"),
    ("workloads.0.claims=[{name: g, device_class: gpu.kwokbench.io, first_available: [{name: a, device_class: "
     "gpu.kwokbench.io}]}]", "claim g: give device_class or first_available"),
    ("workloads.0.claims=[{name: g, count: 2, first_available: [{name: a, device_class: gpu.kwokbench.io}]}]",
     "with first_available, count, selectors and capacity go in each alternative"),
    ("workloads.0.claims=[{name: g, first_available: [{name: a, device_class: gpu.kwokbench.io}, {name: b, "
     "device_class: nope.io}]}]", "workloads.0.claims.0.first_available.1.device_class: no node group's devices "
                                  "offer class nope.io"),
    ("workloads.0.claims=[{name: g, first_available: [{name: a, device_class: gpu.kwokbench.io, count: 9}]}]",
     "first_available.0.count: 9 devices, but no node has more than 8"),
])
def test_partitions_and_alternatives_that_cannot_work_are_refused_before_any_cluster(override: str,
                                                                                     message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_scenario(DRA, override.split("\0"))


def test_a_partitioned_node_offers_its_partitions_to_a_claims_count() -> None:
    sc = load_scenario(DRA, [PARTS, "workloads.0.claims.0.count=60"])  # 8 whole + 56 partitions per node
    assert sc.cluster.node_groups[0].devices[0].per_node == 64


def test_a_first_available_claim_lists_its_alternatives_in_order() -> None:
    sc = load_scenario(DRA, ["workloads.0.claims=[{name: gpu, first_available: [{name: whole, device_class: "
                             "gpu.kwokbench.io}, {name: two, device_class: gpu.kwokbench.io, count: 2, "
                             "selectors: ['device.attributes[\"gpu.kwokbench.io\"].model == \"H100\"']}]}]"])
    [(_, tmpl)] = claim_objects(sc.workloads[0], "train-r1", "r1")
    assert tmpl["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "firstAvailable": [
        {"name": "whole", "deviceClassName": "gpu.kwokbench.io", "allocationMode": "ExactCount", "count": 1},
        {"name": "two", "deviceClassName": "gpu.kwokbench.io", "allocationMode": "ExactCount", "count": 2,
         "selectors": [{"cel": {"expression": 'device.attributes["gpu.kwokbench.io"].model == "H100"'}}]}]}]


def test_counter_sets_drawn_beyond_what_they_have_are_found() -> None:
    groups = [{"name": "mig", "devices": [MIG]}]
    d = "mig.example.com/kb-mig-0/"
    ok = _claims([("a", 0, 1, 5, d + "gpu-0", False),             # the device whole, released at 5
                  ("b", 0, 6, None, d + "gpu-0-2g-0", False),     # then two partitions of it: 20 + 10 of 40
                  ("c", 0, 6, None, d + "gpu-0-1g-3", False),
                  ("e", 0, 2, None, d + "gpu-1-1g-0", False)])    # another device's set
    ok["requests"] = ["gpu/whole", "gpu/half", "gpu", "gpu"]
    s = claims_section(ok, None, groups)
    assert s["counters"] == {"counter_sets_drawn": 2, "peak_share": 1.0, "overcommitted": {}}
    assert s["first_available"] == {"gpu/half": 1, "gpu/whole": 1}
    bad = _claims([("a", 0, 1, None, d + "gpu-0", False), ("b", 0, 2, None, d + "gpu-0-1g-0", False)])
    assert counters_section(bad, groups)["overcommitted"] == {  # type: ignore[index]
        "mig.example.com/kb-mig-0/gpu-0": {"memory": 50 * 2**30}}
    assert counters_section(bad, [{"name": "mig", "devices": [{**MIG, "partitions": []}]}]) is None
    rows = claims_rows(claims_section(bad, None, groups))
    assert any("1 COUNTER SETS OVERCOMMITTED" in r[1] for r in rows), rows


def _claim(name: str, devs: list[tuple[str, bool]], reserved: bool = False) -> dict[str, Any]:
    results = [{"driver": "gpu.example.com", "pool": "n1", "device": d, "request": "gpu",
                **({"shareID": "s1"} if shared else {})} for d, shared in devs]
    return {"metadata": {"namespace": "ns", "name": name, "labels": {"kwokbench.io/run": "r1"}},
            "status": {**({"allocation": {"devices": {"results": results}}} if devs else {}),
                       **({"reservedFor": [{"name": "p"}]} if reserved else {})}}


def _timeline(events: list[tuple[str, dict[str, Any], float]]) -> pd.DataFrame:
    from kwokbench.measure.claims import COLUMNS, ClaimTimeline

    w = ClaimTimeline()
    w.run_label = "r1"
    for typ, obj, t in events:
        w.event(typ, obj, t)  # as the watch delivers them: another run's claims filtered there
    return pd.DataFrame(list(w.rows.values()), columns=COLUMNS)


def test_every_holding_of_a_claim_is_recorded_and_checked() -> None:
    """A claim allocated, cleared (an unreserve after a failed bind) and allocated again: its second holding is its
    own row, so a device another claim holds during it is found given twice (only the first was recorded)."""
    frame = _timeline([("ADDED", _claim("a", []), 0.0), ("MODIFIED", _claim("a", [("gpu-0", False)]), 1.0),
                       ("MODIFIED", _claim("a", []), 2.0), ("MODIFIED", _claim("a", [("gpu-1", False)]), 3.0),
                       ("ADDED", _claim("b", [("gpu-1", False)]), 4.0),
                       ("DELETED", _claim("a", [("gpu-1", False)]), 6.0)])
    rows = frame.sort_values(["name", "holding"]).fillna(-1)[["name", "holding", "allocated", "released", "devices"]]
    assert rows.values.tolist() == [["a", 0, 1.0, 2.0, "gpu.example.com/n1/gpu-0"],
                                    ["a", 1, 3.0, 6.0, "gpu.example.com/n1/gpu-1"],
                                    ["b", 0, 4.0, -1, "gpu.example.com/n1/gpu-1"]]
    assert overlapping(frame) == {"gpu.example.com/n1/gpu-1": 2}
    s = claims_section(frame)
    assert s["claims"] == 2 and s["reallocated"] == 1 and s["devices_given_twice"]


def test_a_device_given_whole_beside_a_shared_one_is_still_checked() -> None:
    frame = _timeline([("ADDED", _claim("a", [("gpu-0", False), ("gpu-9", True)]), 1.0),
                       ("ADDED", _claim("b", [("gpu-0", False)]), 2.0),
                       ("ADDED", _claim("c", [("gpu-9", True)]), 2.0)])
    assert frame.set_index("name").loc["a", "shared"] == "0 1"
    assert overlapping(frame) == {"gpu.example.com/n1/gpu-0": 2}  # gpu-9 is shared: not a double booking


def test_capacity_given_beyond_what_there_is_is_one_gate_metric_that_fails_on_any(tmp_path: Path) -> None:
    """``overbooked``: DRA counter sets overdrawn and GPUs holding more than one GPU's worth (a GPU-aware
    scheduler's records), summed; any in a candidate run where the baseline has none is a regression, and a run
    with neither record does not have the figure."""
    from kwokbench.compare.gate import METRICS, gate
    from kwokbench.store import StoredRun

    m = METRICS["overbooked"]
    assert m.worst_run and m.get({}) is None and m.get({"claims": {"claims": 3}}) is None
    clean = {"claims": {"counters": {"counter_sets_drawn": 4, "overcommitted": {}}},
             "gpu_choices": {"overcommitted_gpus": 0}}
    bad = {"claims": {"counters": {"counter_sets_drawn": 4, "overcommitted": {"n/p/gpu-0": {"memory": 1.25}}}},
           "gpu_choices": {"overcommitted_gpus": 2}}
    assert (m.get(clean), m.get(bad), m.get({"gpu_choices": {"overcommitted_gpus": 1}})) == (0.0, 3.0, 1.0)

    def run(name: str, s: dict[str, Any]) -> StoredRun:
        meta = {"status": "complete", "variant": {"name": "v"}, "host": {"hostname": "h"}, "phases": []}
        return StoredRun(tmp_path / name, meta, {"throughput": {"average": 100.0}, "pods_scheduled": 10,
                                                 "pods_expected": 10, **s}, None, None)

    res = gate([run(f"b{i}", clean) for i in range(3)], [run(f"c{i}", bad if i == 1 else clean) for i in range(3)],
               ["overbooked:1%"])  # a worst-run count: any is a regression, whatever the share
    over = next(c for c in res.comparisons if c.metric == "overbooked")
    assert over.verdict == "regression" and res.exit_code == 1, over.reason
