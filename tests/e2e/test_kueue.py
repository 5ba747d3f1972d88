"""Kueue on a real cluster (built from Go modules on first use, run without webhooks): it admits Jobs
within quota and holds the rest; the same Jobs straight to the scheduler all start at once."""

from __future__ import annotations

from pathlib import Path

from kwokbench.store import KUEUE_WORKLOADS, load_run
from tests.conftest import REPO, alive, kwokbench

SMALL = ["--set", "cluster.node_groups.0.count=4", "--set", "workloads.0.count=9",
         "--set", "workloads.0.params.parallelism=2", "--set", "workloads.0.params.completions=2",
         "--set", "cluster.kueue.cluster_queues.0.quota.cpu=6", "--set", "workloads.0.complete_after=4s",
         "--set", "workloads.0.arrival.qps=20", "--set", "workloads.0.timeout_seconds=120"]


def test_kueue_admits_within_quota_and_holds_the_rest(tmp_path: Path) -> None:
    kwokbench("run", str(REPO / "scenarios/kueue-vs-direct.yaml"), "--out", str(tmp_path), *SMALL, check=True)
    runs = {load_run(p).meta["variant"]["name"]: load_run(p)
            for p in sorted((tmp_path / "kueue-vs-direct").iterdir())}
    q, d = runs["kueue"], runs["direct"]
    assert q.meta["kueue"]["version"].startswith("v0.") and "kueue" not in d.meta
    assert q.meta["fairness"]["kueue"] is not None and d.meta["fairness"]["kueue"] is None
    [jq] = q.summary["jobs"]  # type: ignore[index]
    [jd] = d.summary["jobs"]  # type: ignore[index]
    # 9 Jobs of 2 one-CPU pods under a 6-CPU quota: 3 at a time, the others queued
    assert jq["jobs"] == 9 and jq["jobs_admitted"] == 9 and jq["jobs_finished"] == 9
    assert jq["queue_depth_max"] >= 5, jq
    assert jq["submit_to_admitted_seconds"]["max"] > 6, jq  # the last wave waited for two waves of 4 s pods
    assert jq["admitted_to_all_scheduled_seconds"]["p50"] < 5, jq
    wl = q.path / KUEUE_WORKLOADS
    assert wl.exists()
    # Kueue's own /metrics (bearer token of a ServiceAccount made for it) agree with the Workload watch
    k = q.summary["kueue"]  # type: ignore[index]
    assert k["cross_check"]["admitted_from_metric"] == 9 and k["cross_check"]["agrees"], k
    assert k["admission_attempts"].get("success", 0) >= 3, k  # at least one cycle per wave
    [wait] = k["admission_wait_time_seconds"].values()
    assert wait["count"] == 9 and wait["p99"] > 4, k  # the queued waves waited for running pods
    assert k["cpu_seconds"] and k["cpu_seconds"] > 0, k
    assert "kueue" not in d.summary  # type: ignore[operator]
    kwokbench("report", str(q.path), "-o", str(tmp_path / "rep"), check=True)
    assert "Kueue admitted: its counter / Workload watch | 9 / 9" in (tmp_path / "rep" / "summary.md").read_text()
    # without Kueue every Job starts at once: all pods scheduled within seconds, a shorter makespan
    assert jd["jobs_finished"] == 9 and jd["created_to_all_scheduled_seconds"]["max"] < 10, jd
    assert jd["makespan_seconds"] < jq["makespan_seconds"], (jd, jq)
    assert not alive(int(q.meta["kueue"]["pid"]))


def test_queue_without_kueue_is_refused(tmp_path: Path) -> None:
    res = kwokbench("validate", str(REPO / "scenarios/kueue-vs-direct.yaml"), "--set", "cluster.kueue=null")
    assert res.returncode == 2 and "workloads.0.queue: needs cluster.kueue" in res.stderr, res.stderr
