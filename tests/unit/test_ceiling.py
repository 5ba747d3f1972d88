"""This host's ceiling: matching a size to a scheduler_perf workload, stored ceilings and their age, the
summary's ratio and CPU shares, and a run of a stand-in test binary bounded in time."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from kwokbench.ceiling import (
    FORMAT_VERSION,
    Ceiling,
    PerfWorkload,
    bench_args,
    ceiling_section,
    cpu_shares,
    host_fingerprint,
    latest_ceiling,
    nearest_workload,
    perf_workloads,
    pick_ceiling,
    read_ceiling,
    result_rows,
    run_workload,
    stop_orphans,
    stored_ceilings,
    throughput_figures,
    unstable,
)
from kwokbench.errors import ClusterError, ScenarioError, StoreError, ToolchainError
from kwokbench.metrics.derive import process_usage
from kwokbench.report.table import ceiling_rows
from kwokbench.toolchain.scheduler_perf import feature_defaults

GOLDEN = Path(__file__).parent / "golden" / "scheduler_perf"
HOST = {"hostname": "vm", "cpu_model": "AMD EPYC", "cpus": 2, "memory_bytes": 25276518400, "kernel": "6.18"}
STOCK_1_36 = {"SchedulerQueueingHints": True, "SchedulerAsyncAPICalls": False, "NodeDeclaredFeatures": True}


@pytest.fixture(scope="module")
def basic() -> list[PerfWorkload]:
    """SchedulingBasic of Kubernetes v1.36.4's misc/performance-config.yaml (copied verbatim)."""
    return perf_workloads((GOLDEN / "performance-config-v1.36.4.yaml").read_text())


def test_scheduling_basic_workloads_are_read_from_the_real_config(basic: list[PerfWorkload]) -> None:
    by_name = {w.name: w for w in basic}
    assert {"500Nodes", "5000Nodes", "5000Nodes_10000Pods", "5000Nodes_10000Pods_QueueingHintsEnabled"} <= set(by_name)
    w = by_name["5000Nodes_10000Pods"]
    assert (w.nodes, w.init_pods, w.pods) == (5000, 1000, 10000)
    assert dict(w.feature_gates) == {"SchedulerQueueingHints": False}
    assert w.label_filter == "performance"
    assert by_name["500Nodes"].label_filter == ""  # unlabelled: the default filter "performance" would skip it
    with pytest.raises(ToolchainError, match="no Nope test case"):
        perf_workloads("- name: SchedulingBasic\n  workloads: []\n", "Nope")


@pytest.mark.parametrize(("nodes", "pods", "want"), [
    (500, 1000, "500Nodes"),
    (500, 2000, "500Nodes"),
    (100, 1000, "500Nodes"),  # never the 5-node workloads: too short to sample a throughput
    (1000, 5000, "500Nodes"),  # as far from 5000Nodes_10000Pods in total: the nearer node count wins
    (1000, None, "500Nodes"),
    (5000, 1000, "5000Nodes"),
    # same sizes, different gates: the one a stock 1.36 scheduler runs (queueing hints on, locked since 1.34)
    (5000, 11000, "5000Nodes_10000Pods_QueueingHintsEnabled"),
    (5000, 50000, "5000Nodes_50000Pods_QueueingHintsEnabled"),
    (20000, 200000, "5000Nodes_50000Pods_QueueingHintsEnabled"),
])
def test_nearest_workload(basic: list[PerfWorkload], nodes: int, pods: int | None, want: str) -> None:
    assert nearest_workload(nodes, pods, basic, STOCK_1_36) == want


def test_nearest_workload_without_gate_defaults_prefers_fewer_overrides() -> None:
    ws = [PerfWorkload("b_Gated", 500, 1000, feature_gates=(("X", True),)), PerfWorkload("a", 500, 1000)]
    assert nearest_workload(500, 1000, ws) == "a"
    assert nearest_workload(500, 1000, ws, {"X": True}) == "a"  # equal distance and no mismatch: fewer gates
    with pytest.raises(ToolchainError, match="measuring 1000"):
        nearest_workload(5, 10, [PerfWorkload("5Nodes", 5, 10)])
    with pytest.raises(ValueError):
        nearest_workload(0, 10, ws)


def test_feature_defaults_take_the_newest_spec() -> None:
    go = textwrap.dedent("""\
        var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
        \tSchedulerQueueingHints: {
        \t\t{Version: version.MustParse("1.28"), Default: false, PreRelease: featuregate.Beta},
        \t\t{Version: version.MustParse("1.34"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
        \t},

        \tOldGate: {
        \t\t{Version: version.MustParse("1.0"), Default: true, PreRelease: featuregate.GA},
        \t\t{Version: version.MustParse("1.35"), Default: false, LockToDefault: true}, // remove in 1.38
        \t},
        }

        var defaultKubernetesFeatureGateDependencies = map[featuregate.Feature][]featuregate.Feature{
        \tOldGate: {},
        }
        """).replace("        \t", "\t")
    assert feature_defaults(go) == {"SchedulerQueueingHints": True, "OldGate": False}


def test_throughput_figures_from_data_items() -> None:
    doc = {"version": "v1", "dataItems": [
        {"data": {"Perc50": 2.1, "Perc99": 9.0}, "unit": "ms",
         "labels": {"Metric": "scheduler_framework_extension_point_duration_seconds", "Name": "x"}},
        {"data": {"Average": 379.1, "Perc50": 339, "Perc90": 540, "Perc95": 560, "Perc99": 600}, "unit": "pods/s",
         "labels": {"Metric": "SchedulingThroughput", "Name": "SchedulingBasic/5000Nodes_10000Pods/namespace-2"}},
    ]}
    assert throughput_figures(doc) == {"average": 379.1, "p50": 339.0, "p90": 540.0, "p95": 560.0, "p99": 600.0}
    doc["dataItems"].append({"data": {"Duration": 40.0}, "unit": "s",
                             "labels": {"Metric": "SchedulingDuration", "Name": "x"}})
    assert throughput_figures(doc, 10000) == {"average": 379.1, "p50": 339.0, "p90": 540.0, "p95": 560.0, "p99": 600.0,
                                              "duration_seconds": 40.0, "overall": 250.0}
    # too few pods to sample: scheduler_perf writes the item without data (and "not applicable" labels)
    assert throughput_figures({"dataItems": [{"data": None, "labels": {"Metric": "not applicable"}}]}) is None


def test_throughput_figures_from_a_real_500nodes_run() -> None:
    """Data items written by this toolchain's scheduler_perf (500Nodes, 2 cores): one 1 s sample only."""
    doc = json.loads((GOLDEN / "dataitems-500Nodes-v1.36.4.json").read_text())
    f = throughput_figures(doc, 1000)
    assert f is not None
    assert f["average"] == f["p50"] == f["p99"] == pytest.approx(534.008, abs=1e-3)
    assert f["duration_seconds"] == pytest.approx(2.7, abs=0.01) and f["overall"] == pytest.approx(370.4, abs=0.1)


def test_host_fingerprint_names_the_host_and_changes_with_it() -> None:
    fp = host_fingerprint(HOST)
    assert fp.startswith("vm-") and fp == host_fingerprint({**HOST, "python": "3.12"})  # python is not the host
    assert host_fingerprint({**HOST, "kernel": "6.19"}) != fp
    assert host_fingerprint({**HOST, "hostname": "a b/c"}).startswith("a_b_c-")


def _store(root: Path, measured: datetime, nodes: int, pps: float | list[float], workload: str = "w",
           version: str = "v1.36.4", host: dict[str, Any] | None = None, **extra: Any) -> Path:
    runs = pps if isinstance(pps, list) else [pps]
    fp = host_fingerprint(host or HOST)
    d = root / version / fp
    d.mkdir(parents=True, exist_ok=True)
    doc = {"format_version": FORMAT_VERSION, "kubernetes": version, "host": host or HOST, "host_fingerprint": fp,
           "measured_at": measured.isoformat(), "test_case": "SchedulingBasic", "workload": workload,
           "params": {"nodes": nodes, "init_pods": nodes, "pods": 2 * nodes}, "feature_gates": {},
           "runs": [{"pods_per_second": r, "average": r + 50, "p50": r, "p90": r, "p99": r, "wall_seconds": 30.0,
                     "note": ""} for r in runs],
           "pods_per_second": sorted(runs)[len(runs) // 2], **extra}
    if len(runs) > 1:
        doc["spread"] = {"min": min(runs), "max": max(runs), "relative_range": (max(runs) - min(runs)) / doc[
            "pods_per_second"]}
    path = d / f"{workload}-{measured.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(doc))
    return path


def test_stored_ceilings_nearest_size_then_latest(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
    _store(tmp_path, t0, 500, 300.0, "500Nodes")
    newer = _store(tmp_path, t0 + timedelta(hours=1), 500, 320.0, "500Nodes")
    _store(tmp_path, t0 + timedelta(hours=2), 5000, 380.0, "5000Nodes_10000Pods")
    _store(tmp_path, t0 + timedelta(hours=3), 500, 999.0, host={**HOST, "hostname": "other"})
    _store(tmp_path, t0 + timedelta(hours=3), 500, 999.0, version="v1.35.0")
    (tmp_path / "v1.36.4" / host_fingerprint(HOST) / "future.json").write_text(json.dumps({"format_version": 99}))
    assert len(stored_ceilings("v1.36.4", host_fingerprint(HOST), tmp_path)) == 3  # the newer format is skipped
    c = latest_ceiling("v1.36.4", HOST, 1000, tmp_path)
    assert c is not None and (c.pods_per_second, c.workload, c.path) == (320.0, "500Nodes", newer)
    c = latest_ceiling("v1.36.4", HOST, 4000, tmp_path)
    assert c is not None and c.workload == "5000Nodes_10000Pods"
    assert c.age_seconds(t0 + timedelta(hours=3)) == 3600 and c.age_seconds(t0) == -7200
    assert latest_ceiling("v1.36.4", {**HOST, "cpus": 4}, 500, tmp_path) is None
    assert latest_ceiling("v1.37.0", HOST, 500, tmp_path) is None
    assert pick_ceiling([], 500) is None


def test_read_ceiling_refuses_unknown_or_broken_files(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"format_version": 2}))
    with pytest.raises(StoreError, match="ceiling format version 2 is not supported"):
        read_ceiling(f)
    f.write_text(json.dumps({"format_version": FORMAT_VERSION, "pods_per_second": 1}))
    with pytest.raises(StoreError, match="not a kwokbench ceiling"):
        read_ceiling(f)
    f.write_text("{")
    with pytest.raises(StoreError, match="unreadable"):
        read_ceiling(f)


def test_spread_and_instability_warning(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 23, tzinfo=UTC)
    c = read_ceiling(_store(tmp_path, t0, 500, [300.0, 310.0, 320.0]))
    assert c.pods_per_second == 310.0 and c.spread == pytest.approx(20 / 310)
    assert Ceiling(1.0, t0, "w", 1, 1, "v", "h", (1.0,)).spread is None
    doc = json.loads(_store(tmp_path, t0, 5000, [300.0, 400.0, 350.0], "x").read_text())
    assert "35.0 pods/s" not in " ".join(r[1] for r in result_rows(doc))
    rows = dict(result_rows(doc))
    assert rows["ceiling (median of the runs)"] == "350.0 pods/s"
    assert rows["run 2: pods/s; SchedulingThroughput average / p50 / p90 / p99"] == \
        "400.0; 450.0 / 400.0 / 400.0 / 400.0 (30 s)"
    assert rows["spread (max − min) / median"] == "28.6% (300.0–400.0 pods/s)"
    assert "29% apart" in (unstable(doc) or "")
    assert unstable(json.loads(_store(tmp_path, t0, 50, [300.0, 310.0], "y").read_text())) is None


def _meta(started: datetime, nodes: int = 1000, **cluster: Any) -> dict[str, Any]:
    return {"started_at": started.isoformat(), "toolchain": {"kubernetes": "v1.36.4"}, "host": {**HOST, "python": "3"},
            "cluster": {"nodes": nodes, **cluster},
            "phases": [{"name": "pods", "harness_cpu_seconds": 0.6}, {"name": "more", "harness_cpu_seconds": 0.4}]}


def test_summary_ratio_against_the_ceiling(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 23, 12, tzinfo=UTC)
    path = _store(tmp_path, t0, 500, 400.0, "500Nodes")
    summary = {"throughput": {"average": 140.0, "window_seconds": 10.0}}
    c = ceiling_section(summary, _meta(t0 + timedelta(minutes=30)), tmp_path)
    assert c is not None
    assert c["ratio"] == pytest.approx(0.35) and c["pods_per_second"] == 400.0 and c["workload"] == "500Nodes"
    assert c["age_seconds"] == 1800 and c["measured_at"] == t0.isoformat() and c["file"] == str(path)
    later = ceiling_section(summary, _meta(t0 - timedelta(minutes=5)), tmp_path)
    assert later is not None and later["age_seconds"] == -300  # measured after the run
    assert ceiling_section(summary, _meta(t0, attached=True), tmp_path) is None  # the control plane was elsewhere
    assert ceiling_section({}, _meta(t0), tmp_path) is None
    assert ceiling_section(summary, _meta(t0), tmp_path / "empty") is None
    rows = ceiling_rows({**summary, "ceiling": c})
    assert rows == [["throughput vs this host's ceiling (scheduler_perf)",
                     "140.0 pods/s = 35% of this host's in-process ceiling (400.0 pods/s, 500Nodes, measured "
                     "30 min before the run)"]]
    assert "measured 5 min after the run" in ceiling_rows({**summary, "ceiling": later})[0][1]
    arrival = ceiling_rows({**summary, "ceiling": c, "limited_by": {"verdict": "arrival"}})[0][1]
    assert arrival.endswith("before the run); arrival-bound, not a limit")


def test_process_cpu_over_the_pending_window_and_shares_of_the_host() -> None:
    # the scheduler uses 1 core from t=100 to t=110 and nothing outside; the apiserver 0.5 core throughout
    t = [90.0, 100.0, 105.0, 110.0, 120.0]
    procs = pd.DataFrame({"t": t * 2, "component": ["kube-scheduler"] * 5 + ["kube-apiserver"] * 5,
                          "cpu_seconds": [1.0, 1.0, 6.0, 11.0, 11.0, 0.0, 5.0, 7.5, 10.0, 15.0],
                          "rss_bytes": [1] * 10})
    usage = process_usage(procs, (100.0, 110.0))
    assert usage["kube-scheduler"]["cpu_seconds"] == 10.0
    assert usage["kube-scheduler"]["cores_window"] == pytest.approx(1.0)
    assert usage["kube-apiserver"]["cores_window"] == pytest.approx(0.5)
    assert usage["kube-apiserver"]["cpu_cores_avg"] == pytest.approx(0.5)
    assert "cores_window" not in process_usage(procs)["kube-scheduler"]
    # a restart (the counter drops) is counted from 0, as everywhere else
    restarted = procs.assign(cpu_seconds=[1.0, 1.0, 6.0, 5.0, 5.0, 0.0, 5.0, 7.5, 10.0, 15.0])
    assert process_usage(restarted, (100.0, 110.0))["kube-scheduler"]["cores_window"] == pytest.approx(1.0)
    summary: dict[str, Any] = {"throughput": {"average": 100.0, "window_seconds": 10.0}, "processes": usage}
    cpu_shares(summary, _meta(datetime(2026, 1, 1, tzinfo=UTC)))
    assert summary["processes"]["kube-scheduler"]["cores_share"] == pytest.approx(0.5)
    assert summary["processes"]["kube-apiserver"]["cores_share"] == pytest.approx(0.25)
    assert summary["kwokbench_cpu"] == {"cpu_seconds": 1.0, "cores_share": pytest.approx(0.05), "cpus": 2,
                                        "window_seconds": 10.0}
    assert ceiling_rows(summary) == [["host CPU over the pending window (2 cores)",
                                      "kube-scheduler 50%, kube-apiserver 25%, kwokbench 5%; other or idle 20%"]]


def test_bench_args_run_only_that_workload() -> None:
    args = bench_args(PerfWorkload("500Nodes", 500, 1000), Path("/d"), 600)
    assert args[:2] == ["-test.run=^$", "-test.bench=^BenchmarkPerfScheduling$/^SchedulingBasic$/^500Nodes$"]
    assert "-test.benchtime=1x" in args and "-perf-scheduling-label-filter=" in args
    assert "-data-items-dir=/d" in args and "-test.timeout=660s" in args
    perf = PerfWorkload("5000Nodes_10000Pods", 5000, 10000, labels=("performance",))
    assert "-perf-scheduling-label-filter=performance" in bench_args(perf, Path("/d"), 600)


# ---- a stand-in test binary: what run_workload does with processes, files and time ----------------

FAKE = """#!{python}
import json, os, subprocess, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
mode = os.environ["FAKE_MODE"]
tmp = os.environ["TMPDIR"]
# like scheduler_perf: etcd from PATH, its data dir under TMPDIR
etcd = subprocess.Popen(["etcd", "--data-dir", os.path.join(tmp, "etcd123")])
open(os.environ["FAKE_PIDS"], "a").write(f"{{etcd.pid}}\\n")
if mode == "hang":
    time.sleep(300)
os.makedirs(args["-data-items-dir"], exist_ok=True)
if mode != "nodata":
    doc = {{"version": "v1", "dataItems": [{{"data": {{"Average": 321.5, "Perc50": 300, "Perc90": 400,
           "Perc95": 410, "Perc99": 420}}, "unit": "pods/s", "labels": {{"Metric": "SchedulingThroughput"}}}}]}}
    with open(os.path.join(args["-data-items-dir"], "BenchmarkPerfScheduling_benchmark_x.json"), "w") as f:
        json.dump(doc, f)
print("FAKE OUTPUT", sys.argv[1:], os.getcwd(), flush=True)
if mode != "leave-etcd":
    etcd.terminate()
sys.exit(1 if mode in ("fail", "nodata") else 0)
"""

FAKE_ETCD = """#!{python}
import time
time.sleep(300)
"""


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, Path]:
    bins = tmp_path / "bin"
    bins.mkdir()
    for name, text in (("misc.test", FAKE), ("etcd", FAKE_ETCD)):
        (bins / name).write_text(text.format(python=sys.executable))
        (bins / name).chmod(stat.S_IRWXU)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    return {"binary": bins / "misc.test", "etcd_dir": bins, "pkg": pkg, "pids": tmp_path / "pids",
            "log": tmp_path / "run.log"}


def _run(fake: dict[str, Path], mode: str, monkeypatch: pytest.MonkeyPatch, timeout: float = 30) -> Any:
    monkeypatch.setenv("FAKE_MODE", mode)
    monkeypatch.setenv("FAKE_PIDS", str(fake["pids"]))
    return run_workload(fake["binary"], fake["pkg"], PerfWorkload("500Nodes", 500, 1000), fake["etcd_dir"], timeout,
                        fake["log"], keep=fake["log"].parent / "raw" / "run-1.json")


def _etcd_gone(fake: dict[str, Path]) -> bool:
    pids = [int(p) for p in fake["pids"].read_text().split()]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_run_reads_the_data_items_and_leaves_nothing(fake: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("kwokbench-ceiling-*"))
    r = _run(fake, "ok", monkeypatch)
    assert r.figures["average"] == r.pods_per_second == 321.5 and r.exit_code == 0 and r.note == ""
    log = fake["log"].read_text()
    assert "FAKE OUTPUT" in log and str(fake["pkg"]) in log and "-test.run=^$" in log
    assert throughput_figures(json.loads((fake["log"].parent / "raw" / "run-1.json").read_text())) == r.figures
    assert _etcd_gone(fake)
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("kwokbench-ceiling-*")) == before


def test_run_keeps_figures_of_a_failed_test_and_stops_a_left_etcd(fake: dict[str, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    r = _run(fake, "fail", monkeypatch)
    assert r.exit_code == 1 and "exited 1" in r.note and r.figures["p99"] == 420.0
    _run(fake, "leave-etcd", monkeypatch)  # the binary exits, its etcd (data dir in our temp dir) does not
    assert _etcd_gone(fake)


def test_run_without_figures_is_one_clear_error(fake: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ClusterError, match=r"500Nodes failed with exit 1 \(log: .*run.log\); last lines"):
        _run(fake, "nodata", monkeypatch)


def test_run_is_bounded_in_time_and_stops_its_etcd(fake: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match="did not finish within 2s"):
        _run(fake, "hang", monkeypatch, timeout=2)
    assert time.monotonic() - t0 < 15
    assert _etcd_gone(fake)


def test_sweep_table_shows_each_point_against_its_ceiling(tmp_path: Path) -> None:
    from kwokbench.report.sweep import rows

    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"format_version": 2, "ceiling": {"pods_per_second": 400.0}}))
    point = {"nodes": 500, "qps": 200.0, "accepted": 200.0, "throughput": 140.0, "ratio": 0.7, "p99": 0.5,
             "holds": False, "why": "slow"}
    columns, body = rows({"points": [{**point, "run": str(run)}, {**point, "qps": 100.0, "run": str(tmp_path / "x")}]})
    at = columns.index("of host ceiling")
    assert [r[at] for r in body] == ["-", "35% of 400"]


def test_leftovers_of_a_killed_run_are_removed_by_the_next(fake: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "tmp"  # a temporary root of its own: never another test's (or user's) run
    root.mkdir()
    left = Path(tempfile.mkdtemp(prefix="kwokbench-ceiling-", dir=root))
    fresh = Path(tempfile.mkdtemp(prefix="kwokbench-ceiling-", dir=root))
    etcd = subprocess.Popen([str(fake["etcd_dir"] / "etcd"), "--data-dir", str(left / "etcd1")])
    try:
        os.utime(left, (time.time() - 600, time.time() - 600))
        os.utime(fresh, (time.time() - 600, time.time() - 600))
        (fresh / "keep").write_text("")  # touched now: a run about to start
        os.utime(fresh, None)
        time.sleep(0.5)
        stopped = stop_orphans(root)
        assert any(f"pid {etcd.pid}" in s for s in stopped)
        assert etcd.wait(5) is not None
        assert not left.exists() and fresh.exists()
    finally:
        etcd.kill()
        etcd.wait()
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.rmtree(left, ignore_errors=True)


def test_dra_workloads_count_their_dra_and_plain_nodes_and_name_their_test_case() -> None:
    """SchedulingWithResourceClaimTemplate of v1.36.4's dra/performance-config.yaml (copied verbatim)."""
    from kwokbench.ceiling import DRA_TEST_CASE

    text = (GOLDEN / "dra-performance-config-v1.36.4.yaml").read_text()
    by_name = {w.name: w for w in perf_workloads(text, DRA_TEST_CASE)}
    w = by_name["2000pods_100nodes"]
    assert (w.nodes, w.init_pods, w.pods, w.test_case) == (100, 1000, 1000, DRA_TEST_CASE)
    assert dict(w.feature_gates)["DynamicResourceAllocation"] is True
    assert nearest_workload(100, 800, list(by_name.values()), STOCK_1_36) == "2000pods_100nodes"
    assert nearest_workload(500, 4000, list(by_name.values()), STOCK_1_36) == "5000pods_500nodes_QueueingHintsEnabled"
    assert f"/^{DRA_TEST_CASE}$/^2000pods_100nodes$" in bench_args(w, Path("/d"), 60)[1]
    shared = perf_workloads(text, "SchedulingWithResourceClaim")
    assert {"2000pods_100nodes", "5000pods_500nodes"} <= {x.name for x in shared}


def test_a_run_with_claims_is_set_against_the_dra_ceiling(tmp_path: Path) -> None:
    from kwokbench.ceiling import DRA_TEST_CASE

    d = tmp_path / "v1.36.4" / host_fingerprint(HOST)
    d.mkdir(parents=True)
    for case, pps in ((None, 300.0), (DRA_TEST_CASE, 60.0)):
        doc = {"format_version": FORMAT_VERSION, "pods_per_second": pps, "measured_at": "2026-11-26T08:00:00+00:00",
               "workload": "2000pods_100nodes" if case else "500Nodes", "params": {"nodes": 100, "pods": 1000},
               "kubernetes": "v1.36.4", "host_fingerprint": host_fingerprint(HOST), "runs": []}
        if case:
            doc["test_case"] = case
        (d / f"{case or 'basic'}.json").write_text(json.dumps(doc))
    meta = {"cluster": {"nodes": 100}, "host": HOST, "toolchain": {"kubernetes": "v1.36.4"},
            "started_at": "2026-11-26T08:10:00+00:00"}
    plain = ceiling_section({"throughput": {"average": 30.0}}, meta, tmp_path)
    dra = ceiling_section({"throughput": {"average": 30.0}, "claims": {"claims": 1}}, meta, tmp_path)
    assert plain is not None and dra is not None
    assert (plain["test_case"], plain["ratio"]) == ("SchedulingBasic", pytest.approx(0.1))
    assert (dra["test_case"], dra["ratio"]) == (DRA_TEST_CASE, pytest.approx(0.5))


def test_the_steady_state_dra_case_is_picked_by_nodes_and_fill_level() -> None:
    """SteadyStateClusterResourceClaimTemplate keeps ten pods in flight for a duration on devices empty, half or
    full: no count of pods to match, a fill level instead (Kubernetes v1.36.4's dra/performance-config.yaml)."""
    ws = perf_workloads((GOLDEN / "dra-performance-config-v1.36.4.yaml").read_text(),
                        "SteadyStateClusterResourceClaimTemplate")
    by = {w.name: w for w in ws}
    w = by["half_100nodes"]
    assert (w.nodes, w.pods, w.duration_seconds, w.fill) == (100, 0, 10.0, "half")
    assert nearest_workload(100, None, ws, STOCK_1_36, "half") == "half_100nodes"
    assert nearest_workload(400, None, ws, STOCK_1_36, "full").startswith("full_500nodes")
    with pytest.raises(ScenarioError, match="--fill most: scheduler_perf's SteadyStateClusterResourceClaimTemplate "
                                            "has the fill levels empty, full, half"):
        nearest_workload(100, None, ws, STOCK_1_36, "most")
    # the count-based DRA case is read as before, and has no fill level
    [t] = [w for w in perf_workloads((GOLDEN / "dra-performance-config-v1.36.4.yaml").read_text(),
                                     "SchedulingWithResourceClaimTemplate") if w.name == "2000pods_100nodes"]
    assert t.pods > 0 and (t.duration_seconds, t.fill) == (0.0, "")


def test_the_partitionable_case_keeps_its_measured_pods_in_flight() -> None:
    """scheduler_perf's Partitionable (dra/partitionabledevices, Kubernetes v1.36.4): its one workload large enough
    keeps 2000 pods in flight for 10 s (steadyState as a param, the count its measurePods), so it is a steady-state
    workload with no count measured; the two `fast` ones measure 10 pods and are never picked."""
    ws = perf_workloads((GOLDEN / "partitionable-performance-config-v1.36.4.yaml").read_text(), "Partitionable")
    by = {w.name: w for w in ws}
    w = by["2000pods_100nodes"]
    assert (w.nodes, w.pods, w.in_flight, w.duration_seconds, w.fill) == (100, 0, 2000, 10.0, "")
    assert w.size == "2000 pods in flight for 10 s"
    assert (by["fast"].pods, by["fast"].duration_seconds) == (10, 0.0)
    assert nearest_workload(100, None, ws, STOCK_1_36) == "2000pods_100nodes"
    assert nearest_workload(5000, 50000, ws, STOCK_1_36) == "2000pods_100nodes"
    # the steady-state DRA case's pods in flight are its createPods' literal count
    steady = {w.name: w for w in perf_workloads((GOLDEN / "dra-performance-config-v1.36.4.yaml").read_text(),
                                                "SteadyStateClusterResourceClaimTemplate")}
    assert steady["half_100nodes"].size == "half, 10 pods in flight for 10 s"
