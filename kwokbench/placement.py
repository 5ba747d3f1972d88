"""Placement quality next to speed, as pure functions of a stored run (pods, nodes, phases).

* node utilisation: requested CPU / allocatable per node (and GPUs on GPU nodes), as a distribution;
* GPU fragmentation: free GPUs stranded on nodes that cannot host the largest GPU request;
* gang completeness: gangs fully placed, partly placed (the failure Coscheduling exists to prevent),
  or not placed at all;
* the GPU rule of plugins/gpufilter (also the rule of kwokbench's extender): pods placed against it;
* pods left pending and why (FailedScheduling reasons, counted per pod).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

WORKLOAD_TYPE = "workload-type"
MIN_CPU_M_FOR_CPU_INTENSIVE = 2000.0

_SUFFIX = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4, "m": 1e-3, "k": 1e3, "M": 1e6,
           "G": 1e9, "T": 1e12}


def quantity(q: Any) -> float:
    """A Kubernetes quantity as a float ("500m" → 0.5, "8" → 8.0, "2Gi" → 2147483648.0)."""
    s = str(q).strip()
    for suf in ("Ki", "Mi", "Gi", "Ti", "m", "k", "M", "G", "T"):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * _SUFFIX[suf]
    return float(s)


def gpu_rule(workload_type: str | None, node_cpu_m: float, node_gpus: float) -> str:
    """"" when a pod of this workload type may run on the node, else why not."""
    if workload_type == "GPU-intensive" and node_gpus <= 0:
        return "GPU-intensive pod needs a node with nvidia.com/gpu"
    if workload_type == "CPU-intensive" and node_cpu_m < MIN_CPU_M_FOR_CPU_INTENSIVE:
        return "CPU-intensive pod needs a node with at least 2000m allocatable CPU"
    return ""


def _dist(v: np.ndarray) -> dict[str, float | None]:
    if not len(v):
        return dict.fromkeys(("p10", "p50", "p90", "mean", "stddev"))
    return {"p10": float(np.percentile(v, 10)), "p50": float(np.percentile(v, 50)),
            "p90": float(np.percentile(v, 90)), "mean": float(v.mean()), "stddev": float(v.std())}


def node_usage(pods: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """Per node: allocatable and the requests of the pods bound to it."""
    placed = pods[pods["node"].fillna("") != ""] if len(pods) else pods
    used = (placed.groupby("node")[["cpu_m", "gpus"]].sum() if len(placed)
            else pd.DataFrame(columns=["cpu_m", "gpus"], dtype=float))
    used = used.rename(columns={"cpu_m": "cpu_used", "gpus": "gpus_used"})
    out = nodes.set_index("name").join(used, how="left").fillna({"cpu_used": 0.0, "gpus_used": 0.0})
    out["pods_bound"] = placed.groupby("node").size().reindex(out.index).fillna(0).astype(int) if len(placed) else 0
    return out


def utilisation(usage: pd.DataFrame) -> dict[str, Any]:
    cpu = (usage["cpu_used"] / usage["cpu_m"].where(usage["cpu_m"] > 0)).dropna().to_numpy()
    gpu_nodes = usage[usage["gpus"] > 0]
    gpu = (gpu_nodes["gpus_used"] / gpu_nodes["gpus"]).to_numpy()
    return {"nodes": len(usage), "nodes_used": int((usage["pods_bound"] > 0).sum()),
            "cpu": _dist(cpu), "gpu": _dist(gpu) if len(gpu) else None}


def gpu_fragmentation(pods: pd.DataFrame, usage: pd.DataFrame) -> dict[str, Any] | None:
    gpu_nodes = usage[usage["gpus"] > 0]
    if not len(gpu_nodes) or not len(pods) or not (pods["gpus"] > 0).any():
        return None
    largest = float(pods["gpus"].max())
    free = (gpu_nodes["gpus"] - gpu_nodes["gpus_used"]).clip(lower=0)
    stranded = float(free[free < largest].sum())
    total_free = float(free.sum())
    return {"largest_request": largest, "free_gpus": total_free, "stranded_gpus": stranded,
            "stranded_share": stranded / total_free if total_free else 0.0,
            "nodes_fitting_largest": int((free >= largest).sum())}


def _index(name: str) -> int:
    m = re.search(r"-(\d+)$", name)
    return int(m.group(1)) if m else -1


def gangs(pods: pd.DataFrame, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for ph in phases:
        g = ph.get("gang")
        if not g:
            continue
        size, need = int(g["size"]), int(g.get("min_member") or g["size"])
        total = int(ph.get("count", 0)) // size
        p = pods[pods["workload"] == ph["name"]] if len(pods) else pods
        bound = np.zeros(total, dtype=np.int64)
        if len(p):
            idx = p["name"].map(_index).to_numpy() // size
            ok = (p["node"].fillna("") != "").to_numpy() & (idx >= 0) & (idx < total)
            np.add.at(bound, idx[ok], 1)
        partial = int(((bound > 0) & (bound < need)).sum())
        out.append({"phase": ph["name"], "gangs": total, "size": size, "min_member": need,
                    "complete": int((bound >= need).sum()), "partial": partial, "unplaced": int((bound == 0).sum()),
                    "pods_in_partial_gangs": int(bound[(bound > 0) & (bound < need)].sum())})
    return out


def rule_violations(pods: pd.DataFrame, usage: pd.DataFrame, phases: list[dict[str, Any]]) -> dict[str, Any] | None:
    kinds = {ph["name"]: (ph.get("labels") or {}).get(WORKLOAD_TYPE) for ph in phases}
    if not any(kinds.values()) or not len(pods):
        return None
    placed = pods[pods["node"].fillna("") != ""]
    cpu, gpus = usage["cpu_m"].to_dict(), usage["gpus"].to_dict()
    by_kind: dict[str, int] = {}
    checked = 0
    for w, node in zip(placed["workload"], placed["node"], strict=True):
        kind = kinds.get(str(w))
        if not kind:
            continue
        checked += 1
        if gpu_rule(kind, cpu.get(node, 0.0), gpus.get(node, 0.0)):
            by_kind[kind] = by_kind.get(kind, 0) + 1
    return {"rule": "gpufilter", "pods_checked": checked, "violations": sum(by_kind.values()), "by_type": by_kind}


_COUNTED = re.compile(r"^\s*(\d+)\s+(.+?)\s*$")


def _normalise(reason: str) -> str:
    """One reason per kind: no pod names or numbers, no trailing clauses after the first sentence."""
    reason = re.sub(r"\bpod \S+ ", "pod ", reason.strip())
    reason = re.sub(r"\d+", "N", reason.split(". ")[0]).rstrip(".,")
    return reason[:160]


def failed_scheduling_reasons(message: str) -> dict[str, int]:
    """``0/100 nodes are available: 60 Insufficient cpu, 40 node(s) didn't match …`` → {reason: nodes}.

    Reasons without a node count (a plugin's PreFilter message) count once, normalised."""
    _, found, tail = message.partition("nodes are available:")
    tail = (tail if found else message).split(" preemption:")[0].strip()
    out: dict[str, int] = {}
    counted = [_COUNTED.match(p) for p in tail.split(", ")] if tail else []
    if counted and all(counted):
        for m in counted:
            assert m is not None
            r = _normalise(m.group(2))
            out[r] = out.get(r, 0) + int(m.group(1))
        return out
    return {_normalise(tail): 1} if tail else {}


def pending(pods: pd.DataFrame, messages: dict[str, str]) -> dict[str, Any]:
    left = pods[pods["scheduled"].isna()] if len(pods) else pods
    reasons: dict[str, int] = {}
    for ns, name in zip(left.get("namespace", []), left.get("name", []), strict=True):
        for r in failed_scheduling_reasons(messages.get(f"{ns}/{name}", "")) or {"no FailedScheduling event": 1}:
            reasons[r] = reasons.get(r, 0) + 1
    return {"pods": len(left), "reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1]))}


def placement(pods: pd.DataFrame, nodes: pd.DataFrame, phases: list[dict[str, Any]],
              messages: dict[str, str]) -> dict[str, Any]:
    """The ``placement`` section of a run's summary."""
    usage = node_usage(pods, nodes)
    out: dict[str, Any] = {"utilisation": utilisation(usage), "gpu_fragmentation": gpu_fragmentation(pods, usage),
                           "gangs": gangs(pods, phases), "rule_violations": rule_violations(pods, usage, phases),
                           "pending": pending(pods, messages)}
    return out
