"""What a cluster under pressure looks like over a run (pure, over the stored pod timeline and nodes): how much of
each resource is allocated, how many GPUs are free yet useless to every waiting pod, how many pods wait, and how
long each class of pod waited for a node.

- **Allocation ratio** per resource (CPU, memory, GPU): requests of the pods bound and not yet deleted, over the
  nodes' allocatable, sampled at up to :data:`SAMPLES` instants from the first pod created to the last event. GPUs
  count in thousandths (``kwokbench.io/gpu-milli`` where the nodes advertise it: a replayed trace's GPU sharing,
  else 1000 per ``nvidia.com/gpu``).
- **GPU fragmentation**: the free GPU share of every node on which *no pending pod fits* (by CPU, memory, whole
  GPUs, GPU share and pod slots). The FGD paper (Weng et al., USENIX ATC '23, §3) defines a node's fragmentation
  for a target workload as the expected free GPU capacity a task drawn from the workload's distribution cannot
  use, counted per GPU (a partly used GPU is a fragment for a task that needs a whole one). Here the workload is
  the pods waiting at that instant, a pod fits or not (no expectation over task popularity), the count is per
  node (kwokbench's GPU sharing is accounted per node, not per device) and GPU-model affinity is not checked;
  with nothing pending nothing is fragmented.
- **Pending**: pods created and neither bound nor deleted, over time.
- **By workload** (runs of several workloads): each one's CPU cores held and pods waiting over time, its peak and
  final share of the cluster's CPU: what each tenant got, whichever scheduler's queues placed it.
- **Latency by pod class**: created → bound, p50 / p99, for CPU-only pods, one whole GPU, a shared GPU (less
  than one), several GPUs.
- **Allocation against arrived workload** (the paper's figure): pods in creation order; at each step of 5% of
  the GPU capacity requested by the pods arrived so far, the share of the capacity the bound ones among them hold.
  Meaningful for a run without lifetimes, where a pod that did not fit never fits later.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SAMPLES = 120
MILLI = 1000.0
CLASSES = ("cpu-only", "one-gpu", "shared-gpu", "multi-gpu")
ARRIVED_STEP = 5
"""Percent of GPU capacity between two points of the allocation-against-arrived curve."""


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column, 0 where missing (older runs' files lack the newer columns)."""
    if name not in frame:
        return np.zeros(len(frame))
    return np.asarray(frame[name].fillna(0).to_numpy(dtype=float))


def _pod_gpu_milli(pods: pd.DataFrame) -> np.ndarray:
    milli, whole = _col(pods, "gpu_milli"), _col(pods, "gpus")
    return np.asarray(np.where(milli > 0, milli, whole * MILLI))


def pod_class(gpus: np.ndarray, gpu_milli: np.ndarray) -> np.ndarray:
    """Each pod's class: cpu-only, one-gpu, shared-gpu (less than one GPU) or multi-gpu."""
    share = np.where(gpu_milli > 0, gpu_milli / MILLI, gpus)
    return np.select([share <= 0, share < 1, share == 1], ["cpu-only", "shared-gpu", "one-gpu"], "multi-gpu")


def _ratio(used: float, total: float) -> float | None:
    return float(used / total) if total > 0 else None


def allocation(pods: pd.DataFrame, nodes: pd.DataFrame) -> dict[str, Any] | None:
    """The summary's ``allocation`` section (None without pods or nodes)."""
    if not len(pods) or not len(nodes) or pods["created"].isna().all():
        return None
    idx = {n: i for i, n in enumerate(nodes["name"])}
    node_of = pods["node"].map(idx).fillna(-1).astype(int).to_numpy()
    created = pods["created"].to_numpy(dtype=float)
    bound = np.where(node_of >= 0, pods["scheduled"].to_numpy(dtype=float), np.nan)
    gone = pods["deleted_at"].to_numpy(dtype=float)
    req = {"cpu": _col(pods, "cpu_m"), "memory": _col(pods, "mem_mi"), "gpu": _pod_gpu_milli(pods),
           "gpus": _col(pods, "gpus"), "slots": np.ones(len(pods))}
    node_gpu_milli = _col(nodes, "gpu_milli")
    cap = {"cpu": _col(nodes, "cpu_m"), "memory": _col(nodes, "mem_mi"),
           "gpu": np.where(node_gpu_milli > 0, node_gpu_milli, _col(nodes, "gpus") * MILLI),
           "gpus": _col(nodes, "gpus"), "slots": _col(nodes, "pods")}
    t0 = float(np.nanmin(created))
    t_end = float(np.nanmax(np.concatenate([created, bound[~np.isnan(bound)], gone[~np.isnan(gone)]])))
    times = np.linspace(t0, t_end, SAMPLES) if t_end > t0 else np.array([t0])
    series: dict[str, list[float | None]] = {"cpu": [], "memory": [], "gpu": [], "pending": [],
                                             "fragmented_gpus": []}
    workloads = pods["workload"].fillna("").astype(str).to_numpy() if "workload" in pods else np.full(len(pods), "")
    names = sorted(set(workloads.tolist()) - {""})
    code = np.searchsorted(names, workloads) if names else np.zeros(len(pods), dtype=int)
    tenants: dict[str, dict[str, list[float]]] = {w: {"cpu": [], "pending": []} for w in names}
    for t in times:
        on = (bound <= t) & ~(gone <= t)
        waiting = (created <= t) & ~(bound <= t) & ~(gone <= t)
        if len(names) > 1:  # one pass per instant, every workload at once (pods of no workload: not counted)
            named = workloads != ""
            cores = np.bincount(code[on & named], weights=req["cpu"][on & named], minlength=len(names)) / MILLI
            queued = np.bincount(code[waiting & named], minlength=len(names))
            for i, w in enumerate(names):
                tenants[w]["cpu"].append(round(float(cores[i]), 3))
                tenants[w]["pending"].append(float(queued[i]))
        used = {k: np.bincount(node_of[on], weights=v[on], minlength=len(nodes)) for k, v in req.items()}
        for k in ("cpu", "memory", "gpu"):
            series[k].append(_ratio(float(used[k].sum()), float(cap[k].sum())))
        series["pending"].append(float(waiting.sum()))
        series["fragmented_gpus"].append(_fragmented(req, waiting, cap, used) / MILLI)
    gpu_total = float(cap["gpu"].sum()) / MILLI
    out: dict[str, Any] = {
        "series": {"t": (times - t0).round(2).tolist(), **series},
        "gpu_capacity": gpu_total,
        "peak": {k: _max(series[k]) for k in ("cpu", "memory", "gpu")},
        "mean": {k: _mean(series[k]) for k in ("cpu", "memory", "gpu")},
        "final": {k: series[k][-1] for k in ("cpu", "memory", "gpu")},
        "gpu_fragmentation": {"mean_gpus": _mean(series["fragmented_gpus"]),
                              "peak_gpus": _max(series["fragmented_gpus"]),
                              "final_gpus": series["fragmented_gpus"][-1],
                              "mean_share": (_mean(series["fragmented_gpus"]) or 0) / gpu_total if gpu_total else None},
        "pending": {"peak": _max(series["pending"]), "final": series["pending"][-1]},
        "deleted": int((~np.isnan(gone)).sum()),
        "latency_by_class": latency_by_class(pods),
        "overbooked": overbooked(pods, nodes),
    }
    if len(names) > 1:
        out["by_workload"] = by_workload(tenants, float(cap["cpu"].sum()) / MILLI)
    if gpu_total:
        out["gpu_allocated_vs_arrived"] = allocated_vs_arrived(created, req["gpu"], ~np.isnan(bound),
                                                               gpu_total * MILLI)
    return out


OVERBOOK = {"cpu": ("cpu_m", "cpu_m"), "memory": ("mem_mi", "mem_mi"), "gpus": ("gpus", "gpus"),
            "gpu_milli": ("gpu_milli", "gpu_milli"), "pods": (None, "pods")}
"""Resource → (the pods' request column, None: one a pod; the nodes' allocatable column) the overbooking check
holds each node to."""


def overbooked(pods: pd.DataFrame, nodes: pd.DataFrame, worst: int = 5) -> dict[str, Any]:
    """Nodes given more than they have, at any moment: for each resource a scheduler is asked to respect (CPU,
    memory, whole GPUs, GPU thousandths where the node advertises them, pod slots), the most the pods bound to a
    node held at once (each from its binding to its end: finished or deleted), exactly from those events rather than
    at sampled instants, against the node's allocatable. kube-scheduler never does this; a scheduler that ignores a
    resource, or frees what it did not free, does. ``nodes``: how many nodes were overbooked in any resource;
    ``by_resource``: how many in each; ``worst``: the largest excesses."""
    idx = {n: i for i, n in enumerate(nodes["name"])}
    node_of = pods["node"].map(idx).fillna(-1).astype(int).to_numpy() if len(pods) else np.zeros(0, dtype=int)
    start = pods["scheduled"].to_numpy(dtype=float) if len(pods) else np.zeros(0)
    ends = [pods[c].to_numpy(dtype=float) for c in ("finished", "deleted_at") if c in pods]
    end = np.fmin.reduce(ends) if ends else np.full(len(pods), np.nan)
    end = np.where(np.isnan(end), np.inf, end)
    names = nodes["name"].astype(str).to_numpy()
    hit: set[int] = set()
    by: dict[str, int] = {}
    found: list[dict[str, Any]] = []
    for res, (col, cap_col) in OVERBOOK.items():
        cap = _col(nodes, cap_col)
        req = np.ones(len(pods)) if col is None else _col(pods, col)
        held = (node_of >= 0) & (req > 0) & ~np.isnan(start)
        if res == "gpu_milli":  # only where the node advertises GPU thousandths (else a pod's share is its own)
            held &= np.isin(node_of, np.flatnonzero(cap > 0))
        if not held.any():
            continue
        n = np.concatenate([node_of[held], node_of[held]])
        t = np.concatenate([start[held], end[held]])
        d = np.concatenate([req[held], -req[held]])
        order = np.lexsort((d, t, n))  # by node, then time; at one instant a release before a take
        n, d = n[order], d[order]
        total = np.cumsum(d)
        first = np.flatnonzero(np.r_[True, n[1:] != n[:-1]])
        base = np.repeat(np.r_[0.0, total[first[1:] - 1]], np.diff(np.r_[first, len(n)]))
        peak = np.maximum.reduceat(total - base, first)
        who = n[first]
        over = peak > cap[who] + 1e-6
        if over.any():
            by[res] = int(over.sum())
            hit.update(who[over].tolist())
            found += [{"node": str(names[w]), "resource": res, "held": float(p), "allocatable": float(cap[w])}
                      for w, p in zip(who[over], peak[over], strict=True)]
    found.sort(key=lambda f: -(f["held"] - f["allocatable"]) / max(f["allocatable"], 1.0))
    return {"nodes": len(hit), "by_resource": by, "worst": found[:worst]}


def by_workload(tenants: dict[str, dict[str, list[float]]], cpu_total: float) -> dict[str, Any]:
    """Each workload's CPU cores held over time (on the section's sample instants) and its share of the cluster's CPU:
    what a tenant got when several submit at once, whatever scheduler and queues placed them."""
    out = {}
    for w, ser in tenants.items():
        cores = ser["cpu"]
        out[w] = {"series": ser, "peak_cores": max(cores, default=0.0), "final_cores": cores[-1] if cores else 0.0,
                  "mean_cores": float(np.mean(cores)) if cores else 0.0,
                  "peak_share": max(cores, default=0.0) / cpu_total if cpu_total else None,
                  "final_share": (cores[-1] if cores else 0.0) / cpu_total if cpu_total else None}
    return out


def _fragmented(req: dict[str, np.ndarray], waiting: np.ndarray, cap: dict[str, np.ndarray],
                used: dict[str, np.ndarray]) -> float:
    """Free GPU share (milli) on nodes where no waiting pod fits."""
    free = {k: cap[k] - used[k] for k in cap}
    gpu_free = free["gpu"] > 0
    if not waiting.any() or not gpu_free.any():
        return 0.0
    shapes = np.unique(np.stack([req[k][waiting] for k in cap], axis=1), axis=0)
    fits = np.ones((len(shapes), int(gpu_free.sum())), dtype=bool)
    for j, k in enumerate(cap):
        fits &= shapes[:, j:j + 1] <= free[k][gpu_free][None, :] + 1e-9
    useless = ~fits.any(axis=0)
    return float(free["gpu"][gpu_free][useless].sum())


def latency_by_class(pods: pd.DataFrame) -> dict[str, Any]:
    lat = (pods["scheduled"] - pods["created"]).to_numpy(dtype=float)
    cls = pod_class(pods["gpus"].fillna(0).to_numpy(dtype=float), pods["gpu_milli"].fillna(0).to_numpy(dtype=float))
    out: dict[str, Any] = {}
    for c in CLASSES:
        mine = cls == c
        if not mine.any():
            continue
        ok = lat[mine & ~np.isnan(lat)]
        out[c] = {"pods": int(mine.sum()), "bound": len(ok),
                  "p50": float(np.percentile(ok, 50)) if len(ok) else None,
                  "p99": float(np.percentile(ok, 99)) if len(ok) else None}
    return out


def allocated_vs_arrived(created: np.ndarray, gpu_milli: np.ndarray, bound: np.ndarray,
                         capacity_milli: float) -> list[dict[str, float]]:
    """GPU allocation (% of capacity) at each step of arrived GPU request (% of capacity), pods in creation
    order (the FGD paper's figure)."""
    order = np.argsort(created, kind="stable")
    arrived = np.cumsum(gpu_milli[order]) / capacity_milli * 100
    allocated = np.cumsum(np.where(bound[order], gpu_milli[order], 0)) / capacity_milli * 100
    out = [{"arrived": 0.0, "allocated": 0.0}]
    for step in range(ARRIVED_STEP, int(arrived[-1]) + 1, ARRIVED_STEP):
        i = int(np.searchsorted(arrived, step, side="right")) - 1
        if i >= 0:
            out.append({"arrived": float(step), "allocated": round(float(allocated[i]), 3)})
    return out


def at_arrived(curve: list[dict[str, float]], percent: float) -> float | None:
    """The allocation where the arrived workload first reaches ``percent`` (None: it never did)."""
    return next((p["allocated"] for p in curve if p["arrived"] >= percent), None)


def _max(v: list[float | None]) -> float | None:
    xs = [x for x in v if x is not None]
    return max(xs) if xs else None


def _mean(v: list[float | None]) -> float | None:
    xs = [x for x in v if x is not None]
    return float(np.mean(xs)) if xs else None
