"""The pod timeline: a watch, in its own process, that records when each pod of a run was created,
scheduled (nodeName set), Running, and finished, with local millisecond timestamps.

It starts (list + watch) before the first pod is submitted, survives disconnects and ``410 Gone``
(relist, then resume; handlers are idempotent: the first time a state is seen wins), and records every
restart. Pods first seen through a relist instead of their ADDED event are flagged, so their creation
time is known to be approximate instead of silently biasing the latency. A pod deleted while the watch was
blind (the gap from its last live moment to the relist's end) is not listed again: it is marked deleted at the
gap's start (``deleted_in_gap``), so it holds no node's room for the rest of the run, and the gap is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from kwokbench.cluster.api import Api, WatchGaps
from kwokbench.cluster.kubeconfig import Credentials
from kwokbench.labels import RUN_LABEL, WORKLOAD_LABEL
from kwokbench.load.child import Flag, Parent, context, send_to_parent
from kwokbench.scenario.quantity import quantity
from kwokbench.trace.format import GPU_DEMAND_ANNOTATION, GPU_INDEX_ANNOTATION

STATES = ("created", "scheduled", "running", "finished")
PROGRESS = (*STATES, "deleted")
"""What the live counts say per workload: pods that reached each state, and pods deleted (a trace's lifetimes)."""


@dataclass
class PodRecord:
    namespace: str
    name: str
    workload: int
    created: float = np.nan
    creation_timestamp: float = np.nan
    """The apiserver's metadata.creationTimestamp (epoch seconds, 1 s resolution)."""
    scheduled: float = np.nan
    running: float = np.nan
    finished: float = np.nan
    node: str = ""
    phase: str = ""
    cpu_m: float = 0.0
    """Requested CPU in millicores (sum over containers), for allocation charts."""
    gpus: float = 0.0
    mem_mi: float = 0.0
    """Requested memory in MiB."""
    gpu_milli: float = 0.0
    """Requested kwokbench.io/gpu-milli (a replayed trace's GPU sharing: thousandths of a GPU)."""
    gpu_index: str = ""
    """The GPU(s) a GPU-aware scheduler gave it, as its Binding's annotation kwokbench.io/gpu-index says ("2",
    "0-1"; plugins/gpushare writes it): empty when none did."""
    scheduler: str = ""
    """spec.schedulerName: which scheduler owns the pod (several may share a cluster)."""
    from_list: bool = False
    deleted: bool = False
    deleted_at: float = np.nan
    """When its DELETED event arrived (a trace's pod at the end of its lifetime); a pod that vanished in a watch
    gap: the gap's start, the earliest it can have gone."""
    deleted_in_gap: bool = False


def cpu_millicores(q: str) -> float:
    q = str(q)
    return float(q[:-1]) if q.endswith("m") else float(q) * 1000


def pod_requests(pod: dict[str, Any]) -> tuple[float, float]:
    """(CPU millicores, nvidia.com/gpu) requested by the pod's containers."""
    r = pod_resources(pod)
    return r["cpu_m"], r["gpus"]


def _mebibytes(q: str) -> float:
    return quantity(q) / 2**20


def pod_resources(pod: dict[str, Any]) -> dict[str, float]:
    """CPU millicores, memory MiB, GPUs and milli-GPUs requested by the pod's containers (an unreadable
    quantity counts 0)."""
    out = {"cpu_m": 0.0, "mem_mi": 0.0, "gpus": 0.0, "gpu_milli": 0.0}
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        for key, res, read in (("cpu_m", "cpu", cpu_millicores), ("mem_mi", "memory", _mebibytes),
                               ("gpus", "nvidia.com/gpu", float), ("gpu_milli", "kwokbench.io/gpu-milli", float)):
            with contextlib.suppress(ValueError):
                out[key] += read(req.get(res, "0"))
    # a DRA-form trace pod claims its GPUs: its demand, as the per-node requests would say it, is annotated
    demand = ((pod.get("metadata") or {}).get("annotations") or {}).get(GPU_DEMAND_ANNOTATION)
    if demand and not (out["gpus"] or out["gpu_milli"]):
        with contextlib.suppress(ValueError):
            gpus, milli = (float(x) for x in str(demand).split(",", 1))
            out["gpus"], out["gpu_milli"] = gpus, milli
    return out


def creation_time(stamp: Any) -> float:
    """RFC 3339 ``2026-11-23T12:00:00Z`` as epoch seconds (NaN when absent or malformed)."""
    if not isinstance(stamp, str):
        return np.nan
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return np.nan


class Timeline:
    """Pure event handler: turn watch events into per-pod records and per-workload counts."""

    def __init__(self, workloads: list[str]) -> None:
        self.workloads = {w: i for i, w in enumerate(workloads)}
        self.pods: dict[tuple[str, str], PodRecord] = {}
        self.counts = np.zeros((len(workloads), len(PROGRESS)), dtype=np.int64)
        self.gaps = WatchGaps()

    def handle(self, typ: str, pod: dict[str, Any], t: float) -> None:
        meta = pod.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        rec = self.pods.get(key)
        if rec is None:
            w = self.workloads.get((meta.get("labels") or {}).get(WORKLOAD_LABEL, ""), -1)
            if w < 0:
                return
            rec = self.pods[key] = PodRecord(key[0], key[1], w, from_list=(typ == "SYNC"))
            r = pod_resources(pod)
            rec.cpu_m, rec.gpus, rec.mem_mi, rec.gpu_milli = r["cpu_m"], r["gpus"], r["mem_mi"], r["gpu_milli"]
            rec.scheduler = str((pod.get("spec") or {}).get("schedulerName") or "")
            rec.creation_timestamp = creation_time(meta.get("creationTimestamp"))
            self._mark(rec, "created", t)
        self.gaps.seen(typ, key)
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName"):
            rec.node = spec["nodeName"]
            rec.gpu_index = str((meta.get("annotations") or {}).get(GPU_INDEX_ANNOTATION) or rec.gpu_index)
            self._mark(rec, "scheduled", t)
        phase = status.get("phase", "")
        rec.phase = phase or rec.phase
        if phase == "Running":
            self._mark(rec, "running", t)
        elif phase in ("Succeeded", "Failed"):
            self._mark(rec, "finished", t)
        if typ == "DELETED":
            self._deleted(rec, t)

    def listed(self, taken: float) -> None:
        """A list (its snapshot taken at ``taken``) delivered its last pod: after a relist, the run's pods not
        listed again went in the gap."""
        if closed := self.gaps.listed(taken):
            start, _, gone = closed
            for key in gone:
                self.pods[key].deleted_in_gap = True
                self._deleted(self.pods[key], start)

    def _deleted(self, rec: PodRecord, t: float) -> None:
        rec.deleted = True
        if np.isnan(rec.deleted_at):
            rec.deleted_at = t
            self.counts[rec.workload, PROGRESS.index("deleted")] += 1

    def _mark(self, rec: PodRecord, state: str, t: float) -> None:
        if np.isnan(getattr(rec, state)):
            setattr(rec, state, t)
            self.counts[rec.workload, STATES.index(state)] += 1

    def frame(self) -> Any:
        import pandas as pd

        wl = list(self.workloads)
        rows = self.pods.values()
        return pd.DataFrame({
            "namespace": [r.namespace for r in rows],
            "name": [r.name for r in rows],
            "workload": pd.Categorical([wl[r.workload] for r in rows], categories=wl),
            **{s: np.array([getattr(r, s) for r in rows], dtype=np.float64) for s in STATES},
            "creation_timestamp": np.array([r.creation_timestamp for r in rows], dtype=np.float64),
            "node": [r.node for r in rows],
            "phase": [r.phase for r in rows],
            "cpu_m": np.array([r.cpu_m for r in rows], dtype=np.float64),
            "gpus": np.array([r.gpus for r in rows], dtype=np.float64),
            "mem_mi": np.array([r.mem_mi for r in rows], dtype=np.float64),
            "gpu_milli": np.array([r.gpu_milli for r in rows], dtype=np.float64),
            "gpu_index": pd.Series([r.gpu_index for r in rows], dtype="string"),
            "scheduler": pd.Series([r.scheduler for r in rows], dtype="string"),
            "from_list": np.array([r.from_list for r in rows], dtype=bool),
            "deleted": np.array([r.deleted for r in rows], dtype=bool),
            "deleted_at": np.array([r.deleted_at for r in rows], dtype=np.float64),
            "deleted_in_gap": np.array([r.deleted_in_gap for r in rows], dtype=bool),
        })


def _watch_main(creds: Credentials, run_id: str, workloads: list[str], out: str, counts: Any,
                synced: Any, stop: Any, errors_q: Any) -> None:
    tl = Timeline(workloads)
    errors: list[str] = []
    parent = Parent()
    view = np.frombuffer(counts, dtype=np.int64).reshape(tl.counts.shape)

    async def main() -> None:
        astop = asyncio.Event()
        asynced = asyncio.Event()

        def handle(typ: str, obj: dict[str, Any], t: float) -> None:
            tl.handle(typ, obj, t)

        def on_error(msg: str) -> None:
            errors.append(f"{time.time():.3f} {msg}")

        async with Api(creds, connections=4) as api:
            task = asyncio.create_task(api.watch("/api/v1/pods", handle, astop, on_error=on_error,
                                                 params={"labelSelector": f"{RUN_LABEL}={run_id}"}, synced=asynced,
                                                 on_listed=tl.listed, on_gone=tl.gaps.gone))
            # the parent is checked from the start: killed before the first list succeeded (its cluster
            # torn down by the watchdog), this child would otherwise retry the list forever
            while not stop.is_set() and parent.alive():  # parent killed: flush what we have
                if asynced.is_set() and not synced.is_set():
                    synced.set()
                view[:] = tl.counts
                await asyncio.sleep(0.1)
            view[:] = tl.counts
            astop.set()
            await asyncio.gather(task, return_exceptions=True)

    try:
        asyncio.run(main())
    finally:
        tmp = Path(out + ".tmp")
        tl.frame().to_parquet(tmp, index=False)
        tmp.rename(out)
        send_to_parent(errors_q, {"errors": errors, "gaps": tl.gaps.gaps}, parent)


class Watcher:
    """Runs the timeline in a child process; ``counts[w, s]`` is live progress per workload and state."""

    def __init__(self, creds: Credentials, run_id: str, workloads: list[str], out: Path) -> None:
        ctx = context()
        self.out = out
        self._shape = (len(workloads), len(PROGRESS))
        self._counts = ctx.Array("q", self._shape[0] * self._shape[1], lock=False)  # see load/child.py
        self._synced, self._stop = Flag(ctx), Flag(ctx)
        self._errors: Any = ctx.Queue()
        self.errors: list[str] = []
        self.gaps: list[dict[str, Any]] = []
        """The watch's gaps (:class:`WatchGaps`): from, to, seconds, the pods that vanished in them."""
        self._proc = ctx.Process(target=_watch_main, name="kwokbench-watch", daemon=True,
                                 args=(creds, run_id, workloads, str(out), self._counts, self._synced, self._stop,
                                       self._errors))
        self._proc.start()

    def wait_synced(self, timeout: float = 60.0) -> bool:
        return bool(self._synced.wait(timeout))

    @property
    def counts(self) -> np.ndarray:
        raw: Any = self._counts
        return np.frombuffer(raw, dtype=np.int64).reshape(self._shape).copy()

    def count(self, workload: int, state: str) -> int:
        return int(self.counts[workload, PROGRESS.index(state)])

    def stop(self, timeout: float = 120.0) -> list[str]:
        """Stop the watch, wait for pods.parquet, return the recorded watch errors (its gaps: ``gaps``)."""
        self._stop.set()
        with contextlib.suppress(Exception):
            got = self._errors.get(timeout=timeout)
            self.errors, self.gaps = got["errors"], got["gaps"]
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()
        return self.errors
