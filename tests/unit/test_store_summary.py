from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kwokbench.errors import StoreError
from kwokbench.figures.summary import per_second, summarize, throughput
from kwokbench.load.watcher import Timeline
from kwokbench.store import RunDir, find_runs, load_run, owner, read_meta, settle_status
from kwokbench.sweep import SWEEP_FORMAT_VERSION, load, save


def test_run_dir_is_versioned_and_refuses_unknown(tmp_path: Path) -> None:
    rd = RunDir.create(tmp_path, "sc")
    rd.write_meta({"status": "running"})
    assert read_meta(rd.path)["format_version"] == 1
    rd.update_meta(status="complete")
    assert load_run(rd.path).meta["status"] == "complete"
    (rd.path / "meta.json").write_text(json.dumps({"format_version": 99}))
    with pytest.raises(StoreError, match="format version 99 is not supported"):
        read_meta(rd.path)
    with pytest.raises(StoreError, match="not a kwokbench run"):
        read_meta(tmp_path)
    assert find_runs([tmp_path]) == [rd.path]
    with pytest.raises(StoreError, match="no such run directory"):
        find_runs([tmp_path / "nope"])


def test_a_run_or_sweep_of_a_newer_kwokbench_is_refused_by_every_reader(tmp_path: Path) -> None:
    """meta.json's stored scenario and a sweep's sweep.json carry versions too: a newer one is one line,
    not a silent half-read (report used to read both with exit 0)."""
    from typing import get_args

    from kwokbench.scenario import Scenario
    from kwokbench.store import SCENARIO_SCHEMA_VERSION

    assert get_args(Scenario.model_fields["schema_version"].annotation) == (SCENARIO_SCHEMA_VERSION,)
    rd = RunDir.create(tmp_path / "sweep-x", "sc")
    rd.write_meta({"status": "complete", "scenario": {"name": "sc", "schema_version": 1}})
    assert find_runs([tmp_path]) == [rd.path] and load_run(rd.path).meta["status"] == "complete"
    rd.write_meta({"status": "complete", "scenario": {"name": "sc", "schema_version": 2}})
    with pytest.raises(StoreError, match=r"scenario schema_version 2 is not supported by kwokbench .* reads version 1"):
        load_run(rd.path)
    rd.write_meta({"status": "complete", "scenario": {"name": "sc", "schema_version": 1}})
    (tmp_path / "sweep-x" / "sweep.json").write_text(json.dumps({"format_version": 7, "points": []}))
    with pytest.raises(StoreError, match=r"sweep.json: format version 7 is not supported"):
        find_runs([tmp_path])


def test_unwritable_reports_dir(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where the reports folder should be")  # fails even for root
    with pytest.raises(StoreError, match="cannot create run directory"):
        RunDir.create(tmp_path / "file", "sc")


def _ev(name: str, node: str = "", phase: str = "Pending", wl: str = "a") -> dict[str, object]:
    return {"metadata": {"namespace": "ns", "name": name, "labels": {"kwokbench.io/workload": wl}},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def test_timeline_first_observation_wins_and_relist_is_idempotent() -> None:
    tl = Timeline(["a", "b"])
    tl.handle("ADDED", _ev("p1"), 10.0)
    tl.handle("MODIFIED", _ev("p1", "n1"), 10.5)
    tl.handle("MODIFIED", _ev("p1", "n1", "Running"), 10.7)
    tl.handle("SYNC", _ev("p1", "n1", "Running"), 20.0)  # relist after 410: nothing moves
    tl.handle("SYNC", _ev("p2", "n2", "Running", wl="b"), 21.0)  # first seen via a list: flagged
    tl.handle("ADDED", {"metadata": {"name": "other", "labels": {}}}, 1.0)  # not ours
    df = tl.frame()
    p1 = df[df.name == "p1"].iloc[0]
    assert (p1.created, p1.scheduled, p1.running) == (10.0, 10.5, 10.7)
    assert not p1.from_list and df[df.name == "p2"].iloc[0].from_list
    assert tl.counts.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]]
    assert len(df) == 2
    assert df["gpu_index"].tolist() == ["", ""]


def test_timeline_records_the_gpu_a_binding_named() -> None:
    """plugins/gpushare's choice arrives as the pod's annotation with its node (the Binding's, copied)."""
    tl = Timeline(["a"])
    tl.handle("ADDED", _ev("p1"), 1.0)
    bound = _ev("p1", "n1")
    bound["metadata"]["annotations"] = {"kwokbench.io/gpu-index": "0-1"}  # type: ignore[index]
    tl.handle("MODIFIED", bound, 2.0)
    tl.handle("MODIFIED", _ev("p1", "n1", "Running"), 3.0)  # a later event without it changes nothing
    assert tl.frame()["gpu_index"].tolist() == ["0-1"]
    tl.handle("DELETED", _ev("p1", "n1", "Running"), 30.0)
    tl.handle("DELETED", _ev("p1", "n1", "Running"), 31.0)  # seen twice (a relist): counted once, first time kept
    assert tl.counts[0].tolist() == [1, 1, 1, 0, 1] and tl.frame().set_index("name").loc["p1", "deleted_at"] == 30.0


def test_a_pod_deleted_in_a_watch_gap_is_deleted_at_its_start_and_the_gap_kept() -> None:
    """After a 410 the relist does not hold a pod deleted while the watch was blind: it goes at the gap's start
    (the earliest it can have gone, so it holds no node's room after), flagged, counted once; the others stay."""
    tl = Timeline(["a"])
    for name in ("p1", "p2", "p3"):
        tl.handle("ADDED", _ev(name), 1.0)
        tl.handle("MODIFIED", _ev(name, "n1", "Running"), 2.0)
    tl.handle("DELETED", _ev("p3", "n1", "Running"), 3.0)  # seen going: not the gap's
    tl.listed(4.0)  # a list with no gap open (the first one) closes nothing
    tl.gaps.gone(5.0)
    tl.handle("SYNC", _ev("p2", "n1", "Running"), 9.0)
    tl.listed(9.0)
    df = tl.frame().set_index("name")
    assert df.loc["p1", "deleted"] and df.loc["p1", "deleted_in_gap"] and df.loc["p1", "deleted_at"] == 5.0
    assert not df.loc["p2", "deleted"] and not df.loc["p2", "deleted_in_gap"]
    assert df.loc["p3", "deleted_at"] == 3.0 and not df.loc["p3", "deleted_in_gap"]
    assert tl.counts[0].tolist() == [3, 3, 3, 0, 2]
    [gap] = tl.gaps.gaps
    assert gap["from"] == 5.0 and gap["to"] == 9.0 and gap["seconds"] == 4.0 and gap["vanished"] == ["ns/p1"]
    tl.listed(12.0)  # a later list without a 410 opens no second gap
    assert len(tl.gaps.gaps) == 1


def test_throughput_excludes_idle_tails() -> None:
    created = np.arange(100) / 100.0 + 1000.0  # 100 pods over 1 s
    pods = pd.DataFrame({"created": created, "scheduled": created + 0.5, "running": np.nan, "finished": np.nan,
                         "from_list": False})
    tp = throughput(pods)
    assert tp["pods_scheduled"] == 100
    assert tp["average"] == pytest.approx(100 / 1.49, rel=0.01)
    assert per_second(np.array([0.1, 0.2, 1.5, np.nan]), 0, 2).tolist() == [2.0, 1.0]


def test_summary_counts_errors_and_achieved_rate() -> None:
    pods = pd.DataFrame({"created": [1.0, 2.0], "scheduled": [1.1, np.nan], "running": [1.2, np.nan],
                         "finished": [np.nan, np.nan], "from_list": [False, False]})
    req = pd.DataFrame({"phase": ["a"] * 4, "scheduled": [0.0, 0.01, 0.02, 0.03], "sent": [0.0, 0.01, 0.02, 0.03],
                        "latency": [0.01] * 4, "status": [201, 201, 429, -1]})
    s = summarize(pods, req, [{"name": "a", "target_qps": 100.0}], expected_pods=4)
    assert s["pods_scheduled"] == 1 and s["pods_unscheduled"] == 3
    sub = s["submit"][0]
    assert sub["created"] == 2 and sub["errors"] == {"429": 1, "connection error": 1} and sub["throttled_429"] == 1
    # a request log of the first version: "sent" was the pacer's hand-over; accepted = 2 answers at 0.01
    # and 0.02 s over the phase (0 → last answer, plus one 10 ms gap)
    assert sub["offered_qps"] == pytest.approx(100.0)
    assert sub["accepted_qps"] == pytest.approx(2 / 0.03) and sub["achieved_ratio"] == pytest.approx(2 / 3)
    assert sub["sent_qps"] is None  # not recorded by that version
    assert s["latency"]["created_to_scheduled"]["p50"] == pytest.approx(0.1)


def test_a_running_document_whose_writer_is_gone_reads_as_interrupted(tmp_path: Path) -> None:
    import platform
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    mine = owner()
    cases = {
        "alive": ({"status": "running", "owner": mine}, "running"),
        "dead": ({"status": "running", "owner": {**mine, "pid": gone.pid}}, "interrupted"),
        # same pid, another process (pid reused after the writer died)
        "reused": ({"status": "running", "owner": {**mine, "started": mine["started"] - 3600}}, "interrupted"),
        "other host": ({"status": "running", "owner": {**mine, "pid": gone.pid, "hostname": platform.node() + "-x"}},
                       "running"),
        "no owner (older runs)": ({"status": "running"}, "running"),
        "finished": ({"status": "complete", "owner": {**mine, "pid": gone.pid}}, "complete"),
    }
    for name, (doc, want) in cases.items():
        assert settle_status(dict(doc))["status"] == want, name
    assert "killed" in settle_status({"status": "running", "owner": {**mine, "pid": gone.pid}})["error"]
    # through the readers: a run, and a sweep
    rd = RunDir.create(tmp_path, "s")
    rd.write_meta({"status": "running", "owner": {**mine, "pid": gone.pid}})
    assert load_run(rd.path).meta["status"] == "interrupted"
    assert read_meta(rd.path)["status"] == "running"  # readers never write
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    save(sweep_dir, {"format_version": SWEEP_FORMAT_VERSION, "status": "running",
                     "owner": {**mine, "pid": gone.pid}, "points": []})
    assert load(sweep_dir)["status"] == "interrupted"


def test_a_run_of_several_phases_splits_each_phases_pod_startup() -> None:
    """clusterloader2's DRA test reports pod startup per phase (fast fill, churn): created → scheduled and
    scheduled → running, each phase apart."""
    from kwokbench.figures.summary import pod_latencies

    pods = pd.DataFrame([
        {"name": "a", "workload": "fill", "created": 0.0, "scheduled": 0.1, "running": 0.3, "finished": np.nan,
         "from_list": False},
        {"name": "b", "workload": "fill", "created": 0.0, "scheduled": 0.3, "running": 0.4, "finished": np.nan,
         "from_list": False},
        {"name": "c", "workload": "churn", "created": 1.0, "scheduled": 3.0, "running": np.nan, "finished": np.nan,
         "from_list": False}])
    phases = [{"name": "fill", "wait_for": "running", "timeout_seconds": 10},
              {"name": "churn", "wait_for": "scheduled", "timeout_seconds": 10}]
    by = pod_latencies(pods, phases)["by_phase"]
    assert by["fill"]["pods"] == 2 and by["fill"]["created_to_scheduled"]["max"] == pytest.approx(0.3)
    assert by["fill"]["scheduled_to_running"]["max"] == pytest.approx(0.2)
    assert by["churn"]["created_to_scheduled"]["p50"] == pytest.approx(2.0)
    assert by["churn"]["scheduled_to_running"]["p50"] is None  # none ran: nothing to split
    assert "by_phase" not in pod_latencies(pods, phases[:1])  # one phase: the run's own figures say it
