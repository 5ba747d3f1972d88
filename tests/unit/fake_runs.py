"""Stored runs made up in memory (and a binding-rate file on disk), for report and chart tests."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kwokbench.store import BINDING_RATE, StoredRun


def fake_run(tmp: Path, variant: str, repeat: int, throughput: float, p50_ms: float = 20.0, pods: int = 400,
             nodes: int = 20, unscheduled: int = 0) -> StoredRun:
    """A complete run of ``variant``: ``pods`` pods created at 100/s and scheduled at ``throughput`` pods/s."""
    rng = np.random.default_rng(zlib.crc32(f"{variant}/{repeat}".encode()))
    path = tmp / f"20260101T0000{repeat:02d}Z-{variant[:2]}{repeat:04d}-{variant}"
    path.mkdir(parents=True)
    t0 = 1_700_000_000.0
    created = t0 + np.arange(pods) / 100.0
    waited = created + rng.exponential(p50_ms / 1000 / np.log(2), pods)  # median p50_ms
    scheduled = np.maximum(waited, t0 + np.arange(pods) / throughput)
    pod_frame = pd.DataFrame({"name": [f"p-{i}" for i in range(pods)], "created": created, "scheduled": scheduled,
                              "running": scheduled + 0.05, "finished": np.nan,
                              "node": [f"kb-n-{i % nodes}" for i in range(pods)], "phase": "pods",
                              "from_list": False, "cpu_m": 100 + 100 * (np.arange(pods) % 3), "gpus": 0})
    requests = pd.DataFrame({"scheduled": created, "dispatched": created + 0.0005, "sent": created + 0.0006,
                             "latency": np.full(pods, 0.004), "status": 201})
    secs = np.arange(int(pods / throughput) + 2)
    pd.DataFrame({"t": t0 + secs, "rate": np.full(len(secs), throughput) + rng.normal(0, 3, len(secs))}) \
        .to_parquet(path / BINDING_RATE)
    lat = np.sort((scheduled - created) * 1000)
    meta: dict[str, Any] = {
        "status": "complete", "scenario": {"name": "compare", "description": "two variants"},
        "toolchain": {"kubernetes": "v1.36.4"}, "host": {"cpu_model": "x", "cpus": 2, "hostname": "h1"},
        "fairness": {"scheduler_client_qps": 5000, "scheduler_client_burst": 10000, "gogc_apiserver_etcd": 400},
        "cluster": {"nodes": nodes}, "variant": {"name": variant, "binary": "kube-scheduler", "client_qps": None},
        "phases": [{"name": "pods", "timed_out": False}]}
    summary: dict[str, Any] = {
        "throughput": {"average": throughput},
        "latency": {"created_to_scheduled": {"p50": float(np.percentile(lat, 50)) / 1000,
                                             "p90": float(np.percentile(lat, 90)) / 1000,
                                             "p99": float(np.percentile(lat, 99)) / 1000}},
        "pods_scheduled": pods - unscheduled, "pods_expected": pods, "pods_unscheduled": unscheduled,
        "processes": {c: {"cpu_seconds": 3.0 + repeat, "rss_peak_bytes": (200 + 10 * repeat) * 2**20}
                      for c in ("kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager",
                                "kwok-controller")},
        "submit": [{"phase": "pods", "offered_qps": 100.0, "sent_qps": 100.0, "accepted_qps": 99.0,
                    "rates": {"whole": {"apiserver_counter": 98.0}}}],
        "scheduler": {"scheduling_attempt_duration_seconds": {"mean": 0.002},
                      "scheduling_algorithm_duration_seconds": {"mean": 0.0015},
                      "extension_point_duration_seconds": {"Filter": {"mean": 0.0008}, "Score": {"mean": 0.0004}}},
        "placement": {"pending": {"pods": unscheduled}, "utilisation": {"nodes": nodes, "nodes_used": nodes}},
        # as a YuniKorn run's: one queue's allocation over time against its guarantee and max
        "yunikorn": {"queues": {"root.tenant": {"guaranteed": {"vcore": 8000.0}, "max": {"vcore": 12000.0},
                                                "series": {"t": [0.0, 1.0, 2.0, 3.0],
                                                           "vcore": [0.0, 4000.0, 9000.0, 12000.0 - repeat]}}}},
        # as a replayed trace's: the cluster filling over time, and the FGD paper's curve
        "allocation": {"gpu_capacity": 16.0,
                       "series": {"t": [0.0, 1.0, 2.0, 3.0], "cpu": [0.0, 0.3, 0.6, 0.7],
                                  "memory": [0.0, 0.2, 0.4, 0.5],
                                  "gpu": [0.0, 0.4, 0.8, 0.9 - repeat / 100], "pending": [0.0, 3.0, 10.0, 12.0],
                                  "fragmented_gpus": [0.0, 0.0, 1.0, 2.0]},
                       "gpu_allocated_vs_arrived": [{"arrived": float(a), "allocated": min(a, 90.0 - repeat)}
                                                    for a in range(0, 130, 5)],
                       # as two tenants' runs: each workload's CPUs over time
                       "by_workload": {w: {"series": {"cpu": [0.0, 10.0 * k, 20.0 * k, 30.0 * k - repeat],
                                                      "pending": [0.0, 5.0, 2.0, 1.0]},
                                           "peak_cores": 30.0 * k - repeat, "final_cores": 30.0 * k - repeat,
                                           "final_share": (30.0 * k - repeat) / 100}
                                       for k, w in enumerate(("tenant-a", "tenant-b"), start=1)}},
    }
    return StoredRun(path, meta, summary, pod_frame, requests)


def two_variants(tmp: Path, repeats: int = 4) -> list[StoredRun]:
    """default and fast, interleaved as `run --repeat` stores them: fast schedules ~20% more pods/s."""
    runs = []
    for i in range(repeats):
        runs.append(fake_run(tmp, "default", 2 * i, 100.0 + 2 * i, p50_ms=30.0))
        runs.append(fake_run(tmp, "fast", 2 * i + 1, 120.0 + 2 * i, p50_ms=15.0, unscheduled=1 if i == 1 else 0))
    return runs


def stored(run: StoredRun, **meta: Any) -> StoredRun:
    """``run`` written to its directory as kwokbench stores one (meta.json, summary.json, parquet files), with
    ``meta`` fields added: for tests of what reads run directories from disk (report, gate, merge)."""
    from kwokbench.store import PODS, REQUESTS, SUMMARY, RunDir

    rd = RunDir(run.path)
    run.meta.update(meta)
    rd.write_meta(run.meta)
    rd.write_doc(SUMMARY, run.summary or {})
    rd.write_frame(PODS, run.pods)
    rd.write_frame(REQUESTS, run.requests)
    return run


SWEEP_NODES, SWEEP_QPS = [20, 40], [50.0, 100.0, 200.0]


def fake_sweep(root: Path, shard: tuple[int, int] | None, host: str = "h1", scenario: str = "compare",
               toolchain: str = "v1.36.4", kwokbench_version: str | None = None) -> Path:
    """A stored sweep as ``sweep --shard i/N`` leaves it on one machine: ``root/<scenario>/sweep-…`` and, beside
    it, a run directory per point of its shard. 20 nodes bind up to 120 pods/s, 40 nodes up to 150/s: both
    knees are at 100/s (200/s fails)."""
    from kwokbench.shard import Shard, shard_cells
    from kwokbench.store import SWEEP_FORMAT_VERSION, host_info
    from kwokbench.sweep import evaluate, first_failure, knees, save, sentence

    grid = [(n, q) for n in SWEEP_NODES for q in SWEEP_QPS]
    cells = shard_cells(grid, Shard(*shard)) if shard else grid
    label = f"{shard[0]}/{shard[1]}" if shard else None
    hostd = {**host_info(), "hostname": host}
    folder = root / scenario
    points = []
    for n, q in cells:
        i = grid.index((n, q))
        run = fake_run(folder, "default", i, min(q, 120.0 if n == 20 else 150.0), nodes=n)
        bound = min(q, 120.0 if n == 20 else 150.0)
        run.summary = {**(run.summary or {}), "binding_rate": {"available": False}, "throughput": {"average": bound},
                       "latency": {"created_to_scheduled": {"p99": 0.05 if bound == q else 2.0}},
                       "submit": [{"phase": "pods", "offered_qps": q, "accepted_qps": q}]}
        meta: dict[str, Any] = {"shard": label, "host": hostd, "toolchain": {"kubernetes": toolchain},
                                "scenario": {"name": scenario, "schema_version": 1,
                                             "cluster": {"node_groups": [{"name": "g", "count": n}]},
                                             "workloads": [{"name": "pods", "count": int(q * 3)}]}}
        if kwokbench_version:
            meta["kwokbench_version"] = kwokbench_version
        stored(run, **meta)
        if kwokbench_version:  # write_meta stamps this kwokbench's version first: a shard of another one
            import orjson

            doc = orjson.loads((run.path / "meta.json").read_bytes())
            (run.path / "meta.json").write_bytes(orjson.dumps({**doc, "kwokbench_version": kwokbench_version}))
        p = evaluate(run.summary, q, 1.0, 0.95)
        p.update(nodes=n, run=str(run.path), shard=label, host=host, ceiling=None)
        points.append(p)
    sweep_dir = folder / ("sweep-20260101T000000Z" + (f"-shard-{shard[0]}-of-{shard[1]}" if shard else ""))
    sweep_dir.mkdir(parents=True)
    ks = knees(points)
    doc = {"format_version": SWEEP_FORMAT_VERSION, "scenario": scenario, "scenario_file": "s.yaml",
           "scenario_digest": f"digest-of-{scenario}", "kwokbench_version": kwokbench_version or "0.1.0",
           "shard": label, "host": hostd, "cells": [list(c) for c in cells], "variant": "default",
           "status": "complete", "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:10:00+00:00",
           "nodes": SWEEP_NODES, "qps": SWEEP_QPS, "slo_p99_seconds": 1.0, "min_ratio": 0.95,
           "duration_seconds": 3.0, "points": points, "knees": {str(n): v for n, v in ks.items()},
           "sentences": [sentence(n, ks[n], 1.0, SWEEP_QPS, first_failure(points, n)) for n in ks]}
    save(sweep_dir, doc)
    return sweep_dir


def run_dir(root: Path, n: int, throughput: float, commit: str | None = None, scenario: str = "perf",
            variant: str = "default", hostname: str = "h1", ceiling: float | None = None, p99: float = 1.0,
            status: str = "complete") -> Path:
    """A run directory on disk (meta.json and summary.json only) as ``run`` stores it, started ``n``
    minutes after 2026-01-01 with ``commit`` recorded (none: as a run from before commits were recorded)."""
    from kwokbench.store import RunDir

    started = f"2026-01-01T{n // 60:02d}:{n % 60:02d}:00+00:00"
    name = f"20260101T{n // 60:02d}{n % 60:02d}00Z-{n:06x}"
    d = RunDir(root / scenario / name)
    d.path.mkdir(parents=True)
    meta: dict[str, Any] = {"status": status, "run_id": name, "started_at": started, "scenario": {"name": scenario},
                            "variant": {"name": variant}, "toolchain": {"kubernetes": "v1.36.4"},
                            "host": {"hostname": hostname, "cpu_model": "x", "cpus": 2}, "cluster": {"nodes": 100}}
    if commit:
        meta["code"] = {"commit": commit, "ref": "main", "dirty": False, "source": "option"}
    d.write_meta(meta)
    summary: dict[str, Any] = {"throughput": {"average": throughput}, "pods_scheduled": 3000, "pods_expected": 3000,
                               "pods_unscheduled": 0, "latency": {"created_to_scheduled": {"p50": p99 / 2, "p99": p99}},
                               "processes": {"etcd": {"cpu_seconds": 1.5}}}
    if ceiling:
        summary["ceiling"] = {"pods_per_second": ceiling, "ratio": throughput / ceiling}
    d.write_doc("summary.json", summary)
    return d.path
