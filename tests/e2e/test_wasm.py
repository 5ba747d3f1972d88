"""WASM scheduler plugins on real clusters: the gpufilter rule as a guest places every pod by the rule, and
a guest that panics leaves the scheduler running (its pods unschedulable with the reason)."""

from __future__ import annotations

from pathlib import Path

import yaml

from kwokbench.store import find_runs, load_run
from tests.conftest import REPO, kwokbench


def test_wasm_gpufilter_places_by_the_rule(tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/wasm-vs-plugin-vs-extender.yaml"), "--variant", "wasm",
                    "--out", str(tmp_path), "--set", "cluster.node_groups.0.count=20",
                    "--set", "cluster.node_groups.1.count=20", "--set", "cluster.node_groups.2.count=10",
                    "--set", "workloads.0.count=150", "--set", "workloads.1.count=150", timeout=1800, check=True)
    [path] = find_runs([tmp_path])
    run = load_run(path)
    s = run.summary
    assert s is not None and run.meta["status"] == "complete", res.stdout
    assert s["pods_scheduled"] == 300
    rv = s["placement"]["rule_violations"]
    assert rv["pods_checked"] == 300 and rv["violations"] == 0, rv
    assert run.meta["fairness"]["wasm_guest"] == "../plugins/gpufilter-wasm"
    assert run.meta["fairness"]["wasm_guest_path"].endswith("/guest.wasm")
    # the host plugin ran at the scheduler's extension points
    assert "Filter" in s["scheduler"]["extension_point_duration_seconds"]


def test_a_panicking_guest_leaves_the_scheduler_running(tmp_path: Path) -> None:
    (tmp_path / "wasm.yaml").write_text((REPO / "scenarios/configs/gpufilter-wasm.yaml").read_text())
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "name": "wasm-faults",
        "cluster": {"node_groups": [{"name": "cpu", "count": 10}]},
        "schedulers": [{"name": "faulty", "binary": str(REPO / "plugins/wasm"), "config": "wasm.yaml",
                        "wasm": str(REPO / "plugins/wasm/testdata/guests/faulty")}],
        "workloads": [
            # every Filter call of these pods panics inside the guest
            {"name": "bad", "count": 20, "params": {"labels": {"fault-at": "filter", "fault": "panic"}},
             "arrival": {"type": "qps", "qps": 50}, "wait_for": "scheduled", "timeout_seconds": 10},
            {"name": "good", "count": 50, "arrival": {"type": "qps", "qps": 50}, "wait_for": "scheduled",
             "timeout_seconds": 60}],
    }))
    kwokbench("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), timeout=1800, check=True)
    [path] = find_runs([tmp_path / "out"])
    run = load_run(path)
    s = run.summary
    assert s is not None and run.meta["status"] == "complete"
    by_phase = run.pods.groupby("workload", observed=True)["scheduled"].count().to_dict()
    assert by_phase == {"bad": 0, "good": 50}, by_phase  # the scheduler lived on after the guest's panics
    assert s["phases_timed_out"] == ["bad"] and s["pods_unscheduled"] == 20
    reasons = " ".join((s["placement"]["pending"].get("reasons") or {}).keys())
    assert "Wasm" in reasons or "guest" in reasons, s["placement"]["pending"]
