"""Analysis of a stored run: every figure of ``summary.json`` from the run's raw files alone.

Runs after the cluster is gone, and again offline (``kwokbench analyse RUN``) when analysis code
improves: it reads ``meta.json`` (phases, scenario, fairness), the pod timeline, the request log, the
raw scrapes and the documents the measurements wrote (:mod:`kwokbench.measure`), and writes the summary
and the derived series (``binding_rate.parquet``, ``metrics.parquet``). Nothing here talks to a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kwokbench.ceiling import ceiling_section, cpu_shares
from kwokbench.figures.acceptance import add_counter_rates
from kwokbench.figures.allocation import allocation
from kwokbench.figures.bottleneck import limited_by
from kwokbench.figures.chaos import pods_lost, rate_from_pods, recovery, rescheduling
from kwokbench.figures.claims import claims_section
from kwokbench.figures.jobs import jobs
from kwokbench.figures.overbooking import gpu_choices
from kwokbench.figures.placement import placement
from kwokbench.figures.pprof import profiles_section
from kwokbench.figures.summary import POD_COLUMNS, summarize, with_columns
from kwokbench.measure import WATCH_DOC_VERSION
from kwokbench.metrics.derive import create_rates, derive
from kwokbench.metrics.scrape import PROCS, SCRAPES
from kwokbench.scenario import duet
from kwokbench.store import (
    BINDING_RATE,
    CHAOS,
    CLAIMS,
    EXTENDER,
    FAILED_SCHEDULING,
    HOST,
    KUEUE_WORKLOADS,
    METRICS,
    NODES,
    PROMETHEUS,
    SCRAPE_STATS,
    SUMMARY,
    WATCH,
    RunDir,
    load_run,
    read_doc,
    read_versioned,
)

PLACEMENT_COLUMNS: dict[str, type] = {**POD_COLUMNS, "namespace": str, "name": str, "workload": str, "node": str,
                                      "cpu_m": float, "gpus": float, "deleted": bool, "scheduler": str,
                                      "deleted_at": float}
ALLOCATION_COLUMNS: dict[str, type] = {**PLACEMENT_COLUMNS, "mem_mi": float, "gpu_milli": float}
METRICS_NOT_FROM_CLIENTS = ("kube-scheduler", "kube-controller-manager", "etcd")
"""Components whose /metrics an attached cluster does not expose to a client."""


def served_scheduler_names(meta: dict[str, Any]) -> set[str] | None:
    """The schedulerNames a scheduler of the run served (None when kwokbench cannot know: an attached
    cluster, or a run stored before schedulers had names)."""
    if (meta.get("cluster") or {}).get("attached"):
        return None
    fair = meta.get("fairness") or {}
    together = fair.get("concurrent_schedulers")
    if together:
        return {str(v["scheduler_name"]) for v in together}
    name = fair.get("scheduler_name")
    return {str(name)} if name else None


def kueue_cross_check(kueue: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Workloads admitted by Kueue's own counter against the Workload watch (1% apart at most)."""
    metric = sum(kueue.get("admitted_workloads", {}).values())
    watched = sum(j.get("jobs_admitted", 0) for j in jobs)
    diff = abs(metric - watched) / max(watched, 1)
    return {"admitted_from_metric": metric, "admitted_in_watch": watched, "relative_difference": diff,
            "agrees": diff <= 0.01}


def watch_gaps(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per object watch of the run that restarted: its restarts, and the gaps in which it relisted (how many, how
    long in all, the objects that vanished in them): the records those objects are in say where they are cut."""
    out: dict[str, dict[str, Any]] = {}
    pods = read_doc(run_dir, WATCH)  # the pod timeline's, then each object watch's
    docs = ([{"watch": "Pod", **pods}] if pods else []) + [
        {"watch": f.name.removesuffix("_watch.json"), **read_versioned(run_dir, f.name, WATCH_DOC_VERSION,
                                                                      "watch record")}
        for f in sorted(run_dir.glob("*_watch.json"))]
    for doc in docs:
        errors, gaps = doc.get("errors") or [], doc.get("gaps") or []
        if errors or gaps:
            out[str(doc["watch"])] = {
                "restarts": len(errors), "gaps": len(gaps),
                "gap_seconds": round(sum(float(g.get("seconds") or 0) for g in gaps), 3),
                "vanished": sum(len(g.get("vanished") or []) for g in gaps)}
    return out


def analyse(run_dir: Path, write: bool = True) -> dict[str, Any]:
    """The run's summary (and, with ``write``, summary.json and the derived series written)."""
    rd, stored = RunDir(run_dir), load_run(run_dir)
    meta, pods, requests = stored.meta, stored.pods, stored.requests
    phases: list[dict[str, Any]] = meta.get("phases") or []
    summary = summarize(pods, requests, phases, sum(p.get("pods_expected", 0) for p in phases))
    summary["watch_errors"] = (read_doc(run_dir, WATCH) or {}).get("errors", [])
    if gaps := watch_gaps(run_dir):
        summary["watch_gaps"] = gaps
    host = read_doc(run_dir, HOST)
    if host:
        summary["host"] = {k: v for k, v in host.items() if k != "format_version"}
    nodes_file, failed = run_dir / NODES, read_doc(run_dir, FAILED_SCHEDULING)
    nodes = pd.read_parquet(nodes_file) if nodes_file.exists() else None  # read once for the three sections
    if nodes is not None and (alloc := allocation(with_columns(pods, ALLOCATION_COLUMNS), nodes)) is not None:
        summary["allocation"] = alloc
    if nodes is not None and failed is not None:
        summary["placement"] = placement(with_columns(pods, PLACEMENT_COLUMNS), nodes, phases,
                                         failed["messages"], served_scheduler_names(meta))
    if any(p.get("kind") == "Job" for p in phases):
        wl = pd.read_parquet(run_dir / KUEUE_WORKLOADS) if (run_dir / KUEUE_WORKLOADS).exists() else None
        summary["jobs"] = jobs(with_columns(pods, PLACEMENT_COLUMNS), requests, phases, str(meta.get("run_label", "")),
                               wl)
    if nodes is not None and (choices := gpu_choices(pods, nodes)) is not None:
        summary["gpu_choices"] = choices
    if (run_dir / CLAIMS).exists():
        summary["claims"] = claims_section(pd.read_parquet(run_dir / CLAIMS), with_columns(pods, PLACEMENT_COLUMNS),
                                           ((meta.get("scenario") or {}).get("cluster") or {}).get("node_groups"))
    extender = read_doc(run_dir, EXTENDER)
    if extender:
        summary["extender"] = {k: v for k, v in extender.items() if k not in ("format_version", "migrated_from")}
    series = pd.DataFrame()
    if (run_dir / SCRAPES).is_dir():
        client_qps = (meta.get("fairness") or {}).get("scheduler_client_qps")
        rate, series, section = derive(run_dir, with_columns(pods, POD_COLUMNS), client_qps)
        section["scrapes"] = {k: v for k, v in (read_doc(run_dir, SCRAPE_STATS) or {}).items()
                              if k != "format_version"}
        summary.update(section)
        if "kueue" in summary and summary.get("jobs"):
            summary["kueue"]["cross_check"] = kueue_cross_check(summary["kueue"], summary["jobs"])
        add_counter_rates(summary["submit"], create_rates(series, summary["submit"], phases))
        if write:
            rd.write_frame(BINDING_RATE, rate)
            rd.write_frame(METRICS, series)  # e.g. scheduler_pending_pods over time, per queue
    procs = pd.read_parquet(run_dir / PROCS) if (run_dir / PROCS).exists() else pd.DataFrame()
    summary["limited_by"] = limited_by(summary, meta, series, procs, with_columns(pods, POD_COLUMNS))
    if duet_record := (meta.get("group") or {}).get("duet"):
        summary["duet"] = duet.section(with_columns(pods, PLACEMENT_COLUMNS), duet_record, summary.get("schedulers"),
                                       summary["limited_by"])
    if (meta.get("cluster") or {}).get("attached"):
        present = set((meta.get("cluster") or {}).get("metrics") or {})
        summary["metrics_missing"] = [c for c in METRICS_NOT_FROM_CLIENTS if c not in present]
    chaos = read_doc(run_dir, CHAOS)
    if chaos is not None:
        events = chaos["events"]
        rate_frame = pd.read_parquet(run_dir / BINDING_RATE) if (run_dir / BINDING_RATE).exists() \
            else rate_from_pods(pods)
        cpods = with_columns(pods, PLACEMENT_COLUMNS)
        affected = {n for e in events for n in e.get("nodes") or []}
        summary["chaos"] = {"events": recovery(events, rate_frame, cpods),
                            "pods_lost": pods_lost(pods, sum(p.get("pods_expected", 0) for p in phases)),
                            **rescheduling(cpods, phases, affected)}
    prom = read_doc(run_dir, PROMETHEUS)
    if prom:
        summary["prometheus"] = {k: v for k, v in prom.items() if k not in ("series", "format_version",
                                                                             "migrated_from")}
    profiles = profiles_section(run_dir)
    if profiles is not None:
        summary["profiles"] = profiles
    cpu_shares(summary, meta)  # where the host's cores went, beside the ceiling
    if ceiling := ceiling_section(summary, meta):
        summary["ceiling"] = ceiling
    if write:
        rd.write_json(SUMMARY, summary)
    return summary
