"""The target workload of the FGD paper's fragmentation measure ("typical pods"), from a trace's pod list, for
plugins/gpushare's ``workload`` args.

As the paper's simulator derives it (Weng et al., USENIX ATC '23; read in hkust-adsl/kubernetes-scheduler-simulator,
restated here): every pod of the original list (not an inflated one) is keyed by its CPU milli, the milli it asks
of each GPU (1000 for whole GPUs, 0 for CPU-only), its GPU count and its GPU models — no memory, no bucketing; the
keys are taken most frequent first (equal counts: the larger key first) until they cover 95% of the pods; each
weighs its count. For the trace's default pod list: 91 keys, 35 kept, covering 7766 of 8152 pods.

``python -m kwokbench.trace.fgd PODS.csv`` prints the list as the args' YAML (scenarios/configs/gpushare.yaml holds
the default pod list's)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from kwokbench.trace.format import MILLI_PER_GPU, TracePod

COVER = 0.95
"""The share of the pods the kept keys must cover."""


def task_key(p: TracePod) -> tuple[int, int, int, str]:
    """(CPU milli, milli per GPU, GPUs, models) of a pod as the measure sees it."""
    if p.gpu:
        return (p.cpu_milli, MILLI_PER_GPU, p.gpu, "|".join(p.gpu_models))
    if p.gpu_milli:
        return (p.cpu_milli, p.gpu_milli, 1, "|".join(p.gpu_models))
    return (p.cpu_milli, 0, 0, "")


def typical_pods(pods: Iterable[TracePod], cover: float = COVER) -> list[dict[str, Any]]:
    """The kept task types, most frequent first, as plugins/gpushare's ``workload`` entries (weights: counts)."""
    counts = Counter(task_key(p) for p in pods)
    total = sum(counts.values())
    out: list[dict[str, Any]] = []
    kept = 0
    for key, n in sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True):
        if kept >= cover * total:
            break
        cpu, milli, gpus, models = key
        task: dict[str, Any] = {"cpu": cpu, "gpuMilli": milli if 0 < milli < MILLI_PER_GPU else 0,
                                "gpus": gpus if milli == MILLI_PER_GPU else 0, "weight": n}
        if models:
            task["models"] = models.split("|")
        out.append(task)
        kept += n
    return out


def fragment(cpu_left: float, free: list[float], model: str, task: dict[str, Any]) -> float:
    """F_n(m): the GPU milli of a node (CPU milli left, each GPU's free milli, its model) that one task type of
    the workload cannot use — every idle milli when the task asks no GPU, cannot use the model, or does not fit
    (CPU or GPU); otherwise the free milli of the GPUs with less free than it asks per GPU. (plugins/gpushare's
    FragOf, for the analysis of recorded choices.)"""
    idle = float(sum(free))
    per_gpu = MILLI_PER_GPU if task.get("gpus") else task.get("gpuMilli", 0)
    count = task.get("gpus") or (1 if per_gpu else 0)
    models = task.get("models") or []
    if not per_gpu or (models and model not in models) or task["cpu"] > cpu_left \
            or sum(1 for f in free if f >= per_gpu) < count:
        return idle
    return float(sum(f for f in free if f < per_gpu))


def fragmentation(cpu_left: float, free: list[float], model: str, workload: list[dict[str, Any]]) -> float:
    """F_n(M), the node's fragmentation for the workload: F_n(m) weighted by each task type's popularity."""
    total = sum(t["weight"] for t in workload)
    return sum(t["weight"] * fragment(cpu_left, free, model, t) for t in workload) / total if total else 0.0


def main(argv: list[str] | None = None) -> int:
    import yaml

    from kwokbench.errors import KwokbenchError
    from kwokbench.trace.alibaba import read_openb_pods

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m kwokbench.trace.fgd PODS.csv", file=sys.stderr)
        return 2
    from pathlib import Path

    try:
        pods = read_openb_pods(Path(args[0]))
    except (KwokbenchError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(yaml.safe_dump({"workload": typical_pods(pods)}, sort_keys=False, default_flow_style=None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
