"""Chaos: timed disruptions of a run's cluster, and how the scheduling recovered (pure analysis).

Component restarts are :meth:`Kwokctl.restart_component` (the same command line, environment and log
file, the new pid in kwokctl's pid file), with ``down_seconds`` between stop and start. Node actions
go through the API: ``nodes-not-ready`` takes the nodes away from the kwok controller (removes the
``kwok.x-k8s.io/node`` annotation it selects on) and sets their Ready condition False, so the
node-lifecycle controller taints them and the scheduler avoids them (the event waits up to 30 s for that taint
and records when it was on every node: ``tainted``); ``delete-nodes`` deletes them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pandas as pd
import psutil

from kwokbench.cluster.api import Api
from kwokbench.cluster.attach import AttachedCluster
from kwokbench.cluster.kwokctl import ClusterInfo, Kwokctl
from kwokbench.errors import ClusterError, KwokbenchError
from kwokbench.scenario import ChaosEvent
from kwokbench.summary import per_second

COMPONENT = {"restart-scheduler": "kube-scheduler", "restart-apiserver": "kube-apiserver",
             "restart-controller-manager": "kube-controller-manager"}
NODE_GROUP_LABEL = "kwokbench.io/node-group"


@dataclass
class Chaos:
    """Runs the scenario's events in a thread, each at its time after :meth:`start`."""

    events: list[ChaosEvent]
    info: ClusterInfo | AttachedCluster
    kwokctl: Kwokctl
    log: list[dict[str, Any]]

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = 0.0

    def start(self) -> None:
        self.t0 = time.time()
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 120) -> list[dict[str, Any]]:
        """Cancel events not yet started; wait for one in progress (a restart must not be left half-done)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return self.log

    def _run(self) -> None:
        for i, e in enumerate(sorted(self.events, key=lambda e: e.at_seconds)):
            if self._stop.wait(max(0.0, self.t0 + e.at_seconds - time.time())):
                self.log.append({"index": i, "action": e.action, "at_seconds": e.at_seconds, "skipped": True,
                                 "why": "the run ended first"})
                continue
            rec: dict[str, Any] = {"index": i, "action": e.action, "at_seconds": e.at_seconds, "t": time.time()}
            try:
                if e.action in COMPONENT:
                    if not isinstance(self.info, ClusterInfo):
                        raise ClusterError(f"{e.action}: not possible on an attached cluster")
                    rec.update(self.kwokctl.restart_component(self.info, COMPONENT[e.action], e.down_seconds))
                else:
                    rec.update(asyncio.run(_nodes_action(self.info, e)))
            except (KwokbenchError, OSError, psutil.Error) as err:
                rec["error"] = str(err)
            rec.setdefault("ended", time.time())  # a NotReady event ends with its patches, before its taint wait
            self.log.append(rec)


def pick_nodes(names: list[str], share: float) -> list[str]:
    """A deterministic share (at least one) of the nodes: spread over the sorted list, not its head."""
    if not names:
        return []
    names = sorted(names)
    n = max(1, round(len(names) * share))
    return [names[int(i * len(names) / n)] for i in range(n)]


async def _nodes_action(info: ClusterInfo | AttachedCluster, e: ChaosEvent) -> dict[str, Any]:
    params = {"labelSelector": f"{NODE_GROUP_LABEL}={e.group}"} if e.group else None
    async with Api(info.credentials()) as api:
        nodes = await api.json("GET", "/api/v1/nodes", params=params)
        names = pick_nodes([n["metadata"]["name"] for n in nodes.get("items") or []], e.share)
        merge = {"Content-Type": "application/merge-patch+json"}
        strategic = {"Content-Type": "application/strategic-merge-patch+json"}
        for name in names:
            if e.action == "delete-nodes":
                status, body = await api.raw("DELETE", f"/api/v1/nodes/{name}")
            else:
                status, body = await api.raw(
                    "PATCH", f"/api/v1/nodes/{name}",
                    orjson.dumps({"metadata": {"annotations": {"kwok.x-k8s.io/node": None}}}), headers=merge)
                if status == 200:
                    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    cond = {"type": "Ready", "status": "False", "reason": "KwokbenchChaos",
                            "message": "made NotReady by a kwokbench chaos event", "lastHeartbeatTime": now,
                            "lastTransitionTime": now}
                    status, body = await api.raw("PATCH", f"/api/v1/nodes/{name}/status",
                                                 orjson.dumps({"status": {"conditions": [cond]}}), headers=strategic)
            if status not in (200, 202):
                raise ClusterError(f"{e.action} {name}: HTTP {status} {body[:200]!r}")
        if e.action == "delete-nodes":
            return {"nodes": names}
        ended = time.time()
        return {"nodes": names, "ended": ended, "tainted": await _tainted(api, set(names))}


NOT_READY_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
TAINT_WAIT = 30.0


async def _tainted(api: Api, names: set[str], timeout: float = TAINT_WAIT) -> float | None:
    """When every one of ``names`` carried the node-lifecycle controller's NoSchedule taint (polled, each node by
    its own GET until it has it: never a list of the whole cluster; None when not within ``timeout``): from then on
    the scheduler has a reason to avoid them. On a loaded host the controller-manager takes seconds to react, and
    that is not the scheduler's delay."""
    pending = set(names)
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = await asyncio.gather(*(api.json("GET", f"/api/v1/nodes/{n}") for n in sorted(pending)))
        pending -= {(n.get("metadata") or {}).get("name") for n in got
                    if any(t.get("key") in NOT_READY_TAINTS and t.get("effect") == "NoSchedule"
                           for t in (n.get("spec") or {}).get("taints") or [])}
        if not pending:
            return time.time()
        await asyncio.sleep(0.5)
    return None


# ---- analysis (pure) ------------------------------------------------------------------------------


def recovery(events: list[dict[str, Any]], rate: pd.DataFrame, pods: pd.DataFrame,
             before: float = 10.0, level: float = 0.9, smooth: int = 3) -> list[dict[str, Any]]:
    """Per event: the binding rate before it, when it was back to ``level`` of that, and pods affected.

    ``rate`` is the 1 s binding-rate series (t, rate); recovery is the first time after the event ends
    at which the ``smooth``-second rolling mean is back at ``level`` × the mean of the ``before``
    seconds before the event. Pods: bound to the event's nodes (node actions), and pods lost —
    created but gone before they were ever scheduled (must be zero).
    """
    out = []
    r = rate.sort_values("t") if len(rate) else rate
    for e in events:
        if e.get("skipped") or "t" not in e:
            out.append({**_brief(e), "recovery_seconds": None})
            continue
        t, end = float(e["t"]), float(e.get("ended", e["t"]))
        pre = r[(r["t"] >= t - before) & (r["t"] < t)]["rate"] if len(r) else pd.Series(dtype=float)
        pre_level = float(pre.mean()) if len(pre) else None
        back = None
        if pre_level and len(r):
            post = r[r["t"] >= t].assign(mean=lambda d: d["rate"].rolling(smooth, min_periods=smooth).mean())
            ok = post[(post["t"] >= end) & (post["mean"] >= level * pre_level)]
            back = float(ok["t"].iloc[0] - t) if len(ok) else None
        nodes = set(e.get("nodes") or [])
        on_nodes = int(pods["node"].isin(nodes).sum()) if nodes and len(pods) else 0
        load_after = bool(len(pods) and "created" in pods and (pods["created"] > end).any())
        # no pod arrived after the event: nothing to recover to (not a failure, not a success)
        recovered = (back is not None or not pre_level) if load_after or back is not None else None
        out.append({**_brief(e), "rate_before": pre_level, "recovery_seconds": back, "recovered": recovered,
                    "load_after": load_after, "pods_on_affected_nodes": on_nodes})
    return out


def rescheduling(pods: pd.DataFrame, phases: list[dict[str, Any]], affected: set[str]) -> dict[str, int]:
    """Pods evicted from affected nodes, and replacements: pods a controller (a Job) created beyond what
    its phase expected, and how many of those were scheduled. Bare pods are never replaced."""
    if not len(pods):
        return {"pods_evicted": 0, "pods_replaced": 0, "replacements_scheduled": 0}
    evicted = int((pods["deleted"].astype(bool) & pods["node"].isin(affected)).sum()) if "deleted" in pods else 0
    replaced = scheduled = 0
    for ph in phases:
        p = pods[pods["workload"] == ph["name"]]
        extra = max(0, len(p) - int(ph.get("pods_expected") or 0))
        if extra:
            newest = p.sort_values("created").tail(extra)
            replaced += extra
            scheduled += int(newest["scheduled"].notna().sum())
    return {"pods_evicted": evicted, "pods_replaced": replaced, "replacements_scheduled": scheduled}


def rate_from_pods(pods: pd.DataFrame) -> pd.DataFrame:
    """A 1 s binding-rate series from the watch's scheduled times (when /metrics was not scraped)."""
    t = pods["scheduled"].dropna().to_numpy() if len(pods) and "scheduled" in pods else np.zeros(0)
    if not len(t):
        return pd.DataFrame({"t": [], "rate": []})
    start = float(np.floor(t.min()))
    counts = per_second(t, start, float(np.ceil(t.max())))
    return pd.DataFrame({"t": start + 1.0 + np.arange(len(counts)), "rate": counts})


def _brief(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("action", "at_seconds", "t", "ended", "tainted", "component", "nodes", "error", "skipped",
            "down_seconds")
    return {k: (len(e[k]) if k == "nodes" else e[k]) for k in keys if k in e}


def pods_lost(pods: pd.DataFrame, created: int) -> int:
    """Pods the apiserver accepted that were never scheduled and are not still waiting: gone."""
    if not len(pods):
        return created
    unscheduled = pods["scheduled"].isna()
    deleted_unscheduled = int((unscheduled & pods["deleted"].astype(bool)).sum()) if "deleted" in pods else 0
    never_seen = max(0, created - len(pods))
    return deleted_unscheduled + never_seen
