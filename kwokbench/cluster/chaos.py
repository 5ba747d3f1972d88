"""Chaos: timed disruptions of a run's cluster (how the scheduling recovered: :mod:`kwokbench.figures.chaos`).

Component restarts are :meth:`Kwokctl.restart_component` (the same command line, environment and log
file, the new pid in kwokctl's pid file), with ``down_seconds`` between stop and start; a restart of the apiserver
with ``compact_etcd`` compacts etcd (through its own HTTP gateway, at the address the apiserver's command line
names) to its newest revision while the apiserver is down, so every watch resumed from before it gets 410 Gone
(the watch cache starts empty, and etcd no longer holds what happened since). Node actions
go through the API: ``nodes-not-ready`` takes the nodes away from the kwok controller (removes the
``kwok.x-k8s.io/node`` annotation it selects on) and sets their Ready condition False, so the
node-lifecycle controller taints them and the scheduler avoids them (the event waits up to 30 s for that taint
and records when it was on every node: ``tainted``); ``delete-nodes`` deletes them.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

import orjson
import psutil

from kwokbench.cluster.api import Api
from kwokbench.cluster.attach import AttachedCluster
from kwokbench.cluster.kwokctl import ClusterInfo, Kwokctl
from kwokbench.errors import ClusterError, KwokbenchError
from kwokbench.scenario import ChaosEvent

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
                    rec.update(self.kwokctl.restart_component(self.info, COMPONENT[e.action], e.down_seconds,
                                                              while_down=compact_etcd if e.compact_etcd else None))
                else:
                    rec.update(asyncio.run(_nodes_action(self.info, e)))
            except (KwokbenchError, OSError, psutil.Error) as err:
                rec["error"] = str(err)
            rec.setdefault("ended", time.time())  # a NotReady event ends with its patches, before its taint wait
            self.log.append(rec)


def etcd_server(apiserver_cmd: list[str]) -> str:
    """The first etcd the apiserver's command line names (``--etcd-servers``); ClusterError when none."""
    for i, arg in enumerate(apiserver_cmd):
        value = arg.split("=", 1)[1] if arg.startswith("--etcd-servers=") else (
            apiserver_cmd[i + 1] if arg == "--etcd-servers" and i + 1 < len(apiserver_cmd) else None)
        if value:
            return value.split(",")[0].rstrip("/")
    raise ClusterError("the apiserver's command line names no --etcd-servers")


def compact_etcd(apiserver_cmd: list[str], timeout: float = 10.0) -> dict[str, Any]:
    """Compact the apiserver's etcd to its newest revision (etcd's gRPC gateway: ``/v3/kv/range`` for the
    revision, ``/v3/kv/compaction``). Returns ``{"compacted_to": revision}``, or ``{"compact_error": why}``:
    a failure is the event's record, never raised into the restart."""
    try:
        server = etcd_server(apiserver_cmd)
        if not server.startswith("http://"):
            raise ClusterError(f"etcd at {server} is not plain HTTP: kwokbench compacts only kwokctl's own etcd")
        head = _etcd_post(server, "/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "limit": 1}, timeout)
        revision = int(head["header"]["revision"])
        _etcd_post(server, "/v3/kv/compaction", {"revision": revision, "physical": True}, timeout)
        return {"compacted_to": revision}
    except (ClusterError, OSError, KeyError, TypeError, ValueError) as e:
        return {"compact_error": f"compacting etcd: {e}"}


def _etcd_post(server: str, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(server + path, data=orjson.dumps(body), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        doc = orjson.loads(r.read())
    if not isinstance(doc, dict):
        raise ValueError(f"{path} answered {doc!r:.100}")
    return doc


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
