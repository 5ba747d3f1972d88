"""Importer of the Alibaba GPU trace v2023 ("openb", cluster-trace-gpu-v2023) into kwokbench's trace format.

The trace of the FGD paper (Weng et al., "Beware of Fragmentation", USENIX ATC '23): node lists
``openb_node_list_*.csv`` (sn, cpu_milli, memory_mib, gpu, model) and pod lists ``openb_pod_list_*.csv``
(name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time,
deletion_time, scheduled_time). Mapping:

- arrival = creation_time - min(creation_time); lifetime = deletion_time - creation_time when both are
  known and it is >= 0, else None (runs until the replay ends). A list without creation_time (the
  ``multigpu50`` variant has only the resource columns) arrives all at 0, in file order: the order the
  paper's simulator schedules it in.
- GPUs: ``num_gpu`` whole GPUs when ``gpu_milli`` is 1000 (0 and 0 for CPU-only pods); a shared GPU
  (``num_gpu`` 1, ``gpu_milli`` < 1000) becomes ``gpu`` 0, ``gpu_milli`` m.
- ``gpu_spec`` ``A|B`` becomes ``gpu_models`` (node affinity on the nodes' ``nvidia.com/gpu.product``);
  with a node list, a model no node has is an error. A node's ``model`` becomes its ``gpu_model``.
- ``qos`` (LS, BE, Burstable, Guaranteed) becomes the label ``kwokbench.io/qos``; no priority class,
  since the trace gives no priorities. ``pod_phase`` and ``scheduled_time`` record what production
  did with a pod, not what it asked for, so they are not imported: the 897 pods that stayed Pending
  are replayed like the others, as the simulator does.

GPU sharing in Kubernetes: no native fractional GPU exists, so kwokbench counts shared GPUs in the
extended resource ``kwokbench.io/gpu-milli`` (``kwokbench.trace.kube``): each GPU node advertises 1000 of
it per GPU next to ``nvidia.com/gpu``; a whole-GPU pod requests ``nvidia.com/gpu: n`` and ``gpu-milli:
1000 x n``, so the two counts stay consistent; a sharing pod requests only ``gpu-milli``.

What that changes against the paper's simulator: the simulator places a sharing pod on one individual
GPU and keeps each GPU's free share; Kubernetes here only keeps each node's sum. A node with 2 GPUs
each 60% used has 800 milli free by kwokbench's count, so a 700-milli pod fits, though it fits on no
single GPU (each has 400 left) in the simulator. Likewise a 1-GPU pod fits a 2-GPU node holding two
300-milli pods here, and there only if both share one GPU. kwokbench's fit check is therefore a
relaxation of the simulator's: every placement the simulator allows is allowed here, not the reverse.
Fragmentation inside a node, which FGD is designed to avoid, is invisible to a stock scheduler's fit
check; only a scheduler that keeps per-GPU state of its own sees it. Compare replayed allocation
ratios with the paper's expected results with that in mind.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from pathlib import Path

from kwokbench.trace.format import (
    MILLI_PER_GPU,
    Trace,
    TraceNode,
    TracePod,
    by_arrival,
    check_gpu_models,
    dns_subdomain,
    gpu_models_of,
    label_value,
    parse_gpu_models,
)
from kwokbench.trace.table import number, read_table, whole

FORMAT = "alibaba-gpu-2023"
QOS_LABEL = "kwokbench.io/qos"


def read_openb_nodes(path: Path) -> list[TraceNode]:
    """An ``openb_node_list_*.csv``: sn, cpu_milli, memory_mib, gpu and (empty for CPU-only nodes) model."""
    table = read_table(path, "nodes")
    table.require(("sn", "cpu_milli", "memory_mib", "gpu"))
    nodes: list[TraceNode] = []
    names: dict[Hashable, int] = {}
    for row in range(table.rows):
        node = TraceNode(name=table.value(row, "sn", dns_subdomain),
                         cpu_milli=table.value(row, "cpu_milli", whole()),
                         memory_mib=table.value(row, "memory_mib", whole()),
                         gpu=table.value(row, "gpu", whole()),
                         gpu_model=table.optional(row, "model", label_value, None))
        table.unique(row, "sn", node.name, names, f"node {node.name!r}")
        nodes.append(node)
    return nodes


def read_openb_pods(path: Path, gpu_models: Collection[str] | None = None) -> list[TracePod]:
    """An ``openb_pod_list_*.csv``, sorted by arrival; ``gpu_models``: the nodes' models, to check gpu_spec."""
    table = read_table(path, "pods")
    table.require(("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
    timed = "creation_time" in table.columns
    created = [table.value(row, "creation_time", number) if timed else 0.0 for row in range(table.rows)]
    start = min(created)
    pods: list[TracePod] = []
    names: dict[Hashable, int] = {}
    for row in range(table.rows):
        num_gpu = table.value(row, "num_gpu", whole())
        milli = table.value(row, "gpu_milli", whole(0, MILLI_PER_GPU))
        if (num_gpu == 0) != (milli == 0) or (num_gpu > 1 and milli != MILLI_PER_GPU):
            raise table.error(row, "gpu_milli", f"{milli} with num_gpu {num_gpu}: expected 0 with 0 GPUs, "
                                                f"1..{MILLI_PER_GPU} with 1, {MILLI_PER_GPU} with more")
        whole_gpus = milli == MILLI_PER_GPU
        deleted = table.optional(row, "deletion_time", number, None)
        lifetime = deleted - created[row] if deleted is not None and deleted >= created[row] else None
        models = table.optional(row, "gpu_spec", parse_gpu_models, ())
        if gpu_models is not None:
            check_gpu_models(table, row, "gpu_spec", models, gpu_models)
        qos = table.optional(row, "qos", label_value, None)
        pod = TracePod(name=table.value(row, "name", dns_subdomain),
                       arrival_seconds=created[row] - start,
                       lifetime_seconds=lifetime,
                       cpu_milli=table.value(row, "cpu_milli", whole()),
                       memory_mib=table.value(row, "memory_mib", whole()),
                       gpu=num_gpu if whole_gpus else 0,
                       gpu_milli=0 if whole_gpus else milli,
                       gpu_models=models,
                       labels={QOS_LABEL: qos} if qos else {})
        table.unique(row, "name", pod.name, names, f"pod {pod.name!r}")
        pods.append(pod)
    return by_arrival(pods)


def read_openb(pods: Path, nodes: Path | None = None) -> Trace:
    """An openb pod list, and the node list it ran on (which also checks the pods' GPU models)."""
    node_list = read_openb_nodes(nodes) if nodes is not None else []
    pod_list = read_openb_pods(pods, gpu_models_of(node_list) if nodes is not None else None)
    return Trace(tuple(pod_list), tuple(node_list), pods, FORMAT)
