"""The Alibaba GPU trace v2023 (openb) importer, on a few rows of the same columns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kwokbench.errors import ScenarioError
from kwokbench.trace import kube
from kwokbench.trace.alibaba import QOS_LABEL, read_openb, read_openb_nodes, read_openb_pods

GOLDEN = Path(__file__).parent / "golden" / "trace"
PODS = GOLDEN / "openb_pod_list.csv"
NODES = GOLDEN / "openb_node_list.csv"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def test_maps_times_gpus_models_and_qos() -> None:
    trace = read_openb(PODS, NODES)
    assert trace.format == "alibaba-gpu-2023"
    by_name = {p.name[-4:]: p for p in trace.pods}
    assert [p.name[-4:] for p in trace.pods] == ["0000", "0003", "0001", "0004", "0002"]  # by creation, ties kept
    assert [p.arrival_seconds for p in trace.pods] == [0, 30, 60, 60, 300]  # creation_time - min(creation_time)
    whole, shared, multi, cpu, double = (by_name[k] for k in ("0000", "0001", "0002", "0003", "0004"))
    assert (whole.gpu, whole.gpu_milli, whole.lifetime_seconds) == (1, 0, 600)
    assert (shared.gpu, shared.gpu_milli, shared.gpu_models) == (0, 460, ("T4",))
    assert shared.lifetime_seconds is None  # no deletion_time
    assert (multi.gpu, multi.gpu_milli, multi.gpu_models) == (8, 0, ("V100M32", "G3"))  # repeated model dropped
    assert multi.lifetime_seconds is None  # deleted before created: unknown, not negative
    assert (cpu.gpu, cpu.gpu_milli, cpu.lifetime_seconds, cpu.cpu_milli, cpu.memory_mib) == (0, 0, 1000, 4000, 15258)
    assert (double.gpu, double.lifetime_seconds) == (2, 40)
    assert [p.labels[QOS_LABEL] for p in (whole, shared, multi, cpu)] == ["LS", "BE", "Burstable", "Guaranteed"]
    assert {p.priority_class for p in trace.pods} == {None}
    assert [(n.name, n.gpu, n.gpu_model) for n in trace.nodes] == [
        ("openb-node-0000", 0, None), ("openb-node-0001", 8, "V100M32"), ("openb-node-0002", 2, "T4"),
        ("openb-node-0003", 8, "G3")]


def test_shared_gpu_pod_requests_only_gpu_milli() -> None:
    shared = next(p for p in read_openb_pods(PODS) if p.gpu_milli)
    assert kube.pod_requests(shared) == {"cpu": "6000m", "memory": "12288Mi", "kwokbench.io/gpu-milli": "460"}
    node = read_openb_nodes(NODES)[2]
    assert kube.node_allocatable(node)["kwokbench.io/gpu-milli"] == "2000"
    assert kube.node_labels(node) == {"nvidia.com/gpu.product": "T4"}


def test_a_list_without_times_arrives_at_once_in_file_order(tmp_path: Path) -> None:
    """The multigpu50 variant has only the resource columns."""
    (tmp_path / "p.csv").write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nb,1,1,1,1000\na,1,1,0,0\n")
    pods = read_openb_pods(tmp_path / "p.csv")
    assert [(p.name, p.arrival_seconds, p.lifetime_seconds, p.labels) for p in pods] == [
        ("b", 0, None, {}), ("a", 0, None, {})]


def _error(tmp_path: Path, pods: str, nodes: Path | None = NODES) -> str:
    (tmp_path / "p.csv").write_text(pods)
    with pytest.raises(ScenarioError) as err:
        read_openb(tmp_path / "p.csv", nodes)
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.parametrize(("rows", "message"), [
    ("x,1,1,1,1000,T4|A100,LS,Running,0,1,0",
     r"p\.csv: data row 1, column gpu_spec: unknown GPU model 'A100' \(the nodes have: G3, T4, V100M32\)$"),
    ("x,1,1,2,500,,LS,Running,0,1,0", r"data row 1, column gpu_milli: 500 with num_gpu 2: expected 0 with 0 GPUs"),
    ("x,1,1,0,300,,LS,Running,0,1,0", r"data row 1, column gpu_milli: 300 with num_gpu 0"),
    ("x,1,1,1,1001,,LS,Running,0,1,0", r"data row 1, column gpu_milli: must be in 0\.\.1000, got 1001$"),
    ("x,1,1,1,1000,,LS,Running,-5,1,0", r"data row 1, column creation_time: must be >= 0, got -5$"),
    ("x,1,1,1,1000,,LS,Running,,1,0", r"data row 1, column creation_time: empty$"),
    ("x,1,1,1,1000,,LS,Running,0,1,0\ny,-4,1,1,1000,,LS,Running,0,1,0",
     r"data row 2, column cpu_milli: must be >= 0, got -4$"),
    ("x,1,1,1,1000,,LS,Running,0,1,0\nx,1,1,1,1000,,LS,Running,0,1,0",
     r"data row 2, column name: duplicate pod 'x' \(also data row 1\)$"),
    ("", r"^no pods in .*p\.csv$"),
])
def test_errors_name_file_row_and_column(tmp_path: Path, rows: str, message: str) -> None:
    text = _error(tmp_path, f"{HEADER}\n{rows}\n" if rows else HEADER + "\n")
    assert re.search(message, text), text


def test_missing_column_and_models_unchecked_without_nodes(tmp_path: Path) -> None:
    assert re.search(r"p\.csv: no column 'num_gpu'", _error(tmp_path, "name,cpu_milli,memory_mib,gpu_milli\nx,1,1,0\n"))
    (tmp_path / "p.csv").write_text(f"{HEADER}\nx,1,1,1,1000,A100,LS,Running,0,1,0\n")
    assert read_openb(tmp_path / "p.csv").pods[0].gpu_models == ("A100",)


def test_node_list_errors(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,1,1,2,T4\nn-0,1,1,0,\n")
    with pytest.raises(ScenarioError, match=r"n\.csv: data row 2, column sn: duplicate node 'n-0' \(also data row 1"):
        read_openb_nodes(tmp_path / "n.csv")
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib\nn-0,1,1\n")
    with pytest.raises(ScenarioError, match=r"n\.csv: no column 'gpu'"):
        read_openb_nodes(tmp_path / "n.csv")
