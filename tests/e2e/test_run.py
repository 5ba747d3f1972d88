"""`kwokbench run` against a real cluster: every pod submitted is seen, bound, and counted consistently."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pandas as pd
import pytest

from kwokbench.cluster import ClusterInfo, Kwokctl
from kwokbench.figures.acceptance import ACCEPTED_MIN
from kwokbench.figures.analyse import analyse
from kwokbench.store import PROMETHEUS, load_run, read_doc
from tests.conftest import REPO, assert_one_line_error, kwokbench


def _only_run(out: Path, scenario: str) -> Path:
    runs = [p for p in (out / scenario).iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_quickstart_sized_run_every_pod_seen_bound_and_counted(cluster: ClusterInfo, tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", cluster.name, "--out", str(tmp_path),
                    "--set", "workloads.0.count=600", "--set", "workloads.0.arrival.qps=50",
                    "--set", "workloads.0.wait_for=running", check=True)
    assert "pods scheduled" in res.stdout and "600 / 600" in res.stdout
    run = load_run(_only_run(tmp_path, "quickstart"))
    assert run.meta["status"] == "complete"
    assert run.meta["fairness"]["scheduler_client_qps"] == 5000
    assert run.meta["toolchain"]["kubernetes"].startswith("v1.36")
    # every submitted pod: one 201 request, one timeline row, bound to one of the cluster's nodes
    req, pods = run.requests, run.pods
    assert len(req) == 600 and (req["status"] == 201).all()
    label = run.meta["run_label"]
    assert sorted(pods["name"]) == sorted(f"pods-{label}-{i}" for i in range(600))
    assert pods["scheduled"].notna().all() and pods["running"].notna().all()
    assert pods["node"].str.startswith("kb-default-").all()
    assert (pods["scheduled"] >= pods["created"]).all()
    s = run.summary
    assert s is not None
    assert s["pods_scheduled"] == s["pods_expected"] == len(pods) == 600
    assert s["throughput"]["average"] > 0
    sub = s["submit"][0]
    assert sub["created"] == 600 and sub["errors"] == {}
    # what the apiserver accepted of what was offered is the host's figure (a loaded CI host took 97.5% of 100/s
    # one day, ~90% another; a host twice as slow 90% of 50/s), so it is not asserted: only that it is a share,
    # seen alike from the submitter's answers, the watch and the apiserver's own create counter, and that the
    # phase is flagged exactly when it fell below the acceptance threshold. Judged in the steady window it can
    # pass 1 when answers stalled before the window come inside it (2026-12-01, the host 94% busy, wire p99 0.86 s:
    # 53.1/s accepted of 50.1/s offered there, 49.8 of 50.0 over the whole phase)
    assert abs(sub["offered_qps"] - 50) < 1e-3
    assert 0 < sub["achieved_ratio"] <= 1.25, sub["rates"]
    assert (sub["not_accepted"] is None) == (sub["achieved_ratio"] >= ACCEPTED_MIN), sub
    # kwokbench's pacer kept its schedule; the other views count the same 600 pods where each is seen, none
    # faster than they went out, none far slower over the whole phase (a loaded CI host answered its last creates
    # late: accepted 88.6/s and the watch 80.3/s of 100/s sent, at 50/s here; a view in the wrong unit or counting
    # twice is off by far more). In the steady window only "none far faster": a starved host's views lag inside it
    # (2026-12-01, the host 97% busy, load 6, wire p50 0.67 s: the watch saw 24.5/s of 47.5/s sent there, 3.6 s
    # behind the answers, and 38.2/s over the whole phase)
    whole, steady = sub["rates"]["whole"], sub["rates"]["steady"]
    assert abs(whole["sent"] / 50 - 1) < 0.02, whole
    for view in ("accepted", "apiserver_watch", "apiserver_counter"):
        assert 0.6 < whole[view] / whole["sent"] < 1.02, (view, whole)
        assert 0 < steady[view] / steady["sent"] < 1.25, (view, steady)
    assert sub["connections"]["cap"] == 64 and 1 <= sub["connections"]["peak"] <= 64
    assert s["host"]["calibration_seconds"]["before"] > 0 and s["host"]["cpu_busy_fraction"] is not None
    # open loop: request i was due at t0 + i/50
    sched = req.sort_values("index")["scheduled"].to_numpy()
    assert abs((sched[-1] - sched[0]) - 599 / 50) < 1e-6
    # every answer's latency measured from its send; the submitter's own CPU recorded (bounds are loose:
    # its cost is measured by benchmarks/bench_submit.py, here only that it is kept and plausible)
    assert (req["latency"] > 0).all() and (req["dispatched"] >= req["scheduled"]).all()
    assert (req["sent"] >= req["dispatched"]).all() and (req["dispatched"] + req["latency"] > req["sent"]).all()
    assert pods["creation_timestamp"].notna().all()
    # the watch saw each pod after its create went out (one clock: both are this host's wall time)
    seen = pods.set_index("name")["created"]
    went = req.set_index(req["index"].map(lambda i: f"pods-{label}-{i}"))["sent"]
    assert (seen.reindex(went.index) > went).all()
    phase = run.meta["phases"][0]
    assert 0 < phase["harness_setup_cpu_seconds"] < phase["harness_cpu_seconds"] < 600 * 0.005
    # starting the worker process is counted apart, and stays light: a fork of the forkserver, its modules loaded
    # there once (0.01-0.07 CPU-s on 2026-12-01; a spawned worker importing them itself took ~0.45)
    assert 0 <= phase["harness_start_cpu_seconds"] < 0.3
    # metrics: the apiserver's binding counter agrees with the timeline; scheduler histograms present
    assert s["binding_rate"]["available"] and s["binding_rate"]["average"] > 0
    assert s["cross_check"]["bindings_from_metric"] == 600 and s["cross_check"]["agrees"]
    # what the run cost the apiserver in writes: each pod one create and one binding; kube-scheduler posts one
    # Scheduled event per pod (events.k8s.io; asynchronously: the last may come after the last scrape); and the
    # controller-manager posts one core/v1 event per node on its node controller's first pass over the nodes, which
    # can land inside the window (seen 2026-11-26: 601 events.k8s.io + 100 core/v1 POSTs, the 100 at 11 s)
    writes = s["apiserver"]["writes"]["per_pod"]
    assert writes["pods"] == 1.0 and writes["pods/binding"] == 1.0, writes
    nodes = run.meta["cluster"]["nodes"]
    assert 0.9 <= writes["events"] <= 1.0 + nodes / 600, writes
    rate = pd.read_parquet(run.path / "binding_rate.parquet")
    assert rate["rate"].max() > 0 and rate["rate"].sum() > 0
    assert s["scheduler"]["schedule_attempts"]["scheduled"] == 600
    assert s["scheduler"]["scheduling_attempt_duration_seconds"]["count"] == 600
    assert {"Filter", "Score", "Bind"} <= set(s["scheduler"]["extension_point_duration_seconds"])
    assert set(s["processes"]) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                   "kwok-controller"}
    assert s["processes"]["kube-apiserver"]["cpu_seconds"] > 0
    assert s["scrapes"]["scrapes"] >= 3 and s["scrapes"]["failed"] == 0
    assert not [lb for lb in s["labels"] if lb.startswith("client-bound")]
    # the summary is a pure function of the stored run: analysed again offline, it is the same
    again = orjson.loads(orjson.dumps(analyse(run.path, write=False),
                                      option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS))
    assert again == s
    res = kwokbench("analyse", str(run.path), check=True)
    assert "600 / 600" in res.stdout and load_run(run.path).summary == s
    # nothing secret is stored
    for f in run.path.rglob("*"):
        assert f.is_dir() or b"PRIVATE KEY" not in f.read_bytes()


@pytest.mark.quiet_host
def test_an_offer_the_cluster_does_not_take_is_reported_and_flagged(cluster: ClusterInfo, tmp_path: Path) -> None:
    """Two connections cannot carry 1500 creates/s: the accepted rate says so, and so do the summary, the
    console and the report's chart, with where the requests waited. (2000 pods: two connections accept ~300/s
    here, so well over 1000 creates wait for one; 3000 cost ~12 s more and showed nothing more.) Alone on the host
    (quiet_host): the verdict ``harness`` is a claim about where the CPU went, and a warm clean clone (2026-11-28)
    judged it ``host`` with the other worker's test taking 32% of the two CPUs."""
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", cluster.name, "--out", str(tmp_path),
                    "--set", "workloads.0.count=2000", "--set", "workloads.0.arrival.qps=1500",
                    "--set", "workloads.0.connections=2", check=True)
    run = load_run(_only_run(tmp_path, "quickstart"))
    s = run.summary
    assert s is not None and s["pods_scheduled"] == 2000
    sub = s["submit"][0]
    assert sub["offered_qps"] > 1400 and sub["achieved_ratio"] < 0.9, sub
    assert sub["accepted_qps"] < 0.9 * sub["offered_qps"]
    assert sub["connections"] == {"cap": 2, "peak": 2, "waited_at_cap": sub["connections"]["waited_at_cap"]}
    assert sub["connections"]["waited_at_cap"] > 1000
    assert sub["not_accepted"].startswith("harness-bound:") and "all 2 connections were busy" in sub["not_accepted"]
    assert sub["rates"]["connection_wait_seconds"]["max"] > 1.0
    assert "LOAD NOT ACCEPTED" in res.stdout and "did not take the offered load" in res.stderr
    lb = s["limited_by"]  # the run's verdict: kwokbench itself was the limit
    assert lb["verdict"] == "harness", lb
    assert lb["sentence"].startswith("harness-bound:") and "all 2 connections were busy" in lb["sentence"]
    report = kwokbench("report", str(run.path), "-o", str(tmp_path / "r"), check=True)
    assert report.returncode == 0 and (tmp_path / "r" / "submit.png").stat().st_size > 0


def test_stock_client_limits_are_labelled_client_bound(tmp_path: Path, kwokctl: Kwokctl) -> None:
    """With kwokctl's default limits the scheduler's client (50 QPS) caps the binding rate."""
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path),
                    "--set", "cluster.qps_limits=true", "--set", "cluster.node_groups.0.count=20",
                    "--set", "workloads.0.count=500", "--set", "workloads.0.arrival.qps=250", check=True)
    run = load_run(_only_run(tmp_path, "quickstart"))
    s = run.summary
    assert s is not None and s["pods_scheduled"] == 500
    assert run.meta["fairness"]["scheduler_client_qps"] == 50
    labels = [lb for lb in s["labels"] if lb.startswith("client-bound")]
    assert labels, (s["labels"], s["binding_rate"])
    assert "client-bound" in res.stdout
    lb = s["limited_by"]  # the run's verdict, and what it rests on: a backlog the client cap let grow
    assert lb["verdict"] == "scheduler-client", lb
    assert lb["evidence"]["backlog_max"] > 200 and lb["evidence"]["client_bound"]
    # the client's 50 QPS caps the binding rate from above; how far below it the rate sits depends on the host
    # (a loaded 2-core host's apiserver took 24 binding POSTs/s at p50, the verdict still scheduler-client): no
    # lower bound
    assert s["binding_rate"]["p50"] < 60
    assert not kwokctl.names() or all(not n.startswith("kb-") for n in kwokctl.names())  # torn down


def test_prometheus_cross_check(tmp_path: Path) -> None:
    """Prometheus scrapes every 15 s: a 30 s run gives it at least two samples while pods bind."""
    kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path),
              "--set", "cluster.prometheus=true", "--set", "cluster.node_groups.0.count=10",
              "--set", "workloads.0.count=900", "--set", "workloads.0.arrival.qps=30", check=True)
    run = load_run(_only_run(tmp_path, "quickstart"))
    prom = read_doc(run.path, PROMETHEUS)
    assert prom is not None
    assert prom["available"], prom["reason"]
    assert prom["peak"] > 0 and prom["series"]
    assert run.summary is not None and run.summary["prometheus"]["available"]


def test_job_phase_pods_come_from_the_controller_manager(cluster: ClusterInfo, tmp_path: Path) -> None:
    kwokbench("run", str(REPO / "scenarios/batch-jobs.yaml"), "--cluster", cluster.name, "--out", str(tmp_path),
              "--set", "workloads.0.count=4", "--set", "workloads.0.params={parallelism: 3, completions: 3}",
              "--set", "workloads.0.namespace=batch", check=True)
    run = load_run(_only_run(tmp_path, "batch-jobs"))
    assert run.meta["status"] == "complete"
    pods: pd.DataFrame = run.pods
    assert len(pods) == 12
    assert set(pods["namespace"]) == {"batch"}
    # pods are named by the Job controller, <job>-<suffix>, and finished through kwok's stages
    label = run.meta["run_label"]
    assert {n.rsplit("-", 1)[0] for n in pods["name"]} == {f"jobs-{label}-{i}" for i in range(4)}
    assert pods["finished"].notna().all() and set(pods["phase"]) == {"Succeeded"}
    assert run.summary is not None and run.summary["pods_finished"] == 12


def test_run_with_bad_template_variable_stores_nothing_and_exits_2(cluster: ClusterInfo, tmp_path: Path) -> None:
    scen = tmp_path / "s.yaml"
    (tmp_path / "t.yaml.j2").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: '{{ name }}-{{ nope }}'}\n")
    scen.write_text(json.dumps({"schema_version": 1, "name": "bad", "cluster": {"node_groups": [
        {"name": "a", "count": 1}]}, "workloads": [{"name": "w", "template": "t.yaml.j2", "count": 1}]}))
    res = kwokbench("run", str(scen), "--cluster", cluster.name, "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "'nope' is undefined")
    assert not (tmp_path / "out").exists()


def test_run_unknown_cluster_keeps_the_failed_run(tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", "nope", "--out", str(tmp_path))
    assert_one_line_error(res, "--cluster nope: no such kwokbench cluster")
    run = load_run(_only_run(tmp_path, "quickstart"))
    assert run.meta["status"] == "failed" and "no such kwokbench cluster" in run.meta["error"]


def test_a_cluster_that_fails_to_come_up_leaves_its_logs_in_the_failed_run(tmp_path: Path, kwokctl: Kwokctl) -> None:
    """A node the apiserver refuses (a label value it cannot hold) fails the bring-up once the cluster runs: the
    error is one line, the cluster is gone, and its component logs are kept in the run (they used to go with the
    cluster's folder, so a bring-up that failed in CI could not be read). ~10 s."""
    scen = tmp_path / "s.yaml"
    scen.write_text(json.dumps({"schema_version": 1, "name": "refused", "cluster": {"node_groups": [
        {"name": "a", "count": 2, "params": {"labels": {"zone": "not a label value!"}}}]},
        "workloads": [{"name": "w", "template": "pod", "count": 1}]}))
    res = kwokbench("run", str(scen), "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "creating node kb-a-")
    assert "HTTP 422" in res.stderr and "its component logs are kept in" in res.stderr
    run = load_run(_only_run(tmp_path / "out", "refused"))
    assert run.meta["status"] == "failed" and run.meta["logs"] == "logs"
    assert (run.path / "logs" / "kube-apiserver.log").stat().st_size > 0
    assert f"its component logs are kept in {run.path / 'logs'}" in run.meta["error"]
    assert run.meta["cluster"]["name"] not in kwokctl.names()
