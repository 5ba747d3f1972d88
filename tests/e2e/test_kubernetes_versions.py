"""Kubernetes releases as variants, on real clusters: scenarios/kubernetes-upgrade.yaml's two variants (v1.36.4
and v1.37.2, each a control plane built from Go modules into its own cache folder) run the same small workload,
each on its own release (what the apiserver's /version says and what its kube-scheduler says), and the gate takes
the difference of release as the thing compared, not as a comparability problem. A release the Go module proxy
does not serve stops the run before any build or cluster, naming the nearest releases it has. kube-scheduler's own
gangs (1.37's PodGroup API, and 1.36's alpha one): 12 gangs of 5 one-CPU pods on 48 CPUs, each placed whole or
not at all.

``kwokbench bisect``: an A/A over one release (no change, no middle measured, its in-process ceiling beside it),
and what it refuses before any cluster.

Time: 54 s here on 2026-11-26 with both releases built (the two releases 22 s, the proxy's refusal 5 s, native
gangs 23 s), plus bisect's A/A with its ceiling 81 s and its refusals 10 s in the suite (98 s and 6 s under a
one-core CPU hog). v1.37.2's build, cold, took 476 s on this host: built once per machine, by the first
of these tests. Budget: 2.5 min.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.compare.gate import comparability
from kwokbench.store import find_runs, load_run
from kwokbench.toolchain import Toolchain
from tests.conftest import REPO, assert_one_line_error, kwokbench

SMALL = ["--set", "cluster.node_groups.0.count=20", "--set", "workloads.0.count=200",
         "--set", "workloads.0.arrival.qps=100"]


def test_two_releases_each_run_on_its_own_control_plane(tmp_path: Path) -> None:
    kwokbench("run", str(REPO / "scenarios/kubernetes-upgrade.yaml"), *SMALL, "--out", str(tmp_path), check=True,
              timeout=1800)
    runs = {r.meta["variant"]["name"]: r for r in map(load_run, find_runs([tmp_path]))}
    assert set(runs) == {"v1-36", "v1-37"}
    for name, release in (("v1-36", "v1.36.4"), ("v1-37", "v1.37.2")):
        r = runs[name]
        assert r.meta["status"] == "complete" and r.summary is not None and r.summary["pods_scheduled"] == 200
        assert r.meta["toolchain"]["kubernetes"] == release
        assert r.meta["cluster"]["served_version"] == release  # the apiserver's own /version
        assert r.meta["fairness"]["component_versions"][name] == f"Kubernetes {release}"  # and its scheduler's
    # the variants compare releases: that difference is the point, not a warning
    assert not [w for w in comparability(list(runs.values())) if "kubernetes" in w]


def test_a_release_the_proxy_does_not_serve_names_the_nearest(tmp_path: Path) -> None:
    before = kwokbench("status", check=True).stdout
    res = kwokbench("run", str(REPO / "scenarios/kubernetes-upgrade.yaml"), *SMALL,
                    "--set", "schedulers.1.kubernetes=v1.37.19", "--out", str(tmp_path))
    # which releases are nearest is the proxy's answer of the day: a 1.37 patch release is, whichever it is
    assert_one_line_error(res, "Kubernetes v1.37.19 is not on the Go module proxy; the nearest releases it has: "
                               "v1.37.")
    assert not list(tmp_path.rglob("meta.json"))  # nothing stored: refused before the first run
    assert kwokbench("status", check=True).stdout == before  # and no cluster started


@pytest.mark.parametrize(("release", "gates", "api"), [
    ("v1.37.2", {"GenericWorkload": True}, "scheduling.k8s.io/v1beta1"),
    ("v1.36.4", {"GenericWorkload": True, "GangScheduling": True}, "scheduling.k8s.io/v1alpha2"),
])
def test_native_gangs_are_placed_whole_or_not_at_all(tmp_path: Path, release: str, gates: dict[str, bool],
                                                     api: str) -> None:
    """gangs-six-ways.yaml's sixth way on a cluster too small for every gang: 12 gangs of 5 one-CPU pods on 48 CPUs.
    kube-scheduler's GangScheduling plugin places 9 whole and leaves 3 unplaced, never one partly; the stock
    scheduler on the same pods binds 48 and leaves gang 9 with 3 of its 5 (measured here: 9 / 1 / 2). On 1.37's
    beta API and on 1.36's alpha one (other feature gates, the same objects under another version)."""
    kwokbench("run", str(REPO / "scenarios/gangs-six-ways.yaml"), "--variant", "native",
              "--set", f"schedulers.8.kubernetes={release}",
              "--set", "cluster.node_groups.0.count=6", "--set", "workloads.0.count=60",
              "--set", "workloads.0.gang.size=5", "--out", str(tmp_path), check=True, timeout=900)
    [run] = [load_run(p) for p in find_runs([tmp_path])]
    assert run.meta["toolchain"]["kubernetes"] == release and run.meta["cluster"]["served_version"] == release
    assert run.meta["fairness"]["feature_gates"] == gates
    assert run.meta["fairness"]["runtime_config"] == [f"{api}=true"]
    assert run.summary is not None
    [g] = run.summary["placement"]["gangs"]
    assert (g["gangs"], g["complete"], g["partial"], g["unplaced"], g["pods_in_partial_gangs"]) == (12, 9, 0, 3, 0), g
    assert run.summary["pods_scheduled"] == 45 and g["time_to_place"]["per_second"] > 0
    # members are bound one write at a time: a gang passes through partly bound states, none is left in one
    assert g["held_by_partial"]["end_pods"] == 0 and g["held_by_partial"]["series"]["pods"], g["held_by_partial"]
    # its own account in pod-group cycles: the 9 placed ones scheduled (the last scrape may precede the last), the
    # other 3 tried and found unschedulable
    cycles = run.summary["scheduler"]["podgroup_schedule_attempts"]
    assert 8 <= cycles.get("scheduled", 0) <= 9 and cycles.get("unschedulable", 0) >= 1, cycles
    assert all(p.startswith("gangs-") for p in run.pods["name"])


def test_bisect_an_a_a_over_one_release_reports_no_change(toolchain: Toolchain, tmp_path: Path) -> None:
    """``kwokbench bisect`` over the same release twice (an A/A): the shared-GPU scenario's five pods, four of
    which fit the one shared GPU, on v1.36.4 as two variants, interleaved. The figure (pods left unscheduled, one
    in every run, by design) is compared as a figure, which one run a side cannot decide: bisect adds repeats until
    three a side show it the same, so there is no change and no middle to measure; the runs are ordinary stored runs
    of the two variants, and bisect.json keeps each release's build (cached), the round's values and, with
    --ceiling, the release's in-process ceiling (in a cache of its own: other tests' runs never see it)."""
    cache = tmp_path / "cache"
    for d in ("toolchain", "build"):
        (toolchain.cache / d).mkdir(parents=True, exist_ok=True)
        (cache / d).parent.mkdir(parents=True, exist_ok=True)
        (cache / d).symlink_to(toolchain.cache / d)
    res = kwokbench("bisect", str(REPO / "scenarios/dra-shared.yaml"), "--kubernetes", "v1.36.4,v1.36.4",
                    "--metric", "unscheduled", "--repeat", "1", "--set", "workloads.0.settle_seconds=4", "--ceiling",
                    "--out", str(tmp_path / "out"), env={"KWOKBENCH_CACHE": str(cache)}, check=True, timeout=1800)
    assert "unscheduled: no change from v1.36.4 to v1.36.4" in res.stdout, res.stdout
    [path] = list((tmp_path / "out").glob("dra-shared/bisect-*"))
    from kwokbench.bisection import load

    doc = load(path)
    assert doc["status"] == "complete" and doc["path"] == ["v1.36.4", "v1.36.4"]
    [(tag, build)] = doc["builds"].items()
    assert tag == "v1.36.4" and build["cached"] and build["components"]["kubernetes"] == "v1.36.4"
    assert doc["pinned"]["differs"] == [] and doc["pinned"]["etcd"] == build["components"]["etcd"]
    [rnd] = doc["rounds"]
    assert rnd["values"] == [[1.0] * 3, [1.0] * 3] and rnd["steps"][0]["step"] == "same"
    [ceiling] = doc["ceilings"].values()
    assert list(doc["ceilings"]) == ["v1.36.4"] and ceiling["pods_per_second"] > 0
    assert Path(ceiling["file"]).is_relative_to(cache) and "ceiling from" in res.stdout
    runs = list(map(load_run, find_runs([tmp_path / "out"])))
    assert sorted(r.meta["variant"]["name"] for r in runs) == ["k-v1-36-4"] * 3 + ["k-v1-36-4-b"] * 3
    assert all(r.meta["cluster"]["served_version"] == "v1.36.4" and r.summary
               and r.summary["pods_scheduled"] == 4 for r in runs)


def test_bisect_refuses_before_any_cluster(tmp_path: Path) -> None:
    before = kwokbench("status", check=True).stdout
    res = kwokbench("bisect", str(REPO / "scenarios/dra-shared.yaml"), "--kubernetes", "v1.37.0..v1.37.9",
                    "--out", str(tmp_path))
    assert_one_line_error(res, "Kubernetes v1.37.9 is not on the Go module proxy")
    res = kwokbench("bisect", str(REPO / "scenarios/kubernetes-upgrade.yaml"), "--kubernetes", "v1.36.4..v1.37.2",
                    "--out", str(tmp_path))
    assert_one_line_error(res, "variant v1-36 sets kubernetes: v1.36.4; bisect sets each run's release itself")
    assert not list(tmp_path.rglob("*.json")) and kwokbench("status", check=True).stdout == before
