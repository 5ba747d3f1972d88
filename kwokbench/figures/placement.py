"""Placement quality next to speed, as pure functions of a stored run (pods, nodes, phases).

* node utilisation: requested CPU / allocatable per node (and GPUs on GPU nodes), as a distribution;
* GPU fragmentation: free GPUs stranded on nodes that cannot host the largest GPU request;
* gang completeness: gangs fully placed, partly placed (the failure Coscheduling exists to prevent),
  or not placed at all;
* the GPU rule of plugins/gpufilter (also the rule of kwokbench's extender): pods placed against it;
* pods left pending and why (FailedScheduling reasons, counted per pod; a schedulerName no scheduler of
  the run serves is named as such);
* overcommitted nodes: bound pods requesting more CPU, GPUs or pod slots than the node's allocatable
  (kwok accepts every binding, so conflicting schedulers show), the scheduler whose binding pushed each
  node over, and how their number grows as the cluster fills;
* per scheduler (pods carry several schedulerNames): pods owned, bound, and their latency.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

WORKLOAD_TYPE = "workload-type"
MIN_CPU_M_FOR_CPU_INTENSIVE = 2000.0


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
        gang = idx if len(p) else np.zeros(0, dtype=int)
        out.append({"phase": ph["name"], "gangs": total, "size": size, "min_member": need,
                    "complete": int((bound >= need).sum()), "partial": partial, "unplaced": int((bound == 0).sum()),
                    "pods_in_partial_gangs": int(bound[(bound > 0) & (bound < need)].sum()),
                    "time_to_place": _time_to_place(p, gang, need, total),
                    "held_by_partial": _held_by_partial(p, gang, need, total)})
    return out


SERIES_POINTS = 500
"""Most points of a gang phase's ``held_by_partial.series`` in the summary."""


def _held_by_partial(p: pd.DataFrame, gang: np.ndarray, need: int, total: int) -> dict[str, Any] | None:
    """Over time, the pods (and their CPU) bound in gangs that have some members bound but fewer than ``need``:
    capacity held by gangs that cannot run yet, or never will. Replayed from each pod's bind and (when a pod left)
    deletion time; ``series`` has a point per change, seconds from the phase's first pod created; ``peak_*`` its
    most, ``end_*`` when the last event had happened. ``gang``: each pod's gang index, as :func:`gangs` computed it."""
    if not len(p) or "scheduled" not in p:
        return None
    cpu = p["cpu_m"].to_numpy(dtype=float) if "cpu_m" in p else np.zeros(len(p))
    gone = p["deleted_at"].to_numpy(dtype=float) if "deleted_at" in p else np.full(len(p), np.nan)
    events = []
    for g, t, c, d in zip(gang, p["scheduled"].to_numpy(dtype=float), cpu, gone, strict=True):
        if 0 <= g < total and np.isfinite(t):
            events.append((t, int(g), 1, c))
            if np.isfinite(d) and d >= t:
                events.append((d, int(g), -1, c))
    if not events:
        return None
    events.sort(key=lambda e: (e[0], -e[2]))
    t0 = float(p["created"].min()) if "created" in p and p["created"].notna().any() else events[0][0]
    bound, cpu_in = np.zeros(total, dtype=np.int64), np.zeros(total)
    held_pods = held_cpu = 0.0
    ts, pods_s, cpu_s = [0.0], [0], [0.0]
    for t, g, step, c in events:
        was = 0 < bound[g] < need
        if was:
            held_pods, held_cpu = held_pods - bound[g], held_cpu - cpu_in[g]
        bound[g] += step
        cpu_in[g] += step * c
        if 0 < bound[g] < need:
            held_pods, held_cpu = held_pods + bound[g], held_cpu + cpu_in[g]
        ts.append(round(t - t0, 3))
        pods_s.append(int(held_pods))
        cpu_s.append(round(held_cpu, 1))
    peak = int(np.argmax(pods_s))
    if len(ts) > SERIES_POINTS:  # a point per bind: thinned for summary.json, the peak and the last kept
        keep = sorted({*np.linspace(0, len(ts) - 1, SERIES_POINTS).astype(int).tolist(), peak})
        ts, pods_s, cpu_s = [ts[i] for i in keep], [pods_s[i] for i in keep], [cpu_s[i] for i in keep]
        peak = keep.index(peak)
    return {"peak_pods": pods_s[peak], "peak_cpu_m": cpu_s[peak], "peak_at": ts[peak],
            "end_pods": pods_s[-1], "end_cpu_m": cpu_s[-1], "series": {"t": ts, "pods": pods_s, "cpu_m": cpu_s}}


def _time_to_place(p: pd.DataFrame, gang: np.ndarray, need: int, total: int) -> dict[str, Any] | None:
    """Seconds from a gang's last member created (from then on the gang can be placed) to its ``need``-th member
    bound, over the gangs placed whole: what the scheduler took once the whole gang was there (p50, p90, max);
    and ``per_second``, the gangs placed whole per second from the phase's first member created to the last of
    them placed (pod groups per second, where scheduler_perf counts pods). ``gang``: each pod's gang index, as
    :func:`gangs` computed it."""
    if not len(p) or "created" not in p or "scheduled" not in p:
        return None
    f = pd.DataFrame({"gang": gang,
                      "created": p["created"].to_numpy(dtype=float), "scheduled": p["scheduled"].to_numpy(dtype=float)})
    f = f[(f["gang"] >= 0) & (f["gang"] < total)]
    times, placed = [], []
    for _, g in f.groupby("gang"):
        bound = np.sort(g["scheduled"].dropna().to_numpy())
        if len(bound) >= need and g["created"].notna().all():
            times.append(max(0.0, float(bound[need - 1] - g["created"].max())))
            placed.append(float(bound[need - 1]))
    if not times:
        return None
    t = np.asarray(times)
    span = max(placed) - float(f["created"].min())
    return {"gangs": len(times), "p50": float(np.percentile(t, 50)), "p90": float(np.percentile(t, 90)),
            "max": float(t.max()), "per_second": len(times) / span if span > 0 else None}


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


def pending(pods: pd.DataFrame, messages: dict[str, str], served: set[str] | None = None) -> dict[str, Any]:
    """Pods never scheduled and why. ``served``: the schedulerNames some scheduler of the run serves
    (None: unknown, e.g. an attached cluster); a pod asking for another one waits for nobody."""
    left = pods[pods["scheduled"].isna()] if len(pods) else pods
    wanted = left["scheduler"] if "scheduler" in left else pd.Series([""] * len(left), index=left.index)
    reasons: dict[str, int] = {}
    for ns, name, sched in zip(left.get("namespace", []), left.get("name", []), wanted, strict=True):
        sched = "" if pd.isna(sched) else str(sched)
        if served is not None and sched and sched not in served:
            found = {f"no scheduler of this run serves schedulerName {sched!r}": 1}
        else:
            found = failed_scheduling_reasons(messages.get(f"{ns}/{name}", "")) or {"no FailedScheduling event": 1}
        for r in found:
            reasons[r] = reasons.get(r, 0) + 1
    return {"pods": len(left), "reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1]))}


FILL_MARKS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def overcommit(pods: pd.DataFrame, nodes: pd.DataFrame) -> dict[str, Any] | None:
    """Nodes whose bound pods request more than they can hold (CPU, GPUs, pod slots), replayed in binding
    order: the pod whose binding first pushed a node over names the culprit scheduler. ``fill_curve``:
    overcommitted nodes once the bound pods request each tenth of the cluster's allocatable CPU, and at
    the end (requests above 100% exist only where nodes are overcommitted)."""
    if not len(pods) or not len(nodes):
        return None
    placed = pods[(pods["node"].fillna("") != "") & pods["scheduled"].notna()]
    placed = placed[placed["node"].isin(set(nodes["name"]))].sort_values("scheduled", kind="stable")
    sched = placed["scheduler"].astype("string").fillna("") if "scheduler" in placed \
        else pd.Series("", index=placed.index, dtype="string")
    alloc = nodes.set_index("name")
    by_node = placed.groupby("node", sort=False)
    cpu, gpus, count = by_node["cpu_m"].cumsum(), by_node["gpus"].cumsum(), by_node.cumcount() + 1
    a = alloc.reindex(placed["node"])
    over_cpu = cpu.to_numpy() > a["cpu_m"].to_numpy() + 0.5
    over_gpu = gpus.to_numpy() > a["gpus"].to_numpy() + 1e-9
    over_pods = count.to_numpy() > a["pods"].to_numpy()
    over = over_cpu | over_gpu | over_pods
    firsts_mask = _first_per_node(placed["node"].to_numpy(), over)
    total_cpu = float(alloc["cpu_m"].sum())
    fill = placed["cpu_m"].cumsum().to_numpy() / total_cpu if total_cpu else np.zeros(len(placed))
    n_over = np.cumsum(firsts_mask)
    end = float(fill[-1]) if len(fill) else 0.0
    curve = []
    for mark in FILL_MARKS:
        if mark >= end:
            break
        i = int(np.searchsorted(fill, mark, side="right"))
        curve.append({"fill": mark, "overcommitted_nodes": int(n_over[i - 1]) if i else 0})
    curve.append({"fill": round(end, 4), "overcommitted_nodes": int(n_over[-1]) if len(n_over) else 0})
    over_nodes = list(placed["node"].to_numpy()[firsts_mask])
    owners_per_node = sched.groupby(placed["node"]).nunique()
    mixed = int((owners_per_node.reindex(over_nodes) > 1).sum()) if over_nodes else 0
    examples: list[dict[str, Any]] = []
    for node in over_nodes[:5]:
        here = placed["node"] == node
        examples.append({"node": node, "cpu_requested_m": float(placed.loc[here, "cpu_m"].sum()),
                         "cpu_allocatable_m": float(alloc.loc[node, "cpu_m"]), "pods": int(here.sum()),
                         "pods_allocatable": float(alloc.loc[node, "pods"]),
                         "schedulers": {str(k) or "?": int(v) for k, v in sched[here].value_counts().items()}})
    return {"nodes": len(over_nodes), "share_of_nodes": len(over_nodes) / len(nodes),
            "by_resource": {"cpu": int(over_cpu[firsts_mask].sum()), "gpus": int(over_gpu[firsts_mask].sum()),
                            "pods": int(over_pods[firsts_mask].sum())},
            "pushed_over_by": {str(k) or "?": int(v) for k, v in sched[firsts_mask].value_counts().items()},
            "nodes_shared_by_schedulers": mixed, "fill_curve": curve, "examples": examples}


def _first_per_node(node: np.ndarray, over: np.ndarray) -> np.ndarray:
    """Mask of the first overcommitting binding of each node (rows in binding order)."""
    seen: set[Any] = set()
    out = np.zeros(len(node), dtype=bool)
    for i in np.flatnonzero(over):
        if node[i] not in seen:
            seen.add(node[i])
            out[i] = True
    return out


def per_scheduler(pods: pd.DataFrame) -> dict[str, Any] | None:
    """Pods, bindings and latency per schedulerName, when the run's pods carry more than one."""
    if not len(pods) or "scheduler" not in pods or pods["scheduler"].nunique(dropna=True) < 2:
        return None
    out = {}
    for name, p in pods.groupby(pods["scheduler"].astype("string").fillna(""), sort=True):
        lat = (p["scheduled"] - p["created"]).dropna().to_numpy()
        out[str(name) or "?"] = {"pods": len(p), "scheduled": int(p["scheduled"].notna().sum()),
                                 "latency_p50": float(np.percentile(lat, 50)) if len(lat) else None,
                                 "latency_p99": float(np.percentile(lat, 99)) if len(lat) else None}
    return out


def placement(pods: pd.DataFrame, nodes: pd.DataFrame, phases: list[dict[str, Any]],
              messages: dict[str, str], served: set[str] | None = None) -> dict[str, Any]:
    """The ``placement`` section of a run's summary."""
    usage = node_usage(pods, nodes)
    out: dict[str, Any] = {"utilisation": utilisation(usage), "gpu_fragmentation": gpu_fragmentation(pods, usage),
                           "gangs": gangs(pods, phases), "rule_violations": rule_violations(pods, usage, phases),
                           "pending": pending(pods, messages, served), "overcommit": overcommit(pods, nodes)}
    if (schedulers := per_scheduler(pods)) is not None:
        out["schedulers"] = schedulers
    return out
