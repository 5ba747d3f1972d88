"""The known answers' shapes at a tiny size on the session's cluster (their releases, sizes and figures are
benchmarks/bench_known_answers.py's, docs/results/known-answers.md): what each shape must do on a real control
plane for the regression it stands for to show. The DRA shape's tiny run is in test_dra.py, on its cluster.
Time: ~25 s (one run on the shared cluster)."""

from __future__ import annotations

from pathlib import Path

from kwokbench.cluster import ClusterInfo
from kwokbench.store import find_runs, load_run
from tests.conftest import REPO, kwokbench


def test_the_async_api_calls_shape_rewrites_the_status_of_pods_no_node_takes(cluster: ClusterInfo,
                                                                              tmp_path: Path) -> None:
    """kubernetes#135900's shape: the pods no node takes stay pending, and each bind or delete of the pods their
    affinity names sends them back to be tried again with a new status (more status writes than one per pod);
    the pods that fit are all bound. (The session's cluster was made without the stage that deletes a pod after its
    lifetime, so here the binds alone send the pending pods back; a run on its own cluster deletes them too.)"""
    res = kwokbench("run", str(REPO / "scenarios/known-async-api-calls.yaml"), "--cluster", cluster.name,
                    "--out", str(tmp_path), "--set", "workloads.0.count=20", "--set", "workloads.1.count=60",
                    "--set", "schedulers.0.client_qps=null", "--set", "schedulers.0.client_burst=null", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    [path] = find_runs([tmp_path])
    run = load_run(path)
    pods, s = run.pods, run.summary
    assert s is not None
    cloggers, churn = pods[pods["workload"] == "cloggers"], pods[pods["workload"] == "churn"]
    assert len(cloggers) == 20 and cloggers["scheduled"].isna().all()
    assert len(churn) == 60 and churn["scheduled"].notna().all()
    status = ((s.get("apiserver") or {}).get("writes") or {}).get("total", {}).get("pods/status", 0)
    # one status write per pod that fits (kwok's Running), and the pending pods' retries: more than one each
    assert status > len(churn) + len(cloggers), s.get("apiserver")
