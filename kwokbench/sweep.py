"""``kwokbench sweep``: capacity planning over a grid of cluster sizes × submit rates.

For each cluster size one cluster is built (the scenario's node groups scaled to that total) and every
submit rate is run on it as an ordinary stored run (``--cluster`` reuse), lowest rate first; the pods
of a point are deleted before the next one. A point *holds* when the achieved binding throughput keeps
>= 95% of its target rate and p99 scheduling latency stays within the SLO; the **knee** of a size is its
highest rate that holds. Once a rate fails, higher rates on that size are skipped (``--no-stop-early``
runs them anyway).

Analysis (:func:`evaluate`, :func:`knees`, :func:`trend`) is pure over the stored ``sweep.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from kwokbench import __version__
from kwokbench.cluster import Kwokctl, bring_up, watchdog
from kwokbench.cluster.kwokctl import ClusterInfo
from kwokbench.cluster.objects import delete_labelled
from kwokbench.components import cluster_options
from kwokbench.errors import KwokbenchError, ScenarioError, StoreError
from kwokbench.labels import RUN_LABEL
from kwokbench.plan import check_scenario, node_groups, run_components, setup_of
from kwokbench.progress import Reporter, Silent
from kwokbench.runner import RunOptions, run_variant
from kwokbench.scenario import QpsArrival, Scenario
from kwokbench.shard import Shard, shard_cells
from kwokbench.store import SWEEP as SWEEP
from kwokbench.store import SWEEP_FORMAT_VERSION as SWEEP_FORMAT_VERSION
from kwokbench.store import _atomic_write, digest, host_info, outcome, owner, read_versioned, settle_status


@dataclass
class SweepOptions:
    nodes: list[int]
    qps: list[float]
    slo_p99: float = 1.0
    """Seconds: p99 of created → scheduled must stay within this."""
    min_ratio: float = 0.95
    """Achieved binding throughput / target rate a point must keep."""
    duration: float = 20.0
    """Seconds of load per point: a point submits max(50, qps × duration) pods."""
    out: Path = Path("reports")
    variant: str | None = None
    stop_early: bool = True
    keep_clusters: bool = False
    runs: RunOptions = field(default_factory=RunOptions)
    shard: Shard | None = None
    """Run only this shard's points of the grid (:func:`kwokbench.shard.shard_cells`); ``merge`` joins them."""


def scaled(scenario: Scenario, nodes: int) -> Scenario:
    """The scenario with its node groups scaled (proportionally) to ``nodes`` in total."""
    groups = scenario.cluster.node_groups
    total = sum(g.count for g in groups) or 1
    counts = [math.floor(nodes * g.count / total) for g in groups]
    counts[0] += nodes - sum(counts)
    new = [g.model_copy(update={"count": c}) for g, c in zip(groups, counts, strict=True)]
    return scenario.model_copy(update={"cluster": scenario.cluster.model_copy(update={"node_groups": new})})


def at_rate(scenario: Scenario, qps: float, duration: float) -> Scenario:
    """The scenario's first workload phase at a fixed rate for ``duration`` seconds."""
    w = scenario.workloads[0]
    count = max(50, round(qps * duration))
    if w.gang:
        count = max(w.gang.size, count - count % w.gang.size)
    w = w.model_copy(update={"arrival": QpsArrival(qps=qps), "count": count, "wait_for": "scheduled",
                             "timeout_seconds": max(30.0, duration)})
    return scenario.model_copy(update={"workloads": [w]})


# ---- pure analysis --------------------------------------------------------------------------------


def evaluate(summary: dict[str, Any] | None, qps: float, slo_p99: float, min_ratio: float) -> dict[str, Any]:
    """One grid point's figures and whether it holds."""
    s = summary or {}
    binding = s.get("binding_rate") or {}
    throughput = binding.get("average") if binding.get("available") else None
    if throughput is None:
        throughput = (s.get("throughput") or {}).get("average") or 0.0
    p99 = ((s.get("latency") or {}).get("created_to_scheduled") or {}).get("p99")
    complete = s.get("pods_scheduled", 0) >= s.get("pods_expected", 1)
    ratio = throughput / qps if qps else 0.0
    submit = s.get("submit") or []
    accepted = sum(p.get("accepted_qps") or 0.0 for p in submit) if any("accepted_qps" in p for p in submit) \
        else None
    reasons = []
    if accepted is not None and qps and accepted < min_ratio * qps:
        # the point did not receive its load: whatever the scheduler did, this rate was not tested
        reasons.append(f"the apiserver accepted {accepted:.1f}/s of {qps:g}/s offered")
    if ratio < min_ratio:
        reasons.append(f"throughput {throughput:.1f}/s is {ratio * 100:.0f}% of {qps:g}/s")
    if p99 is None or p99 > slo_p99:
        reasons.append("no pod scheduled" if p99 is None else f"p99 {p99 * 1000:.0f} ms > SLO {slo_p99 * 1000:.0f} ms")
    if not complete:
        reasons.append(f"{s.get('pods_scheduled', 0)}/{s.get('pods_expected', 0)} pods scheduled")
    procs = s.get("processes") or {}
    limited = s.get("limited_by") or {}
    return {"qps": qps, "accepted": accepted, "throughput": throughput, "ratio": ratio, "p99": p99,
            "holds": not reasons,
            "why": "; ".join(reasons),
            "limited_by": limited.get("verdict"), "limited_by_sentence": limited.get("sentence"),
            "cpu_seconds": {c: v.get("cpu_seconds") for c, v in procs.items()},
            "rss_peak_mib": {c: (v.get("rss_peak_bytes") or 0) / 2**20 for c, v in procs.items()}}


def knees(points: list[dict[str, Any]]) -> dict[int, float | None]:
    """Per cluster size: the highest rate whose point holds, with every lower measured rate holding too."""
    out: dict[int, float | None] = {}
    for n in sorted({p["nodes"] for p in points}):
        knee = None
        for p in sorted((p for p in points if p["nodes"] == n and not p.get("skipped")), key=lambda p: p["qps"]):
            if not p["holds"]:
                break
            knee = p["qps"]
        out[n] = knee
    return out


def first_failure(points: list[dict[str, Any]], nodes: int) -> dict[str, Any] | None:
    """The lowest measured rate of a size that did not hold (what bounds its knee)."""
    failed = sorted((p for p in points if p["nodes"] == nodes and not p.get("skipped") and not p["holds"]),
                    key=lambda p: p["qps"])
    return failed[0] if failed else None


def sentence(nodes: int, knee: float | None, slo_p99: float, tested: list[float],
             failure: dict[str, Any] | None = None) -> str:
    """The size's knee in words; with its first failing point, what limited that point."""
    slo = f"{slo_p99 * 1000:.0f} ms" if slo_p99 < 1 else f"{slo_p99:g} s"
    cause = (f"; at {failure['qps']:g}/s {failure['limited_by_sentence']}"
             if failure and failure.get("limited_by_sentence") else "")
    if knee is None:
        return (f"with {nodes} nodes this control plane sustained none of the tested rates "
                f"(lowest {min(tested):g} pods/s) within a {slo} p99{cause}")
    above = [q for q in tested if q > knee]
    bound = f" (it failed at {min(above):g}/s)" if above else " (the highest rate tested: the knee is higher)"
    return f"with {nodes} nodes this control plane sustains {knee:g} pods/s within a {slo} p99{bound}{cause}"


def trend(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares line y = a·x + b through the points, or None with fewer than two distinct x."""
    if len(set(x)) < 2:
        return None
    a, b = np.polyfit(np.asarray(x, dtype=float), np.asarray(y, dtype=float), 1)
    return float(a), float(b)


# ---- the sweep ------------------------------------------------------------------------------------


def run_sweep(scenario: Scenario, scenario_path: Path, opts: SweepOptions, reporter: Reporter | None = None,
              kwokctl: Kwokctl | None = None) -> Path:
    rep = reporter or Silent()
    k = kwokctl or Kwokctl()
    base = scenario_path.parent
    if not opts.nodes or not opts.qps or any(n < 1 for n in opts.nodes) or any(q <= 0 for q in opts.qps):
        raise ScenarioError("--nodes and --qps need positive values, e.g. --nodes 100,1000 --qps 50,100,200")
    names = [v.name for v in scenario.schedulers]
    variant = next((v for v in scenario.schedulers if v.name == (opts.variant or names[0])), None)
    if variant is None:
        raise ScenarioError(f"unknown scheduler variant {opts.variant} (scenario has: {', '.join(names)})")
    check_scenario(scenario, base)
    k = k.for_kubernetes(scenario.kubernetes_for(variant))  # and its Kubernetes release
    # the sweep's clusters run the variant's kube-scheduler: its binary and configuration, per size
    comps = run_components(setup_of(scenario, base, variant, k.toolchain))
    if any(c.name == "extender" for c in comps):
        raise ScenarioError(f"variant {variant.name}: sweeps do not support extender variants yet")
    k.toolchain.install("auto", rep, extras=("scheduler-plugins",) if any(w.gang for w in scenario.workloads) else ())
    for c in comps:
        c.build(rep)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    shard = opts.shard.label if opts.shard else None
    suffix = f"-shard-{opts.shard.index}-of-{opts.shard.count}" if opts.shard else ""
    sweep_dir = opts.out / scenario.name / f"sweep-{stamp}{suffix}"
    try:
        sweep_dir.mkdir(parents=True)
    except OSError as e:
        raise StoreError(f"cannot create sweep directory {sweep_dir}: {e.strerror}") from e
    nodes, rates = sorted(set(opts.nodes)), sorted(set(opts.qps))
    grid = [(n, q) for n in nodes for q in rates]  # canonical order: what a shard's slice is dealt from
    cells = shard_cells(grid, opts.shard) if opts.shard else grid
    host = host_info()
    doc: dict[str, Any] = {"format_version": SWEEP_FORMAT_VERSION, "scenario": scenario.name,
                           "scenario_digest": digest(scenario.model_dump(mode="json")),
                           "kwokbench_version": __version__, "shard": shard, "host": host,
                           "cells": [[n, q] for n, q in cells],
                           "scenario_file": str(scenario_path), "variant": variant.name, "status": "running",
                           "started_at": datetime.now(UTC).isoformat(), "owner": owner(), "nodes": nodes, "qps": rates,
                           "slo_p99_seconds": opts.slo_p99, "min_ratio": opts.min_ratio,
                           "duration_seconds": opts.duration, "points": []}
    save(sweep_dir, doc)
    total = len(cells)
    title = f"sweep {scenario.name}: {len(nodes)} sizes × {len(rates)} rates" + (
        f", shard {shard}: {total} of {len(grid)} points" if shard else "")
    try:
        with outcome(doc), rep.counter(title, total) as advance:
            done = 0
            for n in sorted({n for n, _ in cells}):
                sized = scaled(scenario, n)
                cluster = f"kb-sweep-{stamp[-7:-1].lower()}-{n}"
                copts = cluster_options(sized, base, variant, cluster, k.toolchain, comps)
                groups = node_groups(sized, base)
                rep.heading(f"{n} nodes: cluster {cluster}")
                # the watchdog exists before kwokctl starts anything, so a kill -9 during bring-up is covered
                guard = watchdog.start(cluster, k.home, sweep_dir, opts.keep_clusters)
                try:
                    info = bring_up(k, copts, groups, rep, keep_logs=sweep_dir / "logs" / f"{n}-nodes").cluster
                except BaseException:  # bring_up removed what it created; a cluster of that name was not ours
                    watchdog.stop(guard)
                    raise
                try:
                    saturated = ""
                    here = [q for m, q in cells if m == n]
                    for i, q in enumerate(here):
                        if saturated:
                            doc["points"].append({"nodes": n, "qps": q, "skipped": True, "holds": False,
                                                  "why": f"skipped: {saturated}", "shard": shard,
                                                  "host": host["hostname"]})
                        else:
                            # a point's pods are deleted for the next point on this cluster; after the last one
                            # the cluster goes (deleting 1800 pods first cost a 600/s point ~16 s)
                            clear = i < len(here) - 1 or opts.keep_clusters
                            point = _point(sized, scenario_path, q, opts, info, k, rep, variant.name, clear)
                            point.update(nodes=n, shard=shard, host=host["hostname"])
                            doc["points"].append(point)
                            rep.info(f"  {n} nodes, {q:g}/s: {point['throughput']:.1f} pods/s, p99 "
                                     f"{_ms(point['p99'])} → {'holds' if point['holds'] else point['why']}")
                            if not point["holds"] and opts.stop_early:
                                saturated = f"{n} nodes saturated at {q:g}/s"
                        save(sweep_dir, doc)
                        done += 1
                        advance(done)
                finally:
                    if not opts.keep_clusters:
                        with contextlib.suppress(KwokbenchError):
                            k.delete(cluster, rep)
                    watchdog.stop(guard)
    finally:
        ks = knees(doc["points"])
        doc["knees"] = {str(n): v for n, v in ks.items()}
        doc["sentences"] = [sentence(n, ks[n], opts.slo_p99, rates, first_failure(doc["points"], n)) for n in ks]
        doc["ended_at"] = datetime.now(UTC).isoformat()
        save(sweep_dir, doc)
    return sweep_dir


def _point(scenario: Scenario, scenario_path: Path, qps: float, opts: SweepOptions, info: ClusterInfo,
           k: Kwokctl, rep: Reporter, variant: str, clear: bool) -> dict[str, Any]:
    sc = at_rate(scenario, qps, opts.duration)
    v = next(s for s in sc.schedulers if s.name == variant)
    ropts = RunOptions(out=opts.out, cluster=info.name, scrape_interval=opts.runs.scrape_interval,
                       submit_workers=opts.runs.submit_workers, shard=opts.shard, commit=opts.runs.commit,
                       ref=opts.runs.ref)
    res = run_variant(sc, scenario_path.parent, v, ropts, rep, k)
    point = evaluate(res.summary, qps, opts.slo_p99, opts.min_ratio)
    point["run"] = str(res.path)
    point["ceiling"] = ((res.summary or {}).get("ceiling") or {}).get("pods_per_second")
    if clear:
        label = res.path.name.split("-")[1]
        asyncio.run(delete_labelled(info.credentials(), f"{RUN_LABEL}={label}", wait_seconds=120))
    return point


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f} ms"


def save(sweep_dir: Path, doc: dict[str, Any]) -> None:
    import orjson

    _atomic_write(sweep_dir / SWEEP, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))


def load(sweep_dir: Path) -> dict[str, Any]:
    return settle_status(read_versioned(sweep_dir, SWEEP, SWEEP_FORMAT_VERSION, "sweep"))
