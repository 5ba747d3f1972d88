"""benchmarks/bench_scenario.py's tables, on data the results pages render (docs/results/data/wasm-ways-2026-11-29.json:
21 runs of scenarios/wasm-upstream-vs-own.yaml measured on real clusters, 2026-11-29): each cell is the range of the
variant's stored runs, a page's labels choose and order the rows, and a column no one defined is refused by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_scenario  # noqa: E402

DOC = json.loads((ROOT / "docs/results/data/wasm-ways-2026-11-29.json").read_text())


def test_each_cell_is_the_range_of_the_variants_runs() -> None:
    rows = bench_scenario.table(DOC, "throughput,cpu").splitlines()[2:]
    assert len(rows) == len(DOC["runs"]) == 7
    for line, (variant, runs) in zip(rows, DOC["runs"].items(), strict=True):
        tp = [r["throughput"] for r in runs]
        cpu = [r["cpu_ms"] for r in runs]
        lo, hi = f"{min(tp):.1f}", f"{max(tp):.1f}"
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == variant
        assert cells[1] == (f"{lo} pods/s" if lo == hi else f"{lo}–{hi} pods/s")
        lo, hi = f"{min(cpu):.1f}", f"{max(cpu):.1f}"
        assert cells[2] == (f"{lo} ms" if lo == hi else f"{lo}–{hi} ms")


def test_a_pages_labels_choose_and_order_the_rows() -> None:
    text = bench_scenario.table(DOC, "throughput", {"extender": "the extender", "stock": "stock"})
    assert [line.split("|")[1].strip() for line in text.splitlines()[2:]] == ["the extender", "stock"]
    assert text.splitlines()[0].startswith("| variant (3 runs) | throughput |")


def test_a_column_no_one_defined_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="no column 'speed'"):
        bench_scenario.table(DOC, "throughput,speed")


def test_times_and_more_read_the_medians() -> None:
    ext, stock = (bench_scenario.median_row(DOC["runs"][v]) for v in ("extender", "stock"))
    assert bench_scenario.times(DOC, "extender", "algorithm_ms", "stock").startswith(
        f"{ext['algorithm_ms'] / stock['algorithm_ms']:.1f}x (")
    one = {"runs": {"a": [{"throughput": 17.8}], "b": [{"throughput": 3.0}]}}
    assert bench_scenario.times(one, "a", "throughput", "b") == "5.9x"  # one run a side: no range
    both = ext["prescore_ms"] + ext["score_ms"] - stock["prescore_ms"] - stock["score_ms"]
    assert bench_scenario.more(DOC, "extender", "prescore_ms+score_ms", "stock", 2) == f"{both:+.2f} ms".replace(
        "-", "\u2212")


def test_an_arm_is_a_name_and_its_overrides_and_a_malformed_one_is_refused() -> None:
    assert bench_scenario.arms(["stock=", "trimmed=cluster.controller_manager=false; cluster.pin_scheduler=true"]) == {
        "stock": [], "trimmed": ["cluster.controller_manager=false", "cluster.pin_scheduler=true"]}
    for bad in ("stock", "=x=1", "a/b=x=1"):
        with pytest.raises(SystemExit, match="expected NAME=SET;SET"):
            bench_scenario.arms([bad])


def test_the_jobs_columns_read_kueues_runs_and_leave_direct_submissions_blank() -> None:
    """docs/results/data/kueue-2026-11-29.json: scenarios/kueue-vs-direct.yaml, three interleaved runs a variant."""
    doc = json.loads((ROOT / "docs/results/data/kueue-2026-11-29.json").read_text())
    kueue, direct = (line.split("|")[2:-1] for line in bench_scenario.table(
        doc, "makespan,admitted,queue", {"kueue": "kueue", "direct": "direct"}).splitlines()[2:])
    spans = [r["makespan"] for r in doc["runs"]["kueue"]]
    assert kueue[0].strip() == f"{min(spans):.1f}–{max(spans):.1f} s"
    assert [c.strip() for c in direct[1:]] == ["– / –", "–"]
    with pytest.raises(KeyError, match="no chaos event 0"):
        bench_scenario.recovery(doc, "kueue", 0)


def test_a_row_keeps_each_workloads_cpus_held_and_the_pods_writes_without_the_nodes_leases(tmp_path: Path) -> None:
    """A two-tenant run's row: each workload's CPUs held (peak, at the end) in the scenario's order, and the apiserver
    writes per pod bound both with the nodes' lease renewals (``writes``) and without them (``pod_writes``)."""
    summary = {"pods_scheduled": 160, "allocation": {"by_workload": {
        "tenant-a": {"peak_cores": 100.0, "final_cores": 80.0}, "tenant-b": {"peak_cores": 60.0, "final_cores": 80.0}}},
        "apiserver": {"writes": {"per_pod": {"pods": 1.0, "pods/binding": 1.0, "pods/status": 2.5, "events": 3.0,
                                             "leases": 0.75}}}}
    meta = {"variant": {"name": "volcano-reclaim"}, "started_at": "2026-11-29T10:00:00+00:00",
            "finished_at": "2026-11-29T10:01:30+00:00"}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    r = bench_scenario.row(tmp_path)
    assert (r["held_peak_0"], r["held_final_0"], r["held_peak_1"], r["held_final_1"]) == (100.0, 80.0, 60.0, 80.0)
    assert r["held_peak_2"] is None and r["held_final_3"] is None
    assert r["writes"] == pytest.approx(8.25) and r["pod_writes"] == pytest.approx(7.5) and r["events"] == 3.0
    doc = {"runs": {"volcano-reclaim": [r, {**r, "pod_writes": 7.9, "events": 3.2}]}}
    assert bench_scenario.table(doc, "pod_writes").splitlines()[2] == "| volcano-reclaim | 7.5–7.9 (3.0–3.2) |"
    assert bench_scenario.cell(doc, "volcano-reclaim", "held_final_1", ".0f") == "80"


def test_a_workloads_cpus_held_are_its_runs_range_at_the_peak_and_at_the_end() -> None:
    """On docs/results/data/queues-2026-11-29.json (scenarios/queues-three-ways.yaml, 2 runs a variant on real
    clusters, 2026-11-29): what batch-schedulers.md's queues table shows of each tenant."""
    doc = json.loads((ROOT / "docs/results/data/queues-2026-11-29.json").read_text())
    for variant, runs in doc["runs"].items():
        for i in (0, 1):
            ends = [bench_scenario.span({"x": 0, "x_lo": min(r[f"held_{e}_{i}"] for r in runs),
                                         "x_hi": max(r[f"held_{e}_{i}"] for r in runs)}, "x", ".0f")
                    for e in ("peak", "final")]
            assert bench_scenario.held(doc, variant, i) == " / ".join(ends)
    with pytest.raises(KeyError, match="no CPUs for workload 3"):
        bench_scenario.held(doc, "kai", 3)


def test_the_last_phases_p50_is_the_probe_pods_wait_and_absent_without_phases(tmp_path: Path) -> None:
    """A scenario that ends on a probe (the YuniKorn stall's one CPU pod): its row keeps the last phase's created →
    scheduled p50, not the run's, and the column prints it in seconds from 1 s up; a one-phase run has none."""
    summary = {"pods_scheduled": 601, "latency": {"created_to_scheduled": {"p50": 0.02, "p99": 3.0}, "by_phase": {
        "fill": {"created_to_scheduled": {"p50": 0.01}}, "waiting": {"created_to_scheduled": {"p50": None}},
        "cpu": {"created_to_scheduled": {"p50": 29.2}}}}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "meta.json").write_text(json.dumps({"variant": {"name": "yunikorn"}}))
    r = bench_scenario.row(tmp_path)
    assert r["last_p50"] == 29.2 and r["p50"] == 0.02
    doc = {"runs": {"yunikorn": [r, {**r, "last_p50": 32.2}], "kube-scheduler": [{**r, "last_p50": 0.005}]}}
    lines = bench_scenario.table(doc, "last").splitlines()
    assert lines[2:] == ["| yunikorn | 29.2–32.2 s |", "| kube-scheduler | 5 ms |"]
    assert bench_scenario.wait(doc, "kube-scheduler", "last_p50") == "5 ms"
    (tmp_path / "summary.json").write_text(json.dumps({"pods_scheduled": 1, "latency": {}}))
    assert bench_scenario.row(tmp_path)["last_p50"] is None


def test_the_submit_column_reads_the_first_phases_rates_waits_and_wire(tmp_path: Path) -> None:
    """The first phase's creates offered / sent / accepted over the phase (and its steady window), the longest wait
    for a connection and the p50 on the wire, as ``run``'s summary records them; blank for a run without them."""
    summary = {"pods_scheduled": 50000, "submit": [{"offered_qps": 500.0, "sent_qps": 120.4, "accepted_qps": 119.6,
                                                    "rates": {"steady": {"accepted": 154.2},
                                                              "connection_wait_seconds": {"max": 317.0},
                                                              "wire_seconds": {"p50": 0.42}}}, {"offered_qps": 1.0}]}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "meta.json").write_text(json.dumps({"variant": {"name": "default"}}))
    doc = {"runs": {"default": [bench_scenario.row(tmp_path)]}}
    assert (bench_scenario.table(doc, "submit").splitlines()[2]
            == "| default | 500 / 120 / 120 (154) per s; 317.0 s, 420 ms |")
    (tmp_path / "summary.json").write_text(json.dumps({"pods_scheduled": 1}))
    blank = {"runs": {"d": [bench_scenario.row(tmp_path)]}}
    assert bench_scenario.table(blank, "submit").splitlines()[2] == "| d | – |"


def test_a_batch_schedulers_processes_are_summed_and_the_control_planes_left_out(tmp_path: Path) -> None:
    """``kind_cpu_ms``: every process that is not the cluster's (etcd, the apiserver, kube-controller-manager, kwok) is
    the scheduler kind's, its CPU per pod bound summed (KAI's scheduler, binder and controllers); the apiserver's own
    per pod beside it."""
    procs = {"etcd": 1.0, "kube-apiserver": 6.0, "kube-controller-manager": 0.5, "kwok-controller": 0.8,
             "kai-scheduler": 3.0, "kai-binder": 1.5, "podgrouper": 0.5}
    summary = {"pods_scheduled": 100, "processes": {n: {"cpu_seconds": c} for n, c in procs.items()}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "meta.json").write_text(json.dumps({"variant": {"name": "kai"}}))
    r = bench_scenario.row(tmp_path)
    assert r["kind_cpu_ms"] == pytest.approx(50.0) and r["apiserver_ms"] == pytest.approx(60.0)
    doc = {"runs": {"kai": [r]}}
    assert bench_scenario.table(doc, "kind_cpu,apiserver").splitlines()[2] == "| kai | 50.0 ms | 60.0 ms |"
    summary["volcano"] = {"session_seconds": {"mean": 1.87}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "meta.json").write_text(json.dumps({"variant": {"name": "volcano"}, "schedulers": [
        {"kind": "volcano", "setup_seconds": 7.6, "ready_seconds": 0.5}]}))
    doc = {"runs": {"volcano": [bench_scenario.row(tmp_path)]}}
    assert bench_scenario.table(doc, "session,start").splitlines()[2] == "| volcano | 1.9 s | 7.6 s / 500 ms |"


def test_runs_kept_by_arms_are_refused_without_their_arms(tmp_path: Path) -> None:
    """``--runs DIR`` of runs ``--arm`` kept (DIR/NAME/<scenario>/<run>) without the ``--arm``s: every arm's runs of a
    variant would fold into one row (and the stored command read ``--repeat 6``), so it stops in one line naming the
    arms; runs kept without arms (DIR/<scenario>/<run>) read as before."""
    for arm in ("stock", "no-status"):
        run = tmp_path / "arms" / arm / "kai" / "20261130T120000Z-a-kai"
        run.mkdir(parents=True)
        (run / "summary.json").write_text("{}")
    with pytest.raises(SystemExit, match=r"holds the runs of arms \(no-status, stock\): give their --arm again"):
        bench_scenario.refuse_folded_arms(tmp_path / "arms")
    plain = tmp_path / "plain" / "kai" / "20261130T120000Z-a-kai"
    plain.mkdir(parents=True)
    (plain / "summary.json").write_text("{}")
    bench_scenario.refuse_folded_arms(tmp_path / "plain")


def test_a_chaos_events_own_times_and_each_watchs_gaps_are_columns(tmp_path: Path) -> None:
    """A restart's graceful stop and time down, a NotReady event's patches and the taint's delay after them (read
    from chaos.json; the restart's times are those of a real run of scenarios/chaos-apiserver-restart.yaml,
    2026-11-30), and each watch's gaps from the summary; a run without chaos has none of them."""
    t = 1796048311.1016045
    events = [{"action": "restart-apiserver", "t": t, "stopped": t + 17.0048, "started": t + 18.0097,
               "ready": t + 20.7999, "ended": t + 20.8001, "compacted_to": 2239},
              {"action": "nodes-not-ready", "t": t + 30, "ended": t + 32.75, "tainted": t + 32.99, "nodes": ["a"]}]
    (tmp_path / "chaos.json").write_text(json.dumps({"format_version": 1, "events": events}))
    gaps = {"Pod": {"restarts": 1, "gaps": 1, "gap_seconds": 4.988, "vanished": 0},
            "ResourceClaim": {"restarts": 1, "gaps": 1, "gap_seconds": 4.897, "vanished": 0}}
    (tmp_path / "summary.json").write_text(json.dumps({"pods_scheduled": 441, "watch_gaps": gaps}))
    (tmp_path / "meta.json").write_text(json.dumps({"variant": {"name": "default"}}))
    r = bench_scenario.row(tmp_path)
    assert r["stop_0"] == pytest.approx(17.0048, abs=1e-3) and r["down_0"] == pytest.approx(3.7951, abs=1e-3)
    assert "patched_0" not in r and "stop_1" not in r
    assert r["patched_1"] == pytest.approx(2.75, abs=1e-3) and r["reacted_1"] == pytest.approx(0.24, abs=1e-3)
    assert (r["gaps_pod"], r["gap_pod"], r["gap_resourceclaim"]) == (1, 4.988, 4.897)
    doc = {"runs": {"default": [r, {**r, "stop_0": 16.7, "reacted_1": 0.31}]}}
    assert bench_scenario.seconds(doc, "default", "stop_0") == "16.7–17.0 s"
    assert bench_scenario.seconds(doc, "default", "reacted_1") == "0.24–0.31 s"
    (tmp_path / "chaos.json").unlink()
    (tmp_path / "summary.json").write_text(json.dumps({"pods_scheduled": 1}))
    bare = bench_scenario.row(tmp_path)
    assert not [k for k in bare if k.startswith(("stop_", "down_", "gap", "patched_", "reacted_"))]
    with pytest.raises(KeyError, match="no stop_0"):
        bench_scenario.seconds({"runs": {"d": [bare]}}, "d", "stop_0")
