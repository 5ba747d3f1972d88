"""Per GPU, from the GPU(s) a GPU-aware scheduler recorded for each pod (its ``gpu_index``, the annotation
plugins/gpushare puts on the Binding): how much each GPU holds at the end of the run, and whether any holds more
than one GPU's worth. Pure: the pods and nodes frames of a stored run.

A whole-GPU pod holds 1000 milli of each GPU it names; a sharing pod its milli of the one GPU it names, from its
binding to its end (finished or deleted): the check runs over the whole run, so a GPU overbooked while two pods lived
(a trace's lifetimes) is found although neither is left at the end. A record that names a GPU its node does not have,
or the wrong number of GPUs, is counted as invalid rather than placed."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from kwokbench.trace.format import MILLI_PER_GPU


def _indexes(s: str) -> list[int] | None:
    try:
        out = [int(f) for f in s.split("-")]
    except ValueError:
        return None
    return out if all(i >= 0 for i in out) else None


def held(pods: pd.DataFrame, nodes: pd.DataFrame) -> tuple[dict[tuple[str, int], float], int, int]:
    """(milli held per (node, GPU), records naming no valid GPU of their node, bound GPU pods without a record)."""
    gpus_of = dict(zip(nodes["name"], nodes["gpus"].fillna(0).astype(int), strict=True)) if len(nodes) else {}
    out: dict[tuple[str, int], float] = defaultdict(float)
    invalid = unrecorded = 0
    bound = pods[(pods["node"].fillna("") != "") & ((pods["gpus"] > 0) | (pods["gpu_milli"] > 0))]
    for node, whole, milli, index, deleted in zip(bound["node"], bound["gpus"], bound["gpu_milli"],
                                                  bound["gpu_index"].fillna(""), bound["deleted"], strict=True):
        if not index:
            unrecorded += 1
            continue
        idx = _indexes(str(index))
        want = int(whole) if whole > 0 else 1
        if idx is None or len(idx) != want or len(set(idx)) != want or max(idx) >= gpus_of.get(node, 0):
            invalid += 1
            continue
        if deleted:
            continue
        for i in idx:
            out[(str(node), i)] += MILLI_PER_GPU if whole > 0 else float(milli)
    return dict(out), invalid, unrecorded


def peaks(pods: pd.DataFrame, nodes: pd.DataFrame) -> dict[tuple[str, int], float]:
    """The most each (node, GPU) held at once over the run, from each recorded pod's binding to its end (finished
    or deleted; a pod without times counts from the start to the end of the run)."""
    gpus_of = dict(zip(nodes["name"], nodes["gpus"].fillna(0).astype(int), strict=True)) if len(nodes) else {}
    inf = float("inf")

    def time(row: dict[str, Any], col: str, default: float) -> float:
        v = row.get(col)
        return default if v is None or pd.isna(v) else float(v)

    events: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for row in pods[pods["gpu_index"].fillna("") != ""].to_dict("records"):
        whole, milli, node = float(row.get("gpus") or 0), float(row.get("gpu_milli") or 0), str(row["node"] or "")
        idx = _indexes(str(row["gpu_index"]))
        want = int(whole) if whole > 0 else 1
        if not node or idx is None or len(idx) != want or len(set(idx)) != want or max(idx) >= gpus_of.get(node, 0):
            continue
        start = time(row, "scheduled", -inf)
        end = min(time(row, "finished", inf), time(row, "deleted_at", inf))
        if row.get("deleted") is True and end == inf:
            end = start  # deleted, its time unknown: it held nothing at the end (held()'s reading)
        for i in idx:
            q = MILLI_PER_GPU if whole > 0 else milli
            events[(node, i)] += [(start, q), (end, -q)]
    out = {}
    for gpu, ev in events.items():
        now = most = 0.0
        for _, q in sorted(ev):  # at one instant a release (negative) before a take
            now += q
            most = max(most, now)
        out[gpu] = most
    return out


def gpu_choices(pods: pd.DataFrame, nodes: pd.DataFrame) -> dict[str, Any] | None:
    """The summary's ``gpu_choices`` section; None when no pod carries a recorded GPU."""
    if "gpu_index" not in pods or not (pods["gpu_index"].fillna("") != "").any():
        return None
    ledger, invalid, unrecorded = held(pods, nodes)
    peak = peaks(pods, nodes)
    over = [k for k, v in peak.items() if v > MILLI_PER_GPU]
    return {
        "pods_recorded": int((pods["gpu_index"].fillna("") != "").sum()),
        "gpu_pods_unrecorded": unrecorded,
        "invalid": invalid,
        "gpus_used": len(ledger),
        "gpus_shared": sum(1 for v in ledger.values() if 0 < v < MILLI_PER_GPU),
        "max_milli_on_one_gpu": max(peak.values(), default=0.0),
        "overcommitted_gpus": len(over),
        "overcommitted": [f"{n}/{i}" for n, i in sorted(over)[:10]],
    }
