"""``kwokbench run``: scenario → cluster → load and measurements → store → analysis, per scheduler variant.

Record first, analyse later: the run writes raw per-request and per-pod records and the measurements'
raw files (:mod:`kwokbench.measure`); the summary is derived from them after the cluster is gone
(:mod:`kwokbench.figures.analyse`). Whatever happens (a timeout, a bad template discovered late, Ctrl-C, an
error in analysis), what was measured is stored, the cluster is deleted, and ``meta.json`` says how the
run ended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kwokbench import components, flags
from kwokbench.cluster import (
    ClusterInfo,
    ClusterOptions,
    Kwokctl,
    attach,
    bring_up,
    processes,
    watchdog,
)
from kwokbench.cluster.api import Api
from kwokbench.cluster.attach import AttachedCluster
from kwokbench.cluster.chaos import COMPONENT
from kwokbench.cluster.claims import claim_objects, create_claims
from kwokbench.cluster.kwokctl import copy_logs, scheduler_client_limits, scheduler_config_document
from kwokbench.cluster.nodes import wait_service_account
from kwokbench.cluster.objects import apply_crds, create_all
from kwokbench.code_version import code_version
from kwokbench.components import Base as Component
from kwokbench.components import Setup, cluster_options
from kwokbench.errors import ClusterError, KwokbenchError, ScenarioError
from kwokbench.figures.analyse import analyse
from kwokbench.load.pacer import connection_cap, schedule, target_rate
from kwokbench.load.submitter import RequestLog, Submission, SubmitJob
from kwokbench.load.watcher import PROGRESS, Watcher
from kwokbench.manifests import ManifestFactory
from kwokbench.measure import Measurement, RunContext
from kwokbench.measure.run import for_run
from kwokbench.measure.watch import PodTimeline
from kwokbench.plan import (
    build_components,
    check_scenario,
    gang_factory,
    manifest_factories,
    node_groups,
    run_components,
    setup_of,
)
from kwokbench.progress import Reporter, Silent
from kwokbench.scenario import QpsArrival, Scenario, WorkloadSpec, duet
from kwokbench.scheduler_kinds import SchedulerSpec
from kwokbench.shard import Shard, shard_cells
from kwokbench.store import REQUESTS, SUMMARY, RunDir, host_info, owner, read_doc
from kwokbench.toolchain import versions

AnyCluster = ClusterInfo | AttachedCluster
WAIT_STATE = {"created": "created", "scheduled": "scheduled", "running": "running", "completed": "finished"}


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
    profile: list[str] = field(default_factory=list)
    """Components (``kube-scheduler``…) whose pprof CPU profile is saved from the first phase."""
    repeat: int = 1
    """Runs per variant, each on a fresh cluster; variants are interleaved (A B A B…) so drift of
    the machine over time does not favour one of them."""
    first_repeat: int = 0
    """The number of the first repeat: runs that add pairs to earlier ones (a sequential gate) go on alternating
    which variant starts first, and a duet's sides go on swapping."""
    shard: Shard | None = None
    """Only this shard's repeats (every variant of a repeat together, :func:`kwokbench.shard.shard_cells`);
    recorded in each run's ``meta.json`` so ``merge`` can join the shards."""
    commit: str | None = None
    """The commit of the code under test (default: the CI environment's, else git's where the plugin or
    scenario lives): ``meta.json`` ``code``, the order of ``kwokbench detect``."""
    ref: str | None = None
    """Its branch or tag."""
    together: Any = None
    """A duet of two clusters: the barrier (a ``multiprocessing.Barrier`` of the sides) each side waits at before
    each phase, so the phases start at the same instants on both clusters; None otherwise."""
    duet_of: str | None = None
    """A duet of one variant against the same variant of another file (``run --duet-with``): its name, recorded
    with each run's duet, so the gate compares the duets of each variant apart."""
    on_stored: Callable[[VariantRun], None] | None = None
    """Called with each run once its directory is complete (e.g. to push its row to a shared store), so a
    later failure or interruption does not take the rows of runs already done with it."""


@dataclass
class VariantRun:
    path: Path
    status: str
    summary: dict[str, Any] | None


TOGETHER = "together"
"""Variant name of a run whose scheduler variants all run at once (``concurrent_schedulers``)."""


def fairness_manifest(scenario: Scenario, variant: SchedulerSpec, opts: ClusterOptions) -> dict[str, Any]:
    """Everything that changes how fast a scheduler can go besides the scheduler itself.

    The scheduler's client QPS/burst are read from the very configuration document kube-scheduler is
    given (a config file, ``client_qps`` and ``qps_limits`` all feed it), so the manifest, the client-bound
    check and the gate's comparability see the limits the scheduler actually ran with."""
    unlimited = not scenario.cluster.qps_limits
    qps, burst = scheduler_client_limits(scheduler_config_document(opts))
    return {
        "scheduler_client_qps": qps,
        "scheduler_client_burst": burst,
        "apiserver_max_requests_inflight": 0 if unlimited else 400,
        "apiserver_max_mutating_requests_inflight": 0 if unlimited else 200,
        "apiserver_priority_and_fairness": not unlimited,
        "etcd_unsafe_no_fsync": True,
        "gogc_apiserver_etcd": opts.gogc,
        "kwok_parallelism": opts.kwok_parallelism,
        "kwok_controllers": opts.kwok_controllers,
        "controller_manager": "kube-controller-manager" not in opts.disable,
        "new_nodes_tainted_not_ready": False,  # TaintNodesByCondition admission off (cluster/kwokctl.py)
        "pod_lifecycle": scenario.cluster.pod_lifecycle,
        "node_lease_seconds": opts.node_lease_seconds,
        "pin_scheduler": opts.pin_scheduler,
        "kueue": scenario.cluster.kueue.model_dump(mode="json") if scenario.cluster.kueue and variant.kueue else None,
        "extra_args": opts.extra_args,
        "scheduler_binary": variant.binary,
        "scheduler_binary_path": str(opts.scheduler_binary) if opts.scheduler_binary else "",
        # the URL's port differs per run and is not a setting
        "extenders": [{k: v for k, v in e.items() if k != "urlPrefix"} for e in opts.scheduler_extenders],
        "crds": sorted({"podgroups.scheduling.x-k8s.io"} if any(w.gang for w in scenario.workloads) else set()),
        "scheduler_name": variant.effective_scheduler_name,
        # by name: a duet's repeats start the variants in either order
        "concurrent_schedulers": sorted((_variant_brief(v) for v in scenario.schedulers), key=lambda b: b["name"])
        if scenario.concurrent_schedulers else None,
        # only when set: runs from before they existed stay comparable with runs that set none
        **({"scheduler_flags": sf} if (sf := flags.for_component(opts.extra_args, "kube-scheduler")) else {}),
        **({"feature_gates": opts.feature_gates} if opts.feature_gates else {}),
        **({"runtime_config": opts.runtime_config} if opts.runtime_config else {}),
    }


def _variant_brief(v: SchedulerSpec) -> dict[str, Any]:
    """A variant of a concurrent run: its kind's settings as given, with its name, kind and served name."""
    return {**v.model_dump(mode="json", exclude_defaults=True), "name": v.name, "binary": v.binary,
            "scheduler_name": v.effective_scheduler_name}


def run_scenario(scenario: Scenario, scenario_path: Path, opts: RunOptions,
                 reporter: Reporter | None = None, kwokctl: Kwokctl | None = None) -> list[VariantRun]:
    rep = reporter or Silent()
    k = kwokctl or Kwokctl()
    variants = [v for v in scenario.schedulers if not opts.variants or v.name in opts.variants]
    unknown = set(opts.variants) - {v.name for v in scenario.schedulers}
    if unknown:
        known = ", ".join(v.name for v in scenario.schedulers)
        raise ScenarioError(f"unknown scheduler variant(s) {', '.join(sorted(unknown))} (scenario has: {known})")
    if scenario.concurrent_schedulers:
        if opts.variants:
            raise ScenarioError("--variant does not apply: concurrent_schedulers runs every variant at once")
        if opts.cluster:
            raise ScenarioError("concurrent_schedulers starts its schedulers on a fresh cluster; drop --cluster")
    elif scenario.duet:
        if opts.variants:
            raise ScenarioError("--variant does not apply: a duet runs both variants at once")
        if opts.cluster:
            raise ScenarioError("a duet of two clusters creates both; drop --cluster")
    elif opts.cluster and len(variants) > 1:
        raise ScenarioError("--cluster reuses one cluster, so it needs exactly one variant (use --variant)")
    base = scenario_path.parent
    check_scenario(scenario, base, reused=bool(opts.cluster), variants=variants)
    if opts.cluster and opts.repeat > 1:
        raise ScenarioError("--repeat needs a fresh cluster per run; it cannot be combined with --cluster")
    # the PodGroup CRD of gang workloads comes with scheduler-plugins, for every variant
    gangs = any(w.gang for w in scenario.workloads)
    for release in sorted({scenario.kubernetes_for(v) for v in variants}, key=versions.tag_key):
        k.for_kubernetes(release).toolchain.install("auto", rep, extras=("scheduler-plugins",) if gangs else ())
    build_components(scenario, base, scenario.schedulers if scenario.concurrent_schedulers else variants,
                     k.toolchain, rep)
    group = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results = []
    of = opts.first_repeat + opts.repeat
    every = range(opts.first_repeat, of)
    repeats = shard_cells(every, opts.shard) if opts.shard else list(every)
    if scenario.concurrent_schedulers:
        together = SchedulerSpec(name=TOGETHER)
        for i in repeats:
            sc, record = duet.expand(scenario, i) if scenario.duet else (scenario, None)
            if record is not None and opts.duet_of:
                record["variant"] = opts.duet_of
            results.append(run_variant(sc, base, together, opts, rep, k, group={
                "id": group, "repeat": i, "of": of, **({"duet": record} if record else {})}))
            if opts.on_stored:
                opts.on_stored(results[-1])
        return results
    if scenario.duet:  # of two clusters: the variants differ in the control plane
        for i in repeats:
            order = variants if i % 2 == 0 else variants[::-1]
            rep.heading(f"repeat {i + 1}/{of}: {' and '.join(v.name for v in order)} at once, each on its "
                        "own cluster")
            sides = together_in_clusters(scenario, base, order, opts, rep, k,
                                         {"id": group, "repeat": i, "of": of, "simultaneous": True})
            for v in variants:
                if opts.on_stored:
                    opts.on_stored(sides[v.name])
                results.append(sides[v.name])
        return results
    for i in repeats:  # a shard deals whole repeats: each keeps its variants' A/B interleaving
        # counterbalanced (A B, B A, A B…): no variant always runs first in its pair, on a host still warming up
        # from the last run; returned in the variants' order within each repeat all the same
        done: dict[str, VariantRun] = {}
        for position, v in enumerate(variants if i % 2 == 0 else variants[::-1]):
            if opts.repeat > 1:
                rep.heading(f"repeat {i + 1}/{of}, variant {v.name}")
            done[v.name] = run_variant(scenario, base, v, opts, rep, k, multi=len(variants) > 1,
                                       group={"id": group, "repeat": i, "of": of, "position": position})
            if opts.on_stored:
                opts.on_stored(done[v.name])
        results.extend(done[v.name] for v in variants)
    return results


def together_in_clusters(scenario: Scenario, base: Path, order: list[SchedulerSpec], opts: RunOptions,
                         rep: Reporter, k: Kwokctl, group: dict[str, Any]) -> dict[str, VariantRun]:
    """Each variant of ``order`` on its own cluster, at the same time (a duet of two clusters): one process each,
    started in ``order``; every phase begins when every side is at it (a barrier), so the workloads are offered at
    the same instants. A side that fails breaks the barrier and the others stop too; the error is raised once every
    side has torn its cluster down. Interrupted (Ctrl-C, SIGTERM), each side is stopped and tears down."""
    import multiprocessing
    import queue
    import signal

    from kwokbench.progress import Tagged

    ctx = multiprocessing.get_context("fork")  # the sides share nothing after the fork but the barrier and queue
    barrier = ctx.Barrier(len(order))
    answers: Any = ctx.Queue()
    procs = []
    for position, v in enumerate(order):
        side_opts = dataclasses.replace(opts, together=barrier, on_stored=None)
        p = ctx.Process(target=_side, name=f"kwokbench-{v.name}", args=(
            answers, scenario, base, v, side_opts, Tagged(rep, v.name), k, {**group, "position": position}))
        p.start()
        procs.append(p)
    got: dict[str, tuple[str | None, str, str | None]] = {}
    try:
        while len(got) < len(procs):
            try:
                name, path, status, error = answers.get(timeout=1.0)
                got[name] = (path, status, error)
            except queue.Empty:
                if not any(p.is_alive() for p in procs) and answers.empty():
                    break
    except BaseException:
        for p in procs:
            if p.is_alive() and p.pid:
                os.kill(p.pid, signal.SIGTERM)  # each side ends as Ctrl-C ends a run: its cluster torn down
        for p in procs:
            p.join(timeout=120)
        raise
    for p in procs:
        p.join()
    errors = [f"{v.name}: {got.get(v.name, (None, '', 'its process ended without a word'))[2]}" for v in order
              if v.name not in got or got[v.name][2]]
    if errors:
        raise KwokbenchError("a duet of two clusters stopped: " + "; ".join(errors))
    out = {}
    for v in order:
        path, status, _ = got[v.name]
        assert path is not None
        out[v.name] = VariantRun(Path(path), status, read_doc(Path(path), SUMMARY))
    return out


def _side(answers: Any, scenario: Scenario, base: Path, v: SchedulerSpec, opts: RunOptions, rep: Reporter,
          k: Kwokctl, group: dict[str, Any]) -> None:
    """One side of :func:`together_in_clusters`, in its own process: the run, then its answer (run directory,
    status, error)."""
    # a side that stops early breaks the barrier, so one still waiting for it stops too; a side that succeeded does
    # not (every side passed every barrier with it; breaking it then could fail a side released but not yet woken)
    try:
        r = run_variant(scenario, base, v, opts, rep, k, multi=True, group=group)
        answers.put((v.name, str(r.path), r.status, None))
    except KeyboardInterrupt:
        opts.together.abort()
        answers.put((v.name, None, "interrupted", "interrupted"))
    except Exception as e:
        opts.together.abort()
        answers.put((v.name, None, "failed", str(e) if isinstance(e, KwokbenchError) else f"{type(e).__name__}: {e}"))


def _phase_together(opts: RunOptions, phase: str, rep: Reporter) -> None:
    """A duet of two clusters: wait until every side is at this phase."""
    import threading

    if opts.together is None:
        return
    try:
        opts.together.wait(timeout=TOGETHER_WAIT)
    except threading.BrokenBarrierError:
        raise KwokbenchError(f"phase {phase}: the other side of the duet stopped, or did not reach this phase "
                             f"within {TOGETHER_WAIT:.0f} s: this side stops too") from None
    rep.info(f"phase {phase}: every side ready, starting together")


TOGETHER_WAIT = 900.0
"""Seconds a side of a duet of two clusters waits for the others at a phase (cluster creation of two releases,
a slower side's previous phase)."""


def run_variant(scenario: Scenario, base: Path, variant: SchedulerSpec, opts: RunOptions, rep: Reporter,
                k: Kwokctl, multi: bool = False, group: dict[str, Any] | None = None) -> VariantRun:
    """One run, as a lifecycle: record → build and configure its components → start the cluster and them →
    measure while the phases run → stop the measurements → stop the components and delete the cluster →
    analyse the stored run. Teardown never depends on analysis, and the watchdog exists before the first
    process of the run."""
    k = k.for_kubernetes(scenario.kubernetes_for(variant))  # the variant's release: its own binaries
    attached = attach.get(k.home, opts.cluster) if opts.cluster else None
    _check_attached(attached, scenario, opts)
    setup = setup_of(scenario, base, variant, k.toolchain, attached, reused=bool(opts.cluster))
    comps = run_components(setup, scenario.schedulers)
    for c in comps:
        c.build(rep)  # cached: run_scenario built them
    kinds = {c.name: c for c in comps if c.role == "scheduler"}
    rundir = RunDir.create(opts.out, scenario.name, variant.name if multi else None)
    run_label = rundir.run_id.split("-")[1]
    together = scenario.concurrent_schedulers
    factories = manifest_factories(scenario, base, run_label, attached, None if together else variant,
                                   kinds=kinds if together else {variant.name: comps_scheduler(comps)})
    cluster_name = opts.cluster or f"kb-{run_label}"
    copts = cluster_options(scenario, base, variant, cluster_name, k.toolchain, comps)
    phases = _phase_records(scenario, factories)
    source = next((d for c in comps if isinstance(d := getattr(c, "directory", None), Path)), base)
    code = code_version(source, opts.commit, opts.ref)
    rundir.write_meta({
        "status": "running", "run_id": rundir.run_id, "run_label": run_label, "group": group or {},
        "shard": opts.shard.label if opts.shard else None,
        "started_at": datetime.now(UTC).isoformat(), "owner": owner(), "scenario": scenario.model_dump(mode="json"),
        "scenario_file": str(base), "variant": variant.model_dump(mode="json"),
        "toolchain": {"kwok": versions.KWOK, "kubernetes": k.toolchain.kubernetes, "etcd": versions.ETCD,
                      **({"kubernetes_build": b} if (b := k.toolchain.build_record()) else {})},
        **({"code": code} if code else {}),
        "host": host_info(), "fairness": _fairness(scenario, variant, copts, comps), "phases": phases,
        "cluster": {"name": cluster_name, "reused": bool(opts.cluster),
                    "nodes": sum(g.count for g in scenario.cluster.node_groups)},
    })
    rep.info(f"run {rundir.path}")
    status, error = "failed", ""
    # kwokbench creates the cluster: a watchdog outlives a kill -9 from now on (before kwokctl starts anything)
    guard = None if opts.cluster else watchdog.start(cluster_name, k.home, rundir.path, opts.keep_cluster)
    cpus = processes.usable_cpus()
    if copts.pin_scheduler and len(cpus) >= 2:
        os.sched_setaffinity(0, cpus[1:])  # kwokbench and every component it starts: off the scheduler's CPU
    started: list[Measurement] = []
    logs: list[pd.DataFrame] = []
    ctx: RunContext | None = None
    info: AnyCluster | None = None
    try:
        for c in comps:
            c.prepare(rep)
        info = _cluster(k, opts, attached, copts, scenario, base, rundir, rep)
        cluster = {**cluster_record(info), "reused": bool(opts.cluster), "attached": bool(attached),
                   "nodes": sum(g.count for g in scenario.cluster.node_groups)}
        rundir.update_meta(cluster=cluster)
        namespaces = {w.namespace for w in scenario.workloads}
        served = _ensure_namespaces(info, namespaces, attached.labels if attached else {})
        rundir.update_meta(cluster={**cluster, "served_version": served})
        if served != k.toolchain.kubernetes and not attached:
            rep.warn(f"the cluster's apiserver is {served}, not {k.toolchain.kubernetes} as the scenario says "
                     "(a cluster reused with --cluster keeps the release it was made with)")
        if any(w.gang for w in scenario.workloads) and opts.cluster:
            asyncio.run(apply_crds(info.credentials(), k.toolchain.scheduler_plugins_crds()))
        records = _start_components(comps, info, rep)
        if isinstance(info, ClusterInfo):  # the flags every process runs with, as it runs with them
            rundir.update_meta(command_lines=processes.command_lines(info.dir))
        started_schedulers = [r for c, r in records if c.role == "scheduler"]
        for c, r in records:
            if c.role != "scheduler":
                rundir.update_meta(**{c.name: r})
        if copts.pin_scheduler and isinstance(info, ClusterInfo):
            owners = {"kube-scheduler", *(s["component"] for s in started_schedulers)}
            pinned = processes.pin_components(info.dir, owners, cpus)
            rundir.update_meta(pinning=pinned)
            if not pinned:
                rep.warn("pin_scheduler: fewer than two CPUs usable; nothing pinned")
            elif len(cpus) == 2 and (scenario.cluster.controller_manager or scenario.cluster.pod_lifecycle != "none"):
                rep.warn("pin_scheduler on two CPUs leaves the apiserver, etcd and kwok one core: measured here it "
                         "cost ~30% of the throughput unless controller_manager: false and pod_lifecycle: none "
                         "take load off them")
        if started_schedulers:
            rundir.update_meta(schedulers=started_schedulers,
                               fairness={**_fairness(scenario, variant, copts, comps),
                                         "scheduler_version": {s["variant"]: s["version"]
                                                               for s in started_schedulers}})
        ctx = RunContext(rundir.path, scenario, run_label, info, k, rep, attached, created_cluster=not opts.cluster,
                         scrape_interval=opts.scrape_interval, prometheus_port=copts.prometheus_port,
                         profile=opts.profile, schedulers=started_schedulers, components=comps,
                         extras={"reused_cluster": bool(opts.cluster) and attached is None})
        for m in for_run(ctx):
            started.append(m)
            m.start(ctx)
        watcher = next(m.watcher for m in started if isinstance(m, PodTimeline) and m.watcher)
        for i, (w, f) in enumerate(zip(scenario.workloads, factories, strict=True)):
            if w.gang:
                _create_podgroups(info, w, f, base, rep)
            if w.has_claims:
                _create_claims(info, w, f, run_label, attached, rep)
            _phase_together(opts, w.name, rep)
            log, timed_out = _run_phase(info, w, f, i, scenario.seed, opts, watcher, rep, phases[i],
                                        ctx.first_created)
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
        if opts.together is not None:
            opts.together.abort()  # the other side stops now, not after this side's teardown
        raise
    finally:
        _stop_measurements(started, ctx, rep)
        rundir.write_frame(REQUESTS, pd.concat(logs, ignore_index=True) if logs
                           else _log_frame(RequestLog.empty(0), ""))
        if status != "complete" and info is not None:
            _keep_logs(getattr(info, "dir", None), rundir, rep)
        _teardown(k, cluster_name, created=not opts.cluster and info is not None, keep=opts.keep_cluster,
                  comps=comps, guard=guard, rep=rep)
        if copts.pin_scheduler:
            os.sched_setaffinity(0, cpus)
        rundir.update_meta(status=status, error=error, ended_at=datetime.now(UTC).isoformat(), phases=phases)
        summary = _analysed(rundir.path, rep)
    return VariantRun(rundir.path, status, summary)


def comps_scheduler(comps: list[Component]) -> Component:
    return next(c for c in comps if c.role == "scheduler")


def _fairness(scenario: Scenario, variant: SchedulerSpec, copts: ClusterOptions,
              comps: list[Component]) -> dict[str, Any]:
    out = fairness_manifest(scenario, variant, copts)
    for c in comps:
        out.update(c.fairness())
    out["component_versions"] = {c.name: c.version() for c in comps}
    return out


def _start_components(comps: list[Component], info: AnyCluster, rep: Reporter) -> list[tuple[Component, Any]]:
    """Start each component on the running cluster, in order, and wait until it is ready; a failure stops
    those already started (the caller's teardown stops every component again: ``stop`` is idempotent)."""
    records: list[tuple[Component, Any]] = []
    try:
        for c in comps:
            try:
                r = c.start(info, rep)
            except KwokbenchError as e:  # a kind on other client libraries: say how far they are from this one
                setup, libs = getattr(c, "setup", None), c.libraries()
                release = setup.scenario.kubernetes_for(setup.variant) if setup is not None else None
                if libs and release and versions.skew(libs, release):
                    raise type(e)(f"{e} (it is built on Kubernetes {libs}, {versions.skew(libs, release)} "
                                  f"minor release(s) from the control plane's {release})") from e
                raise
            if r is not None:
                records.append((c, r))
    except BaseException:
        for c, _ in reversed(records):
            c.stop()
        raise
    return records


def _check_attached(attached: AttachedCluster | None, scenario: Scenario, opts: RunOptions) -> None:
    if attached is None:
        return
    if scenario.cluster.kueue is not None:
        raise ScenarioError(f"--cluster {opts.cluster} is an attached cluster: kwokbench does not start Kueue there")
    for v in scenario.schedulers:  # each kind says what it cannot do on an attached cluster
        if not opts.variants or v.name in opts.variants:
            components.scheduler(Setup(scenario, Path(), v, None, attached=attached)).check()  # type: ignore[arg-type]
    if any(e.action in COMPONENT for e in scenario.chaos):
        raise ScenarioError(f"--cluster {opts.cluster} is an attached cluster: kwokbench cannot restart its "
                            "components (node chaos actions work)")
    if any(w.gang for w in scenario.workloads):
        raise ScenarioError(f"--cluster {opts.cluster} is an attached cluster: kwokbench does not install the "
                            "PodGroup CRD there, so gang workloads cannot run")


def _phase_records(scenario: Scenario, factories: list[ManifestFactory]) -> list[dict[str, Any]]:
    """What ``meta.json`` says of each phase before it runs (the run adds what happened)."""
    return [{"name": w.name, "template": w.template, "kind": f.kind, "count": w.count,
             "target_qps": trace_offered(np.asarray(w.trace_offsets))["mean_per_second"] if w.trace
             else target_rate(w.arrival), "pods_expected": w.count * f.pods_per_object(),
             "wait_for": w.wait_for, "timeout_seconds": w.timeout_seconds, "labels": f.labels_of_pods(),
             "gang": {"size": w.gang.size, "min_member": w.gang.min_member or w.gang.size} if w.gang else None}
            for w, f in zip(scenario.workloads, factories, strict=True)]


def _cluster(k: Kwokctl, opts: RunOptions, attached: AttachedCluster | None, copts: ClusterOptions,
             scenario: Scenario, base: Path, rundir: RunDir, rep: Reporter) -> AnyCluster:
    """The run's cluster: the attached one, the one given with ``--cluster``, or a fresh one (that one's component
    logs kept in the run if it fails to come up)."""
    if attached is not None:
        return attached
    if opts.cluster:
        if not k.exists(opts.cluster):
            raise ClusterError(f"--cluster {opts.cluster}: no such kwokbench cluster (see `kwokbench status`)")
        return k.info(opts.cluster)
    groups = node_groups(scenario, base)
    try:
        return bring_up(k, copts, groups, rep, keep_logs=rundir.path / "logs").cluster
    except KwokbenchError:
        if (rundir.path / "logs").is_dir():
            rundir.update_meta(logs="logs")
        raise


def _stop_measurements(started: list[Measurement], ctx: RunContext | None, rep: Reporter) -> None:
    """Stop every measurement (last started first), then let each collect from the live cluster; one that
    fails is reported and never keeps the others (or the teardown) from running."""
    for m in reversed(started):
        try:
            m.stop()
        except Exception as e:
            rep.warn(f"{m.name}: could not stop cleanly: {e}")
    if ctx is None:
        return
    for m in started:
        try:
            m.collect(ctx)
        except Exception as e:
            rep.warn(f"{m.name}: could not collect: {e}")


def _keep_logs(cluster_dir: Path | None, rundir: RunDir, rep: Reporter) -> None:
    """A run that did not complete keeps its cluster's component logs (``<run>/logs/``): the error names a log
    in the cluster's folder, which the teardown deletes."""
    if cluster_dir is None or not list(cluster_dir.glob("logs/*.log")):
        return
    dest = rundir.path / "logs"
    if not copy_logs(cluster_dir, dest):
        rep.warn(f"could not keep the cluster's logs in {dest}")
        return
    rundir.update_meta(logs="logs")
    rep.info(f"the cluster's component logs are kept in {dest}")


def _teardown(k: Kwokctl, name: str, created: bool, keep: bool, comps: list[Component],
              guard: subprocess.Popen[bytes] | None, rep: Reporter) -> None:
    for c in reversed(comps):
        if keep and c.cluster_process:
            continue  # kept running with the cluster it belongs to (`kwokbench down` stops it)
        try:
            c.stop()
        except Exception as e:
            rep.warn(f"{c.name}: could not stop cleanly: {e}")
    if created and not keep:
        try:
            k.delete(name, rep)
        except KwokbenchError as e:
            rep.warn(f"could not delete cluster {name}: {e}")
    if guard is not None:
        guard.terminate()
        guard.wait(10)


def _analysed(run_dir: Path, rep: Reporter) -> dict[str, Any] | None:
    """The stored run's summary; a failure here loses nothing measured (``kwokbench analyse`` retries)."""
    try:
        return analyse(run_dir)
    except Exception as e:
        rep.warn(f"analysis of {run_dir} failed ({type(e).__name__}: {e}); the raw files are stored: "
                 f"`kwokbench analyse {run_dir}` derives the summary again")
        return None


def _create_podgroups(info: AnyCluster, w: WorkloadSpec, members: ManifestFactory, base: Path,
                      rep: Reporter) -> None:
    assert w.gang is not None
    g = gang_factory(w, members, base)
    n = w.count // w.gang.size
    with rep.status(f"{w.name}: creating {n} PodGroups (minMember {w.gang.min_member or w.gang.size})"):
        asyncio.run(create_all(info.credentials(), g.namespaced_path(w.namespace), [g.body(k) for k in range(n)]))


def _create_claims(info: AnyCluster, w: WorkloadSpec, pods: ManifestFactory, run_label: str,
                   attached: AttachedCluster | None, rep: Reporter) -> None:
    objects = claim_objects(w, pods.prefix, run_label, attached.labels if attached else None)
    with rep.status(f"{w.name}: creating {len(objects)} DRA claim objects"):
        asyncio.run(create_claims(info.credentials(), w, objects))


def cluster_record(info: AnyCluster) -> dict[str, Any]:
    """Where the cluster was, without any key material (paths only, never contents)."""
    return {"name": info.name, "kubeconfig": str(info.kubeconfig), "metrics": info.metrics_endpoints()}


def _ensure_namespaces(info: AnyCluster, namespaces: set[str], labels: dict[str, str]) -> str:
    """Create the workloads' namespaces (and wait for their ServiceAccounts); the release the apiserver says it
    is (``/version``'s gitVersion)."""
    async def go() -> str:
        async with Api(info.credentials()) as api:
            for ns in sorted(namespaces - {"default"}):
                await api.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns, "labels": labels}},
                               ok=(201, 409))
            return str((await api.json("GET", "/version")).get("gitVersion", "?"))
    served = asyncio.run(go())
    for ns in namespaces:
        asyncio.run(wait_service_account(info.credentials(), ns))
    return served


def _run_phase(info: AnyCluster, w: WorkloadSpec, f: ManifestFactory, i: int, seed: int, opts: RunOptions,
               watcher: Watcher, rep: Reporter, phase: dict[str, Any],
               first_created: threading.Event | None = None) -> tuple[RequestLog, bool]:
    """Submit one phase and wait for its pods; ``first_created`` is set once its first object was created."""
    arrival, how = w.arrival, f"at {target_rate(w.arrival):g}/s"
    if w.trace:
        offsets = np.asarray(w.trace_offsets, dtype=np.float64)
        phase["trace"] = offered = trace_offered(offsets)
        arrival = QpsArrival(qps=max(offered["peak_per_second"], 1))  # connections for its busiest second
        how = (f"at {w.trace.rate:g}/s in trace order" if w.trace.rate else
               f"at the trace's times (mean {offered['mean_per_second']:.1f}/s, peak {offered['peak_per_second']}/s)")
    else:
        offsets = schedule(w.arrival, w.count, seed + i)
    cap = connection_cap(arrival, w.connections)
    job = SubmitJob(info.credentials(), f.namespaced_path(w.namespace), f, offsets,
                    t0=time.time() + 1.5, connections=-(-cap // opts.submit_workers), deadline=w.timeout_seconds)
    sub = Submission(job, opts.submit_workers)
    try:
        with rep.counter(f"{w.name}: creating {w.count} {f.kind}s {how}", w.count) as adv:
            def tick() -> None:
                adv(sub.done)
                if first_created is not None and sub.done:
                    first_created.set()
            _poll(lambda: sub.done >= w.count, tick,
                  timeout=float(offsets[-1]) + w.timeout_seconds + 30)
        log = sub.result(timeout=w.timeout_seconds + 30)
    finally:
        sub.stop()
    phase["connections"] = {"cap": log.connections, "peak": log.connections_peak, "waited_at_cap": log.waited_at_cap}
    created = int((log.status == 201).sum())
    if created < w.count:
        rep.warn(f"{w.name}: {w.count - created} of {w.count} creates failed (see the summary's errors)")
    # only pods of objects that were created can arrive; waiting for the others would only time out
    expected = phase["pods_expected"] = created * f.pods_per_object()
    if w.wait_for == "none":
        return log, False
    if w.settle_seconds:
        timed_out = _settle(w, i, expected, watcher, rep)
        return log, _drain(w, i, expected, watcher, rep) or timed_out
    state = WAIT_STATE[w.wait_for]
    with rep.counter(f"{w.name}: waiting until {expected} pods are {state}", expected) as adv:
        ok = _poll(lambda: watcher.count(i, state) >= expected, lambda: adv(watcher.count(i, state)),
                   timeout=w.timeout_seconds)
    if not ok:
        counts = dict(zip(PROGRESS, watcher.counts[i].tolist(), strict=True))
        rep.warn(f"{w.name}: only {counts[state]}/{expected} pods {state} after {w.timeout_seconds:g}s ({counts})")
    return log, not ok


def trace_offered(offsets: np.ndarray) -> dict[str, Any]:
    """What a trace phase offered, and when: its span, mean and busiest second (a real trace is bursty)."""
    span = float(offsets[-1] - offsets[0]) if len(offsets) else 0.0
    per_second = np.bincount(np.floor(offsets - offsets[0]).astype(np.int64)) if len(offsets) else np.zeros(1)
    return {"pods": len(offsets), "span_seconds": span,
            "mean_per_second": float(len(offsets) / span) if span > 0 else float(len(offsets)),
            "peak_per_second": int(per_second.max()), "busiest_second": int(per_second.argmax())}


def _settle(w: WorkloadSpec, i: int, expected: int, watcher: Watcher, rep: Reporter) -> bool:
    """Wait until every pod is bound, or none was bound for ``settle_seconds`` (the rest stays pending: on a
    cluster too small for the workload that is the result, not a time-out). True only on ``timeout_seconds``."""
    assert w.settle_seconds is not None
    last, last_change = -1, time.monotonic()

    def settled() -> bool:
        nonlocal last, last_change
        now = watcher.count(i, "scheduled")
        if now != last:
            last, last_change = now, time.monotonic()
        return now >= expected or time.monotonic() - last_change >= (w.settle_seconds or 0)

    with rep.counter(f"{w.name}: waiting until {expected} pods are bound, or none was for {w.settle_seconds:g}s",
                     expected) as adv:
        ok = _poll(settled, lambda: adv(watcher.count(i, "scheduled")), timeout=w.timeout_seconds)
    bound = watcher.count(i, "scheduled")
    if not ok:
        rep.warn(f"{w.name}: {bound} of {expected} pods bound when timeout_seconds ({w.timeout_seconds:g}s) ran out, "
                 "still binding: a lower bound")
    elif bound < expected:
        rep.info(f"{w.name}: {bound} of {expected} pods bound, {expected - bound} left pending "
                 f"(none bound for {w.settle_seconds:g}s)")
    return not ok


def _drain(w: WorkloadSpec, i: int, expected: int, watcher: Watcher, rep: Reporter) -> bool:
    """A trace with lifetimes: wait until every bound pod that has one has ended (kwok deleted it), so the run
    covers the trace's whole timeline, the cluster filling and draining. True only on a time-out."""
    if not (w.trace and w.trace.lifetimes):
        return False
    living = sum(1 for p in w.trace_pods if p.lifetime_seconds is not None)
    target = max(0, living - (expected - watcher.count(i, "scheduled")))
    longest = max((p.lifetime_seconds or 0.0 for p in w.trace_pods), default=0.0)
    with rep.counter(f"{w.name}: waiting until {target} pods have ended (their trace lifetimes, at most "
                     f"{longest:.0f}s)", target) as adv:
        ok = _poll(lambda: watcher.count(i, "deleted") >= target, lambda: adv(watcher.count(i, "deleted")),
                   timeout=longest + w.timeout_seconds)
    if not ok:
        rep.warn(f"{w.name}: only {watcher.count(i, 'deleted')}/{target} pods ended after their lifetimes")
    return not ok


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
                         "scheduled": log.scheduled, "dispatched": log.dispatched, "sent": log.sent,
                         "latency": log.latency,
                         "status": log.status.astype(np.int16)})
