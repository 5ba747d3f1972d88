"""Trace workloads expanded at load: a trace's nodes as groups of identical nodes, its pods read, shuffled and
resampled as the scenario asks, its DRA claims checked against the devices the nodes offer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from kwokbench.errors import ScenarioError
from kwokbench.scenario.models import (
    ClaimSpec,
    DeviceSpec,
    NodeGroupSpec,
    NodeTraceSpec,
    Scenario,
    TraceSpec,
    WorkloadSpec,
    check_claim,
    offered_classes,
)
from kwokbench.trace import alibaba
from kwokbench.trace import format as trace_format
from kwokbench.trace import inflate as trace_inflate
from kwokbench.trace import kube as trace_kube
from kwokbench.trace import paths as trace_paths
from kwokbench.trace.format import TraceNode


def _read_nodes(spec: NodeTraceSpec | TraceSpec, file: str, base: Path) -> list[TraceNode]:
    path = trace_paths.resolve(file, base)
    return alibaba.read_openb_nodes(path) if spec.format == alibaba.FORMAT else trace_format.read_nodes(path)


def _node_groups(g: NodeGroupSpec, nodes: list[TraceNode]) -> list[NodeGroupSpec]:
    """A trace's nodes as groups of identical nodes (``<name>-<k>``), largest first, for the node template."""
    dra = g.from_trace is not None and g.from_trace.gpus == "dra"
    shapes: dict[str, tuple[dict[str, Any], int]] = {}
    for n in nodes:
        alloc = trace_kube.node_allocatable(n)
        params: dict[str, Any] = {
            "cpu": alloc.pop("cpu"), "memory": alloc.pop("memory"), "pods": int(alloc.pop("pods")),
            "gpus": int(alloc.pop(trace_format.GPU_RESOURCE, 0)), "extended": alloc,
            "labels": trace_kube.node_labels(n), "taints": [dict(t) for t in n.taints]}
        # the GPUs as devices in the DRA form (the node-level counts stay, requested by no pod: the analysis's
        # capacity); a node captured from a DRA cluster has its own
        devices = [*(trace_kube.dra_node_devices(n) if dra else []), *map(dict, n.devices)]
        if devices:
            params["devices"] = devices
        key = json.dumps(params, sort_keys=True)
        shapes[key] = (params, shapes.get(key, (params, 0))[1] + 1)
    ordered = sorted(shapes.values(), key=lambda pc: -pc[1])
    if len(f"{g.name}-{len(ordered) - 1}") > 30:
        raise ScenarioError(f"node group {g.name}: too long a name for its {len(ordered)} groups of identical nodes "
                            f"(<name>-<k> must fit 30 characters)")
    return [NodeGroupSpec(name=f"{g.name}-{k}", count=c, template=g.template,
                          params={k2: v for k2, v in p.items() if k2 != "devices"},
                          devices=[_device(g, d) for d in p.get("devices") or []])
            for k, (p, c) in enumerate(ordered)]


def _device(g: NodeGroupSpec, d: Mapping[str, Any]) -> DeviceSpec:
    try:
        return DeviceSpec.model_validate(d)
    except ValidationError as e:
        raise ScenarioError(f"node group {g.name}: a node's devices entry of driver {d.get('driver')}: "
                            f"{_first_error(e)}") from None


def _first_error(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    field = ".".join(str(x) for x in err["loc"])
    return f"{field}: {err['msg']}" if field else str(err["msg"])


def _check_trace_claims(w: WorkloadSpec, offered: Mapping[str, list[DeviceSpec]]) -> None:
    """A replayed pod's claims (captured from a DRA cluster), each distinct entry checked once as a scenario's
    ``claims:`` entry is: valid, asking for a class the nodes' devices offer."""
    seen: set[str] = set()
    for p in w.trace_pods:
        for j, c in enumerate(p.claims):
            key = json.dumps(c, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            where = f"workload {w.name}: pod {p.namespace}/{p.name}: claims.{j}"
            try:
                claim = ClaimSpec.model_validate(c)
            except ValidationError as e:
                raise ScenarioError(f"{where}: {_first_error(e)}") from None
            if claim.shared_by != 1:
                raise ScenarioError(f"{where}: shared_by: a trace pod's claim is its own (a ResourceClaim per pod)")
            try:
                check_claim(claim, offered, where)
            except ValueError as e:
                raise ScenarioError(str(e)) from None


def expand_traces(sc: Scenario, base: Path) -> Scenario:
    """A scenario's traces read: ``from_trace`` node groups become groups of identical nodes, and each trace
    workload gets its pods (limited, inflated, scaled) and their creation times. Every problem is one line
    naming the file, row and column (:mod:`kwokbench.trace`)."""
    groups: list[NodeGroupSpec] = []
    traced: list[TraceNode] = []
    for g in sc.cluster.node_groups:
        if g.from_trace is None:
            groups.append(g)
            continue
        nodes = _read_nodes(g.from_trace, g.from_trace.file, base)
        if not nodes:
            raise ScenarioError(f"node group {g.name}: no nodes in {g.from_trace.file}")
        traced += nodes
        groups += _node_groups(g, nodes)
    if len(groups) != len(sc.cluster.node_groups) or traced:
        sc.cluster.node_groups = groups
    offered = offered_classes(sc.cluster.node_groups)
    for w in sc.workloads:
        if w.trace is not None:
            _load_trace(w, w.trace, base, traced)
            _check_trace_claims(w, offered)
            if w.templated_claims and not sc.cluster.controller_manager:
                raise ScenarioError(f"workload {w.name}: its trace's pods have DRA claims, made from their templates "
                                    "by kube-controller-manager, which cluster.controller_manager: false turns off")
    return sc


def _load_trace(w: WorkloadSpec, t: TraceSpec, base: Path, traced: list[TraceNode]) -> None:
    nodes = _read_nodes(t, t.nodes, base) if t.nodes else traced
    models = trace_format.gpu_models_of(nodes) if nodes else None
    path = trace_paths.resolve(t.file, base)
    pods = (alibaba.read_openb_pods(path, models) if t.format == alibaba.FORMAT
            else trace_format.read_pods(path, models))
    if not pods:
        raise ScenarioError(f"workload {w.name}: no pods in {path}")
    pods = trace_format.by_arrival(pods)
    if t.limit:
        pods = trace_inflate.limit(pods, t.limit)
    if t.shuffle is True:
        pods = trace_inflate.shuffle(pods, t.seed)
    if t.shuffle == "simulator" and t.inflate:
        if not nodes or trace_inflate.inflation_resource(pods) != "gpu":
            raise ScenarioError(f"workload {w.name}: trace.shuffle: simulator needs GPU pods and the trace's nodes "
                                "(trace.nodes, or a from_trace node group)")
        from kwokbench.toolchain.gorand import GoRand

        with GoRand(t.seed) as draws:
            pods = trace_inflate.simulator_list(pods, t.inflate, trace_inflate.capacity(nodes, "gpu"), draws)
    elif t.inflate:
        if not nodes:
            raise ScenarioError(f"workload {w.name}: trace.inflate needs the trace's nodes (trace.nodes, or a "
                                "from_trace node group)")
        resource = trace_inflate.inflation_resource(pods)
        pods = trace_inflate.inflate(pods, t.inflate, trace_inflate.capacity(nodes, resource), t.seed, resource)
    if t.time_scale or t.duration_seconds:
        pods = trace_inflate.scale_times(pods, t.time_scale, t.duration_seconds)
    if t.rate:
        offsets = [i / t.rate for i in range(len(pods))]
    else:
        t0 = pods[0].arrival_seconds
        offsets = [p.arrival_seconds - t0 for p in pods]
    if len(pods) > 1_000_000:
        raise ScenarioError(f"workload {w.name}: {len(pods)} pods; a phase holds at most 1,000,000")
    w.count = len(pods)
    w._trace_pods, w._trace_offsets = list(pods), offsets
