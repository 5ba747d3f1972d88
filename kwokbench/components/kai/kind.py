"""KAI-Scheduler as a component of a run: its processes (scheduler, binder, podgrouper, the status controllers)
started against the run's cluster, its readiness, its pods' settings."""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import re
import time
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson
import yaml

from kwokbench.cluster import processes
from kwokbench.cluster import schedulers as own
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_ports, port_in_use
from kwokbench.cluster.objects import apply_crds
from kwokbench.components import PodSettings, Setup
from kwokbench.components.kai.build import RECIPE, crd_files, fatal_line
from kwokbench.components.kai.figures import KEEP, kai_rows, kai_section
from kwokbench.components.kai.settings import (
    CRDS,
    GANG_TEMPLATE,
    HELPERS,
    KUBERNETES,
    POD_GROUP_ANNOTATION,
    PODGROUPCONTROLLER_METRICS_PORT,
    QUEUE_LABEL,
    QUEUES_PATH,
    SCHEDULER_NAME,
    VERSION,
    KaiSpec,
    KaiWorkloadSpec,
    client_limits,
    has_snapshot_plugin,
    queue_objects,
    scheduler_config,
)
from kwokbench.components.source_built import SourceBuilt
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec
from kwokbench.toolchain import versions


@dataclass
class Helper:
    """One of KAI's processes besides the scheduler, as started here."""

    role: str
    component: str
    argv: list[str]
    ready_url: str | None
    """Answers 200 once it runs (its health probe, or its /metrics when it registers no health check)."""
    metrics_url: str | None


class Kai(SourceBuilt):
    kind = "kai"
    title = "KAI"
    settings = KaiSpec
    workload_settings = KaiWorkloadSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"kai": ("binary", "kai")}
    keep = KEEP
    recipe = RECIPE
    section = staticmethod(kai_section)
    rows = staticmethod(kai_rows)
    variant: KaiSpec

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = self.variant.kai
        c = setup.scenario.cluster
        self.nodes = 0 if setup.attached else sum(g.count for g in c.node_groups)
        """Nodes its cache must hold before it is ready."""
        self.qps, self.burst = client_limits(c.qps_limits, self.variant.client_qps, self.variant.client_burst)
        self._helpers: list[Helper] = []
        self._since: dict[str, float] = {}
        """When each process was started."""

    def helper_component(self, role: str) -> str:
        """pid-file, log and metrics name of one of its other processes."""
        return f"kai-{role}-{self.name}" if self.setup.concurrent else f"kai-{role}"

    def check(self) -> None:
        super().check()
        scheduler_config(self.spec, self.setup.base)
        for w in self.setup.scenario.workloads:
            if w.scheduler in (None, self.name):
                self.queue_of(w)

    def queue_of(self, w: WorkloadSpec) -> str:
        """The leaf queue of phase ``w``'s pods; ScenarioError when its ``kai.queue`` is none of the leaves."""
        block: KaiWorkloadSpec = w.block("kai") or KaiWorkloadSpec()
        leaves = self.spec.leaves()
        if block.queue is None:
            if len(leaves) == 1:
                return leaves[0]
            raise ScenarioError(f"workload {w.name}: kai.queue: name one of scheduler {self.name}'s leaf queues "
                                f"({', '.join(leaves)})")
        if block.queue not in leaves:
            what = "a parent queue" if block.queue in {q.name for q in self.spec.queues} else "not one of its queues"
            raise ScenarioError(f"workload {w.name}: kai.queue {block.queue} is {what} of scheduler {self.name}; "
                                f"KAI schedules pods of leaf queues only ({', '.join(leaves)})")
        return block.queue

    def configure(self, copts: ClusterOptions) -> None:
        pass  # kwokctl's kube-scheduler is off (replaces_kube_scheduler); nothing else of the cluster changes

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        queue = self.queue_of(w)
        out = PodSettings(scheduler_name=SCHEDULER_NAME, labels={QUEUE_LABEL: queue})
        if w.gang:
            out.gang_template, out.gang_params = GANG_TEMPLATE, {"queue": queue}
            out.gang_annotations = (POD_GROUP_ANNOTATION,)
        return out

    def _plan(self, info: ClusterInfo, config: Path | None) -> tuple[list[str], list[Helper], dict[str, Any]]:
        """The scheduler's argv, its helpers, and their ports (free ones, picked together)."""
        assert self.binary is not None
        ports = dict(zip(("metrics", "plugins", "pprof", "binder_health", "binder_metrics", "grouper_health",
                          "grouper_metrics", "queues_metrics", "pg_health"), free_ports(9), strict=True))
        kc, lim = str(info.kubeconfig), [str(self.qps), str(self.burst)]
        argv = [str(self.binary), "--leader-elect=false", f"--scheduler-name={SCHEDULER_NAME}",
                f"--listen-address=127.0.0.1:{ports['metrics']}", f"--plugin-server-port={ports['plugins']}",
                "--enable-profiler", f"--profiler-port={ports['pprof']}", f"--qps={lim[0]}", f"--burst={lim[1]}",
                f"--schedule-period={self.spec.schedule_period}", "--namespace=kai-scheduler",
                *([f"--scheduler-conf={config}"] if config else []), *self.spec.scheduler_args]
        bin_dir = self.binary.parent
        local = "http://127.0.0.1:{}"
        helpers = [
            Helper("binder", self.helper_component("binder"),
                   [str(bin_dir / "kai-binder"), f"--kubeconfig={kc}", "--leader-elect=false",
                    f"--scheduler-name={SCHEDULER_NAME}", f"--qps={lim[0]}", f"--burst={lim[1]}",
                    f"--health-probe-bind-address=127.0.0.1:{ports['binder_health']}",
                    f"--metrics-bind-address=127.0.0.1:{ports['binder_metrics']}"],
                   # its probe server registers no check (no /healthz): its /metrics says it runs
                   local.format(ports["binder_metrics"]) + "/metrics",
                   local.format(ports["binder_metrics"]) + "/metrics"),
            Helper("podgrouper", self.helper_component("podgrouper"),
                   [str(bin_dir / "kai-podgrouper"), f"-kubeconfig={kc}", "-leader-elect=false",
                    f"-scheduler-name={SCHEDULER_NAME}", f"-qps={lim[0]}", f"-burst={lim[1]}",
                    f"-health-probe-bind-address=127.0.0.1:{ports['grouper_health']}",
                    f"-metrics-bind-address=127.0.0.1:{ports['grouper_metrics']}"],
                   local.format(ports["grouper_health"]) + "/healthz",
                   local.format(ports["grouper_metrics"]) + "/metrics")]
        if self.spec.status_controllers:
            metrics = local.format(ports["queues_metrics"]) + "/metrics"
            helpers += [
                Helper("queuecontroller", self.helper_component("queuecontroller"),
                       [str(bin_dir / "kai-queuecontroller"), f"-kubeconfig={kc}", "-leader-elect=false",
                        "-enable-webhook=false", f"-qps={lim[0]}", f"-burst={lim[1]}",
                        f"-metrics-listen-address=127.0.0.1:{ports['queues_metrics']}"], metrics, metrics),
                Helper("podgroupcontroller", self.helper_component("podgroupcontroller"),
                       [str(bin_dir / "kai-podgroupcontroller"), f"-kubeconfig={kc}", "-leader-elect=false",
                        "-enable-podgroup-webhook=false", f"-scheduler-name={SCHEDULER_NAME}", f"-qps={lim[0]}",
                        f"-burst={lim[1]}", f"-health-probe-bind-address=127.0.0.1:{ports['pg_health']}"],
                       local.format(ports["pg_health"]) + "/healthz",
                       local.format(PODGROUPCONTROLLER_METRICS_PORT) + "/metrics")]
        for h in helpers:
            h.argv += self.spec.process_args.get(h.role, [])  # type: ignore[call-overload]
        return argv, helpers, ports

    def prepare(self, rep: Reporter) -> None:
        """Its fixed port, before any cluster exists: a port taken is one line, with nothing to tear down."""
        if self.spec.status_controllers and port_in_use(PODGROUPCONTROLLER_METRICS_PORT):
            raise ClusterError(f"scheduler {self.name}: port {PODGROUPCONTROLLER_METRICS_PORT} is taken; KAI "
                               f"{VERSION}'s podgroupcontroller always serves its metrics there (its "
                               "-metrics-bind-address is never used), so one runs per host at a time (is another "
                               "run going?), or set kai.status_controllers: false")

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        self.built(info, rep)
        assert self.binary is not None
        missing = [h for h in HELPERS if not (self.binary.parent / f"kai-{h}").is_file()] + \
            ([CRDS] if not crd_files() else [])
        if missing:
            raise ClusterError(f"scheduler {self.name}: the KAI build in {self.binary.parent} lacks "
                               f"{', '.join(missing)}; rebuild it: kwokbench tools install kai --force")
        workdir = info.dir / "schedulers" / self.name
        workdir.mkdir(parents=True, exist_ok=True)
        doc = scheduler_config(self.spec, self.setup.base)
        config = None
        if doc is not None:
            config = workdir / "scheduler-config.yaml"
            config.write_text(yaml.safe_dump(doc, sort_keys=False))
        argv, self._helpers, ports = self._plan(info, config)
        # every process reads KUBECONFIG (two of them before they parse -kubeconfig); gin's route listing off
        env = {**os.environ, "KUBECONFIG": str(info.kubeconfig), "GIN_MODE": "release"}
        self._info = info
        t0 = time.time()
        with rep.status(f"starting KAI-Scheduler {VERSION} ({self.name}): CRDs, queues, "
                        f"{', '.join(h.role for h in self._helpers)}, scheduler"):
            try:
                queues = asyncio.run(_create_queues(info, crd_files(), queue_objects(self.spec)))
                deadline = t0 + self.variant.ready_timeout_seconds
                for h in self._helpers:
                    self._spawn(info, h.component, h.argv, workdir, env)
                for h in self._helpers:
                    self._why_not = f"{h.ready_url} does not answer"
                    self._wait(h.component, h.role, deadline, functools.partial(_answers, h.ready_url))
                proc = self._spawn(info, self._component, argv, workdir, env)
                metrics_url = f"http://127.0.0.1:{ports['metrics']}/metrics"
                self._record = {
                    "kind": self.kind, "variant": self.name, "component": self._component,
                    "scheduler_name": SCHEDULER_NAME, "pid": proc.pid, "argv": argv, "version": self.version(),
                    "log": str(info.dir / "logs" / f"{self._component}.log"),
                    "metrics_url": metrics_url,
                    "pprof_url": f"http://127.0.0.1:{ports['pprof']}/debug/pprof",
                    "client_qps": self.qps, "client_burst": self.burst, "queues": queues,
                    "scheduler_config": str(config) if config else "KAI's built-in default",
                    "helpers": {h.role: {"component": h.component, "argv": h.argv, "metrics_url": h.metrics_url,
                                         "log": str(info.dir / "logs" / f"{h.component}.log")}
                                for h in self._helpers}}
                snapshot = f"http://127.0.0.1:{ports['plugins']}/get-snapshot" if has_snapshot_plugin(doc) else None
                self._wait(self._component, "scheduler", deadline,
                           functools.partial(self._scheduler_ready, metrics_url, snapshot), scheduler=True)
            except BaseException:
                self.stop()
                raise
        self._record["ready_seconds"] = time.time() - t0
        return self._record

    def _spawn(self, info: ClusterInfo, component: str, argv: list[str], workdir: Path,
               env: dict[str, str]) -> Any:
        try:
            proc = processes.spawn(info.dir, component, argv, workdir, env=env)
        except OSError as e:
            raise ClusterError(f"scheduler {self.name}: cannot start {argv[0]}: {e.strerror or e}") from e
        self._started.append(component)
        self._since[component] = time.time()
        return proc

    def _wait(self, component: str, role: str, deadline: float, ready: Callable[[], bool],
              scheduler: bool = False) -> None:
        """Until ``ready()``; a process that exits is its own last word, one line (ScenarioError when the
        scheduler refuses its configuration)."""
        assert self._info is not None
        log = self._info.dir / "logs" / f"{component}.log"
        t0 = self._since.get(component, time.time())
        while True:
            if not own.alive(self._info, component):
                why = fatal_line(log)
                err = ScenarioError if scheduler and "config" in why.lower() else ClusterError
                raise err(f"scheduler {self.name}: KAI's {role} exited after {time.time() - t0:.1f}s: {why} "
                          f"(log: {log})")
            if ready():
                return
            if time.time() > deadline:
                last, waiting_for = re.sub(r"\s+", " ", processes.telling_line(log)), self._why_not
                raise ClusterError(f"scheduler {self.name}: KAI's {role} was not ready within "
                                   f"{self.variant.ready_timeout_seconds:g}s ({waiting_for}); last log line: "
                                   f"{last} (log: {log})")
            time.sleep(0.25)

    _why_not = "not answering"

    def _scheduler_ready(self, metrics_url: str, snapshot: str | None) -> bool:
        """Its /metrics answers, a session ran (none does before its informers synced), and its cache holds
        every node of the scenario (with the snapshot plugin)."""
        text = _get(metrics_url)
        if text is None:
            self._why_not = f"{metrics_url} does not answer"
            return False
        if "kai_action_scheduling_latency_milliseconds{" not in text.decode(errors="replace"):
            self._why_not = "no scheduling session has run yet"
            return False
        if snapshot is None:
            return True
        known = snapshot_nodes(_get(snapshot, timeout=30) or b"")
        self._why_not = f"nodes in its cache {known} of {self.nodes}"
        return known >= self.nodes

    def endpoints(self) -> list[Endpoint]:
        if self._record is None:
            return []
        return [Endpoint(self._component, self._record["metrics_url"], None, pprof=self._record["pprof_url"]),
                *(Endpoint(h.component, h.metrics_url, None) for h in self._helpers if h.metrics_url)]

    def fairness(self) -> dict[str, Any]:
        skew = versions.skew(KUBERNETES, self.setup.scenario.kubernetes_for(self.variant))
        return {"scheduler_client_qps": float(self.qps), "scheduler_client_burst": self.burst,
                "kai": {"version": VERSION, "kubernetes": KUBERNETES, "skew_to_control_plane": skew,
                        "scheduler_config": scheduler_config(self.spec, self.setup.base) or "KAI's built-in default",
                        "schedule_period": self.spec.schedule_period,
                        "status_controllers": self.spec.status_controllers,
                        "scheduler_args": self.spec.scheduler_args,
                        "process_args": dict(self.spec.process_args),
                        "queues": [{"name": q["metadata"]["name"], **q["spec"]} for q in queue_objects(self.spec)]}}



def snapshot_nodes(body: bytes) -> int:
    """Nodes in the scheduler's cache, from its ``/get-snapshot`` (a zip holding snapshot.json); -1 unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            doc = json.loads(z.read("snapshot.json"))
        return len((doc.get("rawObjects") or {}).get("nodes") or [])
    except (zipfile.BadZipFile, KeyError, ValueError, AttributeError):
        return -1


def _get(url: str, timeout: float = 2) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return bytes(r.read()) if r.status == 200 else None
    except (OSError, ValueError):
        return None


def _answers(url: str | None) -> bool:
    return url is None or _get(url) is not None


async def _create_queues(info: ClusterInfo, crds: list[Path], queues: list[dict[str, Any]]) -> list[str]:
    """KAI's CRDs (until served), then the variant's Queues, parents first (an existing one is replaced)."""
    creds = info.credentials()
    await apply_crds(creds, crds)
    async with Api(creds) as api:
        for q in queues:
            name = q["metadata"]["name"]
            status, text = await api.raw("POST", QUEUES_PATH, orjson.dumps(q))
            if status == 409:
                old = await api.json("GET", f"{QUEUES_PATH}/{name}")
                q = {**q, "metadata": {**q["metadata"], "resourceVersion": old["metadata"]["resourceVersion"]}}
                status, text = await api.raw("PUT", f"{QUEUES_PATH}/{name}", orjson.dumps(q))
            if status not in (200, 201):
                raise ClusterError(f"creating KAI Queue {name}: HTTP {status} {text[:200]!r}")
    return [q["metadata"]["name"] for q in queues]

