"""Duets on real clusters: two schedulers at once on one control plane, each on its own pool with the whole
workload. An A/A of the stock scheduler (two repeats: the pools and start order swap, each side's pods land only on
its pool, the gate finds no regression), a Score plugin slowed ~0.2 ms per node against the same plugin unslowed
(the gate finds the regression in CPU per pod from three duet runs), a duet of two clusters (`duet: clusters`, both
clusters at once, their phases started together), and the refusals before any cluster. About 2.8 min warm (five
small duet runs, 10 nodes a pool, and two pairs of 10-node clusters); the slowed plugin's build is shared with
test_bottleneck.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.store import find_runs, load_run
from tests.conftest import kwokbench
from tests.support.plugins import CONFIG, SLOW, write_score_plugin

DUET = """\
schema_version: 1
name: duet
duet: true
cluster:
  node_groups: [{name: cpu, count: 10, params: {cpu: 32, memory: 256Gi, pods: 110}}]
schedulers:
  - name: base
  - name: head
workloads:
  - name: pods
    template: pod
    count: 200
    params: {cpu: 100m, memory: 128Mi}
    arrival: {type: qps, qps: 50}
    wait_for: scheduled
    timeout_seconds: 90
"""


def _runs(root: Path) -> list:  # type: ignore[type-arg]
    return sorted((load_run(p) for p in find_runs([root])), key=lambda r: str(r.meta["started_at"]))


def test_an_a_a_duet_swaps_its_sides_and_is_no_regression(tmp_path: Path) -> None:
    scenario = tmp_path / "duet.yaml"
    scenario.write_text(DUET)
    kwokbench("run", str(scenario), "--repeat", "2", "--out", str(tmp_path / "out"), check=True)
    runs = _runs(tmp_path / "out")
    assert [r.meta["status"] for r in runs] == ["complete", "complete"]
    records = [r.summary["duet"] for r in runs]
    assert [d["started_first"] for d in records] == ["base", "head"]
    assert [d["pools"] for d in records] == [{"base": "a", "head": "b"}, {"head": "a", "base": "b"}]
    for r, d in zip(runs, records, strict=True):
        pods = r.pods.assign(pool=r.pods["node"].str.extract(r"^kb-cpu-(a|b)-", expand=False))
        placed = pods.groupby(["scheduler", "pool"]).size().to_dict()
        assert placed == {(f"duet-{v}", pool): 200 for v, pool in d["pools"].items()}, placed
        for side in ("base", "head"):
            s = d["sides"][side]
            assert s["scheduled"] == 200 and s["cpu_per_pod"] and s["throughput"], s
        assert d["window_seconds"] > 0 and set(d["ratios"]) >= {"throughput", "cpu_per_pod"}
    res = kwokbench("gate", "--baseline", str(tmp_path / "out"), "--candidate", str(tmp_path / "out"),
                    "--metric", "scheduler_cpu_per_pod:10%")
    assert res.returncode in (0, 3), res.stdout + res.stderr  # two pairs may not decide; they must not cry wolf
    assert "2 duet run(s): head against base" in res.stdout, res.stdout


def test_a_slower_plugin_in_a_duet_is_a_regression(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    fast = write_score_plugin(tmp_path_factory.mktemp("score"))
    slow = write_score_plugin(tmp_path_factory.mktemp("slow-score"), spin_us=SLOW)
    scenario = tmp_path / "duet.yaml"
    scenario.write_text(DUET.replace("  - name: base\n  - name: head\n",
                                     f"  - name: base\n    binary: {fast}\n    config: {CONFIG}\n"
                                     f"  - name: head\n    binary: {slow}\n    config: {CONFIG}\n"))
    # three pairs: with two the paired t-test has one degree of freedom, and even a +65% change whose pair ratios are
    # 12% apart reads inconclusive (p=0.053); three decide it with a wide margin
    kwokbench("run", str(scenario), "--repeat", "3", "--out", str(tmp_path / "out"), check=True, timeout=1200)
    res = kwokbench("gate", "--baseline", str(tmp_path / "out"), "--candidate", str(tmp_path / "out"),
                    "--metric", "scheduler_cpu_per_pod:10%")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "3 duet run(s): head against base" in res.stdout, res.stdout
    ratios = [r.summary["duet"]["ratios"]["cpu_per_pod"] for r in _runs(tmp_path / "out")]
    assert all(x > 1.2 for x in ratios), ratios  # ~0.2 ms on each of 10 nodes a pod, on ~2-3 ms a pod


def test_a_duet_of_two_clusters_starts_them_together_and_is_no_regression(tmp_path: Path) -> None:
    """`duet: clusters` (how variants of two releases, and bisect --duet, run): each side the whole scenario on its
    own cluster, both at once; each pair's first pods created at the same instant, the start order swapped on the
    second repeat; the gate takes the second variant against the first, pair by pair."""
    scenario = tmp_path / "duet.yaml"
    scenario.write_text(DUET.replace("duet: true", "duet: clusters"))
    kwokbench("run", str(scenario), "--repeat", "2", "--out", str(tmp_path / "out"), check=True)
    runs = _runs(tmp_path / "out")
    assert [r.meta["status"] for r in runs] == ["complete"] * 4
    by_repeat: dict[int, dict[str, object]] = {}
    for r in runs:
        g = r.meta["group"]
        assert g["simultaneous"] and r.summary["pods_scheduled"] == 200  # its own cluster: the workload once
        by_repeat.setdefault(g["repeat"], {})[r.meta["variant"]["name"]] = r
    for i, pair in sorted(by_repeat.items()):
        base, head = pair["base"], pair["head"]
        firsts = [float(x.pods["created"].min()) for x in (base, head)]  # type: ignore[attr-defined]
        assert abs(firsts[0] - firsts[1]) < 1.0, firsts
        assert (base.meta["group"]["position"], head.meta["group"]["position"]) == ((0, 1) if i == 0 else (1, 0))  # type: ignore[attr-defined]
        assert base.meta["cluster"]["name"] != head.meta["cluster"]["name"]  # type: ignore[attr-defined]
    res = kwokbench("gate", "--baseline", str(tmp_path / "out"), "--candidate", str(tmp_path / "out"),
                    "--metric", "scheduler_cpu_per_pod:10%")
    assert res.returncode in (0, 3), res.stdout + res.stderr  # two pairs may not decide; they must not cry wolf
    assert "each pair run at the same time on two clusters" in res.stdout and "(base) vs 2 candidate" in res.stdout


@pytest.mark.parametrize("args,says", [
    (["scenarios/quickstart.yaml", "--duet"], "duet needs exactly two scheduler variants"),
    (["scenarios/quickstart.yaml", "--duet", "--set", "schedulers=[{name: a}, {name: b, extender: {rule: gpu}}]"],
     "an extender only runs with one variant per cluster"),
])
def test_what_cannot_duet_is_refused_before_any_cluster(tmp_path: Path, args: list[str], says: str) -> None:
    res = kwokbench("run", *args, "--out", str(tmp_path))
    assert res.returncode == 2 and says in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())

