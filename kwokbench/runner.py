"""``kwokbench run``: scenario → cluster → load → timeline → store, for every scheduler variant.

Record first, analyse later: the run writes raw per-request and per-pod records; the summary is a
pure function of them (:mod:`kwokbench.summary`). Whatever happens (a timeout, a bad template
discovered late, Ctrl-C), what was measured is stored and ``meta.json`` says how the run ended.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kwokbench.chaos import COMPONENT, Chaos, pods_lost, rate_from_pods, recovery, rescheduling
from kwokbench.cluster import ClusterInfo, ClusterOptions, Kwokctl, NodeGroup, attach, bring_up, watchdog
from kwokbench.cluster.api import Api
from kwokbench.cluster.attach import AttachedCluster
from kwokbench.cluster.kwokctl import UNLIMITED_BURST, UNLIMITED_QPS, free_port
from kwokbench.cluster.nodes import wait_service_account
from kwokbench.cluster.objects import apply_crds, cluster_state, create_all
from kwokbench.errors import ClusterError, KwokbenchError, ScenarioError
from kwokbench.load.pacer import schedule, target_rate
from kwokbench.load.submitter import RequestLog, Submission, SubmitJob
from kwokbench.load.watcher import RUN_LABEL, STATES, WORKLOAD_LABEL, Watcher
from kwokbench.metrics.derive import derive
from kwokbench.metrics.prometheus import query_run
from kwokbench.metrics.scrape import Scraper, cluster_endpoints
from kwokbench.placement import placement
from kwokbench.progress import Reporter, Silent
from kwokbench.scenario import PLUGINS_BINARY, STOCK_BINARY, Scenario, SchedulerSpec, WorkloadSpec
from kwokbench.store import BINDING_RATE, METRICS, NODES, PODS, REQUESTS, SUMMARY, RunDir, host_info, load_run, owner
from kwokbench.summary import POD_COLUMNS, summarize, with_columns
from kwokbench.templates import ManifestFactory, resolve_template
from kwokbench.toolchain import Toolchain, versions
from kwokbench.toolchain.plugin import build_scheduler, plugin_dir

AnyCluster = ClusterInfo | AttachedCluster
WAIT_STATE = {"created": "created", "scheduled": "scheduled", "running": "running", "completed": "finished"}
STOCK_SCHEDULER_QPS, STOCK_SCHEDULER_BURST = 50, 100


@dataclass
class RunOptions:
    out: Path = Path("reports")
    cluster: str | None = None
    """Reuse this existing kwokbench cluster instead of creating one per variant."""
    keep_cluster: bool = False
    submit_workers: int = 1
    scrape_interval: float = 1.0
    """Seconds between /metrics scrapes of every component (0 disables scraping)."""
    variants: list[str] = field(default_factory=list)
    """Only these scheduler variants (default: all)."""
    repeat: int = 1
    """Runs per variant, each on a fresh cluster; variants are interleaved (A B A B…) so drift of
    the machine over time does not favour one of them."""


@dataclass
class VariantRun:
    path: Path
    status: str
    summary: dict[str, Any] | None


def _resolve(base: Path, p: str | None) -> Path | None:
    if p is None:
        return None
    path = Path(p).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ScenarioError(f"scheduler config {p}: no such file (relative to {base})")
    return path


def _factories(scenario: Scenario, base: Path, run_label: str,
               attached: AttachedCluster | None = None) -> list[ManifestFactory]:
    """Render every workload template once before any cluster exists: bad templates fail fast.

    On an attached cluster every object also carries the attachment's label (``down`` deletes by it)
    and its pods are pinned to the attachment's fake nodes."""
    out = []
    for w in scenario.workloads:
        # the run label in every name: a reused cluster may still hold the objects of earlier runs
        f = ManifestFactory(resolve_template(w.template, base), w.params, f"{w.name}-{run_label}",
                            labels={RUN_LABEL: run_label, WORKLOAD_LABEL: w.name,
                                    **(attached.labels if attached else {})},
                            gang_size=w.gang.size if w.gang else 0,
                            node_selector=attached.labels if attached else {})
        if f.pods_per_object() == 0:
            raise ScenarioError(f"workload {w.name}: template {w.template} makes a {f.kind}, not a Pod or Job")
        if w.gang and f.kind != "Pod":
            raise ScenarioError(f"workload {w.name}: gang members must be Pods, template {w.template} makes a {f.kind}")
        if w.gang:
            _gang_factory(w, f, base)
        out.append(f)
    return out


def _gang_factory(w: WorkloadSpec, members: ManifestFactory, base: Path) -> ManifestFactory:
    """The PodGroups of a gang phase: PodGroup k is named like the group label of members k*size…"""
    assert w.gang is not None
    g = ManifestFactory(resolve_template(w.gang.template, base),
                        {"min_member": w.gang.min_member or w.gang.size,
                         "schedule_timeout_seconds": w.gang.schedule_timeout_seconds},
                        members.group_prefix, labels=dict(members.labels))
    if g.kind != "PodGroup":
        raise ScenarioError(f"workload {w.name}: gang.template {w.gang.template} makes a {g.kind}, not a PodGroup")
    return g


def variant_binary(variant: SchedulerSpec, base: Path) -> Path | None:
    """The plugin directory of a variant whose ``binary`` is one (checked), else None."""
    if variant.binary in (STOCK_BINARY, PLUGINS_BINARY):
        return None
    path = Path(variant.binary).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_dir():
        raise ScenarioError(f"scheduler {variant.name}: binary {variant.binary!r} is neither {STOCK_BINARY}, "
                            f"{PLUGINS_BINARY} nor a plugin directory (relative to {base})")
    plugin_dir(path)
    return path


def scheduler_binaries(variants: list[SchedulerSpec], base: Path, tc: Toolchain,
                        rep: Reporter) -> dict[str, Path | None]:
    """Variant name → the kube-scheduler it runs (None: the control plane's own)."""
    out: dict[str, Path | None] = {}
    for v in variants:
        d = variant_binary(v, base)
        if d is not None:
            out[v.name] = build_scheduler(d, rep)
        elif v.binary == PLUGINS_BINARY:
            out[v.name] = tc.path("kube-scheduler", "scheduler-plugins")
        else:
            out[v.name] = None
    return out


def fairness_manifest(scenario: Scenario, variant: SchedulerSpec, opts: ClusterOptions) -> dict[str, Any]:
    """Everything that changes how fast a scheduler can go besides the scheduler itself."""
    unlimited = not scenario.cluster.qps_limits
    qps = opts.scheduler_client_qps or (UNLIMITED_QPS if unlimited else STOCK_SCHEDULER_QPS)
    burst = opts.scheduler_client_burst or (max(int(opts.scheduler_client_qps), 1) if opts.scheduler_client_qps
                                            else UNLIMITED_BURST if unlimited else STOCK_SCHEDULER_BURST)
    return {
        "scheduler_client_qps": qps,
        "scheduler_client_burst": burst,
        "apiserver_max_requests_inflight": 0 if unlimited else 400,
        "apiserver_max_mutating_requests_inflight": 0 if unlimited else 200,
        "apiserver_priority_and_fairness": not unlimited,
        "etcd_unsafe_no_fsync": True,
        "gogc_apiserver_etcd": opts.gogc,
        "kwok_parallelism": opts.kwok_parallelism,
        "extra_args": [*scenario.cluster.extra_args, *[f"kube-scheduler={a}" for a in variant.extra_args]],
        "scheduler_config": variant.config,
        "scheduler_binary": variant.binary,
        "scheduler_binary_path": str(opts.scheduler_binary) if opts.scheduler_binary else "",
        # the URL's port differs per run and is not a setting
        "extenders": [{k: v for k, v in e.items() if k != "urlPrefix"} for e in opts.scheduler_extenders],
        "crds": sorted({"podgroups.scheduling.x-k8s.io"} if any(w.gang for w in scenario.workloads) else set()),
    }


def check_scenario(scenario: Scenario, base: Path) -> None:
    """Everything that can be checked before a cluster exists: templates render, config files and plugin
    directories exist. Raises ScenarioError (one line) on the first problem."""
    _factories(scenario, base, "validate")
    for v in scenario.schedulers:
        _resolve(base, v.config)
        variant_binary(v, base)
    for g in scenario.cluster.node_groups:
        ManifestFactory(resolve_template(g.template, base), {**g.params, "group": g.name}, f"kb-{g.name}")


def run_scenario(scenario: Scenario, scenario_path: Path, opts: RunOptions,
                 reporter: Reporter | None = None, kwokctl: Kwokctl | None = None) -> list[VariantRun]:
    rep = reporter or Silent()
    k = kwokctl or Kwokctl()
    variants = [v for v in scenario.schedulers if not opts.variants or v.name in opts.variants]
    unknown = set(opts.variants) - {v.name for v in scenario.schedulers}
    if unknown:
        known = ", ".join(v.name for v in scenario.schedulers)
        raise ScenarioError(f"unknown scheduler variant(s) {', '.join(sorted(unknown))} (scenario has: {known})")
    if opts.cluster and len(variants) > 1:
        raise ScenarioError("--cluster reuses one cluster, so it needs exactly one variant (use --variant)")
    base = scenario_path.parent
    check_scenario(scenario, base)
    if opts.cluster and any(v.extender for v in variants):
        raise ScenarioError("--cluster reuses a cluster whose scheduler is already configured; a variant with an "
                            "extender needs a fresh cluster (drop --cluster)")
    if opts.cluster and opts.repeat > 1:
        raise ScenarioError("--repeat needs a fresh cluster per run; it cannot be combined with --cluster")
    needs_plugins = any(v.binary == PLUGINS_BINARY for v in variants) or any(w.gang for w in scenario.workloads)
    k.toolchain.install("auto", rep, extras=("scheduler-plugins",) if needs_plugins else ())
    binaries = scheduler_binaries(variants, base, k.toolchain, rep)
    group = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = []
    for i in range(opts.repeat):
        for v in variants:
            if opts.repeat > 1:
                rep.info(f"[bold]repeat {i + 1}/{opts.repeat}, variant {v.name}[/]")
            results.append(run_variant(scenario, base, v, opts, rep, k, multi=len(variants) > 1,
                                       group={"id": group, "repeat": i, "of": opts.repeat},
                                       scheduler_binary=binaries[v.name]))
    return results


def cluster_options(scenario: Scenario, base: Path, variant: SchedulerSpec, name: str, tc: Toolchain,
                    scheduler_binary: Path | None = None, extender: Extender | None = None) -> ClusterOptions:
    """How a variant's cluster is created (the same for a fresh cluster per run and for a sweep's cluster)."""
    return ClusterOptions(
        name=name, qps_limits=scenario.cluster.qps_limits, scheduler_config=_resolve(base, variant.config),
        scheduler_binary=scheduler_binary, scheduler_client_qps=variant.client_qps,
        scheduler_client_burst=variant.client_burst,
        scheduler_extenders=[extender.config] if extender else [],
        # for every variant, so the default scheduler meets the same objects as Coscheduling
        crds=tc.scheduler_plugins_crds() if any(w.gang for w in scenario.workloads) else [],
        prometheus_port=free_port() if scenario.cluster.prometheus else None,
        extra_args=[*scenario.cluster.extra_args, *[f"kube-scheduler={a}" for a in variant.extra_args]])


def run_variant(scenario: Scenario, base: Path, variant: SchedulerSpec, opts: RunOptions, rep: Reporter,
                k: Kwokctl, multi: bool = False, group: dict[str, Any] | None = None,
                scheduler_binary: Path | None = None) -> VariantRun:
    attached = attach.get(k.home, opts.cluster) if opts.cluster else None
    if attached is not None:
        if any(e.action in COMPONENT for e in scenario.chaos):
            raise ScenarioError(f"--cluster {opts.cluster} is an attached cluster: kwokbench cannot restart its "
                                "components (node chaos actions work)")
        if any(w.gang for w in scenario.workloads):
            raise ScenarioError(f"--cluster {opts.cluster} is an attached cluster: kwokbench does not install the "
                                "PodGroup CRD there, so gang workloads cannot run")
    rundir = RunDir.create(opts.out, scenario.name, variant.name if multi else None)
    run_label = rundir.run_id.split("-")[1]
    factories = _factories(scenario, base, run_label, attached)
    cluster_name = opts.cluster or f"kb-{run_label}"
    extender = Extender(variant) if variant.extender and not opts.cluster else None
    copts = cluster_options(scenario, base, variant, cluster_name, k.toolchain, scheduler_binary, extender)
    phases: list[dict[str, Any]] = [
              {"name": w.name, "template": w.template, "count": w.count, "target_qps": target_rate(w.arrival),
               "pods_expected": w.count * f.pods_per_object(), "wait_for": w.wait_for,
               "labels": f.labels_of_pods(),
               "gang": {"size": w.gang.size, "min_member": w.gang.min_member or w.gang.size} if w.gang else None}
              for w, f in zip(scenario.workloads, factories, strict=True)]
    rundir.write_meta({
        "status": "running", "run_id": rundir.run_id, "run_label": run_label, "group": group or {},
        "started_at": datetime.now(UTC).isoformat(), "owner": owner(), "scenario": scenario.model_dump(mode="json"),
        "scenario_file": str(base), "variant": variant.model_dump(mode="json"),
        "toolchain": {"kwok": versions.KWOK, "kubernetes": versions.KUBERNETES, "etcd": versions.ETCD},
        "host": host_info(), "fairness": fairness_manifest(scenario, variant, copts), "phases": phases,
        "cluster": {"name": cluster_name, "reused": bool(opts.cluster),
                    "nodes": sum(g.count for g in scenario.cluster.node_groups)},
    })
    rep.info(f"run {rundir.path}")
    logs: list[pd.DataFrame] = []
    watcher: Watcher | None = None
    scraper: Scraper | None = None
    scrape_stats: dict[str, Any] = {}
    status, error = "failed", ""
    created_cluster = False
    guard: subprocess.Popen[bytes] | None = None
    info: AnyCluster | None = None
    chaos: Chaos | None = None
    try:
        if extender is not None:
            extender.start()
        if attached is not None:
            info = attached
        elif opts.cluster:
            if not k.exists(opts.cluster):
                raise ClusterError(f"--cluster {opts.cluster}: no such kwokbench cluster (see `kwokbench status`)")
            info = k.info(opts.cluster)
        else:
            groups = [NodeGroup(g.name, g.count, resolve_template(g.template, base), g.params)
                      for g in scenario.cluster.node_groups]
            info = bring_up(k, copts, groups, rep).cluster
            created_cluster = True
            guard = watchdog.start(cluster_name, k.home, rundir.path, opts.keep_cluster)
        rundir.update_meta(cluster={**read_cluster(info), "reused": bool(opts.cluster),
                                    "nodes": sum(g.count for g in scenario.cluster.node_groups)})
        _ensure_namespaces(info, {w.namespace for w in scenario.workloads}, attached.labels if attached else {})
        if any(w.gang for w in scenario.workloads) and opts.cluster:
            asyncio.run(apply_crds(info.credentials(), k.toolchain.scheduler_plugins_crds()))
        if opts.scrape_interval > 0:
            pids = {"kwok-controller": attached.kwok_pid} if attached else k.pids(info.name)
            scraper = Scraper(cluster_endpoints(info), pids, rundir.path, opts.scrape_interval,
                              pid_dir=None if attached else k.cluster_dir(info.name) / "pids")
            if not scraper.wait_started(60):
                raise ClusterError("the metrics scraper did not start within 60s")
        watcher = Watcher(info.credentials(), run_label, [w.name for w in scenario.workloads], rundir.path / PODS)
        if not watcher.wait_synced(60):
            raise ClusterError("the pod watch did not start within 60s")
        if scenario.chaos:
            chaos = Chaos(scenario.chaos, info, k, [])  # component actions were refused for attachments
            chaos.start()
        for i, (w, f) in enumerate(zip(scenario.workloads, factories, strict=True)):
            if w.gang:
                _create_podgroups(info, w, f, base, rep)
            log, timed_out = _run_phase(info, w, f, i, scenario.seed, opts, watcher, rep, phases[i])
            logs.append(_log_frame(log, w.name))
            phases[i].update(timed_out=timed_out, harness_cpu_seconds=log.cpu_seconds,
                             harness_setup_cpu_seconds=log.setup_cpu_seconds,
                             harness_start_cpu_seconds=log.start_cpu_seconds)
        status = "complete"
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user"
        raise
    except KwokbenchError as e:
        status, error = "failed", str(e)
        raise
    finally:
        watch_errors = watcher.stop() if watcher else []
        if scraper is not None:
            scrape_stats = scraper.stop()
        requests = pd.concat(logs, ignore_index=True) if logs else _log_frame(RequestLog.empty(0), "")
        rundir.write_frame(REQUESTS, requests)
        stored = load_run(rundir.path)
        expected = sum(p["pods_expected"] for p in phases)
        summary = summarize(stored.pods, requests, phases, expected)
        summary["watch_errors"] = watch_errors
        if info is not None and (created_cluster or opts.cluster):
            summary["placement"] = _placement(info, rundir, stored.pods, phases,
                                              {w.namespace for w in scenario.workloads}, rep)
        if extender is not None:
            summary["extender"] = extender.stop()
        if scraper is not None:
            summary.update(_metrics_summary(rundir, stored.pods, copts, scenario, scrape_stats))
        if attached is not None:
            present = set(attached.metrics_endpoints())
            summary["metrics_missing"] = [c for c in ("kube-scheduler", "kube-controller-manager", "etcd")
                                          if c not in present]
        if chaos is not None:
            events = chaos.stop()
            rundir.write_json("chaos.json", events)
            rate = pd.read_parquet(rundir.path / BINDING_RATE) if (rundir.path / BINDING_RATE).exists() \
                else rate_from_pods(stored.pods)
            cpods = with_columns(stored.pods, PLACEMENT_COLUMNS)
            affected = {n for e in events for n in e.get("nodes") or []}
            summary["chaos"] = {"events": recovery(events, rate, cpods),
                                "pods_lost": pods_lost(stored.pods, sum(p["pods_expected"] for p in phases)),
                                **rescheduling(cpods, phases, affected)}
        if copts.prometheus_port and created_cluster and isinstance(info, ClusterInfo) and len(stored.pods):
            rep.info("querying Prometheus for the independent binding-rate cross-check")
            prom = query_run(copts.prometheus_port, info.apiserver_port, float(stored.pods["created"].min()),
                             float(stored.pods["scheduled"].max()))
            rundir.write_json("prometheus.json", prom)
            summary["prometheus"] = {k: v for k, v in prom.items() if k != "series"}
        rundir.write_json(SUMMARY, summary)
        rundir.update_meta(status=status, error=error, ended_at=datetime.now(UTC).isoformat(), phases=phases)
        if created_cluster and not opts.keep_cluster:
            try:
                k.delete(cluster_name, rep)
            except KwokbenchError as e:
                rep.warn(f"could not delete cluster {cluster_name}: {e}")
        if guard is not None:
            guard.terminate()
            guard.wait(10)
    return VariantRun(rundir.path, status, summary)


def _placement(info: AnyCluster, rundir: RunDir, pods: pd.DataFrame, phases: list[dict[str, Any]],
               namespaces: set[str], rep: Reporter) -> dict[str, Any] | None:
    """Nodes and FailedScheduling reasons, read before the cluster goes; placement figures from them."""
    try:
        rows, messages = asyncio.run(cluster_state(info.credentials(), namespaces))
    except KwokbenchError as e:
        rep.warn(f"placement quality not measured: could not read nodes/events ({e})")
        return None
    nodes = pd.DataFrame(rows, columns=["name", "group", "cpu_m", "gpus", "pods"])
    rundir.write_frame(NODES, nodes)
    rundir.write_json("failed_scheduling.json", messages)
    return placement(with_columns(pods, PLACEMENT_COLUMNS), nodes, phases, messages)


PLACEMENT_COLUMNS: dict[str, type] = {**POD_COLUMNS, "namespace": str, "name": str, "workload": str, "node": str,
                                      "cpu_m": float, "gpus": float, "deleted": bool}


def _create_podgroups(info: AnyCluster, w: WorkloadSpec, members: ManifestFactory, base: Path,
                      rep: Reporter) -> None:
    assert w.gang is not None
    g = _gang_factory(w, members, base)
    n = w.count // w.gang.size
    with rep.status(f"{w.name}: creating {n} PodGroups (minMember {w.gang.min_member or w.gang.size})"):
        asyncio.run(create_all(info.credentials(), g.namespaced_path(w.namespace), [g.body(k) for k in range(n)]))


class Extender:
    """kwokbench's builtin extender (``python -m kwokbench.extender``), one per variant run."""

    def __init__(self, variant: SchedulerSpec) -> None:
        assert variant.extender is not None
        spec = variant.extender
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config: dict[str, Any] = {"urlPrefix": self.url, "weight": spec.weight, "enableHTTPS": False,
                                       "nodeCacheCapable": False, "httpTimeout": "30s"}
        if spec.filter:
            self.config["filterVerb"] = "filter"
        if spec.prioritize:
            self.config["prioritizeVerb"] = "prioritize"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "kwokbench.extender", "--port", str(self.port)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ClusterError(f"the extender exited at start (exit {self.proc.returncode})")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise ClusterError(f"the extender did not answer on {self.url} within {timeout:g}s")

    def stop(self) -> dict[str, Any]:
        stats: dict[str, Any] = {"url": self.url}
        if self.proc is None:
            return stats
        try:
            with urllib.request.urlopen(f"{self.url}/stats", timeout=5) as r:
                stats.update(json.loads(r.read()))
        except (OSError, ValueError) as e:
            stats["error"] = f"could not read the extender's stats: {e}"
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        return stats


def _metrics_summary(rundir: RunDir, pods: pd.DataFrame, copts: ClusterOptions, scenario: Scenario,
                     scrape_stats: dict[str, Any]) -> dict[str, Any]:
    """Parse the raw scrapes (after the run, off the hot path) into series and summary figures."""
    client_qps = UNLIMITED_QPS if not scenario.cluster.qps_limits else STOCK_SCHEDULER_QPS
    rate, series, section = derive(rundir.path, with_columns(pods, POD_COLUMNS), client_qps)
    rundir.write_frame(BINDING_RATE, rate)
    rundir.write_frame(METRICS, series)  # e.g. scheduler_pending_pods over time, per queue
    section["scrapes"] = scrape_stats
    return section


def read_cluster(info: AnyCluster) -> dict[str, Any]:
    """Where the cluster was, without any key material (paths only, never contents)."""
    return {"name": info.name, "kubeconfig": str(info.kubeconfig), "metrics": info.metrics_endpoints()}


def _ensure_namespaces(info: AnyCluster, namespaces: set[str], labels: dict[str, str]) -> None:
    async def go() -> None:
        async with Api(info.credentials()) as api:
            for ns in sorted(namespaces - {"default"}):
                await api.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns, "labels": labels}},
                               ok=(201, 409))
    asyncio.run(go())
    for ns in namespaces:
        asyncio.run(wait_service_account(info.credentials(), ns))


def _run_phase(info: AnyCluster, w: WorkloadSpec, f: ManifestFactory, i: int, seed: int, opts: RunOptions,
               watcher: Watcher, rep: Reporter, phase: dict[str, Any]) -> tuple[RequestLog, bool]:
    offsets = schedule(w.arrival, w.count, seed + i)
    job = SubmitJob(info.credentials(), f.namespaced_path(w.namespace), f, offsets,
                    t0=time.time() + 1.5, deadline=w.timeout_seconds)
    sub = Submission(job, opts.submit_workers)
    try:
        with rep.counter(f"{w.name}: creating {w.count} {f.kind}s at {target_rate(w.arrival):g}/s", w.count) as adv:
            _poll(lambda: sub.done >= w.count, lambda: adv(sub.done),
                  timeout=float(offsets[-1]) + w.timeout_seconds + 30)
        log = sub.result(timeout=w.timeout_seconds + 30)
    finally:
        sub.stop()
    created = int((log.status == 201).sum())
    if created < w.count:
        rep.warn(f"{w.name}: {w.count - created} of {w.count} creates failed (see the summary's errors)")
    # only pods of objects that were created can arrive; waiting for the others would only time out
    expected = phase["pods_expected"] = created * f.pods_per_object()
    if w.wait_for == "none":
        return log, False
    state = WAIT_STATE[w.wait_for]
    with rep.counter(f"{w.name}: waiting until {expected} pods are {state}", expected) as adv:
        ok = _poll(lambda: watcher.count(i, state) >= expected, lambda: adv(watcher.count(i, state)),
                   timeout=w.timeout_seconds)
    if not ok:
        counts = dict(zip(STATES, watcher.counts[i].tolist(), strict=True))
        rep.warn(f"{w.name}: only {counts[state]}/{expected} pods {state} after {w.timeout_seconds:g}s ({counts})")
    return log, not ok


def _poll(done: Callable[[], bool], tick: Callable[[], None], timeout: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        tick()
        if done():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(every)


def _log_frame(log: RequestLog, phase: str) -> pd.DataFrame:
    return pd.DataFrame({"phase": pd.Series([phase] * len(log.index), dtype="string"), "index": log.index,
                         "scheduled": log.scheduled, "sent": log.sent, "latency": log.latency,
                         "status": log.status.astype(np.int16)})
