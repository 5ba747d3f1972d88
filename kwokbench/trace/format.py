"""kwokbench's own trace format: a pods table and a nodes table, in CSV or Parquet.

One row per pod (what it requests, when it arrives, how long it lives, where it may run) and one row
per node (what it offers). Cells that hold structures (labels, selectors, tolerations, taints, extra
extended resources) are JSON text in both formats, so a CSV and a Parquet file of one trace hold the
same cells and either converts to the other without loss. ``column_table`` and ``json_schema`` are built
from the same column list the reader uses, so the documentation cannot drift from what is accepted.

Every error is one line naming the file, the data row (counted from 1, header excluded) and the column.
A Parquet file written here carries ``kwokbench.trace.format_version`` in its schema metadata; a newer
version than this code reads is refused. Version history: 1, the columns below; 2, DRA: ``devices`` (nodes) and
``claims`` (pods), both optional, so every version-1 file reads as it did.

GPUs: ``gpu`` counts whole GPUs (``nvidia.com/gpu``), ``gpu_milli`` is a share of one GPU in thousandths
for GPU-sharing pods; a pod gives one or the other. How they become Kubernetes resources is in
``kwokbench.trace.kube``. DRA devices and claims (what ``kwokbench capture`` reads from a DRA cluster) are a node's
``devices`` and a pod's ``claims``: each a list of the scenario's own ``devices:`` and ``claims:`` entries (JSON),
checked as those are when a scenario replays the trace.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kwokbench.errors import ScenarioError
from kwokbench.trace.table import SUFFIXES, CellError, Table, json_text, number, read_table, text, whole

FORMAT = "kwokbench"
FORMAT_VERSION = 2
VERSION_KEY = "kwokbench.trace.format_version"
DEFAULT_MAX_PODS = 110
"""The kubelet's default maxPods."""
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MILLI_RESOURCE = "kwokbench.io/gpu-milli"
MILLI_PER_GPU = 1000
GPU_DEMAND_ANNOTATION = "kwokbench.io/gpu-demand"
"""A DRA-form trace pod's GPUs and milli-GPUs (``"k,m"``, as its per-node requests would be): read by the
analysis only (allocation against arrival, pod classes); the scheduler sees the pod's claim."""
GPU_INDEX_ANNOTATION = "kwokbench.io/gpu-index"
"""The GPU(s) of its node a GPU-aware scheduler gave a pod (``"2"``, ``"0-1"``), put on its Binding, which the
apiserver copies onto the pod: plugins/gpushare writes it, the watch records it, the analysis checks it per GPU."""

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = rf"{_DNS_LABEL}(\.{_DNS_LABEL})*"
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")


@dataclass(frozen=True, kw_only=True)
class TracePod:
    """One pod of a trace. Mappings are not to be mutated: rows are shared by inflation's copies."""

    name: str
    arrival_seconds: float
    lifetime_seconds: float | None = None
    cpu_milli: int
    memory_mib: int
    gpu: int = 0
    gpu_milli: int = 0
    extended: Mapping[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    gpu_models: tuple[str, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    group: str | None = None
    group_min_member: int | None = None
    owner_kind: str | None = None
    claims: tuple[Mapping[str, Any], ...] = ()
    """DRA: the pod's claims, each a scenario ``claims:`` entry (one ResourceClaim per pod from a template)."""


@dataclass(frozen=True, kw_only=True)
class TraceNode:
    """One node of a trace."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpu: int = 0
    gpu_model: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    pods: int = DEFAULT_MAX_PODS
    devices: tuple[Mapping[str, Any], ...] = ()
    """DRA: the node's devices, each a scenario ``devices:`` entry (a ResourceSlice of the node's own pool)."""


@dataclass(frozen=True)
class Trace:
    """Pods (sorted by arrival; ties keep their file order), the nodes they were traced on, and where from."""

    pods: tuple[TracePod, ...]
    nodes: tuple[TraceNode, ...]
    source: Path
    """The pods file."""
    format: str
    """What the files were read as: ``kwokbench`` or an importer's name such as ``alibaba-gpu-2023``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pods", tuple(by_arrival(self.pods)))


def by_arrival(pods: Iterable[TracePod]) -> list[TracePod]:
    """Stable sort: pods arriving together keep the order the trace lists them in."""
    return sorted(pods, key=lambda p: p.arrival_seconds)


# -- cells ------------------------------------------------------------------------------------------------------

def _pattern(regex: str, what: str, max_len: int) -> Callable[[Any], str]:
    compiled = re.compile(regex)

    def parse(raw: Any) -> str:
        value = text(raw)
        if len(value) > max_len or not compiled.fullmatch(value):
            raise CellError(f"{value!r} is not a valid {what}")
        return value

    return parse


dns_subdomain = _pattern(_DNS_SUBDOMAIN, "Kubernetes name (lower-case RFC 1123 subdomain)", 253)
_dns_label = _pattern(_DNS_LABEL, "namespace (lower-case RFC 1123 label)", 63)
label_value = _pattern(rf"({_NAME})?", "label value", 63)


def _label_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, prefix))) \
            or len(name) > 63 or not re.fullmatch(_NAME, name):
        raise CellError(f"{key!r} is not a valid label key")


def _labels(raw: Any) -> dict[str, str]:
    """A JSON object of label key -> string value (labels and node selectors)."""
    doc = json_text(raw)
    if not isinstance(doc, dict):
        raise CellError("expected a JSON object of label key -> value")
    for key, value in doc.items():
        _label_key(key)
        if not isinstance(value, str):
            raise CellError(f"label {key!r}: value must be a string, got {json.dumps(value)}")
        label_value(value)
    return doc


_QUANTITY = re.compile(r"\+?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+|[numkMGTPE]|[KMGTPE]i)?")
RESERVED_RESOURCES = ("cpu", "memory", "pods", GPU_RESOURCE, GPU_MILLI_RESOURCE)
"""Resources with a column (or derived from one); ``extended`` may not give them again."""


def _extended(raw: Any) -> dict[str, str]:
    doc = json_text(raw)
    if not isinstance(doc, dict):
        raise CellError("expected a JSON object of resource name -> quantity")
    out = {}
    for name, qty in doc.items():
        if name in RESERVED_RESOURCES:
            raise CellError(f"{name!r} has its own column or is derived from one")
        _label_key(name)
        if isinstance(qty, int) and not isinstance(qty, bool) and qty >= 0:
            out[name] = str(qty)
        elif isinstance(qty, str) and _QUANTITY.fullmatch(qty):
            out[name] = qty
        else:
            raise CellError(f"{name}: {json.dumps(qty)} is not a non-negative Kubernetes quantity")
    return out


def _objects(raw: Any, what: str) -> list[dict[str, Any]]:
    doc = json_text(raw)
    if not isinstance(doc, list) or not all(isinstance(x, dict) for x in doc):
        raise CellError(f"expected a JSON list of {what} objects")
    return doc


def _tolerations(raw: Any) -> tuple[dict[str, Any], ...]:
    items = _objects(raw, "toleration")
    for t in items:
        bad = [k for k in t if k not in _TOLERATION_KEYS]
        if bad:
            raise CellError(f"toleration field {bad[0]!r} (fields: {', '.join(_TOLERATION_KEYS)})")
        if any(not isinstance(v, str) for k, v in t.items() if k != "tolerationSeconds") \
                or not isinstance(t.get("tolerationSeconds", 0), int):
            raise CellError("toleration fields are strings, tolerationSeconds a whole number")
        if t.get("operator", "Equal") not in ("Equal", "Exists"):
            raise CellError(f"toleration operator {t['operator']!r} (Equal or Exists)")
        if t.get("effect", "") not in ("", *_TAINT_EFFECTS):
            raise CellError(f"toleration effect {t['effect']!r} ({', '.join(_TAINT_EFFECTS)} or empty)")
    return tuple(items)


def _taints(raw: Any) -> tuple[dict[str, str], ...]:
    items = _objects(raw, "taint")
    for t in items:
        if set(t) - {"key", "value", "effect"} or not isinstance(t.get("key"), str) \
                or not isinstance(t.get("value", ""), str):
            raise CellError('a taint is {"key": ..., "value": ... (optional), "effect": ...} with string values')
        _label_key(t["key"])
        if t.get("effect") not in _TAINT_EFFECTS:
            raise CellError(f"taint {t['key']!r}: effect must be one of {', '.join(_TAINT_EFFECTS)}")
    return tuple(items)


def _devices(raw: Any) -> tuple[dict[str, Any], ...]:
    """A node's DRA devices: scenario ``devices:`` entries (each checked in full when a scenario replays it)."""
    items = _objects(raw, "device")
    for d in items:
        if not isinstance(d.get("driver"), str) or not isinstance(d.get("count"), int) or d["count"] < 1:
            raise CellError('a device entry needs "driver" (text) and "count" (a whole number >= 1), as a '
                            "scenario's devices: entry")
    return tuple(items)


def _claims(raw: Any) -> tuple[dict[str, Any], ...]:
    """A pod's DRA claims: scenario ``claims:`` entries (each checked in full when a scenario replays it)."""
    items = _objects(raw, "claim")
    names = [c.get("name") for c in items]
    for c in items:
        if not isinstance(c.get("name"), str) or not (isinstance(c.get("device_class"), str)
                                                      or isinstance(c.get("first_available"), list)):
            raise CellError('a claim entry needs "name" and "device_class" (or "first_available"), as a '
                            "scenario's claims: entry")
    if len(set(names)) != len(names):
        raise CellError(f"claim names must differ within a pod ({', '.join(map(str, names))})")
    return tuple(items)


def parse_gpu_models(raw: Any) -> tuple[str, ...]:
    """``A|B``: the models a pod may run on, each a label value; repeats are dropped."""
    models = [m.strip() for m in text(raw).split("|")]
    for m in models:
        if not m:
            raise CellError(f"empty GPU model in {text(raw)!r}")
        label_value(m)
    return tuple(dict.fromkeys(models))


def _json_or_empty(value: Mapping[str, Any] | tuple[Mapping[str, Any], ...]) -> str | None:
    if not value:
        return None
    doc = [dict(x) for x in value] if isinstance(value, tuple) else dict(value)
    return json.dumps(doc, separators=(",", ":"))


def _join_or_empty(value: tuple[str, ...]) -> str | None:
    return "|".join(value) if value else None


# -- the columns ------------------------------------------------------------------------------------------------

Kind = Literal["string", "int", "float"]
_ARROW: dict[Kind, str] = {"string": "string", "int": "int64", "float": "float64"}
"""Each kind's Arrow type, by its constructor's name (pyarrow is imported when a trace is written)."""


@dataclass(frozen=True)
class Column:
    """A column: how to parse and write its cells, and how the docs and the JSON Schema describe it."""

    name: str
    type: str
    """Shown in the column table."""
    meaning: str
    schema: dict[str, Any]
    """JSON Schema of a cell (without description; ``null`` is added for optional columns)."""
    parse: Callable[[Any], Any]
    kind: Kind = "string"
    dump: Callable[[Any], Any] = lambda v: v


def _json_schema(contents: dict[str, Any]) -> dict[str, Any]:
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": contents}


_SECONDS = {"type": "number", "minimum": 0}
_COUNT = {"type": "integer", "minimum": 0}
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_NAME_SCHEMA = {"type": "string", "pattern": f"^{_DNS_SUBDOMAIN}$", "maxLength": 253}

POD_COLUMNS: tuple[Column, ...] = (
    Column("name", "name", "Pod name (RFC 1123 subdomain), unique within its namespace.", _NAME_SCHEMA,
           dns_subdomain),
    Column("arrival_seconds", "number >= 0", "When the pod is created, in seconds after the trace starts.",
           _SECONDS, number, "float"),
    Column("lifetime_seconds", "number >= 0", "How long it runs (a replay counts it from Running, scaled like "
           "the arrivals); empty: until the replay ends.",
           _SECONDS, number, "float"),
    Column("cpu_milli", "integer >= 0", "CPU request in millicores.", _COUNT, whole(), "int"),
    Column("memory_mib", "integer >= 0", "Memory request in MiB.", _COUNT, whole(), "int"),
    Column("gpu", "integer >= 0", "Whole GPUs requested (nvidia.com/gpu).", _COUNT, whole(), "int"),
    Column("gpu_milli", "integer 0..1000",
           "Share of one GPU in thousandths for a GPU-sharing pod (0: none); not together with gpu.",
           {"type": "integer", "minimum": 0, "maximum": MILLI_PER_GPU}, whole(0, MILLI_PER_GPU), "int"),
    Column("extended", "JSON object", 'Other extended resources, name -> quantity, e.g. {"example.com/fpga": 1}.',
           _json_schema({"type": "object", "additionalProperties": {"type": ["string", "integer"]}}), _extended,
           dump=_json_or_empty),
    Column("priority_class", "name", "PriorityClass name.", _NAME_SCHEMA, dns_subdomain),
    Column("namespace", "name", "Namespace (RFC 1123 label).",
           {"type": "string", "pattern": f"^{_DNS_LABEL}$", "maxLength": 63}, _dns_label),
    Column("labels", "JSON object", "Pod labels, key -> string value.", _json_schema(_LABELS), _labels,
           dump=_json_or_empty),
    Column("node_selector", "JSON object", "nodeSelector, label key -> value.", _json_schema(_LABELS), _labels,
           dump=_json_or_empty),
    Column("gpu_models", "A|B", "GPU models the pod may run on (node affinity on the nodes' GPU-model label).",
           {"type": "string", "pattern": r"^[^|]+(\|[^|]+)*$"}, parse_gpu_models, dump=_join_or_empty),
    Column("tolerations", "JSON list", 'Tolerations, e.g. [{"key": "gpu", "operator": "Exists"}].',
           _json_schema({"type": "array", "items": {"type": "object"}}), _tolerations, dump=_json_or_empty),
    Column("group", "text", "Group id: pods of one application or gang share it.", {"type": "string"}, text),
    Column("group_min_member", "integer >= 1",
           "Makes the group a gang: scheduled all or nothing, at least this many members (same in every row).",
           {"type": "integer", "minimum": 1}, whole(1), "int"),
    Column("owner_kind", "text", "Kind of the pod's controller where it was traced (Job, ReplicaSet, ...).",
           {"type": "string"}, text),
    Column("claims", "JSON list", "DRA claims, each a scenario claims: entry, e.g. [{\"name\": \"gpu\", "
           "\"device_class\": \"gpu.example.com\", \"count\": 1}] (a ResourceClaim per pod).",
           _json_schema({"type": "array", "items": {"type": "object", "required": ["name"]}}), _claims,
           dump=_json_or_empty),
)
NODE_COLUMNS: tuple[Column, ...] = (
    Column("name", "name", "Node name (RFC 1123 subdomain), unique.", _NAME_SCHEMA, dns_subdomain),
    Column("cpu_milli", "integer >= 0", "Allocatable CPU in millicores.", _COUNT, whole(), "int"),
    Column("memory_mib", "integer >= 0", "Allocatable memory in MiB.", _COUNT, whole(), "int"),
    Column("gpu", "integer >= 0", "GPUs (nvidia.com/gpu).", _COUNT, whole(), "int"),
    Column("gpu_model", "text", "GPU model, the node's nvidia.com/gpu.product label.",
           {"type": "string", "pattern": f"^{_NAME}$", "maxLength": 63}, label_value),
    Column("labels", "JSON object", "More node labels, key -> string value.", _json_schema(_LABELS), _labels,
           dump=_json_or_empty),
    Column("taints", "JSON list", 'Taints, e.g. [{"key": "gpu", "value": "true", "effect": "NoSchedule"}].',
           _json_schema({"type": "array", "items": {"type": "object", "required": ["key", "effect"]}}), _taints,
           dump=_json_or_empty),
    Column("pods", "integer >= 0", "Most pods the node takes.", _COUNT, whole(), "int"),
    Column("devices", "JSON list", "DRA devices, each a scenario devices: entry, e.g. [{\"driver\": "
           "\"gpu.example.com\", \"count\": 8, \"attributes\": {\"model\": \"H100\"}}] (a ResourceSlice of "
           "the node's pool).",
           _json_schema({"type": "array", "items": {"type": "object", "required": ["driver", "count"]}}), _devices,
           dump=_json_or_empty),
)
TableName = Literal["pods", "nodes"]
_TABLES: dict[TableName, tuple[Column, ...]] = {"pods": POD_COLUMNS, "nodes": NODE_COLUMNS}


def _defaults(row_type: type[TracePod] | type[TraceNode]) -> dict[str, Any]:
    """Optional columns and their defaults, from the dataclass (the one place they are written)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(row_type):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


_DEFAULTS: dict[TableName, dict[str, Any]] = {"pods": _defaults(TracePod), "nodes": _defaults(TraceNode)}


def column_table(table: TableName) -> list[tuple[str, str, bool, str]]:
    """(column, type, required, meaning) per column, for the docs."""
    return [(c.name, c.type, c.name not in _DEFAULTS[table], c.meaning) for c in _TABLES[table]]


def _row_schema(table: TableName, description: str) -> dict[str, Any]:
    defaults = _DEFAULTS[table]
    props: dict[str, Any] = {}
    for c in _TABLES[table]:
        prop = {**c.schema, "description": c.meaning}
        if c.name in defaults:
            prop["type"] = [prop["type"], "null"]
            if (default := c.dump(defaults[c.name])) is not None:
                prop["default"] = default
        props[c.name] = prop
    return {"type": "object", "description": description, "properties": props,
            "required": [c.name for c in _TABLES[table] if c.name not in defaults], "additionalProperties": False}


def json_schema() -> dict[str, Any]:
    """JSON Schema of a trace's rows: ``$defs.pod`` and ``$defs.node`` describe one row of each table."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"kwokbench trace, format version {FORMAT_VERSION}",
        "description": ("A pods table and a nodes table (CSV or Parquet, one row per object). Object and list "
                        "cells are JSON text; an empty cell (CSV) or null (Parquet) takes the default."),
        "type": "object",
        "properties": {"pods": {"type": "array", "items": {"$ref": "#/$defs/pod"}, "minItems": 1},
                       "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["pods"],
        "$defs": {"pod": _row_schema("pods", "One pod: its requests, arrival, lifetime and placement rules."),
                  "node": _row_schema("nodes", "One node: what it offers and its labels and taints.")},
    }


# -- reading ----------------------------------------------------------------------------------------------------

def _open(path: Path, what: TableName) -> Table:
    table = read_table(path, what)
    version = table.metadata.get(VERSION_KEY, str(FORMAT_VERSION))
    if not version.isdigit() or int(version) > FORMAT_VERSION:
        raise ScenarioError(f"{path}: trace format version {version!r}; this kwokbench reads up to {FORMAT_VERSION}")
    table.require(c.name for c in _TABLES[what] if c.name not in _DEFAULTS[what])
    table.reject_unknown([c.name for c in _TABLES[what]])
    return table


def _cells(table: Table, row: int, what: TableName) -> dict[str, Any]:
    """The row's parsed cells; empty optional cells are left out so the dataclass default applies."""
    out = {}
    for c in _TABLES[what]:
        if c.name not in _DEFAULTS[what]:
            out[c.name] = table.value(row, c.name, c.parse)
        elif (value := table.optional(row, c.name, c.parse, None)) is not None:
            out[c.name] = value
    return out


def gpu_models_of(nodes: Iterable[TraceNode]) -> set[str]:
    return {n.gpu_model for n in nodes if n.gpu_model}


def check_gpu_models(table: Table, row: int, column: str, models: Iterable[str], known: Collection[str]) -> None:
    """A pod limited to GPU models no node has is a typo or a mismatched node list, not a workload."""
    for m in models:
        if m not in known:
            raise table.error(row, column, f"unknown GPU model {m!r} (the nodes have: "
                                           f"{', '.join(sorted(known)) or 'none'})")


def read_pods(path: Path, gpu_models: Collection[str] | None = None) -> list[TracePod]:
    """Pods sorted by arrival. With ``gpu_models`` (the nodes' models), a pod asking for another is an error."""
    table = _open(path, "pods")
    pods: list[TracePod] = []
    names: dict[Hashable, int] = {}
    gangs: dict[str, tuple[int | None, int]] = {}
    for row in range(table.rows):
        pod = TracePod(**_cells(table, row, "pods"))
        if pod.gpu and pod.gpu_milli:
            raise table.error(row, "gpu_milli", "give whole GPUs (gpu) or a share of one GPU (gpu_milli), not both")
        table.unique(row, "name", (pod.namespace, pod.name), names, f"pod {pod.namespace}/{pod.name}")
        if pod.group_min_member is not None and pod.group is None:
            raise table.error(row, "group_min_member", "a gang needs a group")
        if pod.group is not None:
            first = gangs.setdefault(pod.group, (pod.group_min_member, row))
            if first[0] != pod.group_min_member:
                raise table.error(row, "group_min_member", f"group {pod.group!r} has {first[0]} in data row "
                                                           f"{first[1] + 1}, here {pod.group_min_member}")
        if gpu_models is not None:
            check_gpu_models(table, row, "gpu_models", pod.gpu_models, gpu_models)
        pods.append(pod)
    return by_arrival(pods)


def read_nodes(path: Path) -> list[TraceNode]:
    """Nodes in file order; a repeated name is an error."""
    table = _open(path, "nodes")
    nodes: list[TraceNode] = []
    names: dict[Hashable, int] = {}
    for row in range(table.rows):
        node = TraceNode(**_cells(table, row, "nodes"))
        table.unique(row, "name", node.name, names, f"node name {node.name!r}")
        nodes.append(node)
    return nodes


def read_trace(pods: Path, nodes: Path | None = None) -> Trace:
    """A trace in kwokbench's format; with a nodes file, pods are checked against its GPU models."""
    node_list = read_nodes(nodes) if nodes is not None else []
    pod_list = read_pods(pods, gpu_models_of(node_list) if nodes is not None else None)
    return Trace(tuple(pod_list), tuple(node_list), pods, FORMAT)


# -- writing ----------------------------------------------------------------------------------------------------

def _write(rows: Sequence[TracePod] | Sequence[TraceNode], columns: Sequence[Column], path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ScenarioError(f"{path}: expected a {' or '.join(SUFFIXES)} file")
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.table({c.name: pa.array([c.dump(getattr(r, c.name)) for r in rows], type=getattr(pa, _ARROW[c.kind])())
                      for c in columns}).replace_schema_metadata({VERSION_KEY: str(FORMAT_VERSION)})
    try:
        if suffix == ".csv":
            pacsv.write_csv(table, path)
        else:
            pq.write_table(table, path)
    except OSError as e:
        raise ScenarioError(f"cannot write {path}: {e.strerror or e}") from e


def write_pods(pods: Sequence[TracePod], path: Path) -> None:
    """CSV or Parquet by suffix; what ``read_pods`` reads back unchanged."""
    _write(pods, POD_COLUMNS, path)


def write_nodes(nodes: Sequence[TraceNode], path: Path) -> None:
    _write(nodes, NODE_COLUMNS, path)
