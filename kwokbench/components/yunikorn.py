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
- **Build.** The module proxy refuses YuniKorn's modules and k8shim's go.mod has replace directives of its own, so
  ``go install …@v1.8.0`` cannot work even online. The recipe is the one YuniKorn's Makefile uses, in a module
  that points at the sources: k8shim extracted with core and scheduler-interface beside it, its go.mod given
  ``replace`` directives to those two directories, then ``go build ./pkg/cmd/shim`` with the version stamped as
  its Makefile does (the shim logs it at start). Every other dependency comes from the module proxy. The binary is
  cached at ``$KWOKBENCH_CACHE/toolchain/yunikorn-<version>/yunikorn-scheduler`` with a ``BUILD.json`` saying
  which sources it came from (:class:`kwokbench.toolchain.sources.SourceBuild`).
- **Its own account of a run**, from ``/ws/v1/metrics``: allocation attempts by outcome
  (``yunikorn_scheduler_container_allocation_attempt_total{state}``) and applications submitted / accepted; its
  scheduling routine's duration (``yunikorn_scheduler_scheduling_latency_milliseconds``, one pass of the core's
  loop, and ``…_scheduling_cycle_milliseconds`` — despite the names yunikorn-core v1.8.0 observes both in
  *seconds*, ``pkg/metrics/scheduler.go``: ``Observe(SinceInSeconds(start))``, so they are reported as seconds);
  each queue's guaranteed, max and allocated resources over time (``yunikorn_queue_resource``) and its mean share
  of the guarantee from the first pod created to the end of the run, which is what queue fairness is judged by.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kwokbench.cluster import processes
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, port_in_use
from kwokbench.components import PodSettings, Setup
from kwokbench.components.source_built import SourceBuilt
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.formatting import fmt, ms, to_ms
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain import versions
from kwokbench.toolchain.sources import PinnedSource, SourceBuild

if TYPE_CHECKING:
    import pandas as pd  # the summary's frames: pandas loads when a run is analysed, not when it is planned

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


YUNIKORN_SCHEDULER_NAME = "yunikorn"
"""The schedulerName YuniKorn's shim serves (a constant of the shim, not configurable)."""
Quantity = str | int | float


class YuniKornQueueSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$", description="Queue name (a child of its parent queue).")
    guaranteed: dict[str, Quantity] = Field(default_factory=dict, description=(
        "Resources the queue is guaranteed, e.g. {vcore: 100, memory: 400Gi} (YuniKorn's names: vcore, memory, "
        "pods, or any extended resource; `cpu` is written as vcore)."))
    max: dict[str, Quantity] = Field(default_factory=dict, description="Most resources the queue may use.")
    sort_policy: Literal["fifo", "fair", "priority"] | None = Field(None, description=(
        "How the queue orders its applications (property application.sort.policy); default YuniKorn's fifo."))
    properties: dict[str, str] = Field(default_factory=dict, description="More YuniKorn queue properties.")
    parent: bool = Field(False, description="A parent queue even without children (placement creates them).")
    queues: list[YuniKornQueueSpec] = Field(default_factory=list, description="Child queues (hierarchical).")


class YuniKornConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queues: list[YuniKornQueueSpec] = Field(default_factory=list, description=(
        "The queues under root (hierarchical, with guaranteed/max resources). Workloads pick one with "
        "`yunikorn.queue`; without queues every application goes to root.default."))
    placement_rules: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "provided", "create": True}], description=(
            "YuniKorn placement rules of the partition, as in its queues.yaml (default: the queue a pod's `queue` "
            "label names, created when missing)."))
    node_sort_policy: Literal["fair", "binpacking"] | None = Field(None, description=(
        "How nodes are ordered for allocation (partition nodesortpolicy); default YuniKorn's fair."))
    queues_file: str | None = Field(None, description=(
        "A whole queues.yaml (relative to the scenario) instead of queues/placement_rules/node_sort_policy."))
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict, description=(
        "More keys of the yunikorn-configs ConfigMap, e.g. service.schedulingInterval: 100ms, log.level: WARN."))

    @model_validator(mode="after")
    def _one_source(self) -> YuniKornConfig:
        given = sorted({"queues", "placement_rules", "node_sort_policy"} & self.model_fields_set)
        if self.queues_file and given:  # the file is the whole queues.yaml: they would be ignored
            raise ValueError(f"yunikorn: give queues_file or {'/'.join(given)}, not both")
        bad = [k for k in self.settings if k == "queues.yaml" or not re.fullmatch(r"[A-Za-z0-9_.-]+", k)]
        if bad:
            raise ValueError(f"yunikorn.settings: {bad[0]!r} is not a ConfigMap key kwokbench passes through "
                             "(queues come from queues or queues_file)")
        return self


class YuniKornWorkloadSpec(BaseModel):
    """How a YuniKorn variant sees this phase: its queue and pods per application (other kinds ignore it)."""

    model_config = ConfigDict(extra="forbid")

    queue: str = Field("root.default", pattern=r"^root(\.[a-zA-Z0-9_-]{1,64})*$", description=(
        "The YuniKorn queue of this phase's applications (the pods' `queue` label), e.g. root.tenant-a."))
    pods_per_app: int | None = Field(None, ge=1, le=1_000_000, description=(
        "Pods per YuniKorn application (the `applicationId` label): default one application per Job, per "
        "gang, or per 100 bare pods."))


class YuniKornSpec(SchedulerSpec):
    """A ``binary: yunikorn`` variant: YuniKorn serves the schedulerName ``yunikorn`` and is configured by its
    ``yunikorn:`` block (client limits as every kind's)."""

    SERVES = YUNIKORN_SCHEDULER_NAME
    binary: Literal["yunikorn"] = Field("yunikorn", description="Apache YuniKorn, built from pinned sources "
                                                                "(`kwokbench tools install yunikorn`).")
    yunikorn: YuniKornConfig | None = Field(None, description=(
        "YuniKorn's configuration, written into its yunikorn-configs ConfigMap (queues.yaml and service "
        "settings). Default: one root queue, applications placed by their `queue` label."))

    @model_validator(mode="after")
    def _name(self) -> YuniKornSpec:
        if self.scheduler_name not in (None, YUNIKORN_SCHEDULER_NAME):
            raise ValueError(f"scheduler {self.name}: YuniKorn serves schedulerName {YUNIKORN_SCHEDULER_NAME} "
                             "only; drop scheduler_name")
        return self


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


def queues_yaml(spec: YuniKornConfig | None, base: Path) -> str:
    """The ``queues.yaml`` of the variant: one partition, root accepting everyone, the scenario's queues."""
    spec = spec or YuniKornConfig()
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


def config_data(spec: YuniKornConfig | None, base: Path, qps: int, burst: int) -> dict[str, str]:
    """The ``yunikorn-configs`` ConfigMap's data."""
    spec = spec or YuniKornConfig()
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


# ---- its build, from pinned sources -----------------------------------------------------------------

VERSION = versions.YUNIKORN
SHIM = "github.com/apache/yunikorn-k8shim"
CORE = "github.com/apache/yunikorn-core"
SI = "github.com/apache/yunikorn-scheduler-interface"
SOURCES = (
    PinnedSource(SHIM, "yunikorn-k8shim-v1.8.0.tar.gz",
                 "9e048becf234f2b3a7a5509a8fdb3f4aa923a4a9a730a3cfcc64b396b2de96b9",
                 "github.com/apache/yunikorn-k8shim at tag v1.8.0"),
    PinnedSource(CORE, "yunikorn-core-v1.8.0-1.tar.gz",
                 "9c476ae7bd08b4e88b7365703fc1369d12382fc42eb6022d1bb2c902ec5bfc57",
                 "github.com/apache/yunikorn-core at tag v1.8.0-1"),
    PinnedSource(SI, "yunikorn-scheduler-interface-v1.8.0-0.tar.gz",
                 "0e99a5ed4388fb73d2425854087111800c5be43e12ecede8cab6e2355518e32b",
                 "github.com/apache/yunikorn-scheduler-interface at tag v1.8.0-0"),
)
BINARY = "yunikorn-scheduler"


def ldflags(version: str = VERSION) -> str:
    pkg = f"{SHIM}/pkg/conf"
    v = version.removeprefix("v")
    return (f"-s -w -X {pkg}.buildVersion={v} -X {pkg}.buildDate=2026-01-01T00:00:00Z "
            f"-X {pkg}.isPluginVersion=false")


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the k8shim directory: point its two YuniKorn requirements at the source directories, build."""
    return [["go", "mod", "edit", f"-replace={CORE}={by[CORE]}", f"-replace={SI}={by[SI]}"],
            ["go", "mod", "download"],
            ["go", "build", "-trimpath", "-ldflags", ldflags(), "-o", str(out), "./pkg/cmd/shim"]]


RECIPE = SourceBuild("yunikorn", VERSION, versions.YUNIKORN_KUBERNETES, SOURCES, BINARY, SHIM, build_commands)


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


# ---- its metrics and report rows (pure, over a stored run) ------------------------------------------

KEEP: dict[str, Any] = {
    "yunikorn_scheduler_container_allocation_attempt_total": None,
    "yunikorn_scheduler_application_submission_total": None,
    "yunikorn_scheduler_scheduling_latency_milliseconds": None,
    "yunikorn_scheduler_scheduling_cycle_milliseconds": None,
    "yunikorn_queue_resource": lambda lb: lb.get("resource") in ("vcore", "memory", "pods"),
}
"""Families kept from a scheduler component's scrapes (a kube-scheduler serves none of them)."""
RESOURCES = ("vcore", "memory", "pods")


def queue_usage(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue: guaranteed and max (last seen), allocated peak, the allocated series, and over the window
    the mean share of the guarantee per resource."""
    q = series[(series["component"] == component) & (series["name"] == "yunikorn_queue_resource")]
    if not len(q):
        return {}
    lb = q["labels"].map(json.loads)
    q = q.assign(queue=lb.map(lambda d: d.get("queue", "")), state=lb.map(lambda d: d.get("state", "")),
                 resource=lb.map(lambda d: d.get("resource", "")))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        last = qd[qd["t"] == qd["t"].max()]
        fixed = {st: {r: float(v) for r, v in last[last["state"] == st].set_index("resource")["value"].items()}
                 for st in ("guaranteed", "max")}
        alloc = qd[qd["state"] == "allocated"].pivot_table(index="t", columns="resource", values="value",
                                                           aggfunc="sum").sort_index()
        entry: dict[str, Any] = {**fixed, "allocated_peak": {str(r): float(alloc[r].max()) for r in alloc.columns}}
        entry["series"] = {"t": (alloc.index.to_numpy(dtype=float) - t0).round(2).tolist(),
                           **{str(r): alloc[r].fillna(0).tolist() for r in alloc.columns if r in RESOURCES}}
        if window and fixed["guaranteed"]:
            inw = alloc[alloc.index >= window[0]]  # from the first pod on: a queue's pods may bind in a second
            entry["share_of_guarantee_mean"] = {
                r: float(np.nanmean(inw[r].to_numpy() / g)) if r in inw and g and len(inw) else None
                for r, g in fixed["guaranteed"].items()}
        out[str(name)] = entry
    return out


def yunikorn_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                     proc: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's ``yunikorn`` section (None when the component served no YuniKorn metrics)."""
    from kwokbench.metrics.derive import counter_increase, histogram_quantiles

    has = series[(series["component"] == component) & series["name"].str.startswith("yunikorn_")]
    if not len(has):
        return None
    return {
        "component": component,
        "allocation_attempts": counter_increase(series, component,
                                                "yunikorn_scheduler_container_allocation_attempt_total", by="state"),
        "applications": counter_increase(series, component, "yunikorn_scheduler_application_submission_total",
                                         by="result"),
        "scheduling_latency_seconds": histogram_quantiles(
            series, component, "yunikorn_scheduler_scheduling_latency_milliseconds"),
        "scheduling_cycle_seconds": histogram_quantiles(
            series, component, "yunikorn_scheduler_scheduling_cycle_milliseconds"),
        "queues": queue_usage(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }


def yunikorn_rows(y: dict[str, Any] | None, who: str = "YuniKorn") -> list[list[str]]:
    """YuniKorn's own metrics: allocation attempts by outcome, its scheduling routine, each queue's usage."""
    if not y:
        return []
    att = y.get("allocation_attempts") or {}
    lat = y.get("scheduling_latency_seconds") or {}
    apps = y.get("applications") or {}
    rows = [[f"{who} allocation attempts: allocated / rejected / error",
             f"{att.get('allocated', 0):.0f} / {att.get('rejected', 0):.0f} / {att.get('error', 0):.0f}"],
            [f"{who} applications submitted / accepted", f"{apps.get('new', 0):.0f} / {apps.get('accepted', 0):.0f}"],
            [f"{who} scheduling routine mean / p99 (its metric, in seconds)",
             f"{fmt(to_ms(lat.get('mean')), ' ms', 3)} / {ms(lat.get('p99'))}"]]
    for q, u in sorted((y.get("queues") or {}).items()):
        if q == "root":
            continue
        peak = u.get("allocated_peak") or {}
        share = u.get("share_of_guarantee_mean") or {}
        g = u.get("guaranteed") or {}
        rows.append([f"{who} queue {q}: allocated peak vcore / pods; mean share of guarantee (vcore)",
                     f"{peak.get('vcore', 0) / 1000:g} / {peak.get('pods', 0):.0f}; "
                     + (f"{share['vcore'] * 100:.0f}% of {g['vcore'] / 1000:g} vcores" if share.get("vcore")
                        is not None and g.get("vcore") else "no guarantee")])
    if y.get("cpu_seconds") is not None:
        rows.append([f"{who} CPU", fmt(y["cpu_seconds"], " s", 2)])
    return rows



# ---- the kind --------------------------------------------------------------------------------------


class YuniKorn(SourceBuilt):
    kind = "yunikorn"
    title = "YuniKorn"
    settings = YuniKornSpec
    workload_settings = YuniKornWorkloadSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"yunikorn": ("binary", "yunikorn")}
    keep = KEEP
    recipe = RECIPE
    section = staticmethod(yunikorn_section)
    rows = staticmethod(yunikorn_rows)
    variant: YuniKornSpec

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = self.variant.yunikorn
        c = setup.scenario.cluster
        self.nodes = 0 if setup.attached else sum(g.count for g in c.node_groups)
        """Nodes it must know before it is ready (it schedules nothing onto nodes it has not registered)."""
        self.qps, self.burst = client_limits(c.qps_limits, self.variant.client_qps, self.variant.client_burst)

    def check(self) -> None:
        super().check()
        queues_yaml(self.spec, self.setup.base)

    def configure(self, copts: ClusterOptions) -> None:
        pass  # kwokctl's kube-scheduler is off (replaces_kube_scheduler); nothing else of the cluster changes

    def pod_settings(self, w: WorkloadSpec, requests: dict[str, str], kind: str) -> PodSettings:
        block: YuniKornWorkloadSpec = w.block("yunikorn") or YuniKornWorkloadSpec()
        size = block.pods_per_app or (w.gang.size if w.gang else 1 if kind == "Job" else PODS_PER_APP)
        if w.gang and size != w.gang.size:
            raise ScenarioError(f"workload {w.name}: yunikorn.pods_per_app {size} must equal gang.size "
                                f"{w.gang.size} (a gang is one YuniKorn application)")
        return PodSettings(scheduler_name=self.variant.effective_scheduler_name,
                           labels={QUEUE_LABEL: block.queue},
                           annotations=task_group(w.gang.min_member or w.gang.size, requests or {}) if w.gang else {},
                           group_labels=(APP_LABEL,), group_size=size)

    def prepare(self, rep: Reporter) -> None:
        """Its fixed port, before any cluster exists: a port taken is one line, with nothing to tear down."""
        if port_in_use(REST_PORT):
            raise ClusterError(f"scheduler {self.name}: port {REST_PORT} is taken; YuniKorn's REST server always "
                               "listens there (YuniKorn has no option to move it), so only one YuniKorn runs on a "
                               "host at a time (is another run going?)")

    def start(self, info: Any, rep: Reporter) -> dict[str, Any] | None:
        self.built(info, rep)
        assert self.binary is not None
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
                self._started.append(self._component)
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

    def endpoints(self) -> list[Endpoint]:
        if self._record is None:
            return []
        return [Endpoint(self._component, self._record["metrics_url"], None, pprof=self._record["pprof_url"])]

    def fairness(self) -> dict[str, Any]:
        skew = versions.skew(versions.YUNIKORN_KUBERNETES, self.setup.scenario.kubernetes_for(self.variant))
        return {"scheduler_client_qps": float(self.qps), "scheduler_client_burst": self.burst,
                "yunikorn": {"version": versions.YUNIKORN, "kubernetes": versions.YUNIKORN_KUBERNETES,
                             "skew_to_control_plane": skew,
                             "configs": config_data(self.spec, self.setup.base, self.qps, self.burst)}}


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
