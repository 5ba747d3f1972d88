"""Duets (pure parts): one repeat's scenario (two identical pools, the workload twice, sides swapped on odd
repeats), the sides' figures over the same window, and the gate comparing the sides of duet runs pair by pair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kwokbench.compare.gate import gate, is_duet
from kwokbench.errors import ScenarioError
from kwokbench.plan import manifest_factories
from kwokbench.scenario import duet, parse_scenario
from kwokbench.store import StoredRun

DUET = """\
schema_version: 1
name: d
duet: true
cluster:
  node_groups: [{name: cpu, count: 4, params: {cpu: 8, labels: {zone: z1}}}]
schedulers:
  - name: base
  - name: head
    config: configs/binpack.yaml
workloads:
  - name: pods
    count: 10
    arrival: {type: qps, qps: 50}
"""


def test_a_duet_is_two_pools_the_workload_twice_and_the_sides_swap() -> None:
    sc = parse_scenario(DUET, "d.yaml")
    assert sc.concurrent_schedulers and [v.effective_scheduler_name for v in sc.schedulers] == ["duet-base",
                                                                                                 "duet-head"]
    even, rec = duet.expand(sc, 0)
    assert [(g.name, g.count, g.params["labels"]) for g in even.cluster.node_groups] == [
        ("cpu-a", 4, {"zone": "z1", duet.POOL_LABEL: "duet-base"}),
        ("cpu-b", 4, {"zone": "z1", duet.POOL_LABEL: "duet-head"})]
    assert even.workloads[0].count == 20 and even.workloads[0].arrival.qps == 100  # type: ignore[union-attr]
    assert rec == {"variants": ["base", "head"], "baseline": "base", "candidate": "head", "started_first": "base",
                   "pools": {"base": "a", "head": "b"}, "scheduler_names": {"base": "duet-base",
                                                                            "head": "duet-head"}}
    odd, rec1 = duet.expand(sc, 1)
    assert [v.name for v in odd.schedulers] == ["head", "base"] and rec1["started_first"] == "head"
    assert rec1["pools"] == {"head": "a", "base": "b"}
    # each pod carries its side's schedulerName and the nodeSelector of that side's pool, alternately
    [f] = manifest_factories(even, Path("scenarios"), "r1")
    pods = [json.loads(f.body(i)) for i in range(4)]
    assert [(p["spec"]["schedulerName"], p["spec"]["nodeSelector"][duet.POOL_LABEL]) for p in pods] == [
        ("duet-base", "duet-base"), ("duet-head", "duet-head")] * 2


@pytest.mark.parametrize("extra,why", [
    ("", "exactly two scheduler variants"),
    ("gang", "no gangs"),
    ("trace", "no trace workloads"),
])
def test_what_a_duet_refuses(extra: str, why: str) -> None:
    text = DUET
    if extra == "":
        text = text.replace("  - name: head\n    config: configs/binpack.yaml\n", "")
    elif extra == "gang":
        text = text.replace("    count: 10\n", "    count: 10\n    gang: {size: 5}\n")
    else:
        text = text.replace("    count: 10\n    arrival: {type: qps, qps: 50}\n",
                            "    trace: {file: x.csv}\n")
    with pytest.raises(ScenarioError, match=why):
        parse_scenario(text, "d.yaml")


def _pods(base_times: np.ndarray, head_times: np.ndarray) -> pd.DataFrame:
    rows = []
    for name, ts in (("duet-base", base_times), ("duet-head", head_times)):
        for i, t in enumerate(ts):
            rows.append({"created": i * 0.01, "scheduled": t, "scheduler": name})
    return pd.DataFrame(rows)


REC = {"baseline": "base", "candidate": "head", "pools": {"base": "a", "head": "b"}, "started_first": "base",
       "scheduler_names": {"base": "duet-base", "head": "duet-head"}}


def test_the_sides_over_the_same_window() -> None:
    base = np.linspace(0.1, 10.0, 1000)      # 100 pods/s for 10 s
    head = np.linspace(0.1, 11.0, 1000)      # ~10% slower: its last pods fall after the window
    sched = {"base": {"cpu_seconds": 5.0, "schedule_attempts": {"scheduled": 1000}},
             "head": {"cpu_seconds": 6.0, "schedule_attempts": {"scheduled": 1000, "unschedulable": 100}}}
    s = duet.section(_pods(base, head), REC, sched, {"verdict": "scheduler"})
    assert s["window_seconds"] == pytest.approx(10.0)
    assert s["sides"]["base"]["throughput"] == pytest.approx(100.0)
    assert s["ratios"]["throughput"] == pytest.approx(0.908, abs=0.01)
    assert s["ratios"]["cpu_per_pod"] == pytest.approx(1.2)
    assert s["ratios"]["attempts_per_pod"] == pytest.approx(1.1)
    assert s["notes"] == []
    late = duet.section(_pods(base, np.linspace(0.1, 14.0, 1000)), REC, sched, {"verdict": "arrival"})
    assert any("base finished" in n for n in late["notes"]) and any("kept up" in n for n in late["notes"])


PLUGIN = """\
schema_version: 1
name: p
cluster:
  node_groups: [{name: cpu, count: 4, params: {cpu: 8}}]
schedulers:
  - name: plugin
    binary: ..
    config: plugin.yaml
  - name: stock
workloads:
  - name: pods
    count: 10
    arrival: {type: qps, qps: 50}
gates: ["scheduler_cpu_per_pod:15%"]
"""


def test_a_variant_against_the_same_variant_of_another_file(tmp_path: Path) -> None:
    """``run --duet-with``: side base is the other file's variant, its paths in that file's folder; side head is
    this file's; cluster, workload and gates are this file's."""
    head = parse_scenario(PLUGIN, "head/perf/s.yaml")
    base = parse_scenario(PLUGIN.replace("count: 10", "count: 99"), "base/perf/s.yaml")
    d = duet.against(head, tmp_path / "head" / "perf", base, tmp_path / "base" / "perf", "plugin", "base/perf/s.yaml")
    assert d.duet and d.concurrent_schedulers and [v.name for v in d.schedulers] == ["base", "head"]
    assert [v.effective_scheduler_name for v in d.schedulers] == ["duet-base", "duet-head"]
    assert [v.root for v in d.schedulers] == [str((tmp_path / s / "perf").resolve()) for s in ("base", "head")]
    assert all(v.binary == ".." and v.config == "plugin.yaml" for v in d.schedulers)  # type: ignore[attr-defined]
    assert d.workloads[0].count == 10 and d.gates == head.gates
    # the other file's relative paths resolve in its own folder
    from kwokbench.plan import variant_base

    assert variant_base(tmp_path / "head" / "perf", d.schedulers[0]) == (tmp_path / "base" / "perf").resolve()
    with pytest.raises(ScenarioError, match=r"variant nope: not in base/perf/s.yaml \(its variants: plugin, stock\)"):
        duet.against(head, tmp_path, base, tmp_path, "nope", "base/perf/s.yaml")
    traced = parse_scenario(PLUGIN.replace("    count: 10\n    arrival: {type: qps, qps: 50}\n",
                                           "    trace: {file: x.csv}\n"), "t.yaml")
    with pytest.raises(ScenarioError, match=r"a duet of variant stock against b\.yaml: .*duet needs no trace"):
        duet.against(traced, tmp_path, traced, tmp_path, "stock", "b.yaml")


def _duet_run(tmp: Path, i: int, tp_base: float, tp_head: float, first: str = "base",
              variant: str | None = None) -> StoredRun:
    sides = {"base": {"throughput": tp_base, "cpu_per_pod": 0.01, "unscheduled": 0, "latency_p99": 1.0,
                      "latency_p50": 0.1},
             "head": {"throughput": tp_head, "cpu_per_pod": 0.01 * tp_base / tp_head, "unscheduled": 0,
                      "latency_p99": 1.0, "latency_p50": 0.1}}
    meta: dict[str, Any] = {"status": "complete", "variant": {"name": "together"}, "toolchain": {}, "host": {},
                            "fairness": {}, "cluster": {"nodes": 8}, "phases": [], "group": {"duet": REC}}
    summary = {"duet": {**REC, "started_first": first, "sides": sides, "notes": [],
                        **({"variant": variant} if variant else {})}}
    return StoredRun(tmp / f"r{variant or ''}{i}", meta, summary, None, None)


def test_the_gate_compares_the_sides_pair_by_pair(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    host = rng.uniform(60, 140, 6)  # the host's speed moves 2x between runs: both sides with it
    aa = [_duet_run(tmp_path, i, h, h * float(np.exp(rng.normal(0, 0.01))), ("base", "head")[i % 2])
          for i, h in enumerate(host)]
    assert is_duet(aa)
    res = gate(aa, aa, ["throughput:5%", "scheduler_cpu_per_pod:5%"])
    assert {c.metric: c.decision for c in res.comparisons} == {"throughput": "same", "scheduler_cpu_per_pod": "same",
                                                               "unscheduled": "same"}
    assert res.exit_code == 0 and "6 duet run(s)" in res.notes[0] and "3 with head started first" in res.notes[0]
    slow = [_duet_run(tmp_path, i, h, h * 0.95 * float(np.exp(rng.normal(0, 0.01)))) for i, h in enumerate(host)]
    res = gate(slow, slow, ["throughput:2%"])
    assert res.comparisons[0].verdict == "regression" and res.exit_code == 1
    with pytest.raises(ScenarioError, match="no side of the duet runs is that variant"):
        gate(aa, aa, [], "nope", None)
    with pytest.raises(ScenarioError, match="compared with itself"):
        gate(aa, aa, [], "base", "base")
    other = gate(aa, aa, ["binding_rate:10%"]).comparisons[0]
    assert other.verdict == "inconclusive" and "not measured per side" in other.reason


def test_duets_of_several_variants_are_gated_each_apart(tmp_path: Path) -> None:
    """``run --duet-with`` of a scenario with a plugin and a stock variant: one duet group each; the plugin's
    regression is its own, the stock A/A beside it is not pooled in."""
    rng = np.random.default_rng(2)
    host = rng.uniform(60, 140, 4)
    plugin = [_duet_run(tmp_path, i, h, h * 0.8 * float(np.exp(rng.normal(0, 0.01))), variant="plugin")
              for i, h in enumerate(host)]
    stock = [_duet_run(tmp_path, i, h, h * float(np.exp(rng.normal(0, 0.01))), variant="stock")
             for i, h in enumerate(host)]
    res = gate(plugin + stock, plugin + stock, ["throughput:5%"])
    verdicts = {c.metric: c.verdict for c in res.comparisons}
    assert verdicts["throughput [plugin]"] == "regression" and verdicts["throughput [stock]"] == "pass", verdicts
    assert res.exit_code == 1 and "each variant gated against itself (plugin, stock)" in res.notes[0]


def test_a_variants_root_is_where_its_relative_paths_resolve() -> None:
    from kwokbench.plan import variant_base

    sc = parse_scenario("""\
schema_version: 1
name: p
cluster:
  node_groups: [{name: cpu, count: 4, params: {cpu: 8}}]
schedulers:
  - name: plugin
    binary: ..
    root: /srv/base/perf
  - name: stock
workloads:
  - name: pods
    count: 10
""", "s.yaml")
    assert variant_base(Path("head"), sc.schedulers[0]) == Path("/srv/base/perf")
    assert variant_base(Path("head"), sc.schedulers[1]) == Path("head")


TWO_RELEASES = """\
schema_version: 1
name: r
duet: true
cluster:
  node_groups: [{name: cpu, count: 4, params: {cpu: 8}}]
schedulers:
  - name: old
    kubernetes: v1.35.4
  - name: new
    kubernetes: v1.36.4
workloads:
  - name: pods
    count: 10
    arrival: {type: qps, qps: 50}
"""


def test_variants_of_two_releases_are_a_duet_of_two_clusters() -> None:
    """They cannot share a control plane: each runs the whole scenario on its own cluster, at the same time; no
    pools, no doubled workload, no served-name change; `duet: clusters` asks for that whatever they differ in."""
    sc = parse_scenario(TWO_RELEASES, "r.yaml")
    assert sc.duet is True and not sc.concurrent_schedulers
    assert [v.effective_scheduler_name for v in sc.schedulers] == ["default-scheduler"] * 2
    [f] = manifest_factories(sc, Path("scenarios"), "r1", variant=sc.schedulers[0])
    assert duet.POOL_LABEL not in json.dumps(json.loads(f.body(0))["spec"])
    forced = parse_scenario(DUET.replace("duet: true", "duet: clusters"), "d.yaml")
    assert forced.duet == "clusters" and not forced.concurrent_schedulers
    with pytest.raises(ScenarioError, match="duet needs exactly two scheduler variants"):
        parse_scenario(DUET.replace("duet: true", "duet: clusters").replace(
            "  - name: head\n    config: configs/binpack.yaml\n", ""), "d.yaml")


def _simultaneous_run(tmp: Path, name: str, repeat: int, cpu: float) -> StoredRun:
    meta: dict[str, Any] = {"status": "complete", "variant": {"name": name}, "toolchain": {}, "host": {},
                            "fairness": {}, "cluster": {"nodes": 4}, "phases": [],
                            "scenario": {"schedulers": [{"name": "old"}, {"name": "new"}]},
                            "group": {"id": "g", "repeat": repeat, "of": 4, "simultaneous": True}}
    summary = {"scheduler": {"cpu_seconds_per_pod": cpu}, "pods_scheduled": 1000, "pods_unscheduled": 0}
    return StoredRun(tmp / f"{name}{repeat}", meta, summary, None, None)


def test_the_gate_takes_a_duet_of_two_clusters_side_against_side(tmp_path: Path) -> None:
    """Given the duet's runs as both baseline and candidate, the second variant is gated against the first, pair by
    pair (each pair made at the same time), and the note says so."""
    host = [0.0020, 0.0031, 0.0024, 0.0040]  # the host moved both sides of each pair
    runs = [r for i, h in enumerate(host) for r in (_simultaneous_run(tmp_path, "old", i, h),
                                                   _simultaneous_run(tmp_path, "new", i, h * 1.3))]
    res = gate(runs, runs, ["scheduler_cpu_per_pod:15%"])
    [cpu] = [c for c in res.comparisons if c.metric == "scheduler_cpu_per_pod"]
    assert cpu.verdict == "regression" and cpu.ratio == pytest.approx(1.3)
    assert "paired by repeat, each pair run at the same time on two clusters (a duet)" in res.notes[0]
    assert "(old) vs 4 candidate run(s) (new)" in res.notes[0]
