"""Chaos on real clusters: a scheduler restart mid-run loses no pod and its recovery time is reported;
NotReady nodes get no new pods; deleted nodes are gone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kwokbench.store import CHAOS, load_run, read_doc
from tests.conftest import REPO, kwokbench


def _run(tmp_path: Path, scenario: str, *sets: str, count: int = 1500) -> Path:
    kwokbench("run", str(REPO / f"scenarios/{scenario}.yaml"), "--out", str(tmp_path),
              "--set", "cluster.node_groups.0.count=30", "--set", f"workloads.0.count={count}", *sets, check=True)
    [run] = (tmp_path / scenario).iterdir()
    return run


def test_scheduler_restart_loses_no_pod_and_reports_recovery(tmp_path: Path) -> None:
    run = load_run(_run(tmp_path, "chaos-scheduler-restart", "--set", "chaos.0.at_seconds=5",
                        "--set", "chaos.0.down_seconds=3"))
    assert run.meta["status"] == "complete" and run.summary is not None
    [event] = read_doc(run.path, CHAOS)["events"]
    assert event["action"] == "restart-scheduler" and event["new_pid"] != event["old_pid"]
    assert event["started"] - event["stopped"] >= 3 and event["ready"] is not None
    # nothing was bound while the scheduler was down: a pod the apiserver created (its own clock, 1 s resolution)
    # after the scheduler stopped is seen bound only after it started again. Judged by creation: on a loaded host
    # the watch sees bindings made before the stop seconds late (19 pods seen inside the window under a one-core
    # CPU hog with two test files running, every one created before the stop)
    p = run.pods
    after_stop = p["creation_timestamp"] > event["stopped"] + 1
    assert int((after_stop & (p["scheduled"] < event["started"])).sum()) == 0
    assert int((after_stop & (p["creation_timestamp"] < event["started"])).sum()) > 0  # pods arrived while it was down
    chaos = run.summary["chaos"]
    assert chaos["pods_lost"] == 0
    assert run.summary["pods_scheduled"] == 1500  # the backlog was scheduled after the restart
    [rec] = chaos["events"]
    assert rec["recovered"] and rec["recovery_seconds"] is not None
    assert 3 <= rec["recovery_seconds"] < 60, rec
    # the process sampler followed the new scheduler through kwokctl's pid file
    procs = pd.read_parquet(run.path / "procs.parquet")
    assert (procs[procs["component"] == "kube-scheduler"]["t"] > event["ready"] + 1).any()
    out = kwokbench("report", str(run.path), "-o", str(tmp_path / "rep"), check=True)
    assert "report.html" in out.stdout
    assert "chaos restart-scheduler at 5 s" in (tmp_path / "rep" / "summary.md").read_text()


def test_not_ready_nodes_get_no_new_pods(tmp_path: Path) -> None:
    # 20 s of arrivals: the events begin at 5 and 8 s and end up to ~14 s in on a slow host
    run = load_run(_run(tmp_path, "chaos-node-failure", "--set", "chaos.0.at_seconds=5",
                        "--set", "chaos.1.at_seconds=8", count=2000))
    assert run.summary is not None and run.summary["pods_scheduled"] == 2000
    not_ready, deleted = read_doc(run.path, CHAOS)["events"]
    assert len(not_ready["nodes"]) == 9 and len(deleted["nodes"]) == 3  # 30% and 10% of 30
    # a pod the apiserver created (its own clock, 1 s resolution) after the node-lifecycle controller had tainted
    # the NotReady nodes, or after the nodes were deleted, is never bound to them. Judged by creation, not by when
    # the watch saw the binding: on a loaded host the watch sees bindings seconds late, and the controller-manager
    # taints after the condition changed (with two test files beside it here, bindings were seen up to 7.5 s after
    # the 9 patches, which took 5.7 s)
    assert not_ready["tainted"] is not None, not_ready
    assert not_ready["tainted"] >= not_ready["ended"]
    p = run.pods
    late = p[(p["creation_timestamp"] > not_ready["tainted"] + 1) & p["node"].isin(not_ready["nodes"])]
    assert len(late) == 0, "the scheduler kept binding to NotReady nodes"
    late = p[(p["creation_timestamp"] > deleted["ended"] + 1) & p["node"].isin(deleted["nodes"])]
    assert len(late) == 0
    # and the nodes took pods before (the workload's arrival spans the events): the check is not vacuous
    assert p["node"].isin(not_ready["nodes"]).sum() > 0
    assert (p["creation_timestamp"] > not_ready["tainted"] + 1).sum() > 100
    nodes = run.summary["placement"]["utilisation"]["nodes"]
    assert nodes == 27  # read at the end: the deleted nodes are gone
    assert run.summary["chaos"]["pods_lost"] == 0
    # the rate came back after each event; the second one may end too near the load's end to show a rate
    # (CI, 2026-11-30: the 3-s mean not back at 90% before the arrivals stopped), then it says so, not "NOT recovered"
    first, second = run.summary["chaos"]["events"]
    assert first["recovered"] is True, first
    assert second["recovered"] is not False, second


def test_apiserver_restart_is_survived_by_watch_and_scrapes(tmp_path: Path) -> None:
    # the apiserver's graceful shutdown alone takes ~16 s here: 40 s of load keeps pods arriving after it
    run = load_run(_run(tmp_path, "chaos-scheduler-restart", "--set", "chaos.0.at_seconds=5",
                        "--set", "chaos.0.action=restart-apiserver", "--set", "chaos.0.down_seconds=2", count=4000))
    assert run.summary is not None
    [event] = read_doc(run.path, CHAOS)["events"]
    assert event["component"] == "kube-apiserver" and event["ready"] is not None
    # creates sent while the apiserver was down fail and are counted (never retried); every pod the apiserver
    # made is scheduled and seen by the watch, which resumed after the restart. A create whose connection dropped
    # after the apiserver took it (CI: 13 of 1124) made a pod the client counts as failed: the summary says how many
    [submit] = run.summary["submit"]
    failed = sum(submit["errors"].values())
    assert submit["created"] < 4000 and failed == 4000 - submit["created"]
    assert submit["seen"] == run.summary["pods_scheduled"] == submit["created"] + submit["made_unanswered"]
    assert submit["made_unanswered"] <= submit["errors"].get("connection error", 0) + sum(
        v for k, v in submit["errors"].items() if k.startswith("5"))
    assert run.summary["chaos"]["pods_lost"] == 0
    assert run.summary["watch_errors"], "the watch should have recorded its reconnect"
    [rec] = run.summary["chaos"]["events"]
    if not rec["load_after"] and rec["recovery_seconds"] is None:
        # the restart outlasted the 40 s of load (37.5 s from stop to ready with the suite's two workers, ~18 s
        # alone) and left no backlog to bind: there is no rate after it to recover, and the summary says so rather
        # than inventing one
        assert not rec["recovered"], rec
        pytest.skip(f"the apiserver was back {event['ready'] - event['t']:.0f} s after its stop, after the load "
                    "ended: no recovery to measure on this host now (everything else was checked)")
    # a rate after the restart: new pods', or (the restart outlasting the load) the pods accepted before it and bound
    # after it (2026-11-29: back 37.9 s after the stop, no pod created after the restart)
    assert rec["recovered"], rec
    assert rec["recovery_seconds"] >= event["ready"] - event["t"] - 1
