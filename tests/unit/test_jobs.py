"""Job-level figures (pure): per-Job times from the request log and the pod timeline, Kueue admission
and the queue depth; and the scenario rules of Kueue queues."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kwokbench.errors import ScenarioError
from kwokbench.figures.jobs import job_name_of_pod, jobs, queue_depth
from kwokbench.scenario import parse_scenario

PHASE = [{"name": "j", "kind": "Job", "count": 2, "pods_expected": 4}]


def _requests() -> pd.DataFrame:
    return pd.DataFrame({"phase": ["j", "j"], "index": [0, 1], "sent": [100.0, 101.0], "latency": [0.0, 0.0],
                         "status": [201, 201]})


def _pods() -> pd.DataFrame:
    names = ["j-r1-0-aaaaa", "j-r1-0-bbbbb", "j-r1-1-ccccc", "j-r1-1-ddddd"]
    return pd.DataFrame({"name": names, "workload": "j", "created": [100.5, 100.5, 111.0, 111.0],
                         "scheduled": [101.0, 101.5, 112.0, np.nan], "finished": [110.0, 111.0, np.nan, np.nan]})


def test_job_name_of_pod() -> None:
    assert job_name_of_pod("jobs-ab12cd-17-x9z2k") == "jobs-ab12cd-17"


def test_jobs_without_kueue() -> None:
    [j] = jobs(_pods(), _requests(), PHASE, "r1")
    assert j["jobs"] == 2 and j["pods_per_job"] == 2
    assert j["jobs_all_pods_scheduled"] == 1 and j["jobs_finished"] == 1  # job 1 has a pod still pending
    assert j["created_to_all_scheduled_seconds"]["p50"] == pytest.approx(1.5)
    assert j["makespan_seconds"] == pytest.approx(11.0) and j["makespan_until"] == "last pod finished"


def test_jobs_with_kueue_admission_and_queue_depth() -> None:
    wl = pd.DataFrame({"job": ["j-r1-0", "j-r1-1"], "seen": [100.1, 101.1], "admitted": [100.2, 110.5]})
    [j] = jobs(_pods(), _requests(), PHASE, "r1", wl)
    assert j["jobs_admitted"] == 2
    assert j["submit_to_admitted_seconds"]["max"] == pytest.approx(9.5)
    assert j["admitted_to_all_scheduled_seconds"]["p50"] == pytest.approx(1.3)  # job 1 never all scheduled
    assert j["queue_depth_max"] == 1


def test_queue_depth_counts_never_admitted() -> None:
    d = queue_depth(np.array([0.0, 1.0, 2.0]), np.array([0.5, np.nan, np.nan]), end=10.0)
    assert list(d["depth"]) == [1, 0, 1, 2, 2] and d["t"].iloc[-1] == 10.0


BASE = """
schema_version: 1
name: s
cluster:
  node_groups: [{name: a, count: 1}]
  kueue:
    cluster_queues: [{name: cq, quota: {cpu: 4}}]
    local_queues: [{name: lq, cluster_queue: cq}]
workloads: [{name: w, count: 1, template: job, queue: lq}]
"""


def test_kueue_scenario_rules() -> None:
    parse_scenario(BASE)
    with pytest.raises(ScenarioError, match="no local queue 'other' in namespace 'default'"):
        parse_scenario(BASE.replace("queue: lq}", "queue: other}"))
    with pytest.raises(ScenarioError, match="no cluster queue 'x'"):
        parse_scenario(BASE.replace("cluster_queue: cq", "cluster_queue: x"))
    with pytest.raises(ScenarioError, match="controller_manager must be on"):
        parse_scenario(BASE.replace("  kueue:", "  controller_manager: false\n  kueue:"))
    with pytest.raises(ScenarioError, match="complete_after"):
        parse_scenario(BASE.replace("queue: lq}", "queue: lq, complete_after: soon}"))
