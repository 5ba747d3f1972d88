"""Apache YuniKorn (``binary: yunikorn``): built from pinned sources, configured from the variant's ``yunikorn:``
block, started against the run's cluster, measured through its REST server.

How it runs here, as its own docs deploy it minus what a kwokctl cluster does not need:

- **Configuration.** The shim reads ``KUBECONFIG`` and ``NAMESPACE`` from its environment and its settings from
  the ConfigMaps ``yunikorn-defaults`` and ``yunikorn-configs`` in that namespace. kwokbench writes
  ``yunikorn-configs``: ``queues.yaml`` rendered from the scenario (or its ``queues_file``), the client limits
  (``kubernetes.qps``/``burst``: unlimited like kube-scheduler's unless ``cluster.qps_limits``), and the
  variant's ``settings``. An invalid queue configuration makes the shim exit at start: its own message is the
  run's one-line error.
- **No admission controller.** YuniKorn's admission webhook only rewrites pods that do not name it (sets
  ``schedulerName: yunikorn``, adds user info and an ``applicationId``); kwokbench writes ``schedulerName``,
  ``applicationId`` and ``queue`` into every pod it submits, so the webhook would change nothing, and a kwokctl
  cluster has no Service network to reach one.
- **Readiness and measurement.** Its REST server (fixed port 9080: one YuniKorn per host at a time) answers
  ``/ws/v1/scheduler/healthcheck``; it is ready once that says Healthy and it has registered every node of the
  scenario (``yunikorn_scheduler_node{state="active"}``: the health check passes before the shim has synced).
  ``/ws/v1/metrics`` is scraped each second like kube-scheduler's ``/metrics`` and ``/debug/pprof/`` serves
  ``--profile scheduler``.
- **Applications and gangs.** Pods carry ``applicationId`` (one application per Job, per gang, or per
  ``pods_per_app`` pods) and ``queue``. A workload's ``gang:`` becomes a YuniKorn task group: every member
  carries ``task-group-name`` and ``task-groups`` (minMember = the gang's, minResource = its pod's requests)
  and the Hard gang style, so YuniKorn reserves the whole gang with placeholder pods before any member binds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import yaml

from kwokbench.cluster import processes
from kwokbench.cluster import schedulers as own
from kwokbench.cluster.api import Api
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, port_in_use
from kwokbench.components import PodSettings, Scheduler, Setup, own_component_name
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.metrics.scrape import Endpoint
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec, YuniKornQueueSpec, YuniKornSpec
from kwokbench.toolchain import versions

REST_PORT = 9080
"""YuniKorn's REST server port: a constant of yunikorn-core (``webservice.go``), not configurable."""
NAMESPACE = "yunikorn"
HEALTH = "/ws/v1/scheduler/healthcheck"
METRICS = "/ws/v1/metrics"
APP_LABEL, QUEUE_LABEL = "applicationId", "queue"
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
TASK_GROUPS = "yunikorn.apache.org/task-groups"
POLICY = "yunikorn.apache.org/schedulingPolicyParameters"
PODS_PER_APP = 100
"""Bare pods per application when a workload does not say (the balanced shape YuniKorn's community tests)."""
UNLIMITED_CLIENT = 100_000
"""kubernetes.qps/burst when client limits are off (kube-scheduler's are then unlimited too)."""


def _queue(q: YuniKornQueueSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": q.name}
    res = {k: {("vcore" if r == "cpu" else r): str(v) for r, v in getattr(q, k).items()}
           for k in ("guaranteed", "max") if getattr(q, k)}
    if res:
        out["resources"] = res
    props = {**({"application.sort.policy": q.sort_policy} if q.sort_policy else {}), **q.properties}
    if props:
        out["properties"] = props
    if q.parent or q.queues:
        out["parent"] = True
    if q.queues:
        out["queues"] = [_queue(c) for c in q.queues]
    return out


def queues_yaml(spec: YuniKornSpec | None, base: Path) -> str:
    """The ``queues.yaml`` of the variant: one partition, root accepting everyone, the scenario's queues."""
    spec = spec or YuniKornSpec()
    if spec.queues_file:
        path = Path(spec.queues_file).expanduser()
        path = path if path.is_absolute() else base / path
        try:
            return path.read_text()
        except OSError as e:
            raise ScenarioError(f"yunikorn.queues_file {spec.queues_file}: {e.strerror or e} (relative to {base})") \
                from e
    partition: dict[str, Any] = {"name": "default", "placementrules": spec.placement_rules,
                                 "queues": [{"name": "root", "submitacl": "*",
                                             "queues": [_queue(q) for q in spec.queues]}]}
    if not spec.queues:
        partition["queues"][0].pop("queues")
    if spec.node_sort_policy:
        partition["nodesortpolicy"] = {"type": spec.node_sort_policy}
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


def config_data(spec: YuniKornSpec | None, base: Path, qps: int, burst: int) -> dict[str, str]:
    """The ``yunikorn-configs`` ConfigMap's data."""
    spec = spec or YuniKornSpec()
    data = {"queues.yaml": queues_yaml(spec, base), "kubernetes.qps": str(qps), "kubernetes.burst": str(burst),
            "service.disableGangScheduling": "false"}
    data.update({k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in spec.settings.items()})
    return data


def client_limits(qps_limits: bool, client_qps: float | None, client_burst: int | None) -> tuple[int, int]:
    """YuniKorn's client QPS/burst: the variant's, else unlimited (as kube-scheduler's) unless the scenario keeps
    the components' default limits (then YuniKorn's own default, 1000/1000)."""
    if client_qps is not None:
        return int(client_qps), int(client_burst or client_qps)
    return (1000, 1000) if qps_limits else (UNLIMITED_CLIENT, UNLIMITED_CLIENT)


def task_group(size: int, requests: dict[str, str]) -> dict[str, str]:
    """The annotations making a gang of ``size`` pods with these requests one YuniKorn task group."""
    groups = [{"name": "members", "minMember": size, "minResource": requests or {"cpu": "1m"}}]
    return {TASK_GROUP_NAME: "members", TASK_GROUPS: json.dumps(groups, separators=(",", ":")),
            POLICY: "placeholderTimeoutInSeconds=60 gangSchedulingStyle=Hard"}


def fatal_line(log: Path) -> str | None:
    """YuniKorn's own reason for exiting, from its (zap, console-encoded) log: the last FATAL or ERROR line."""
    with contextlib.suppress(OSError):
        lines = log.read_text(errors="replace").splitlines()
        for ln in reversed(lines):
            if "\tFATAL\t" in ln or "\tERROR\t" in ln or "\tPANIC\t" in ln:
                parts = ln.split("\t")
                msg = " ".join(p for p in parts[4:] if p).strip()
                return re.sub(r"\s+", " ", msg)[:400]
    return None


class YuniKorn(Scheduler):
    kind = "yunikorn"
    replaces_kube_scheduler = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = setup.variant.yunikorn
        self._component = own_component_name(self.name) if setup.concurrent else "kube-scheduler"
        c = setup.scenario.cluster
        self.nodes = 0 if setup.attached else sum(g.count for g in c.node_groups)
        """Nodes it must know before it is ready (it schedules nothing onto nodes it has not registered)."""
        self.qps, self.burst = client_limits(c.qps_limits, self.variant.client_qps, self.variant.client_burst)

    def check(self) -> None:
        if self.setup.attached is not None:
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts YuniKorn only on clusters it creates")
        queues_yaml(self.spec, self.setup.base)

    def build(self, rep: Reporter) -> None:
        from kwokbench.toolchain.yunikorn import build_yunikorn

        self.binary = build_yunikorn(None, rep)

    def configure(self, copts: ClusterOptions) -> None:
        pass  # kwokctl's kube-scheduler is off (replaces_kube_scheduler); nothing else of the cluster changes

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        size = w.yunikorn.pods_per_app or (w.gang.size if w.gang else 1 if kind == "Job" else PODS_PER_APP)
        if w.gang and size != w.gang.size:
            raise ScenarioError(f"workload {w.name}: yunikorn.pods_per_app {size} must equal gang.size "
                                f"{w.gang.size} (a gang is one YuniKorn application)")
        return PodSettings(scheduler_name=self.variant.effective_scheduler_name,
                           labels={QUEUE_LABEL: w.yunikorn.queue},
                           annotations=task_group(w.gang.min_member or w.gang.size, requests or {}) if w.gang else {},
                           group_labels=(APP_LABEL,), group_size=size)

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        if not isinstance(info, ClusterInfo):
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts YuniKorn only on clusters it creates")
        if self.binary is None:
            self.build(rep)
        assert self.binary is not None
        if port_in_use(REST_PORT):
            raise ClusterError(f"scheduler {self.name}: port {REST_PORT} is taken; YuniKorn's REST server always "
                               "listens there, so only one YuniKorn runs on a host at a time (is another run going?)")
        data = config_data(self.spec, self.setup.base, self.qps, self.burst)
        workdir = info.dir / "schedulers" / self.name
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "yunikorn-configs.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        asyncio.run(_create_configmaps(info, data))
        env = {**os.environ, "KUBECONFIG": str(info.kubeconfig), "NAMESPACE": NAMESPACE}
        argv = [str(self.binary)]
        log = info.dir / "logs" / f"{self._component}.log"
        self._info = info
        t0 = time.time()
        with rep.status(f"starting YuniKorn {versions.YUNIKORN} ({self.name})"):
            try:
                proc = processes.spawn(info.dir, self._component, argv, workdir, env=env)
            except OSError as e:
                raise ClusterError(f"scheduler {self.name}: cannot start {self.binary}: {e.strerror or e}") from e
            self._record = {"kind": self.kind, "variant": self.name, "component": self._component,
                            "scheduler_name": self.variant.effective_scheduler_name, "pid": proc.pid, "argv": argv,
                            "version": self.version(), "log": str(log),
                            "metrics_url": f"http://127.0.0.1:{REST_PORT}{METRICS}",
                            "pprof_url": f"http://127.0.0.1:{REST_PORT}/debug/pprof", "namespace": NAMESPACE,
                            "client_qps": self.qps, "client_burst": self.burst}
            ready = self._wait_ready(proc, t0, log)
        self._record["ready_seconds"] = ready - t0
        return self._record

    def _wait_ready(self, proc: Any, t0: float, log: Path) -> float:
        deadline = t0 + self.variant.ready_timeout_seconds
        url = f"http://127.0.0.1:{REST_PORT}{HEALTH}"
        while time.time() < deadline:
            code = proc.poll()
            if code is not None:
                self.stop()
                why = fatal_line(log) or processes.telling_line(log)
                err = ScenarioError if "config" in why.lower() else ClusterError
                raise err(f"scheduler {self.name}: YuniKorn exited with code {code} after {time.time() - t0:.1f}s: "
                          f"{why} (log: {log})")
            if _healthy(url) and _active_nodes() >= self.nodes:
                return time.time()
            time.sleep(0.25)
        self.stop()
        raise ClusterError(f"scheduler {self.name}: YuniKorn was not ready within "
                           f"{self.variant.ready_timeout_seconds:g}s ({url} healthy: {_healthy(url)}, nodes known "
                           f"{_active_nodes()} of {self.nodes}); last log line: {processes.telling_line(log)} "
                           f"(log: {log})")

    def version(self) -> str:
        from kwokbench.toolchain.yunikorn import version_line

        return version_line()

    def endpoints(self) -> list[Endpoint]:
        if self._record is None:
            return []
        return [Endpoint(self._component, self._record["metrics_url"], None, pprof=self._record["pprof_url"])]

    def fairness(self) -> dict[str, Any]:
        return {"scheduler_client_qps": float(self.qps), "scheduler_client_burst": self.burst,
                "yunikorn": {"version": versions.YUNIKORN, "kubernetes": versions.YUNIKORN_KUBERNETES,
                             "skew_to_control_plane": _skew(versions.YUNIKORN_KUBERNETES, versions.KUBERNETES),
                             "configs": config_data(self.spec, self.setup.base, self.qps, self.burst)}}

    def stop(self) -> None:
        if self._info is not None:
            own.stop(self._info, self._component)
            self._info = None


def _skew(client: str, server: str) -> int:
    """Minor versions between a component's Kubernetes libraries and the control plane's."""
    def minor(v: str) -> int:
        return int(v.removeprefix("v").split(".")[1])
    return minor(server) - minor(client)


def _active_nodes() -> int:
    """Nodes YuniKorn has registered (``yunikorn_scheduler_node{state="active"}``; -1 when unreadable)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{REST_PORT}{METRICS}", timeout=5) as r:
            text = r.read().decode(errors="replace")
    except OSError:
        return -1
    m = re.search(r'^yunikorn_scheduler_node\{state="active"\} (\S+)$', text, flags=re.M)
    return int(float(m.group(1))) if m else 0


def _healthy(url: str) -> bool:
    """The health check answers 200 and says Healthy (it answers 503 while a check fails)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            body = json.loads(r.read() or b"{}")
            return bool(r.status == 200 and body.get("Healthy", True))
    except (OSError, ValueError):
        return False


async def _create_configmaps(info: ClusterInfo, data: dict[str, str]) -> None:
    """The namespace and both ConfigMaps the shim reads at start (``yunikorn-defaults`` empty: every default is
    YuniKorn's own unless ``yunikorn-configs`` says otherwise)."""
    async with Api(info.credentials()) as api:
        await api.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": NAMESPACE}}, ok=(201, 409))
        for name, d in (("yunikorn-defaults", {}), ("yunikorn-configs", data)):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
                    "data": d}
            path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
            status, text = await api.raw("POST", path, orjson.dumps(body))
            if status == 409:
                status, text = await api.raw("PUT", f"{path}/{name}", orjson.dumps(body))
            if status not in (200, 201):
                raise ClusterError(f"creating ConfigMap {NAMESPACE}/{name}: HTTP {status} {text[:200]!r}")
