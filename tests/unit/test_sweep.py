"""Sweep analysis: grid points, knees, sentences, trends, scaling (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.errors import StoreError
from kwokbench.report import sweep as report
from kwokbench.scenario import parse_scenario
from kwokbench.sweep import at_rate, evaluate, knees, load, save, scaled, sentence, trend

SCENARIO = parse_scenario("""\
schema_version: 1
name: s
cluster:
  node_groups: [{name: cpu, count: 90}, {name: gpu, count: 10, params: {gpus: 8}}]
workloads:
  - {name: pods, count: 5, arrival: {type: poisson, rate: 20}, wait_for: none}
  - {name: more, count: 5}
""")


def summary(throughput: float, p99: float | None, scheduled: int = 100, expected: int = 100) -> dict[str, object]:
    return {"binding_rate": {"available": True, "average": throughput}, "pods_scheduled": scheduled,
            "pods_expected": expected, "latency": {"created_to_scheduled": {"p99": p99}},
            "processes": {"kube-apiserver": {"cpu_seconds": 3.0, "rss_peak_bytes": 300 * 2**20}}}


def test_evaluate_point() -> None:
    ok = evaluate(summary(99.0, 0.2), 100, slo_p99=1.0, min_ratio=0.95)
    assert ok["holds"] and ok["ratio"] == pytest.approx(0.99) and ok["why"] == ""
    assert ok["rss_peak_mib"] == {"kube-apiserver": 300.0}
    slow = evaluate(summary(90.0, 2.5), 100, 1.0, 0.95)
    assert not slow["holds"] and "90%" in slow["why"] and "p99 2500 ms > SLO 1000 ms" in slow["why"]
    assert not evaluate(summary(100.0, 0.1, scheduled=90), 100, 1.0, 0.95)["holds"]  # some pods never bound
    # a point whose offered load the apiserver did not take was not tested at that rate
    starved = evaluate({**summary(99.0, 0.2), "submit": [{"accepted_qps": 40.0}]}, 100, 1.0, 0.95)
    assert not starved["holds"] and starved["accepted"] == 40.0
    assert "the apiserver accepted 40.0/s of 100/s offered" in starved["why"]
    assert evaluate({**summary(99.0, 0.2), "submit": [{"accepted_qps": 99.5}]}, 100, 1.0, 0.95)["holds"]
    assert evaluate(None, 100, 1.0, 0.95)["why"].startswith("throughput 0.0/s")
    # without scrapes the watch's throughput is used
    assert evaluate({"throughput": {"average": 50.0}, "latency": {"created_to_scheduled": {"p99": 0.1}},
                     "pods_scheduled": 1, "pods_expected": 1}, 50, 1.0, 0.95)["holds"]


def test_knees_and_sentences() -> None:
    pts = [{"nodes": 100, "qps": 50, "holds": True}, {"nodes": 100, "qps": 100, "holds": True},
           {"nodes": 100, "qps": 200, "holds": False}, {"nodes": 100, "qps": 400, "holds": True},
           {"nodes": 1000, "qps": 50, "holds": False}, {"nodes": 1000, "qps": 100, "skipped": True, "holds": False},
           {"nodes": 10, "qps": 50, "holds": True}]
    assert knees(pts) == {10: 50, 100: 100, 1000: None}  # a hold above a failure does not count
    assert sentence(100, 100, 1.0, [50, 100, 200]) == \
        "with 100 nodes this control plane sustains 100 pods/s within a 1 s p99 (it failed at 200/s)"
    assert "the highest rate tested" in sentence(10, 50, 0.5, [50])
    assert "500 ms p99" in sentence(10, 50, 0.5, [50])
    assert "sustained none of the tested rates (lowest 50 pods/s)" in sentence(1000, None, 1.0, [50, 100])


def test_trend() -> None:
    a, b = trend([100, 1000, 5000], [210, 300, 700])  # type: ignore[misc]
    assert a == pytest.approx(0.1, rel=0.01) and b == pytest.approx(200, rel=0.05)
    assert trend([100, 100], [1, 2]) is None


def test_scaling_and_rate() -> None:
    s = scaled(SCENARIO, 1000)
    assert [g.count for g in s.cluster.node_groups] == [900, 100]
    assert [g.count for g in scaled(SCENARIO, 7).cluster.node_groups] == [7, 0]
    r = at_rate(SCENARIO, 200, 20)
    assert len(r.workloads) == 1 and r.workloads[0].count == 4000 and r.workloads[0].wait_for == "scheduled"
    assert r.workloads[0].arrival.type == "qps" and at_rate(SCENARIO, 1, 20).workloads[0].count == 50


def test_store_round_trip_and_report(tmp_path: Path) -> None:
    doc = {"format_version": 1, "scenario": "s", "variant": "default", "status": "complete", "nodes": [100, 1000],
           "qps": [50, 100], "slo_p99_seconds": 1.0, "min_ratio": 0.95, "duration_seconds": 20,
           "points": [{**evaluate(summary(50, 0.1), 50, 1, 0.95), "nodes": 100},
                      {**evaluate(summary(60, 3.0), 100, 1, 0.95), "nodes": 100},
                      {**evaluate(summary(49, 0.3), 50, 1, 0.95), "nodes": 1000},
                      {"nodes": 1000, "qps": 100, "skipped": True, "holds": False, "why": "skipped: saturated"}],
           "knees": {"100": 50, "1000": 50}, "sentences": ["with 100 nodes …"]}
    save(tmp_path, doc)
    assert load(tmp_path) == doc
    _columns, rows = report.rows(doc)
    assert rows[1][-1].startswith("throughput 60.0/s") and rows[3][2:6] == ["-", "-", "-", "-"]
    md = report.markdown(doc)
    assert "| 100 | 50 | - | 50.0 | 100% | 100 ms | - | holds |" in md and "with 100 nodes" in md
    assert [p.name for p in report.write(doc, tmp_path / "r")] == [
        "sweep.md", "throughput_vs_qps.png", "latency_vs_qps.png", "control_plane_vs_nodes.png"]
    (tmp_path / "sweep.json").write_text('{"format_version": 9}')
    with pytest.raises(StoreError, match="format version 9 is not supported"):
        load(tmp_path)
    with pytest.raises(StoreError, match="not a kwokbench sweep"):
        load(tmp_path / "r")


def test_trends_use_each_size_at_its_lowest_rate() -> None:
    def pt(n: int, q: float, rss: float) -> dict[str, object]:
        return {"nodes": n, "qps": q, "holds": True, "rss_peak_mib": {"etcd": rss, "kube-apiserver": 500 - n / 10}}
    doc = {"nodes": [100, 1000], "points": [pt(100, 50, 110), pt(100, 500, 900), pt(1000, 50, 200),
                                            pt(1000, 500, 300)]}
    apiserver, etcd = report.trends(doc)
    assert etcd == "etcd peak RSS ≈ 100 MiB + 100.0 MiB per 1000 nodes (fit over 2 sizes at their lowest rate)"
    assert apiserver.startswith("kube-apiserver peak RSS: no growth with cluster size measurable over 2 sizes")
