"""Volcano as a component of a run: what its logs say when it refuses to start, its processes (scheduler,
controller-manager, the agent scheduler) against the run's cluster, its readiness, its pods' settings."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import orjson

from kwokbench.cluster import processes
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_ports
from kwokbench.cluster.objects import apply_crds
from kwokbench.components import PodSettings, Setup
from kwokbench.components.source_built import SourceBuilt
from kwokbench.components.volcano.build import (
    AGENT,
    AGENT_CONF,
    AGENT_SOCKET,
    BINARY,
    CONTROLLER_MANAGER,
    RECIPE,
    socket_dir,
)
from kwokbench.components.volcano.figures import KEEP, SESSIONS, volcano_rows, volcano_section
from kwokbench.components.volcano.settings import (
    API,
    CONTROLLERS,
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO,
    VOLCANO_KUBERNETES,
    VolcanoConfig,
    VolcanoSpec,
    VolcanoWorkloadSpec,
    client_limits,
    gang_resources,
    queue_objects,
    scheduler_conf,
)
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec
from kwokbench.toolchain import versions

# ---- what its logs say ------------------------------------------------------------------------------

_KLOG = re.compile(r"^([FE])\d{4} [\d:.]+\s+\d+ [^\]]*\] (.*)$")
_FLAG_ERROR = re.compile(r"^(invalid argument|unknown flag|unknown shorthand flag|flag needs an argument|"
                         r"bad flag syntax)")


def fatal_line(log: Path) -> str | None:
    """Why a Volcano process exited, from its (klog) log: its last Fatal line, a Go panic, or a flag its command
    line refused (pflag prints the error, then the whole usage); None when the log says none of these."""
    with contextlib.suppress(OSError):
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        for ln in reversed(lines):
            m = _KLOG.match(ln)
            if m and m.group(1) == "F":
                return m.group(2)[:400]
            if ln.startswith(("panic: ", "fatal error: ")) or _FLAG_ERROR.match(ln):
                return ln[:400]
    return None


def refused_configuration(log: Path) -> str | None:
    """The error of a configuration vc-scheduler refused (it logs it and falls back to its built-in default) or a
    plugin it does not know (it logs that and skips the plugin each session); None when neither is logged."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"Scheduler config .*? is invalid: ([^\n]*)", text, flags=re.S)
    if m:
        return m.group(1).strip()[:400]
    m = re.search(r"Failed to get plugin (\S+?)\.?$", text, flags=re.M)
    return f"no plugin named {m.group(1)} (it skips it every session)" if m else None




class Volcano(SourceBuilt):
    kind = "volcano"
    title = "Volcano"
    settings = VolcanoSpec
    workload_settings = VolcanoWorkloadSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"volcano": ("binary", "volcano")}
    keep = KEEP
    recipe = RECIPE
    section = staticmethod(volcano_section)
    rows = staticmethod(volcano_rows)
    variant: VolcanoSpec

    CONTROLLER_COMPONENT = "vc-controller-manager"

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = self.variant.volcano or VolcanoConfig()
        self.limits = client_limits(setup.scenario.cluster.qps_limits, self.variant.client_qps,
                                    self.variant.client_burst)
        self._sockets: Path | None = None

    def queues(self) -> list[str]:
        """The queues a workload may name: Volcano's default and the variant's."""
        return [DEFAULT_QUEUE, *(q.name for q in self.spec.queues if q.name != DEFAULT_QUEUE)]

    def check(self) -> None:
        super().check()
        scheduler_conf(self.spec, self.setup.base)
        for w in self.setup.scenario.workloads:
            if w.scheduler not in (None, self.name):
                continue
            if self.setup.concurrent and w.gang:
                raise ScenarioError(f"workload {w.name}: Volcano's gangs (its own PodGroups) do not run with "
                                    "concurrent_schedulers; run the variants one after the other")
            if self.spec.agent_scheduler and w.gang:
                raise ScenarioError(f"workload {w.name}: scheduler {self.name}'s agent-scheduler places pods one at "
                                    "a time, not gangs; gangs need vc-scheduler (agent_scheduler: false)")
            if self.spec.agent_scheduler:
                continue  # no queues: the agent-scheduler ignores them
            q = (w.block("volcano") or VolcanoWorkloadSpec()).queue
            if q not in self.queues():
                raise ScenarioError(f"workload {w.name}: volcano.queue {q} is not a queue of scheduler {self.name} "
                                    f"(its queues: {', '.join(self.queues())}); add it to volcano.queues")

    def configure(self, copts: ClusterOptions) -> None:
        pass  # kwokctl's kube-scheduler is off (replaces_kube_scheduler); nothing else of the cluster changes

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        if self.spec.agent_scheduler:
            return PodSettings(scheduler_name=self.variant.effective_scheduler_name)
        queue = (w.block("volcano") or VolcanoWorkloadSpec()).queue
        # a Volcano Job (vcjob): vc-controller-manager's job controller makes its PodGroup in the Job's queue and,
        # once vc-scheduler enqueued it, its pods
        out = PodSettings(scheduler_name=self.variant.effective_scheduler_name,
                          annotations={QUEUE_ANNOTATION: queue}, object_kinds=frozenset({"Pod", "Job", "VolcanoJob"}),
                          object_spec={"queue": queue} if kind == "VolcanoJob" else {})
        if w.gang:
            members = w.gang.min_member or w.gang.size
            out.gang_template = "volcano-podgroup"
            out.gang_params = {"queue": queue, "min_resources": gang_resources(requests, members)}
            out.gang_annotations = (GROUP_ANNOTATION,)
        return out

    # -- its processes --

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        self.built(info, rep)
        assert self.binary is not None
        if self.spec.agent_scheduler:
            return self._start_agent(info, rep)
        crds = sorted((self.binary.parent / "crds").glob("*.yaml"))
        manager = self.binary.parent / CONTROLLER_MANAGER
        if not crds or not manager.is_file():
            raise ClusterError(f"scheduler {self.name}: the Volcano build in {self.binary.parent} lacks its CRDs or "
                               f"{CONTROLLER_MANAGER}; rebuild it (kwokbench tools install volcano --force)")
        workdir = info.dir / "schedulers" / self.name
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / "volcano-scheduler.conf"
        conf.write_text(scheduler_conf(self.spec, self.setup.base))
        self._info = info
        t0 = time.time()
        with rep.status(f"Volcano {VOLCANO} ({self.name}): CRDs and queues"):
            asyncio.run(apply_crds(info.credentials(), crds))
            asyncio.run(_create_queues(info, queue_objects(self.spec), self.name))
        metrics_port, health_port, cm_health_port = free_ports(3)
        self._sockets = socket_dir(info.dir)
        env = {**os.environ, "DEBUG_SOCKET_DIR": str(self._sockets)}
        (cq, cb), (sq, sb) = self.limits["controller_manager"], self.limits["scheduler"]
        cm_argv = [str(manager), f"--kubeconfig={info.kubeconfig}", "--leader-elect=false",
                   f"--controllers={CONTROLLERS}", "--enable-healthz=true",
                   f"--healthz-address=127.0.0.1:{cm_health_port}", f"--kube-api-qps={cq}", f"--kube-api-burst={cb}",
                   *self.spec.controller_manager_args]
        argv = [str(self.binary), f"--kubeconfig={info.kubeconfig}", "--leader-elect=false",
                f"--scheduler-conf={conf}", f"--schedule-period={round(self.spec.schedule_period_seconds * 1000)}ms",
                "--enable-metrics=true", "--enable-pprof=true", f"--listen-address=127.0.0.1:{metrics_port}",
                "--enable-healthz=true", f"--healthz-address=127.0.0.1:{health_port}",
                f"--kube-api-qps={sq}", f"--kube-api-burst={sb}", *self.spec.scheduler_args]
        logs = {c: info.dir / "logs" / f"{c}.log" for c in (self.CONTROLLER_COMPONENT, self._component)}
        spawned = time.time()
        with rep.status(f"starting Volcano {VOLCANO} ({self.name}): vc-controller-manager and vc-scheduler"):
            procs = {}
            for comp, cmd in ((self.CONTROLLER_COMPONENT, cm_argv), (self._component, argv)):
                try:
                    procs[comp] = processes.spawn(info.dir, comp, cmd, workdir, env=env)
                except OSError as e:
                    self.stop()
                    raise ClusterError(f"scheduler {self.name}: cannot start {cmd[0]}: {e.strerror or e}") from e
                self._started.append(comp)
            base = f"http://127.0.0.1:{metrics_port}"
            self._record = {"kind": self.kind, "variant": self.name, "component": self._component,
                            "scheduler_name": self.variant.effective_scheduler_name, "pid": procs[self._component].pid,
                            "argv": argv, "version": self.version(), "log": str(logs[self._component]),
                            "metrics_url": f"{base}/metrics", "pprof_url": f"{base}/debug/pprof",
                            "controller_manager": {"component": self.CONTROLLER_COMPONENT, "argv": cm_argv,
                                                   "pid": procs[self.CONTROLLER_COMPONENT].pid,
                                                   "log": str(logs[self.CONTROLLER_COMPONENT])},
                            "conf": str(conf), "client_qps": sq, "client_burst": sb}
            health = {self.CONTROLLER_COMPONENT: f"http://127.0.0.1:{cm_health_port}/healthz",
                      self._component: f"http://127.0.0.1:{health_port}/healthz"}
            ready = self._wait_ready(procs, logs, health, f"{base}/metrics", spawned)
        self._record.update(setup_seconds=spawned - t0, ready_seconds=ready - spawned)
        return self._record

    def _start_agent(self, info: ClusterInfo, rep: Reporter) -> dict[str, Any]:
        """vc-agent-scheduler alone, serving the variant's schedulerName; ready once its /healthz answers and it
        has opened its log-level socket (:data:`AGENT_SOCKET`)."""
        assert self.binary is not None
        agent = self.binary.parent / AGENT
        if not agent.is_file():  # a build from before kwokbench built the agent-scheduler
            self.binary = RECIPE.build(None, rep, force=True)
            agent = self.binary.parent / AGENT
        workdir = info.dir / "schedulers" / self.name
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / "agent-scheduler.conf"
        conf.write_text(AGENT_CONF)
        self._sockets = socket_dir(info.dir)
        started = self._sockets / AGENT_SOCKET  # opened once its informers synced and its workers run
        (health_port,) = free_ports(1)
        sq, sb = self.limits["scheduler"]
        argv = [str(agent), f"--kubeconfig={info.kubeconfig}", "--leader-elect=false",
                f"--scheduler-name={self.variant.effective_scheduler_name}", f"--scheduler-conf={conf}",
                "--enable-healthz=true", f"--healthz-address=127.0.0.1:{health_port}",
                f"--kube-api-qps={sq}", f"--kube-api-burst={sb}", *self.spec.agent_scheduler_args]
        log = info.dir / "logs" / f"{self._component}.log"
        self._info = info
        spawned = time.time()
        with rep.status(f"starting Volcano {VOLCANO}'s agent-scheduler ({self.name})"):
            try:
                proc = processes.spawn(info.dir, self._component, argv, workdir,
                                       env={**os.environ, "DEBUG_SOCKET_DIR": str(self._sockets)})
            except OSError as e:
                raise ClusterError(f"scheduler {self.name}: cannot start {agent}: {e.strerror or e}") from e
            self._started.append(self._component)
            self._record = {"kind": self.kind, "variant": self.name, "component": self._component,
                            "scheduler_name": self.variant.effective_scheduler_name, "pid": proc.pid,
                            "argv": argv, "version": self.version(), "log": str(log), "conf": str(conf),
                            "agent_scheduler": True, "client_qps": sq, "client_burst": sb}
            ready = self._wait_ready({self._component: proc}, {self._component: log},
                                     {self._component: f"http://127.0.0.1:{health_port}/healthz"}, None, spawned,
                                     started)
        self._record.update(setup_seconds=0.0, ready_seconds=ready - spawned)
        return self._record

    def _wait_ready(self, procs: dict[str, Any], logs: dict[str, Path], health: dict[str, str], metrics: str | None,
                    t0: float, started: Path | None = None) -> float:
        """Until every health check answers and (``metrics`` given) vc-scheduler ran a session, or (``started``
        given) that file exists."""
        deadline = t0 + self.variant.ready_timeout_seconds
        sched_log = logs[self._component]
        while time.time() < deadline:
            for comp, proc in procs.items():
                code = proc.poll()
                if code is not None:
                    self.stop()
                    why = fatal_line(logs[comp]) or processes.telling_line(logs[comp])
                    err = ScenarioError if re.search(r"conf|flag|argument", why, flags=re.I) else ClusterError
                    binary = _binary_of(comp, self.spec.agent_scheduler)
                    raise err(f"scheduler {self.name}: {binary} exited with code {code} after "
                              f"{time.time() - t0:.1f}s: {why} (log: {logs[comp]})")
            refused = refused_configuration(sched_log)
            if refused:
                self.stop()
                raise ScenarioError(f"scheduler {self.name}: vc-scheduler refused its configuration: {refused} "
                                    f"(log: {sched_log})")
            if all(_healthy(u) for u in health.values()) and (metrics is None or _sessions(metrics) >= 1) \
                    and (started is None or started.exists()):
                return time.time()
            time.sleep(0.25)
        self.stop()
        agent = self.spec.agent_scheduler
        sessions = _sessions(metrics) if metrics else "none (the agent-scheduler has none)"
        healthy = ", ".join(f"{_binary_of(c, agent)} {_healthy(u)}" for c, u in health.items())
        raise ClusterError(f"scheduler {self.name}: Volcano was not ready within "
                           f"{self.variant.ready_timeout_seconds:g}s (healthy: {healthy}; "
                           f"sessions run: {sessions}); last log line: {processes.telling_line(sched_log)} "
                           f"(log: {sched_log})")

    def endpoints(self) -> list[Endpoint]:
        if self._record is None or "metrics_url" not in self._record:
            return []  # the agent-scheduler serves no /metrics
        return [Endpoint(self._component, self._record["metrics_url"], None, pprof=self._record["pprof_url"])]

    def fairness(self) -> dict[str, Any]:
        (sq, sb), (cq, cb) = self.limits["scheduler"], self.limits["controller_manager"]
        skew = versions.skew(VOLCANO_KUBERNETES, self.setup.scenario.kubernetes_for(self.variant))
        if self.spec.agent_scheduler:
            return {"scheduler_client_qps": float(sq), "scheduler_client_burst": sb,
                    "volcano": {"version": VOLCANO, "kubernetes": VOLCANO_KUBERNETES, "skew_to_control_plane": skew,
                                "agent_scheduler": {"conf": AGENT_CONF, "args": self.spec.agent_scheduler_args},
                                "admission_webhooks": False}}
        return {"scheduler_client_qps": float(sq), "scheduler_client_burst": sb,
                "volcano": {"version": VOLCANO, "kubernetes": VOLCANO_KUBERNETES, "skew_to_control_plane": skew,
                            "scheduler_conf": scheduler_conf(self.spec, self.setup.base),
                            "schedule_period_seconds": self.spec.schedule_period_seconds,
                            "queues": queue_objects(self.spec),
                            "controller_manager": {"controllers": CONTROLLERS, "client_qps": float(cq),
                                                   "client_burst": cb, "args": self.spec.controller_manager_args},
                            "scheduler_args": self.spec.scheduler_args, "admission_webhooks": False}}

    def stop(self) -> None:
        super().stop()
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None


def _binary_of(component: str, agent: bool = False) -> str:
    return CONTROLLER_MANAGER if component == Volcano.CONTROLLER_COMPONENT else AGENT if agent else BINARY


def _sessions(url: str) -> int:
    """Scheduling sessions vc-scheduler has run (-1 when its metrics do not answer)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode(errors="replace")
    except OSError:
        return -1
    m = re.search(rf"^{SESSIONS}_count (\S+)$", text, flags=re.M)
    return int(float(m.group(1))) if m else 0


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except (OSError, ValueError):
        return False


async def _create_queues(info: ClusterInfo, queues: list[dict[str, Any]], variant: str) -> None:
    """Create (or, on a reused cluster, replace) the variant's queues; the apiserver checks each against
    Volcano's Queue schema, and its refusal is the one line."""
    async with Api(info.credentials()) as api:
        for q in queues:
            name = q["metadata"]["name"]
            status, body = await api.raw("POST", f"{API}/queues", orjson.dumps(q))
            if status == 409:
                old = await api.json("GET", f"{API}/queues/{name}")
                q = {**q, "metadata": {**q["metadata"], "resourceVersion": old["metadata"]["resourceVersion"]}}
                status, body = await api.raw("PUT", f"{API}/queues/{name}", orjson.dumps(q))
            if status in (200, 201):
                continue
            try:
                message = str(orjson.loads(body).get("message") or "")
            except (orjson.JSONDecodeError, AttributeError):
                message = ""
            err = ScenarioError if status in (400, 422) else ClusterError
            raise err(f"scheduler {variant}: Volcano's Queue schema refused queue {name}: "
                      f"{message or f'HTTP {status} {body[:200]!r}'}")

