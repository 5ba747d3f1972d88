"""A DRA cluster's capture (pure): ResourceSlices as each node's devices, DeviceClasses told by their driver, the
pods' claims from their templates and claims, what the trace cannot say counted; the trace's ``devices`` and
``claims`` columns round-tripped; and a scenario replaying them: the nodes' devices, a template per distinct claim,
the pods naming them, and a bad claim one line. Objects shaped as a Kubernetes 1.36 apiserver lists them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kwokbench.capture.convert import class_drivers, convert, node_devices
from kwokbench.cluster.claims import claim_objects
from kwokbench.errors import ScenarioError
from kwokbench.plan import manifest_factories
from kwokbench.scenario import load_scenario
from kwokbench.trace.format import read_nodes, read_pods, write_nodes, write_pods

DRIVER = "gpu.example.com"


def _slice(node: str | None, devices: list[dict[str, Any]], driver: str = DRIVER) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": node or "net", "generation": 1,
                                                      "resourceSliceCount": 1}, "devices": devices}
    spec.update({"nodeName": node} if node else {"allNodes": True})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}-abcde"}, "spec": spec}


def _gpu(k: int, model: str = "H100", shared: bool = False) -> dict[str, Any]:
    dev: dict[str, Any] = {"name": f"gpu-{k}", "attributes": {"model": {"string": model}, "index": {"int": k},
                                                             "driverVersion": {"version": "1.2.3"}},
                           "capacity": {"memory": {"value": "80Gi"}}}
    if shared:
        dev["allowMultipleAllocations"] = True
        dev["capacity"]["milli"] = {"value": "1k", "requestPolicy": {"default": "1k"}}
    return dev


NODE = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}
CLASSES = [
    {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    {"metadata": {"name": "h100"}, "spec": {"selectors": [
        {"cel": {"expression": f'device.driver == "{DRIVER}"'}},
        {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "H100"'}}]}},
    {"metadata": {"name": "fpga"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'fpga.x.io'"}}]}},
]


def _pod(name: str, claims: list[dict[str, Any]], ns: str = "ml") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-01T10:00:00Z"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                     "resourceClaims": claims}}


def _template(name: str, requests: list[dict[str, Any]], ns: str = "ml", **devices: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": requests, **devices}}}}


def test_a_nodes_slices_become_its_devices_alike_ones_counted_in_one_entry() -> None:
    dropped: Counter[str] = Counter()
    slices = [_slice("n1", [_gpu(k) for k in range(4)] + [_gpu(4, "A100"), _gpu(5, "A100")]),
              _slice("n1", [_gpu(0, shared=True), _gpu(1, shared=True)], driver="share.example.com"),
              _slice("n1", [{"name": "mig-0", "consumesCounters": [{"counterSet": "s", "counters": {}}]}]),
              _slice(None, [_gpu(0)])]
    got = node_devices(slices, dropped)
    h100, a100, shared = got["n1"]
    assert h100 == {"driver": DRIVER, "name": "gpu", "count": 4, "capacity": {"memory": "80Gi"},
                    "attributes": {"driverVersion": "1.2.3", "model": "H100"}}  # index renumbered on replay
    assert (a100["name"], a100["count"], a100["attributes"]["model"]) == ("gpu-2", 2, "A100")  # names differ
    assert shared["shared"] is True and shared["capacity"] == {"memory": "80Gi", "milli": "1k"}
    assert dropped == {"dra-partitionable": 1, "dra-pool": 1}


def test_a_device_class_is_told_by_the_driver_its_selectors_name() -> None:
    got = class_drivers(CLASSES, {DRIVER, "fpga.x.io"})
    assert got["gpu"] == (DRIVER, [f'device.driver == "{DRIVER}"'])
    assert got["h100"][0] == DRIVER and len(got["h100"][1]) == 2
    assert got["fpga"][0] == "fpga.x.io"
    vague = [{"metadata": {"name": "any"}, "spec": {"selectors": [{"cel": {"expression": "true"}}]}}]
    assert class_drivers(vague, {DRIVER}) == {"any": (DRIVER, ["true"])}  # the only driver there is
    assert class_drivers(vague, {DRIVER, "fpga.x.io"}) == {}  # two: it cannot be told


def test_pods_claims_come_from_their_templates_and_claims_with_their_classes_selectors() -> None:
    one = _template("one-h100", [{"name": "gpu", "exactly": {
        "deviceClassName": "h100", "count": 2, "selectors": [{"cel": {"expression": "device.capacity"
                                                                               f'["{DRIVER}"].memory.isGreaterThan(quantity("40Gi"))'}}]}}])
    alt = _template("whole-else-share", [{"name": "g", "firstAvailable": [
        {"name": "whole", "deviceClassName": "gpu"},
        {"name": "part", "deviceClassName": "gpu", "capacity": {"requests": {"milli": "250"}}}]}])
    two = _template("two", [{"name": "a", "exactly": {"deviceClassName": "gpu"}},
                            {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}],
                    constraints=[{"matchAttribute": f"{DRIVER}/model"}])
    shared = {"metadata": {"name": "team", "namespace": "ml"},
              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
    pods = [_pod("p1", [{"name": "gpus", "resourceClaimTemplateName": "one-h100"}]),
            _pod("p2", [{"name": "g", "resourceClaimTemplateName": "whole-else-share"}]),
            _pod("p3", [{"name": "pair", "resourceClaimTemplateName": "two"}]),
            _pod("p4", [{"name": "t", "resourceClaimName": "team"}]),
            _pod("p5", [{"name": "t", "resourceClaimName": "team"}, {"name": "x", "resourceClaimName": "gone"}]),
            _pod("p6", [{"name": "f", "resourceClaimTemplateName": "fpga"}])]
    fpga = _template("fpga", [{"name": "f", "exactly": {"deviceClassName": "fpga"}}])  # no fpga devices captured
    dra = {"deviceclasses": CLASSES, "resourceslices": [_slice("n1", [_gpu(0)])],
           "resourceclaimtemplates": [one, alt, two, fpga], "resourceclaims": [shared]}
    got = convert([NODE], pods, dra)
    claims = {p.name: p.claims for p in got.pods}
    [c1] = claims["p1"]
    assert c1["name"] == "gpus" and c1["device_class"] == DRIVER and c1["count"] == 2
    assert c1["selectors"][:2] == [s["cel"]["expression"] for s in CLASSES[1]["spec"]["selectors"]]  # the class's
    assert "isGreaterThan" in c1["selectors"][2]
    [c2] = claims["p2"]
    assert [a["name"] for a in c2["first_available"]] == ["whole", "part"]
    assert c2["first_available"][1]["capacity"] == {"milli": "250"}
    assert [c["name"] for c in claims["p3"]] == ["pair-a"]  # the All request left out
    assert claims["p4"] == claims["p5"] and claims["p4"][0]["name"] == "t"
    assert claims["p6"] == ()
    assert got.dropped == {"dra-request": 1, "dra-constraints": 1, "dra-shared-claim": 2, "dra-missing": 1,
                           "dra-no-devices": 1}
    assert got.nodes[0].devices[0]["count"] == 1


def test_a_cluster_without_dra_captures_as_before() -> None:
    got = convert([NODE], [_pod("p", [])])
    assert got.nodes[0].devices == () and got.pods[0].claims == () and got.dropped == {}


def _replay(tmp_path: Path, claim: dict[str, Any], controller_manager: str = "") -> Path:
    slices = [_slice(n, [_gpu(k) for k in range(8)]) for n in ("n1", "n2")]
    dra = {"deviceclasses": CLASSES[:2], "resourceslices": slices,
           "resourceclaimtemplates": [_template("t", [{"name": "gpu", "exactly": claim}])], "resourceclaims": []}
    n2 = {**NODE, "metadata": {"name": "n2", "labels": {"kubernetes.io/hostname": "n2"}}}
    got = convert([NODE, n2], [_pod(f"p{i}", [
        {"name": "gpu", "resourceClaimTemplateName": "t"}]) for i in range(3)] + [_pod("cpu", [])], dra)
    write_nodes(got.nodes, tmp_path / "nodes.csv")
    write_pods(got.pods, tmp_path / "pods.csv")
    path = tmp_path / "s.yaml"
    path.write_text("schema_version: 1\nname: t\ncluster:\n  node_groups:\n    - name: c\n      from_trace: {file: "
                    f"nodes.csv}}\n{controller_manager}workloads:\n  - name: replay\n    trace: {{file: pods.csv}}\n")
    return path


def test_the_columns_round_trip_and_a_scenario_replays_devices_and_claims(tmp_path: Path) -> None:
    path = _replay(tmp_path, {"deviceClassName": "h100", "count": 2})
    nodes, pods = read_nodes(tmp_path / "nodes.csv"), read_pods(tmp_path / "pods.csv")
    assert nodes[1].devices[0]["count"] == 8 and pods[0].claims[0]["device_class"] == DRIVER
    assert not pods[3].claims  # the CPU pod
    sc = load_scenario(path)
    groups = sc.cluster.node_groups  # a group per node: each keeps its own hostname label
    assert [g.count for g in groups] == [1, 1]
    assert all(g.devices[0].driver == DRIVER and g.devices[0].count == 8 for g in groups)
    assert groups[0].devices[0].attributes["model"] == "H100"
    [w] = sc.workloads
    assert w.has_claims and w.templated_claims
    objects = claim_objects(w, "p", "run1")
    [(path_, tmpl)] = objects  # one template: three pods share the claim entry
    assert path_.endswith("/namespaces/default/resourceclaimtemplates")
    request = tmpl["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == DRIVER and request["exactly"]["count"] == 2
    assert len(request["exactly"]["selectors"]) == 2
    [f] = manifest_factories(sc, tmp_path, "lbl")
    bodies = [f.body(i) for i in range(w.count)]
    claimed = [b for b in bodies if b"resourceClaimTemplateName" in b]
    assert len(claimed) == 3 and all(tmpl["metadata"]["name"].encode() in b for b in claimed)


@pytest.mark.parametrize(("claim", "message"), [
    ({"deviceClassName": "h100", "count": 9}, "claims.0.count: 9 devices, but no node has more than 8 of class "
                                               f"{DRIVER}"),
    ({"deviceClassName": "h100", "capacity": {"requests": {"memory": "100Gi"}}},
     f"claims.0.capacity.memory: 100Gi is more than any device of class {DRIVER} has"),
])
def test_a_claim_no_node_could_satisfy_is_one_line(tmp_path: Path, claim: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match="workload replay: pod ml/p0: " + message.replace(".", r"\.")) as e:
        load_scenario(_replay(tmp_path, claim))
    assert "\n" not in str(e.value)


def test_a_bad_claim_entry_in_a_trace_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "nodes.csv").write_text('name,cpu_milli,memory_mib,devices\nn1,1000,1000,"[{""driver"": '
                                        '""gpu.example.com"", ""count"": 2}]"\n')
    (tmp_path / "pods.csv").write_text('name,arrival_seconds,cpu_milli,memory_mib,claims\np,0,1,1,"[{""name"": '
                                       '""g"", ""device_class"": ""gpu.example.com"", ""count"": 0}]"\n')
    path = tmp_path / "s.yaml"
    path.write_text("schema_version: 1\nname: t\ncluster:\n  node_groups:\n    - name: c\n      from_trace: {file: "
                    "nodes.csv}\nworkloads:\n  - name: replay\n    trace: {file: pods.csv}\n")
    with pytest.raises(ScenarioError, match=r"^workload replay: pod default/p: claims\.0: count: Input should be "
                                            r"greater than or equal to 1$"):
        load_scenario(path)
    (tmp_path / "pods.csv").write_text('name,arrival_seconds,cpu_milli,memory_mib,claims\np,0,1,1,"[{""name"": '
                                       '""g""}]"\n')
    with pytest.raises(ScenarioError, match=r"pods\.csv: data row 1, column claims: a claim entry needs"):
        load_scenario(path)
    (tmp_path / "nodes.csv").write_text('name,cpu_milli,memory_mib,devices\nn1,1000,1000,"[{""driver"": '
                                        '""Not A Driver"", ""count"": 2}]"\n')
    with pytest.raises(ScenarioError, match=r"^node group c: a node's devices entry of driver Not A Driver: "
                                            r"driver: String should match pattern"):
        load_scenario(path)


def test_claims_need_the_controller_manager(tmp_path: Path) -> None:
    path = _replay(tmp_path, {"deviceClassName": "gpu"}, controller_manager="  controller_manager: false\n")
    path.write_text(path.read_text().replace("nodes.csv}\n  controller_manager", "nodes.csv}\n  controller_manager"))
    with pytest.raises(ScenarioError, match="workload replay: its trace's pods have DRA claims"):
        load_scenario(path)
