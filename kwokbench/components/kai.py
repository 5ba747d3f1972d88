"""NVIDIA KAI-Scheduler (``binary: kai``): built from its pinned source, its queues created from the variant's
``kai:`` block, its processes started against the run's cluster, measured through the scheduler's /metrics.

How it runs here, as KAI's operator deploys it minus what a kwokctl cluster does not need:

- **Processes.** A pod is scheduled and bound by several processes, each one more component of the cluster
  (pid file, log; ``down``, the watchdog and Ctrl-C stop them like kwokctl's): the **podgrouper** makes a
  PodGroup for every pod of ``schedulerName: kai-scheduler`` that has none (one per bare pod, one per Job) and
  annotates the pod with it; the **scheduler** places pod groups once per ``schedule_period`` (a session:
  its actions, each consulting its plugins) and writes a BindRequest per pod; the **binder** binds the pod that
  BindRequest names. The **queuecontroller** and **podgroupcontroller** (``status_controllers``, on by default as
  KAI deploys them) keep Queue and PodGroup status (allocated, requested) current; the scheduler does not read
  it. KAI's admission webhooks and operator are not run: kwokbench writes what the webhooks would (the queue
  label, schedulerName), and a kwokctl cluster has no Service network to reach a webhook. Every process reads
  ``KUBECONFIG`` from its environment (the queue and pod-group controllers read their configuration before they
  parse ``-kubeconfig``).
- **Configuration.** Queues are ``scheduling.run.ai/v2`` Queue objects created before the scheduler starts
  (``queues``; KAI's installation defaults, ``default-parent-queue`` and its leaf ``default-queue``, when none
  are given); CPU in cores and memory as quantities are written in KAI's units (millicpus, megabytes). The
  scheduler's actions and plugins come from ``--scheduler-conf``: the variant's ``config`` (or ``config_file``),
  else KAI's built-in default (``pkg/scheduler/conf_util``). Client limits are unlimited like kube-scheduler's
  unless ``cluster.qps_limits`` (then KAI's own, 50/300) or ``client_qps``.
- **Readiness.** The scheduler serves no health endpoint; it is ready once its /metrics answers and it has run a
  session — it runs none before its informers synced — and, when its ``snapshot`` plugin is on (KAI's default
  configuration), its cache holds every node of the scenario (``/get-snapshot`` on its plugin server).
- **Gangs.** A workload's ``gang:`` becomes KAI PodGroups (``kai-podgroup`` template: minMember, queue) created
  before its pods, each member annotated ``pod-group-name: <its PodGroup>`` (the podgrouper leaves a bare pod
  that has one alone, ``pkg/podgrouper/pod_controller.go``).
- **Build.** ``kwokbench tools install kai`` builds ``./cmd/scheduler`` and the four other commands from the
  pinned archive (every dependency from the module proxy), version stamped as KAI's Makefile does, the CRDs of
  ``deployments/kai-scheduler/crds`` copied beside them.
- **Its own account of a run** (summary ``kai``, from the scheduler's /metrics): pod scheduling latency (pod
  created → BindRequest written) and the BindRequest write, both histograms in milliseconds; session, action
  and plugin durations (gauges of the last session, sampled once a second); pod groups scheduled and acted on
  per action; preemption attempts; each queue's fair share over time. The binder's, podgrouper's and
  controllers' /metrics are scraped raw into the run directory too; their CPU is in the summary's processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import os
import re
import shutil
import time
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kwokbench.cluster import processes
from kwokbench.cluster import schedulers as own
from kwokbench.cluster.api import Api
from kwokbench.cluster.endpoints import Endpoint
from kwokbench.cluster.kwokctl import ClusterInfo, ClusterOptions, free_ports, port_in_use
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

VERSION = "v0.13.0"
"""NVIDIA KAI-Scheduler, tag v0.13.0 (commit 5d35eca, 2026-03-02; the tag v0.20.1 is older, 2025-11-30)."""
KUBERNETES = "v1.34.2"
"""The k8s.io/kubernetes version its go.mod requires (two minors behind the control plane)."""
MODULE = "github.com/NVIDIA/KAI-scheduler"
SOURCES = (PinnedSource(MODULE, "kai-scheduler-v0.13.0.tar.gz",
                        "518caaa10fcf32f689173863c06705881c37a9645d8dbeaa8b595c464e83f065", ""),)
BINARY = "kai-scheduler"
HELPERS = ("binder", "podgrouper", "queuecontroller", "podgroupcontroller")
"""The other commands built beside the scheduler (``kai-<name>``)."""
CRDS = "crds"
"""Directory beside the binary holding KAI's CRDs."""

SCHEDULER_NAME = "kai-scheduler"
"""The schedulerName kwokbench runs KAI under (its default, ``constants.DefaultSchedulerName``)."""
QUEUE_LABEL = "kai.scheduler/queue"
POD_GROUP_ANNOTATION = "pod-group-name"
"""The pod annotation naming its PodGroup (``constants.PodGroupAnnotationForPod``)."""
GANG_TEMPLATE = "kai-podgroup"
QUEUES_PATH = "/apis/scheduling.run.ai/v2/queues"
DEFAULT_PARENT, DEFAULT_LEAF = "default-parent-queue", "default-queue"
PODGROUPCONTROLLER_METRICS_PORT = 8080
"""podgroupcontroller v0.13.0 parses ``-metrics-bind-address`` but never hands it to its manager
(``cmd/podgroupcontroller/app/app.go``): controller-runtime's default, :8080, is where its /metrics always are."""
UNLIMITED_CLIENT = 100_000
KAI_CLIENT = (50, 300)
"""KAI's own client QPS/burst (every command's ``qps``/``burst`` default)."""
CONFIG_KEYS = frozenset({"actions", "tiers", "queueDepthPerAction", "usageDBConfig"})
"""The keys of KAI's scheduler configuration (``conf.SchedulerConfiguration``); it ignores any other."""
OWN_FLAGS = ("leader-elect", "scheduler-name", "listen-address", "plugin-server-port", "enable-profiler",
             "profiler-port", "qps", "burst", "scheduler-conf", "schedule-period", "namespace")
"""Scheduler flags kwokbench sets itself."""
HELPER_OWN_FLAGS = ("kubeconfig", "leader-elect", "scheduler-name", "qps", "burst", "health-probe-bind-address",
                    "metrics-bind-address", "metrics-listen-address", "enable-webhook", "enable-podgroup-webhook")
"""Flags of the other processes kwokbench sets itself."""
Quantity = str | int | float


# ---- its settings ----------------------------------------------------------------------------------


class KaiResources(BaseModel):
    """One of a queue's quota or limit: CPU in cores (or a quantity: 500m), memory as a quantity (64Gi), GPUs
    (fractions allowed); -1 is unlimited."""

    model_config = ConfigDict(extra="forbid")

    cpu: Quantity | None = Field(None, description="CPU cores (8, 0.5, 500m) or -1 (unlimited).")
    memory: Quantity | None = Field(None, description="Memory as a quantity with its unit (64Gi, 512Mi) or -1.")
    gpu: float | None = Field(None, description="GPUs (0.5 is half a GPU) or -1.")

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, v: Quantity | None) -> Quantity | None:
        if v is not None and _amount(v) is None:
            raise ValueError(f"{v!r} is not a CPU amount (cores: 8, 0.5, 500m; or -1, unlimited)")
        return v

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: Quantity | None) -> Quantity | None:
        if v is None or str(v).strip() in ("-1", "0"):
            return v
        if isinstance(v, int | float) or re.fullmatch(r"[0-9.]+", str(v).strip()):
            raise ValueError(f"{v!r}: give memory as a quantity with its unit (64Gi, 512Mi) or -1 (a bare number "
                             "would be bytes)")
        if _amount(v) is None:
            raise ValueError(f"{v!r} is not a memory quantity (64Gi, 512Mi) or -1")
        return v

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, v: float | None) -> float | None:
        if v is not None and v != -1 and v < 0:
            raise ValueError(f"{v!r}: GPUs are >= 0, or -1 (unlimited)")
        return v

    def kai_units(self, default: float) -> dict[str, float]:
        """In KAI's units: millicpus, megabytes (10^6 bytes), GPUs; ``default`` where not given."""
        out = {}
        for r, scale in (("cpu", 1000.0), ("memory", 1e-6), ("gpu", 1.0)):
            v = getattr(self, r)
            amount = default if v is None else _amount(v)
            assert amount is not None
            out[r] = amount if amount == -1 else round(amount * scale, 6)
        return out


def _amount(v: Quantity) -> float | None:
    """A non-negative quantity as a number (or -1); None when it is neither."""
    try:
        n = quantity(v)
    except ValueError:
        return None
    return n if n == -1 or n >= 0 else None


class KaiQueueSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, description=(
        "Queue name (a Kubernetes object name). A queue no other queue names as parent is a leaf: workloads are "
        "submitted to leaves."))
    parent: str | None = Field(None, description="The parent queue (one of these queues); none: a top-level queue.")
    quota: KaiResources = Field(default_factory=KaiResources, description=(
        "The resources the queue deserves (KAI's quota), e.g. {cpu: 40, memory: 160Gi, gpu: 0}; not given: 0."))
    limit: KaiResources = Field(default_factory=KaiResources, description=(
        "The most it may use, over-quota included (KAI's limit); not given: -1, unlimited."))
    over_quota_weight: float = Field(1, ge=0, description=(
        "Its weight when resources beyond the quotas are shared (every resource)."))
    priority: int | None = Field(None, description=(
        "Queue priority (KAI's default 100): over-quota resources go to higher priorities first."))


class KaiConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queues: list[KaiQueueSpec] = Field(default_factory=list, description=(
        "scheduling.run.ai/v2 Queues created before KAI starts. Default: KAI's installation defaults, "
        "default-parent-queue and its leaf default-queue, both unlimited."))
    config: dict[str, Any] | None = Field(None, description=(
        "KAI's scheduler configuration (--scheduler-conf): actions (e.g. \"allocate, reclaim\"), tiers of plugins, "
        "queueDepthPerAction; what it leaves out is KAI's default. Default: KAI's built-in configuration."))
    config_file: str | None = Field(None, description="The same as a YAML file (relative to the scenario).")
    schedule_period: str = Field("1s", pattern=r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", description=(
        "Time between two scheduling sessions (--schedule-period, a Go duration; KAI's default 1s)."))
    status_controllers: bool = Field(True, description=(
        "Also run KAI's queuecontroller and podgroupcontroller, which keep Queue and PodGroup status current (as "
        "KAI deploys them; their writes count). The scheduler does not need them: false measures without."))
    scheduler_args: list[str] = Field(default_factory=list, description=(
        "More scheduler flags, e.g. --detailed-fit-errors=true (not those kwokbench sets)."))
    process_args: dict[Literal["binder", "podgrouper", "queuecontroller", "podgroupcontroller"], list[str]] = Field(
        default_factory=dict, description=(
            "More flags for KAI's other processes, by process: e.g. {binder: [--max-concurrent-reconciles=100], "
            "podgrouper: [-max-concurrent-reconciles=50]} as KAI's scale tests raise them (not the flags kwokbench "
            "sets: kubeconfig, leader election, scheduler name, client limits, probe and metrics addresses)."))

    @model_validator(mode="after")
    def _consistent(self) -> KaiConfig:
        if self.config is not None and self.config_file:
            raise ValueError("kai: give config or config_file, not both")
        if self.config is not None:
            config_problem(self.config, "kai.config")
        names = [q.name for q in self.queues]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"kai.queues: {', '.join(dup)} defined twice")
        parents = {q.name: q.parent for q in self.queues}
        for q in self.queues:
            if q.parent is not None and q.parent not in parents:
                raise ValueError(f"kai.queues: {q.name}'s parent {q.parent} is not one of the queues "
                                 f"({', '.join(names)}); KAI would drop {q.name} and its children silently")
            seen, p = {q.name}, q.parent
            while p is not None:
                if p in seen:
                    raise ValueError(f"kai.queues: {q.name} is its own ancestor (parents form a cycle)")
                seen.add(p)
                p = parents.get(p)
            for r in ("cpu", "memory", "gpu"):
                quota, limit = q.quota.kai_units(0)[r], q.limit.kai_units(-1)[r]
                if limit != -1 and (quota == -1 or quota > limit):
                    raise ValueError(f"kai.queues: {q.name}: {r} quota {getattr(q.quota, r)} is above its limit "
                                     f"{getattr(q.limit, r)}")
        for a in self.scheduler_args:
            flag = a.lstrip("-").split("=", 1)[0]
            if not a.startswith("--") or flag in OWN_FLAGS:
                raise ValueError(f"kai.scheduler_args: {a!r}: " + (f"kwokbench sets --{flag} itself" if
                                                                    flag in OWN_FLAGS else "flags start with --"))
        for role, args in self.process_args.items():
            if role in ("queuecontroller", "podgroupcontroller") and not self.status_controllers:
                raise ValueError(f"kai.process_args.{role}: the {role} does not run with status_controllers: false")
            for a in args:
                flag = a.lstrip("-").split("=", 1)[0]
                if not a.startswith("-") or flag in HELPER_OWN_FLAGS:
                    raise ValueError(f"kai.process_args.{role}: {a!r}: " + (
                        f"kwokbench sets -{flag} itself" if flag in HELPER_OWN_FLAGS
                        else "not a flag (give each as --name=value)"))
        return self

    def leaves(self) -> list[str]:
        """The leaf queues workloads may be submitted to."""
        qs = self.queues or default_queues()
        parents = {q.parent for q in qs}
        return [q.name for q in qs if q.name not in parents]


def config_problem(doc: Any, where: str) -> None:
    """ValueError when ``doc`` is not KAI's scheduler configuration (a mapping of its keys)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: KAI's scheduler configuration is a mapping (actions, tiers, …)")
    unknown = sorted(set(doc) - CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{where}: {unknown[0]!r} is not a key of KAI's scheduler configuration (one of: "
                         f"{', '.join(sorted(CONFIG_KEYS))}); KAI would ignore it")


def default_queues() -> list[KaiQueueSpec]:
    """KAI's installation defaults (``examples/quickstart/default-queues.yaml``): a parent and its leaf, no
    quota, no limit."""
    return [KaiQueueSpec(name=DEFAULT_PARENT), KaiQueueSpec(name=DEFAULT_LEAF, parent=DEFAULT_PARENT)]


class KaiWorkloadSpec(BaseModel):
    """How a KAI variant sees this phase: the leaf queue its pods are submitted to (other kinds ignore it)."""

    model_config = ConfigDict(extra="forbid")

    queue: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description=(
        "The leaf queue of this phase's pods (their kai.scheduler/queue label, the gang's PodGroup spec.queue). "
        "Default: the variant's only leaf queue (default-queue with KAI's default queues)."))


class KaiSpec(SchedulerSpec):
    """A ``binary: kai`` variant: KAI-Scheduler serves the schedulerName ``kai-scheduler`` and is configured by its
    ``kai:`` block (client limits as every kind's)."""

    SERVES = SCHEDULER_NAME
    binary: Literal["kai"] = Field("kai", description="NVIDIA KAI-Scheduler, built from its pinned source "
                                                      "(`kwokbench tools install kai`).")
    kai: KaiConfig = Field(default_factory=KaiConfig, description=(
        "KAI's queues (scheduling.run.ai/v2 Queue objects), its scheduler configuration and schedule period. "
        "Default: KAI's default queues and configuration."))

    @model_validator(mode="after")
    def _name(self) -> KaiSpec:
        if self.scheduler_name not in (None, SCHEDULER_NAME):
            raise ValueError(f"scheduler {self.name}: KAI runs as schedulerName {SCHEDULER_NAME} only; drop "
                             "scheduler_name")
        return self


def queue_objects(spec: KaiConfig) -> list[dict[str, Any]]:
    """The Queue objects of the variant, parents first (KAI's units: millicpus, megabytes, GPUs)."""
    qs = spec.queues or default_queues()
    depth = {q.name: 0 for q in qs}
    parents = {q.name: q.parent for q in qs}
    for name in depth:
        p = parents[name]
        while p is not None:
            depth[name] += 1
            p = parents[p]
    out = []
    for q in sorted(qs, key=lambda q: depth[q.name]):
        quota, limit = q.quota.kai_units(0), q.limit.kai_units(-1)
        res = {r: {"quota": quota[r], "limit": limit[r], "overQuotaWeight": q.over_quota_weight}
               for r in ("cpu", "gpu", "memory")}
        body: dict[str, Any] = {"resources": res}
        if q.parent:
            body["parentQueue"] = q.parent
        if q.priority is not None:
            body["priority"] = q.priority
        out.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                    "metadata": {"name": q.name, "labels": {"app.kubernetes.io/managed-by": "kwokbench"}},
                    "spec": body})
    return out


def scheduler_config(spec: KaiConfig, base: Path) -> dict[str, Any] | None:
    """The scheduler configuration the variant gives (its ``config``, or its ``config_file`` read), None for KAI's
    built-in default."""
    if spec.config_file is None:
        return spec.config
    path = Path(spec.config_file).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ScenarioError(f"kai.config_file {spec.config_file}: {e.strerror or e} (relative to {base})") from e
    except yaml.YAMLError as e:
        raise ScenarioError(f"kai.config_file {spec.config_file}: not YAML: {str(e).splitlines()[0]}") from e
    try:
        config_problem(doc, f"kai.config_file {spec.config_file}")
    except ValueError as e:
        raise ScenarioError(str(e)) from e
    assert isinstance(doc, dict)
    return doc


def has_snapshot_plugin(config: dict[str, Any] | None) -> bool:
    """Whether the scheduler runs its ``snapshot`` plugin (KAI's default tiers do; tiers left out are the
    default's)."""
    tiers = (config or {}).get("tiers") or []
    if not tiers:
        return True
    return any(p.get("name") == "snapshot" for t in tiers if isinstance(t, dict) for p in t.get("plugins") or []
               if isinstance(p, dict))


def client_limits(qps_limits: bool, client_qps: float | None, client_burst: int | None) -> tuple[int, int]:
    """Every KAI process's client QPS/burst: the variant's, else unlimited (as kube-scheduler's) unless the
    scenario keeps the components' default limits (then KAI's own, 50/300)."""
    if client_qps is not None:
        return max(1, int(client_qps)), int(client_burst or client_qps)
    return KAI_CLIENT if qps_limits else (UNLIMITED_CLIENT, UNLIMITED_CLIENT)


# ---- its build, from the pinned source -------------------------------------------------------------


def ldflags(version: str = VERSION) -> str:
    """As KAI's Makefile stamps it (``build/makefile/golang.mk``), the date fixed: the scheduler prints it at start."""
    pkg = f"{MODULE}/pkg/scheduler/version"
    return (f"-s -w -X {pkg}.gitVersion={version} -X {pkg}.gitCommit=5d35eca -X {pkg}.gitTreeState=clean "
            f"-X {pkg}.buildDate=2026-03-02T00:00:00Z")


def build_commands(by: dict[str, Path], out: Path) -> list[list[str]]:
    """Run in the extracted archive: the scheduler as ``out``, the other commands beside it."""
    del by
    build = ["go", "build", "-trimpath", "-ldflags", ldflags()]
    return [["go", "mod", "download"],
            [*build, "-o", str(out), "./cmd/scheduler"],
            *([*build, "-o", str(out.parent / f"kai-{c}"), f"./cmd/{c}"] for c in HELPERS)]


def copy_crds(by: dict[str, Path], dest: Path) -> None:
    src = by[MODULE] / "deployments" / "kai-scheduler" / "crds"
    (dest / CRDS).mkdir()
    for f in sorted(src.glob("*.yaml")):
        shutil.copyfile(f, dest / CRDS / f.name)


RECIPE = SourceBuild("kai", VERSION, KUBERNETES, SOURCES, BINARY, MODULE, build_commands, copy_crds)


def crd_files() -> list[Path]:
    return sorted((RECIPE.path().parent / CRDS).glob("*.yaml"))


def fatal_line(log: Path) -> str:
    """Why a KAI process stopped, from its log: the last error its zap logger wrote (console or JSON), a Go
    panic, else its last line (the commands print their fatal error last)."""
    with contextlib.suppress(OSError):
        text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))  # the scheduler logs in colour
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for ln in reversed(lines[-40:]):
            if ln.startswith(("panic: ", "fatal error: ")):
                return ln[:400]
            if ln.startswith("{") and '"level"' in ln:
                with contextlib.suppress(ValueError):
                    d = json.loads(ln)
                    if str(d.get("level", "")).lower() in ("error", "fatal", "panic", "dpanic"):
                        return " ".join(str(x) for x in (d.get("msg"), d.get("error")) if x)[:400]
            elif re.match(r"^\S+\s+(ERROR|FATAL|PANIC|DPANIC)\s", ln):
                return re.sub(r"\s+", " ", ln.split(None, 2)[2])[:400]
    return re.sub(r"\s+", " ", processes.telling_line(log))


# ---- its metrics and report rows (pure, over a stored run) ------------------------------------------

KEEP: dict[str, Any] = {
    "kai_e2e_scheduling_latency_milliseconds": None,
    "kai_open_session_latency_milliseconds": None,
    "kai_close_session_latency_milliseconds": None,
    "kai_action_scheduling_latency_milliseconds": None,
    "kai_plugin_scheduling_latency_milliseconds": lambda lb: lb.get("OnSession") == "OnSessionOpen",
    "kai_task_scheduling_latency_milliseconds": None,
    "kai_task_bind_latency_milliseconds": None,
    "kai_podgroups_scheduled_by_action": None,
    "kai_podgroups_acted_on_by_action": None,
    "kai_total_preemption_attempts": None,
    "kai_queue_fair_share_cpu_cores": None,
    "kai_queue_fair_share_memory_gb": None,
    "kai_queue_fair_share_gpu": None,
}
"""Families kept from a scheduler component's scrapes (``kai_``: the scheduler's --metrics-namespace)."""


def _in_window(s: pd.DataFrame, window: tuple[float, float] | None) -> pd.DataFrame:
    """Samples from the first pod created to the scrape after the last was scheduled (a gauge shows the last
    session, which ends after the pods it bound)."""
    if window is None or not len(s):
        return s
    after = s.loc[s["t"] > window[1], "t"]
    end = float(after.min()) if len(after) else float(window[1])
    return s[(s["t"] >= window[0]) & (s["t"] <= end)]


def gauge_seconds(series: pd.DataFrame, component: str, name: str, window: tuple[float, float] | None,
                  by: str | None = None) -> dict[str, Any]:
    """A milliseconds gauge sampled each scrape, over the window, in seconds: mean, p99 and max of the samples
    (per label ``by``)."""
    s = _in_window(series[(series["component"] == component) & (series["name"] == name)], window)
    if not len(s):
        return {}
    s = s.assign(key=s["labels"].map(lambda x: json.loads(x).get(by, "") if by else ""))
    out: dict[str, Any] = {}
    for key, g in s.groupby("key"):
        v = g["value"].to_numpy(dtype=np.float64) / 1000
        out[str(key)] = {"samples": len(v), "mean": float(v.mean()), "p99": float(np.percentile(v, 99)),
                         "max": float(v.max())}
    return out if by else out[""]


def histogram_seconds(series: pd.DataFrame, component: str, family: str) -> dict[str, Any]:
    """A milliseconds histogram's quantiles in seconds, with the share of observations above its highest bucket
    (KAI's end at 2.56 s: a quantile there is a floor, not a value)."""
    from kwokbench.metrics.derive import histogram_quantiles

    h = histogram_quantiles(series, component, family)
    if not h:
        return {}
    out = {k: (v / 1000 if v is not None and k != "count" else v) for k, v in h.items()}
    b = series[(series["component"] == component) & (series["name"] == f"{family}_bucket")]
    le = b["labels"].map(lambda x: float(json.loads(x)["le"]))
    top = float(le[np.isfinite(le)].max()) if np.isfinite(le).any() else None
    out["top_bucket"] = top / 1000 if top is not None else None
    if top is not None and h.get("count"):
        t0, t1 = b["t"].min(), b["t"].max()

        def count(bound: float, t: float) -> float:
            return float(b.loc[(le == bound) & (b["t"] == t), "value"].sum())
        above = (count(np.inf, t1) - count(np.inf, t0)) - (count(top, t1) - count(top, t0))
        out["above_top_bucket_share"] = above / h["count"]
    return out


def queue_fair_shares(series: pd.DataFrame, component: str, window: tuple[float, float] | None) -> dict[str, Any]:
    """Per queue: its fair share (CPU cores, memory GB, GPUs) at the end and at its peak, and the CPU share over
    time (seconds from the first pod created)."""
    names = {"cpu": "kai_queue_fair_share_cpu_cores", "memory_gb": "kai_queue_fair_share_memory_gb",
             "gpu": "kai_queue_fair_share_gpu"}
    q = series[(series["component"] == component) & series["name"].isin(list(names.values()))]
    if not len(q):
        return {}
    q = q.assign(queue=q["labels"].map(lambda x: json.loads(x).get("queue_name", "")),
                 res=q["name"].map({v: k for k, v in names.items()}))
    t0 = float(window[0]) if window else float(q["t"].min())
    out: dict[str, Any] = {}
    for name, qd in q.groupby("queue"):
        wide = qd.pivot_table(index="t", columns="res", values="value", aggfunc="sum").sort_index()
        out[str(name)] = {"last": {str(r): float(wide[r].iloc[-1]) for r in wide.columns},
                          "peak": {str(r): float(wide[r].max()) for r in wide.columns},
                          "series": {"t": (wide.index.to_numpy(dtype=float) - t0).round(2).tolist(),
                                     "cpu": wide["cpu"].round(3).tolist() if "cpu" in wide else []}}
    return out


def kai_section(series: pd.DataFrame, component: str, window: tuple[float, float] | None,
                proc: dict[str, Any]) -> dict[str, Any] | None:
    """The summary's ``kai`` section (None when the component served no KAI metrics)."""
    from kwokbench.metrics.derive import counter_increase

    mine = series[(series["component"] == component) & series["name"].str.startswith("kai_")]
    if not len(mine):
        return None
    plugins = gauge_seconds(series, component, "kai_plugin_scheduling_latency_milliseconds", window, by="plugin")
    return {
        "component": component,
        "pod_scheduling_seconds": histogram_seconds(series, component, "kai_task_scheduling_latency_milliseconds"),
        "bind_request_seconds": histogram_seconds(series, component, "kai_task_bind_latency_milliseconds"),
        "session_seconds": gauge_seconds(series, component, "kai_e2e_scheduling_latency_milliseconds", window),
        "open_session_seconds": gauge_seconds(series, component, "kai_open_session_latency_milliseconds", window),
        "actions_seconds": gauge_seconds(series, component, "kai_action_scheduling_latency_milliseconds", window,
                                         by="action"),
        "plugins_seconds": dict(sorted(plugins.items(), key=lambda kv: -kv[1]["mean"])),
        # the parser names a counter's samples <family>_total (KAI's counters have no such suffix)
        "podgroups_scheduled": counter_increase(series, component, "kai_podgroups_scheduled_by_action_total",
                                                by="action"),
        "podgroups_acted_on": counter_increase(series, component, "kai_podgroups_acted_on_by_action_total",
                                               by="action"),
        "preemption_attempts": sum(counter_increase(series, component,
                                                    "kai_total_preemption_attempts_total").values()),
        "queues": queue_fair_shares(series, component, window),
        "cpu_seconds": proc.get("cpu_seconds"),
    }


def kai_rows(k: dict[str, Any] | None, who: str = "KAI") -> list[list[str]]:
    """KAI's own metrics: its pods' scheduling latency and BindRequest writes, sessions, actions and plugins, pod
    groups per action, queue fair shares, its CPU."""
    if not k:
        return []
    pod, bind = k.get("pod_scheduling_seconds") or {}, k.get("bind_request_seconds") or {}
    rows = [[f"{who} pod created → BindRequest written mean / p50 / p99 (its histogram)",
             f"{ms(pod.get('mean'))} / {_quantile(pod, 'p50')} / {_quantile(pod, 'p99')} over "
             f"{pod.get('count', 0):.0f} pods"
             + (f"; {pod['above_top_bucket_share'] * 100:.0f}% above its top bucket" if
                pod.get("above_top_bucket_share") else "")],
            [f"{who} BindRequest write mean / p99", f"{ms(bind.get('mean'))} / {_quantile(bind, 'p99')}"]]
    sess = k.get("session_seconds") or {}
    if sess:
        rows.append([f"{who} session mean / max (sampled each second)",
                     f"{ms(sess.get('mean'))} / {ms(sess.get('max'))} over {sess.get('samples')} samples"])
    acts = k.get("actions_seconds") or {}
    if acts:
        rows.append([f"{who} actions, mean per session",
                     ", ".join(f"{a} {ms(v['mean'])}" for a, v in sorted(acts.items(), key=lambda kv: -kv[1]["mean"]))])
    plugins = k.get("plugins_seconds") or {}
    if plugins:
        slow = [f"{p} {ms(v['mean'])}" for p, v in list(plugins.items())[:3] if v["mean"] >= 0.0005]
        rows.append([f"{who} slowest plugins at session open, mean",
                     ", ".join(slow) or f"each of {len(plugins)} under 1 ms"])
    sched, acted = k.get("podgroups_scheduled") or {}, k.get("podgroups_acted_on") or {}
    if sched or acted:
        rows.append([f"{who} pod groups scheduled / acted on, by action",
                     ", ".join(f"{a} {sched.get(a, 0):.0f} / {acted.get(a, 0):.0f}"
                               for a in sorted(set(sched) | set(acted)))
                     + f"; preemption attempts {k.get('preemption_attempts', 0):.0f}"])
    for q, share in sorted((k.get("queues") or {}).items()):
        last, peak = share.get("last") or {}, share.get("peak") or {}
        rows.append([f"{who} queue {q}: fair share CPU last / peak",
                     f"{fmt(last.get('cpu'), ' cores', 1)} / {fmt(peak.get('cpu'), ' cores', 1)}"])
    if k.get("cpu_seconds") is not None:
        rows.append([f"{who} scheduler CPU", fmt(k["cpu_seconds"], " s", 2)])
    return rows


def _quantile(h: dict[str, Any], q: str) -> str:
    """A histogram quantile; one in its top bucket is only a floor (``≥ 2560 ms``)."""
    v, top = h.get(q), h.get("top_bucket")
    if v is not None and top is not None and v >= top and h.get("above_top_bucket_share"):
        return f"≥ {ms(top)}"
    return ms(v)


# ---- the kind --------------------------------------------------------------------------------------


@dataclass
class Helper:
    """One of KAI's processes besides the scheduler, as started here."""

    role: str
    component: str
    argv: list[str]
    ready_url: str | None
    """Answers 200 once it runs (its health probe, or its /metrics when it registers no health check)."""
    metrics_url: str | None


class Kai(Scheduler):
    kind = "kai"
    title = "KAI"
    settings = KaiSpec
    workload_settings = KaiWorkloadSpec
    fairness_from: ClassVar[Mapping[str, tuple[str, ...]]] = {"kai": ("binary", "kai")}
    keep = KEEP
    recipe = RECIPE
    section = staticmethod(kai_section)
    rows = staticmethod(kai_rows)
    replaces_kube_scheduler = True
    variant: KaiSpec

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.spec = self.variant.kai
        self._component = own_component_name(self.name) if setup.concurrent else "kube-scheduler"
        c = setup.scenario.cluster
        self.nodes = 0 if setup.attached else sum(g.count for g in c.node_groups)
        """Nodes its cache must hold before it is ready."""
        self.qps, self.burst = client_limits(c.qps_limits, self.variant.client_qps, self.variant.client_burst)
        self._started: list[str] = []
        """Components started on the cluster, in start order (stopped in reverse)."""
        self._helpers: list[Helper] = []
        self._since: dict[str, float] = {}
        """When each process was started."""

    def helper_component(self, role: str) -> str:
        """pid-file, log and metrics name of one of its other processes."""
        return f"kai-{role}-{self.name}" if self.setup.concurrent else f"kai-{role}"

    def check(self) -> None:
        if self.setup.attached is not None:
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts KAI only on clusters it creates")
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

    def build(self, rep: Reporter) -> None:
        self.binary = RECIPE.build(None, rep)

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
        if not isinstance(info, ClusterInfo):
            raise ScenarioError(f"scheduler {self.name}: kwokbench starts KAI only on clusters it creates")
        if self.binary is None:
            self.build(rep)
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

    def version(self) -> str:
        return RECIPE.version_line()

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

    def stop(self) -> None:
        if self._info is not None:
            for component in reversed(self._started):
                own.stop(self._info, component)
            self._started = []
            self._info = None


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
