"""A cluster trimmed for measurement (issue 21): no controller-manager, pods left Pending on their nodes
(kwok without pod stages), long node leases, the scheduler pinned to its own CPU — on a real cluster."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kwokbench.store import load_run
from tests.conftest import REPO, kwokbench


def test_trimmed_cluster_schedules_every_pod(tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path),
                    "--set", "cluster.node_groups.0.count=20", "--set", "workloads.0.count=300",
                    "--set", "cluster.controller_manager=false", "--set", "cluster.pod_lifecycle=none",
                    "--set", "cluster.node_lease_seconds=3600", "--set", "cluster.pin_scheduler=true", check=True)
    assert "pin_scheduler on two CPUs" not in res.stdout + res.stderr
    [path] = (tmp_path / "quickstart").iterdir()
    run = load_run(path)
    s = run.summary
    assert s is not None and s["pods_scheduled"] == 300
    assert np.isnan(run.pods["running"]).all()  # no pod stage: bound pods stay Pending
    assert "kube-controller-manager" not in s["processes"] and "kube-scheduler" in s["processes"]
    fair = run.meta["fairness"]
    assert (fair["controller_manager"], fair["pod_lifecycle"], fair["node_lease_seconds"]) == (False, "none", 3600)
    pinned = run.meta["pinning"]
    assert len(pinned["kube-scheduler"]) == 1 and pinned["kube-scheduler"][0] not in pinned["kube-apiserver"]


def test_trimmed_cluster_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/batch-jobs.yaml"), "--out", str(tmp_path),
                    "--set", "cluster.controller_manager=false")
    assert res.returncode == 2 and "made by kube-controller-manager" in res.stderr, res.stderr
    res = kwokbench("validate", str(REPO / "scenarios/quickstart.yaml"), "--set", "cluster.pod_lifecycle=none",
                    "--set", "workloads.0.wait_for=running")
    assert res.returncode == 2 and "never happens with cluster.pod_lifecycle none" in res.stderr, res.stderr


def test_pinning_alone_on_two_cpus_is_warned(tmp_path: Path) -> None:
    """Measured on this 2-core host: the scheduler pinned alone costs ~30% (docs/results/capacity.md, issue 21)."""
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path),
                    "--set", "cluster.node_groups.0.count=5", "--set", "workloads.0.count=20",
                    "--set", "cluster.pin_scheduler=true", check=True)
    warned = "pin_scheduler on two CPUs" in res.stdout + res.stderr
    assert warned == (len(os.sched_getaffinity(0)) == 2), res.stdout + res.stderr
