"""Volcano (``binary: volcano``): built from its pinned source archive, configured from the variant's ``volcano:``
block, started against the run's cluster as two processes, measured through its own ``/metrics``.

How it runs here, as Volcano's Helm chart deploys it minus what a kwokctl cluster does not need:

- **Build.** The module proxy serves every dependency of ``volcano.sh/volcano`` v1.15.1 but not the module itself,
  and ``volcano.sh/apis`` is replaced by ``./staging/src/volcano.sh/apis`` inside the archive, so it is built where it
  lies, in the extracted archive: ``go build ./cmd/scheduler`` (vc-scheduler) and ``./cmd/controller-manager``
  (vc-controller-manager, next to it) with the version stamped as its Makefile does (``pkg/version``). The CRDs of
  ``config/crd/volcano/bases`` and ``config/crd/jobflow/bases`` are copied next to the binaries.
- **Objects first.** Its CRDs are created (and waited for until served), then the variant's queues, as
  ``scheduling.volcano.sh/v1beta1`` Queue objects: the apiserver checks them against Volcano's own Queue schema, so
  an invalid queue is Volcano's own message, before any process starts.
- **Two processes**, each a process of the cluster (pid file, log; ``down``, the watchdog and Ctrl-C stop them):
  vc-controller-manager (its default controllers: the pg-controller gives every pod that names no PodGroup one of
  its own, minMember 1, and the queue-controller opens the queues) and vc-scheduler with the rendered
  ``volcano-scheduler.conf`` (the chart's default, or the variant's ``actions``/``tiers``, or its ``conf_file``).
  Both run without leader election; kwokctl's kube-scheduler is not started.
- **Readiness.** vc-scheduler opens its first session only once its informers have synced and every node of the
  initial list is in its cache (``WaitForHandlerSync``), so it is ready when both health checks answer and
  ``volcano_e2e_scheduling_latency_milliseconds_count`` is at least 1. A configuration Volcano refuses at start
  (it would log it and fall back to its built-in default) or a plugin it does not know (it would skip it every
  session) is its own log line, one line, exit 2, both processes stopped.
- **No admission webhooks.** vc-webhook-manager is not run (a kwokctl cluster has no Service network to reach it).
  What that skips, from its admission handlers: the Queue validation beyond the CRD schema (deserved ≥ guarantee,
  deserved ≤ capability, hierarchical queues' sums and depth, deleting a queue in use) and the Queue defaults
  (weight 1 and reclaimable: kwokbench writes both); the PodGroup mutation that takes the queue from the namespace's
  ``scheduling.volcano.sh/queue-name`` annotation and the check that a PodGroup's queue exists and is Open
  (kwokbench refuses, before any cluster, a workload naming a queue the variant does not create); the pod
  mutation by resource groups (none configured by default) and the pod checks of the ``volcano.sh/jdb-*``
  budget annotations; the vcjob defaults (the ``volcano-job`` template writes them) and the jobflow/cronjob/hypernode
  checks (kwokbench submits none of them).
- **Pods.** ``schedulerName: volcano`` and ``scheduling.volcano.sh/queue-name`` (the pg-controller copies it into
  the pod's PodGroup). A workload's ``gang:`` is one Volcano PodGroup per gang (builtin template
  ``volcano-podgroup``: minMember, queue, minResources = minMember × the pod's requests, as Volcano's job
  controller writes them), named by each member's ``scheduling.k8s.io/group-name`` annotation, so the pg-controller
  leaves its members alone and the gang plugin binds a gang only whole. A workload of Volcano Jobs (template
  ``volcano-job``, ``batch.volcano.sh/v1alpha1``) is submitted as Jobs in the workload's queue: the job controller
  makes their PodGroups and pods.
- **Its own account of a run**, from ``/metrics`` each second: sessions (``volcano_e2e_scheduling_latency``: one
  session opens a snapshot, runs the actions, closes it), the time per action and per plugin
  (``…_action_scheduling_latency``, ``…_plugin_scheduling_latency{plugin,OnSession}``), pods' latency from creation
  to each stage (``…_task_scheduling_latency{stage}``), PodGroups left unschedulable, and per queue its allocated,
  requested and deserved resources over time (``volcano_queue_*``, from the proportion plugin). Volcano v1.15.1
  observes all of them in milliseconds; the summary reports seconds. pprof is on (``--enable-pprof``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kwokbench.cluster import processes
from kwokbench.cluster import schedulers as own
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_ports
from kwokbench.cluster.objects import apply_crds
from kwokbench.components import PodSettings, Scheduler, Setup, own_component_name
from kwokbench.errors import ClusterError, ScenarioError
from kwokbench.formatting import fmt, ms
from kwokbench.progress import Reporter
from kwokbench.scenario import WorkloadSpec
from kwokbench.scenario.quantity import quantity
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.toolchain import versions
from kwokbench.toolchain.sources import PinnedSource, SourceBuild

if TYPE_CHECKING:
    import pandas as pd  # the summary's frames: pandas loads when a run is analysed, not when it is planned

VOLCANO = "v1.15.1"
"""Volcano's release (tag v1.15.1, commit 0a56ed3), built from the pinned archive (the proxy does not serve it)."""
VOLCANO_KUBERNETES = "v1.35.3"
"""The k8s.io/kubernetes version its go.mod requires (one minor behind the 1.36 control plane)."""
GIT_SHA = "0a56ed3"

SCHEDULER_NAME = "volcano"
"""The schedulerName vc-scheduler and its pg-controller serve (their ``--scheduler-name`` default)."""
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
"""A pod's queue (``QueueNameAnnotationKey``), copied into the PodGroup the pg-controller makes for it."""
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""A pod's PodGroup (``KubeGroupNameAnnotationKey``): the pg-controller makes none for a pod that names one."""
DEFAULT_QUEUE = "default"
"""The queue vc-scheduler creates at start (with ``root``) and puts PodGroups naming none in."""
API = "/apis/scheduling.volcano.sh/v1beta1"
UNLIMITED_CLIENT = 100_000
"""Client QPS/burst of both processes when client limits are off (kube-scheduler's are then unlimited too)."""
CHART_CLIENT = {"scheduler": (2000, 2000), "controller_manager": (50, 100)}
"""The Helm chart's client limits (values.yaml), used with ``cluster.qps_limits``: the components' defaults."""
CONTROLLERS = "*,-sharding-controller"
"""vc-controller-manager's default controllers (every one but the sharding controller)."""

DEFAULT_ACTIONS = "enqueue, allocate, backfill"
DEFAULT_TIERS: list[dict[str, Any]] = [
    {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}]},
    {"plugins": [{"name": "overcommit"}, {"name": "drf", "enablePreemptable": False}, {"name": "predicates"},
                 {"name": "proportion"}, {"name": "nodeorder"}, {"name": "binpack"}]},
]
"""The Helm chart's ``installer/helm/chart/volcano/config/volcano-scheduler.conf`` (a unit test compares them)."""

Quantity = str | int | float
NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class VolcanoQueueSpec(BaseModel):
    """One Volcano Queue (a child of ``root``); its values are checked by Volcano's Queue schema."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME, max_length=63, description=(
        "Queue name (a cluster-scoped Queue object). `default` configures the queue Volcano creates itself."))
    weight: int = Field(1, description="Its share of the cluster when queues compete (proportion plugin; 1–65535).")
    capability: dict[str, Quantity] = Field(default_factory=dict, description=(
        "The most it may use, e.g. {cpu: 20, memory: 80Gi} (a hard limit: pods beyond it wait)."))
    deserved: dict[str, Quantity] = Field(default_factory=dict, description=(
        "What it deserves when the cluster is contended (capacity plugin; reclaimed back from other queues)."))
    guarantee: dict[str, Quantity] = Field(default_factory=dict, description=(
        "Resources reserved for it (spec.guarantee.resource), never lent to other queues."))
    reclaimable: bool = Field(True, description="Whether other queues may reclaim what it uses beyond its share.")
    priority: int | None = Field(None, description="Its priority (higher: scheduled first, reclaimed last).")

    @model_validator(mode="after")
    def _not_root(self) -> VolcanoQueueSpec:
        if self.name == "root":
            raise ValueError("queue root is Volcano's own (the parent of every queue); name a child queue")
        return self


class VolcanoPlugin(BaseModel):
    """One plugin of a tier, as in volcano-scheduler.conf: its name and any of its options (passed through)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="Plugin name (gang, priority, drf, proportion, binpack, …).")


class VolcanoTier(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plugins: list[VolcanoPlugin] = Field(min_length=1, description="The tier's plugins.")


class VolcanoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queues: list[VolcanoQueueSpec] = Field(default_factory=list, description=(
        "Queues created before Volcano starts (workloads pick one with `volcano.queue`; without queues every "
        "PodGroup goes to Volcano's `default` queue)."))
    actions: str | list[str] = Field(DEFAULT_ACTIONS, description=(
        "The actions of each scheduling session, in order (volcano-scheduler.conf's `actions`), e.g. "
        "\"enqueue, allocate, backfill\" or [enqueue, allocate, preempt, backfill]."))
    tiers: list[VolcanoTier] = Field(default_factory=lambda: [VolcanoTier.model_validate(t) for t in DEFAULT_TIERS],
                                     description=(
        "The plugin tiers (volcano-scheduler.conf's `tiers`); default the Helm chart's: priority, gang, "
        "conformance; overcommit, drf, predicates, proportion, nodeorder, binpack."))
    configurations: list[dict[str, Any]] = Field(default_factory=list, description=(
        "Action arguments (volcano-scheduler.conf's `configurations`: [{name: ACTION, arguments: {…}}])."))
    conf_file: str | None = Field(None, description=(
        "A whole volcano-scheduler.conf (relative to the scenario) instead of actions/tiers/configurations."))
    schedule_period_seconds: float = Field(1.0, gt=0, le=60, description=(
        "Seconds between scheduling sessions (`--schedule-period`; Volcano's default 1 s): pods created meanwhile "
        "wait for the next session."))
    scheduler_args: list[str] = Field(default_factory=list, description=(
        "More vc-scheduler flags, e.g. [--percentage-nodes-to-find=50, -v=3]."))
    controller_manager_args: list[str] = Field(default_factory=list, description=(
        "More vc-controller-manager flags, e.g. [--worker-threads-for-podgroup=10]."))
    agent_scheduler: bool = Field(False, description=(
        "Schedule the variant's pods with Volcano's agent-scheduler (vc-agent-scheduler, one pod at a time with "
        "kube-scheduler's queue; no sessions, PodGroups or queues) instead of vc-scheduler, as Volcano's own "
        "benchmark sends bare pods (benchmark/ in volcano-sh/volcano). It runs alone: vc-scheduler and "
        "vc-controller-manager have no pod to act on. Bare pods only (a gang needs vc-scheduler); it serves no "
        "/metrics in v1.15.1, so its figures are the apiserver's and its CPU."))
    agent_scheduler_args: list[str] = Field(default_factory=list, description=(
        "More vc-agent-scheduler flags, e.g. [--scheduler-worker-count=2, --node-worker-threads=20]."))

    @model_validator(mode="after")
    def _one_source(self) -> VolcanoConfig:
        given = {"actions", "tiers", "configurations"} & self.model_fields_set
        if self.conf_file and given:
            raise ValueError(f"volcano: give conf_file or {'/'.join(sorted(given))}, not both")
        names = [q.name for q in self.queues]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"volcano.queues: {', '.join(dup)} given twice")
        for a in [*self.scheduler_args, *self.controller_manager_args, *self.agent_scheduler_args]:
            if not a.startswith("-"):
                raise ValueError(f"volcano: {a!r} is not a flag (give each as --name=value)")
        if self.agent_scheduler_args and not self.agent_scheduler:
            raise ValueError("volcano.agent_scheduler_args: set agent_scheduler: true too")
        for a in self.agent_scheduler_args:
            flag = a.lstrip("-").split("=", 1)[0]
            if flag in AGENT_OWN_FLAGS:
                raise ValueError(f"volcano.agent_scheduler_args: {a!r}: kwokbench sets --{flag} itself")
        if self.agent_scheduler:
            vc_only = sorted(f for f in ("queues", "scheduler_args", "controller_manager_args", "actions", "tiers",
                                       "configurations", "conf_file", "schedule_period_seconds")
                           if f in self.model_fields_set)
            if vc_only:
                raise ValueError(f"volcano: {', '.join(vc_only)}: settings of vc-scheduler or its controllers, which "
                                 "do not run with agent_scheduler: true (the agent-scheduler has no sessions or "
                                 "queues; its flags go in agent_scheduler_args)")
        return self


class VolcanoWorkloadSpec(BaseModel):
    """How a Volcano variant sees this phase: the queue of its pods (other kinds ignore it)."""

    model_config = ConfigDict(extra="forbid")

    queue: str = Field(DEFAULT_QUEUE, pattern=NAME, max_length=63, description=(
        "The Volcano queue of this phase's pods (annotation scheduling.volcano.sh/queue-name; a gang's PodGroup "
        "spec.queue): `default` or one of the variant's `volcano.queues`."))


class VolcanoSpec(SchedulerSpec):
    """A ``binary: volcano`` variant: Volcano serves the schedulerName ``volcano`` and is configured by its
    ``volcano:`` block (client limits as every kind's)."""

    SERVES = SCHEDULER_NAME
    binary: Literal["volcano"] = Field("volcano", description=(
        "Volcano, built from pinned sources (`kwokbench tools install volcano`)."))
    volcano: VolcanoConfig | None = Field(None, description=(
        "Volcano's queues and scheduler configuration (volcano-scheduler.conf). Default: the Helm chart's "
        "configuration, every pod in the `default` queue."))

    @model_validator(mode="after")
    def _name(self) -> VolcanoSpec:
        if self.scheduler_name not in (None, SCHEDULER_NAME):
            raise ValueError(f"scheduler {self.name}: Volcano serves schedulerName {SCHEDULER_NAME} only; drop "
                             "scheduler_name")
        return self


def scheduler_conf(spec: VolcanoConfig | None, base: Path) -> str:
    """The variant's volcano-scheduler.conf: its ``conf_file``, or its actions, tiers and configurations."""
    spec = spec or VolcanoConfig()
    if spec.conf_file:
        path = Path(spec.conf_file).expanduser()
        path = path if path.is_absolute() else base / path
        try:
            return path.read_text()
        except OSError as e:
            raise ScenarioError(f"volcano.conf_file {spec.conf_file}: {e.strerror or e} (relative to {base})") from e
    actions = spec.actions if isinstance(spec.actions, str) else ", ".join(spec.actions)
    doc: dict[str, Any] = {"actions": actions, "tiers": [t.model_dump(exclude_none=True) for t in spec.tiers]}
    if spec.configurations:
        doc["configurations"] = spec.configurations
    return yaml.safe_dump(doc, sort_keys=False)


def queue_objects(spec: VolcanoConfig | None) -> list[dict[str, Any]]:
    """The variant's Queue objects (weight and reclaimable written out: no webhook defaults them)."""
    out = []
    for q in (spec or VolcanoConfig()).queues:
        body: dict[str, Any] = {"weight": q.weight, "reclaimable": q.reclaimable}
        for key in ("capability", "deserved"):
            if getattr(q, key):
                body[key] = {r: str(v) for r, v in getattr(q, key).items()}
        if q.guarantee:
            body["guarantee"] = {"resource": {r: str(v) for r, v in q.guarantee.items()}}
        if q.priority is not None:
            body["priority"] = q.priority
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": q.name, "labels": {"app.kubernetes.io/managed-by": "kwokbench"}},
                    "spec": body})
    return out


def client_limits(qps_limits: bool, client_qps: float | None, client_burst: int | None) -> dict[str, tuple[int, int]]:
    """QPS/burst of vc-scheduler and vc-controller-manager: unlimited (as kube-scheduler's) unless the scenario keeps
    the components' default limits (then the Helm chart's); the variant's ``client_qps`` sets the scheduler's."""
    out = dict(CHART_CLIENT) if qps_limits else dict.fromkeys(CHART_CLIENT, (UNLIMITED_CLIENT, UNLIMITED_CLIENT))
    if client_qps is not None:
        out["scheduler"] = (int(client_qps), int(client_burst or client_qps))
    return out


def times(q: Quantity, n: int, resource: str) -> str:
    """``n`` times quantity ``q`` (a gang's minResources), in millicores for CPU, else whole units."""
    v = quantity(q) * n
    return f"{round(v * 1000)}m" if resource == "cpu" else str(round(v))


def gang_resources(requests: dict[str, str], members: int) -> dict[str, str]:
    return {r: times(q, members, r) for r, q in requests.items()}


# ---- its build, from pinned sources -----------------------------------------------------------------

MODULE = "volcano.sh/volcano"
SOURCES = (PinnedSource(MODULE, "volcano-v1.15.1.tar.gz",
                        "06f81ed19cabc6d2bde3cd3796da2e48a3d3099189d3b09a7c6345053cdc57cb", ""),)
"""The ``git archive`` of tag v1.15.1 without ``docs/`` (upstream serves no archive byte-identical to it)."""
BINARY = "vc-scheduler"
CONTROLLER_MANAGER = "vc-controller-manager"
AGENT = "vc-agent-scheduler"
AGENT_CONF = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n"
"""The agent-scheduler's configuration as its Helm chart deploys it (its built-in default,
``pkg/agentscheduler/util.go``: the only action and plugins it registers)."""
AGENT_OWN_FLAGS = ("kubeconfig", "leader-elect", "scheduler-name", "scheduler-conf", "enable-healthz",
                   "healthz-address", "kube-api-qps", "kube-api-burst")
"""vc-agent-scheduler flags kwokbench sets itself."""
AGENT_SOCKET = "klog-klog.sock"
"""The log-level socket vc-agent-scheduler opens in ``$DEBUG_SOCKET_DIR`` at the end of its start
(``pkg/agentscheduler/util.go``: after its informers synced and its workers started). Its /healthz answers from
before its informers start, so this file is when it is ready."""
SUN_PATH_MAX = processes.SUN_PATH_MAX


def socket_dir(cluster_dir: Path) -> Path:
    """A fresh directory for Volcano's klog-level socket (``$DEBUG_SOCKET_DIR``). Not the run's own directory:
    under pytest or a deep home the socket's path passes :data:`SUN_PATH_MAX` (CI's was 112 bytes), its bind
    fails and Volcano drops the error (``ListenAndServeKlogLogLevel`` just returns), so the agent-scheduler never
    looked ready and was stopped at its timeout; not Volcano's default ``/tmp/klog-socks`` either, which every
    Volcano on the host shares. The cluster owns it (a kept cluster's Volcano keeps its socket until ``down``)."""
    return processes.scratch_dir(cluster_dir, "kb-vc-", len(AGENT_SOCKET))


CRD_DIRS = ("config/crd/volcano/bases", "config/crd/jobflow/bases")


def ldflags() -> str:
    pkg = f"{MODULE}/pkg/version"
    return f"-s -w -X {pkg}.Version={VOLCANO} -X {pkg}.GitSHA={GIT_SHA} -X '{pkg}.Built=2026-01-01 00:00:00'"


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the extracted archive (``volcano.sh/apis`` is replaced by its staging directory there); the
    controller-manager goes next to the scheduler, so the recipe moves it into the cache with it."""
    flags = ["-trimpath", "-ldflags", ldflags()]
    return [["go", "mod", "download"],
            ["go", "build", *flags, "-o", str(out), "./cmd/scheduler"],
            ["go", "build", *flags, "-o", str(out.parent / CONTROLLER_MANAGER), "./cmd/controller-manager"],
            ["go", "build", *flags, "-o", str(out.parent / AGENT), "./cmd/agent-scheduler"]]


def copy_crds(by: dict[str, Path], dest: Path) -> None:
    (dest / "crds").mkdir()
    for d in CRD_DIRS:
        for f in sorted((by[MODULE] / d).glob("*.yaml")):
            shutil.copyfile(f, dest / "crds" / f.name)


RECIPE = SourceBuild("volcano", VOLCANO, VOLCANO_KUBERNETES, SOURCES, BINARY, MODULE, build_commands, copy_crds)


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


# ---- its metrics and report rows (pure, over a stored run) ------------------------------------------

QUEUE_GAUGES = ("volcano_queue_allocated_milli_cpu", "volcano_queue_allocated_memory_bytes",
                "volcano_queue_request_milli_cpu", "volcano_queue_request_memory_bytes",
                "volcano_queue_deserved_milli_cpu", "volcano_queue_deserved_memory_bytes", "volcano_queue_share",
                "volcano_queue_weight", "volcano_queue_overused")
HISTOGRAMS = ("volcano_e2e_scheduling_latency_milliseconds", "volcano_open_session_duration_milliseconds",
              "volcano_action_scheduling_latency_milliseconds", "volcano_plugin_scheduling_latency_milliseconds",
              "volcano_task_scheduling_latency_milliseconds", "volcano_scheduling_stage_duration_milliseconds",
              "volcano_e2e_job_scheduling_latency_milliseconds")
KEEP: dict[str, Any] = {**dict.fromkeys(HISTOGRAMS), "volcano_unschedule_job_count": None,
                        **dict.fromkeys(QUEUE_GAUGES)}
"""Families kept from a scheduler component's scrapes (a kube-scheduler serves none of them). Left out: the per-job
gauges (``volcano_e2e_job_scheduling_*{job_name}``, ``volcano_unschedule_task_count{job_id}``, ``volcano_job_*``),
which grow with every PodGroup, and ``volcano_schedule_attempts_total``, which vc-scheduler v1.15.1 declares but
never increments (only its agent scheduler does)."""
SESSIONS = "volcano_e2e_scheduling_latency_milliseconds"


def _seconds(h: dict[str, Any]) -> dict[str, Any]:
    """A histogram's quantiles observed in milliseconds, in seconds."""
    return {k: (v / 1000 if isinstance(v, float) and k != "count" else v) for k, v in h.items()}


def _per(h: dict[str, Any]) -> dict[str, Any]:
    return {k: _seconds(v) for k, v in h.items()}


def queue_usage(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue (from the proportion plugin's gauges, set each session): peaks of allocated and requested CPU
    (millicores) and memory, the last deserved CPU, share and weight, and the allocated CPU over time."""
    q = series[(series["component"] == component) & series["name"].isin(QUEUE_GAUGES)]
    if not len(q):
        return {}
    q = q.assign(queue=q["labels"].map(lambda x: json.loads(x).get("queue_name", "")),
                 short=q["name"].str.removeprefix("volcano_queue_"))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        by = {str(k): g.sort_values("t") for k, g in qd.groupby("short")}
        entry: dict[str, Any] = {}
        for k in ("allocated_milli_cpu", "allocated_memory_bytes", "request_milli_cpu", "request_memory_bytes"):
            if k in by:
                entry[f"{k}_peak"] = float(by[k]["value"].max())
        for k in ("deserved_milli_cpu", "share", "weight"):
            if k in by:
                entry[k] = float(by[k]["value"].iloc[-1])
        if "overused" in by:
            entry["overused_seconds"] = int((by["overused"]["value"] > 0).sum())  # scrapes (1 s apart) it was over
        if "allocated_milli_cpu" in by:
            a = by["allocated_milli_cpu"]
            entry["series"] = {"t": (a["t"].to_numpy(dtype=float) - t0).round(2).tolist(),
                               "allocated_milli_cpu": a["value"].tolist()}
        out[str(name)] = entry
    return out


def volcano_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                    proc: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's ``volcano`` section (None when the component served no Volcano metrics)."""
    from kwokbench.metrics.derive import histogram_quantiles

    has = series[(series["component"] == component) & series["name"].str.startswith("volcano_")]
    if not len(has):
        return None
    plugins = {on: _per(histogram_quantiles(series, component, "volcano_plugin_scheduling_latency_milliseconds",
                                            group_by="plugin", OnSession=on))
               for on in ("OnSessionOpen", "OnSessionClose")}
    unsched = has[has["name"] == "volcano_unschedule_job_count"]
    return {
        "component": component,
        "session_seconds": _seconds(histogram_quantiles(series, component, SESSIONS)),
        "open_session_seconds": _seconds(histogram_quantiles(series, component,
                                                             "volcano_open_session_duration_milliseconds")),
        "action_seconds": _per(histogram_quantiles(series, component, "volcano_action_scheduling_latency_milliseconds",
                                                   group_by="action")),
        "plugin_seconds": {on: p for on, p in plugins.items() if p},
        "task_latency_seconds": _per(histogram_quantiles(
            series, component, "volcano_task_scheduling_latency_milliseconds", group_by="stage")),
        "stage_seconds": _per(histogram_quantiles(series, component, "volcano_scheduling_stage_duration_milliseconds",
                                                  group_by="stage")),
        "job_latency_seconds": _seconds(histogram_quantiles(series, component,
                                                            "volcano_e2e_job_scheduling_latency_milliseconds")),
        "unschedulable_jobs_max": float(unsched["value"].max()) if len(unsched) else None,
        "queues": queue_usage(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }


def volcano_rows(v: dict[str, Any] | None, who: str = "Volcano") -> list[list[str]]:
    """Volcano's own metrics: its sessions and the actions in them, schedule attempts, each queue's usage."""
    if not v:
        return []
    s = v.get("session_seconds") or {}
    rows = [[f"{who} sessions: count; mean / p99 (open, actions, close)",
             f"{s.get('count', 0):.0f}; {ms(s.get('mean'))} / {ms(s.get('p99'))}"]]
    acts = v.get("action_seconds") or {}
    if acts:
        rows.append([f"{who} actions: mean / p99 per session",
                     "; ".join(f"{a} {ms(h.get('mean'))} / {ms(h.get('p99'))}" for a, h in sorted(acts.items()))])
    bound = (v.get("task_latency_seconds") or {}).get("Bound") or {}
    if bound:
        rows.append([f"{who} pods bound, its metric: count; created → bound p50 / p99",
                     f"{bound.get('count', 0):.0f}; {ms(bound.get('p50'))} / {ms(bound.get('p99'))}"])
    if v.get("unschedulable_jobs_max"):
        rows.append([f"{who} PodGroups it could not schedule, most at once", f"{v['unschedulable_jobs_max']:.0f}"])
    for q, u in sorted((v.get("queues") or {}).items()):
        if q == "root":
            continue
        rows.append([f"{who} queue {q}: allocated peak CPU / requested peak CPU; share",
                     f"{u.get('allocated_milli_cpu_peak', 0) / 1000:g} / {u.get('request_milli_cpu_peak', 0) / 1000:g}"
                     f"; {fmt(u.get('share'), '', 2)}"])
    if v.get("cpu_seconds") is not None:
        rows.append([f"{who} scheduler CPU", fmt(v["cpu_seconds"], " s", 2)])
    return rows


# ---- the kind --------------------------------------------------------------------------------------


class Volcano(Scheduler):
    kind = "volcano"
    title = "Volcano"
    settings = VolcanoSpec
    workload_settings = VolcanoWorkloadSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"volcano": ("binary", "volcano")}
    keep = KEEP
    recipe = RECIPE
    section = staticmethod(volcano_section)
    rows = staticmethod(volcano_rows)
    replaces_kube_scheduler = True
    variant: VolcanoSpec

    CONTROLLER_COMPONENT = "vc-controller-manager"

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = self.variant.volcano or VolcanoConfig()
        self._component = own_component_name(self.name) if setup.concurrent else "kube-scheduler"
        self.limits = client_limits(setup.scenario.cluster.qps_limits, self.variant.client_qps,
                                    self.variant.client_burst)
        self._started: list[str] = []
        self._sockets: Path | None = None

    def queues(self) -> list[str]:
        """The queues a workload may name: Volcano's default and the variant's."""
        return [DEFAULT_QUEUE, *(q.name for q in self.spec.queues if q.name != DEFAULT_QUEUE)]

    def check(self) -> None:
        if self.setup.attached is not None:
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts Volcano only on clusters it creates")
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

    def build(self, rep: Reporter) -> None:
        self.binary = RECIPE.build(None, rep)

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
        if not isinstance(info, ClusterInfo):
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts Volcano only on clusters it creates")
        if self.binary is None:
            self.build(rep)
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

    def version(self) -> str:
        return RECIPE.version_line()

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
        if self._info is not None:
            for comp in reversed(self._started):
                own.stop(self._info, comp)
            self._started = []
            self._info = None
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
