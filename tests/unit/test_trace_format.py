"""kwokbench's trace format: reading, writing, the one-line errors, the schema, the Kubernetes form of a row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.trace import kube
from kwokbench.trace.format import (
    NODE_COLUMNS,
    POD_COLUMNS,
    VERSION_KEY,
    TraceNode,
    TracePod,
    column_table,
    json_schema,
    read_nodes,
    read_pods,
    read_trace,
    write_nodes,
    write_pods,
)

GOLDEN = Path(__file__).parent / "golden" / "trace"
PODS_CSV = (GOLDEN / "pods.csv").read_text()
NODES_CSV = (GOLDEN / "nodes.csv").read_text()


def test_reads_the_fixture_with_defaults_and_json_cells() -> None:
    trace = read_trace(GOLDEN / "pods.csv", GOLDEN / "nodes.csv")
    assert [p.name for p in trace.pods] == ["infer-0", "web-0", "train-0", "train-1"]  # by arrival, ties in order
    train, infer, web = trace.pods[2], trace.pods[0], trace.pods[1]
    assert (train.gpu, train.gpu_models, train.group, train.group_min_member) == (2, ("A100", "H100"), "train", 2)
    assert train.tolerations == ({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert (train.namespace, train.priority_class, train.labels, train.owner_kind) == ("ml", "high", {"app": "train"},
                                                                                     "Job")
    assert (infer.gpu, infer.gpu_milli, infer.extended, infer.node_selector) == (0, 250, {"example.com/fpga": "1"},
                                                                                 {"zone": "a"})
    assert (infer.lifetime_seconds, infer.namespace, infer.labels, infer.group) == (None, "default", {}, None)
    assert (web.arrival_seconds, web.lifetime_seconds, web.gpu, web.gpu_milli) == (12.5, 60.0, 0, 0)
    assert [n.pods for n in trace.nodes] == [110, 110, 250]
    assert trace.nodes[1].taints == ({"key": "gpu", "effect": "NoSchedule"},)
    assert (trace.nodes[2].gpu, trace.nodes[2].gpu_model) == (0, None)
    assert (trace.source, trace.format) == (GOLDEN / "pods.csv", "kwokbench")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_write_then_read_gives_the_same_rows(tmp_path: Path, suffix: str) -> None:
    trace = read_trace(GOLDEN / "pods.csv", GOLDEN / "nodes.csv")
    write_pods(trace.pods, tmp_path / f"pods{suffix}")
    write_nodes(trace.nodes, tmp_path / f"nodes{suffix}")
    again = read_trace(tmp_path / f"pods{suffix}", tmp_path / f"nodes{suffix}")
    assert (again.pods, again.nodes) == (trace.pods, trace.nodes)


def _pods_error(tmp_path: Path, text: str, nodes: str | None = None) -> str:
    (tmp_path / "pods.csv").write_text(text)
    if nodes is not None:
        (tmp_path / "nodes.csv").write_text(nodes)
    with pytest.raises(ScenarioError) as err:
        read_trace(tmp_path / "pods.csv", tmp_path / "nodes.csv" if nodes is not None else None)
    assert "\n" not in str(err.value)
    return str(err.value)


HEADER = "name,arrival_seconds,cpu_milli,memory_mib"


@pytest.mark.parametrize(("text", "message"), [
    ("name,arrival_seconds,memory_mib\np,0,1\n", r"pods\.csv: no column 'cpu_milli' \(columns: name, arriva"),
    (f"{HEADER},lifetime_sec\np,0,1,1,5\n", r"pods\.csv: unknown column 'lifetime_sec'"),
    (f"{HEADER}\np,0,1,1\nq,0,lots,1\n", r"pods\.csv: data row 2, column cpu_milli: not a number: 'lots'$"),
    (f"{HEADER}\np,-3,1,1\n", r"data row 1, column arrival_seconds: must be >= 0, got -3$"),
    (f"{HEADER}\np,0,1,-512\n", r"data row 1, column memory_mib: must be >= 0, got -512$"),
    (f"{HEADER},lifetime_seconds\np,0,1,1,-1\n", r"data row 1, column lifetime_seconds: must be >= 0, got -1$"),
    (f"{HEADER}\np,0,1.5,1\n", r"data row 1, column cpu_milli: not a whole number: '1.5'$"),
    (f"{HEADER}\np,0,,1\n", r"data row 1, column cpu_milli: empty$"),
    (f"{HEADER},gpu_milli\np,0,1,1,1200\n", r"data row 1, column gpu_milli: must be in 0\.\.1000, got 1200$"),
    (f"{HEADER},gpu,gpu_milli\np,0,1,1,1,500\n", r"data row 1, column gpu_milli: give whole GPUs .* not both$"),
    (f'{HEADER},labels\np,0,1,1,"{{""app"": web}}"\n', r"data row 1, column labels: invalid JSON \(Expecting value"),
    (f'{HEADER},labels\np,0,1,1,"{{""tier"": 1}}"\n', r"column labels: label 'tier': value must be a string, got 1$"),
    (f'{HEADER},labels\np,0,1,1,"[1]"\n', r"column labels: expected a JSON object"),
    (f'{HEADER},tolerations\np,0,1,1,"[{{""key"": ""a"", ""operator"": ""In""}}]"\n',
     r"column tolerations: toleration operator 'In'"),
    (f'{HEADER},extended\np,0,1,1,"{{""nvidia.com/gpu"": 1}}"\n', r"column extended: 'nvidia.com/gpu' has its own"),
    (f"{HEADER}\nPod_1,0,1,1\n", r"data row 1, column name: 'Pod_1' is not a valid Kubernetes name"),
    (f"{HEADER}\np,0,1,1\np,1,1,1\n", r"data row 2, column name: duplicate pod default/p \(also data row 1\)$"),
    (f"{HEADER},group_min_member\np,0,1,1,3\n", r"data row 1, column group_min_member: a gang needs a group$"),
    (f"{HEADER},group,group_min_member\np,0,1,1,g,3\nq,0,1,1,g,2\n",
     r"data row 2, column group_min_member: group 'g' has 3 in data row 1, here 2$"),
    (f"{HEADER}\n", r"^no pods in .*pods\.csv$"),
    ("", r"^no pods in .*pods\.csv$"),
    ('name,arrival_seconds\n"p,0\n', r"pods\.csv: invalid CSV: "),
])
def test_pod_errors_name_file_row_and_column(tmp_path: Path, text: str, message: str) -> None:
    assert re.search(message, _pods_error(tmp_path, text)), _pods_error(tmp_path, text)


def test_unknown_gpu_model_is_an_error_when_nodes_are_given(tmp_path: Path) -> None:
    pods = PODS_CSV.replace("A100|H100", "A100|V100")
    message = _pods_error(tmp_path, pods, NODES_CSV)
    assert re.search(r"pods\.csv: data row 1, column gpu_models: unknown GPU model 'V100' \(the nodes have: A100, "
                     r"H100\)$", message)
    (tmp_path / "pods.csv").write_text(pods)
    assert read_pods(tmp_path / "pods.csv")[2].gpu_models == ("A100", "V100")  # without nodes nothing to check


@pytest.mark.parametrize(("text", "message"), [
    ("name,cpu_milli,memory_mib\nn1,1,1\nn2,1,1\nn1,1,1\n",
     r"nodes\.csv: data row 3, column name: duplicate node name 'n1' \(also data row 1\)$"),
    ("name,cpu_milli,memory_mib,gpu\nn1,1,1,-2\n", r"data row 1, column gpu: must be >= 0, got -2$"),
    ('name,cpu_milli,memory_mib,taints\nn1,1,1,"[{""key"": ""a"", ""effect"": ""Sometimes""}]"\n',
     r"column taints: taint 'a': effect must be one of NoSchedule"),
    ("name,cpu_milli,memory_mib,gpu_model\nn1,1,1,Tesla T4\n", r"column gpu_model: 'Tesla T4' is not a valid label"),
    ("name,cpu_milli,memory_mib\n", r"^no nodes in .*nodes\.csv$"),
])
def test_node_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "nodes.csv").write_text(text)
    with pytest.raises(ScenarioError, match=message):
        read_nodes(tmp_path / "nodes.csv")


def test_parquet_errors_name_the_row_and_refuse_newer_versions(tmp_path: Path) -> None:
    table = pa.table({"name": ["a", "b"], "arrival_seconds": [0.0, -1.0], "cpu_milli": [1, 1], "memory_mib": [1, 1]})
    pq.write_table(table, tmp_path / "pods.parquet")
    with pytest.raises(ScenarioError, match=r"pods\.parquet: data row 2, column arrival_seconds: must be >= 0"):
        read_pods(tmp_path / "pods.parquet")
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: "3"}), tmp_path / "v3.parquet")
    with pytest.raises(ScenarioError, match=r"v3\.parquet: trace format version '3'; this kwokbench reads up to 2"):
        read_pods(tmp_path / "v3.parquet")
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(ScenarioError, match=r"junk\.parquet: invalid Parquet"):
        read_pods(tmp_path / "junk.parquet")
    with pytest.raises(ScenarioError, match=r"pods\.json: expected a \.csv or \.parquet file"):
        read_pods(tmp_path / "pods.json")
    with pytest.raises(ScenarioError, match=r"cannot read .*missing\.csv"):
        read_pods(tmp_path / "missing.csv")


def test_column_table_and_json_schema_describe_every_column() -> None:
    for table, columns, row in (("pods", POD_COLUMNS, TracePod), ("nodes", NODE_COLUMNS, TraceNode)):
        rows = column_table(table)  # type: ignore[arg-type]
        assert [r[0] for r in rows] == [c.name for c in columns] == list(row.__dataclass_fields__)
        assert all(r[1] and r[3] for r in rows)
        schema = json_schema()["$defs"]["pod" if table == "pods" else "node"]
        assert schema["required"] == [r[0] for r in rows if r[2]]
        assert list(schema["properties"]) == [r[0] for r in rows]
        assert all(p["description"] for p in schema["properties"].values())
    assert [r[0] for r in column_table("pods") if r[2]] == ["name", "arrival_seconds", "cpu_milli", "memory_mib"]
    pod = json_schema()["$defs"]["pod"]["properties"]
    assert pod["namespace"]["default"] == "default" and pod["gpu_milli"]["maximum"] == 1000
    assert pod["labels"]["contentMediaType"] == "application/json"


def test_kubernetes_form_of_whole_shared_and_cpu_pods() -> None:
    trace = read_trace(GOLDEN / "pods.csv", GOLDEN / "nodes.csv")
    infer, web, train = trace.pods[0], trace.pods[1], trace.pods[2]
    assert kube.pod_requests(train) == {"cpu": "8000m", "memory": "32768Mi", "nvidia.com/gpu": "2",
                                        "kwokbench.io/gpu-milli": "2000"}
    assert kube.pod_requests(infer) == {"cpu": "2000m", "memory": "4096Mi", "kwokbench.io/gpu-milli": "250",
                                        "example.com/fpga": "1"}
    assert kube.pod_requests(web) == {"cpu": "500m", "memory": "512Mi"}
    assert kube.pod_affinity(web) is None
    [term] = kube.pod_affinity(train)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][  # type: ignore[index]
        "nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                          "values": ["A100", "H100"]}]}
    gpu, cpu = trace.nodes[0], trace.nodes[2]
    assert kube.node_allocatable(gpu) == {"cpu": "64000m", "memory": "262144Mi", "pods": "110",
                                          "nvidia.com/gpu": "8", "kwokbench.io/gpu-milli": "8000"}
    assert kube.node_allocatable(cpu) == {"cpu": "32000m", "memory": "131072Mi", "pods": "250"}
    assert kube.node_labels(gpu) == {"zone": "a", "nvidia.com/gpu.product": "A100"}
    assert kube.node_labels(cpu) == {}


def test_trace_package_imports_nothing_above_errors() -> None:
    """Scenarios and the runner will import the trace package, so it must not import them."""
    package = Path(__file__).resolve().parents[2] / "kwokbench" / "trace"
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith("kwokbench") or name == "kwokbench.errors" \
                    or name.startswith("kwokbench.trace"), f"{source.name} imports {name}"
