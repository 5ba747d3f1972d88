"""The reference WASM extension (kube-scheduler-wasm-extension, built from its pinned source beside the repo)
as `binary: wasm-extension`, on real clusters: its own nodenumber guest binds every pod and places them by its
rule; and the bad guests: a URL that does not exist, a file that is not WebAssembly, a guest that traps at
load — each one line, exit 2, no scheduler left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kwokbench.store import load_run
from tests.conftest import REPO, assert_one_line_error, kwokbench
from tests.support.sources import ENV, SOURCES, install, processes

ARCHIVE = "kube-scheduler-wasm-extension-9b2791f.tar.gz"
pytestmark = pytest.mark.skipif(not (SOURCES / ARCHIVE).is_file(), reason=f"no pinned {ARCHIVE} in {SOURCES}")
SCENARIO = REPO / "scenarios/wasm-upstream.yaml"
SMALL = ["--set", "cluster.node_groups.0.count=20", "--set", "workloads.0.count=300",
         "--set", "workloads.0.arrival.qps=100"]
# a module whose _start traps at once (unreachable), with the memory a guest exports
TRAPS = bytes.fromhex("0061736d01000000" "010401600000" "03020100" "0503010001"
                      "071302065f7374617274000006" "6d656d6f72790200" "0a05010300000b")


def _extension_processes() -> list[psutil.Process]:
    return processes(lambda exe: "/wasm-extension-" in exe)


def matching_share(pods) -> float:  # type: ignore[no-untyped-def]
    """Share of bound pods whose name ends in the same digit as their node's: NodeNumber's rule."""
    bound = pods[pods["node"].notna() & (pods["node"] != "")]
    return float((bound["name"].str[-1] == bound["node"].str[-1]).mean())


@pytest.fixture(scope="module")
def built() -> Iterator[None]:
    install("wasm-extension")
    yield
    assert not _extension_processes(), "a wasm-extension scheduler outlived its run"


def test_reference_guest_binds_every_pod_by_its_rule(built: None, tmp_path: Path) -> None:
    kwokbench("run", str(SCENARIO), "--variant", "nodenumber", "--variant", "stock", "--out", str(tmp_path),
              *SMALL, env=ENV, check=True)
    runs = {r.meta["variant"]["name"]: r for r in (load_run(p) for p in sorted(
        (tmp_path / "wasm-upstream").iterdir()) if p.is_dir())}
    ref, stock = runs["nodenumber"], runs["stock"]
    assert ref.summary["pods_scheduled"] == 300 and stock.summary["pods_scheduled"] == 300
    [sched] = ref.meta["schedulers"]
    assert sched["kind"] == "wasm-extension" and sched["version"].startswith("Kubernetes v1.33.4")
    ext = ref.meta["fairness"]["wasm_extension"]
    assert ext["skew_to_control_plane"] == 3 and ext["guest"] == "example:nodenumber"
    # its own /metrics, as a kube-scheduler: the wasm plugin's Score runs at the Score extension point
    s = ref.summary["scheduler"]
    assert s["schedule_attempts"].get("scheduled") == 300
    assert (s["extension_point_duration_seconds"].get("Score") or {}).get("count")
    # placement follows the rule: most pods on a node whose name ends in their digit (stock: about 1 in 10)
    assert matching_share(ref.pods) > 0.6, matching_share(ref.pods)
    assert matching_share(stock.pods) < 0.4, matching_share(stock.pods)


@pytest.mark.parametrize(("guest", "needle"), [
    ("http://127.0.0.1:9/missing.wasm", "scheduler nodenumber: its command exited"),
    ("not-wasm.wasm", "is not WebAssembly"),
    ("traps.wasm", "scheduler nodenumber: its command exited"),
])
def test_bad_guests_are_one_line(built: None, tmp_path: Path, guest: str, needle: str) -> None:
    (tmp_path / "not-wasm.wasm").write_text("hello")
    (tmp_path / "traps.wasm").write_bytes(TRAPS)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.read_text().replace("guest: example:nodenumber", f"guest: {guest}")
                        .replace("count: 100\n", "count: 5\n"))
    res = kwokbench("run", str(scenario), "--variant", "nodenumber", "--out", str(tmp_path / "out"), env=ENV)
    assert_one_line_error(res, needle)
    assert not _extension_processes()
    if "its command exited" in needle:  # failed once its cluster was up: the run keeps the cluster's logs
        [run] = (tmp_path / "out" / "wasm-upstream").iterdir()
        assert (run / "logs" / "kube-scheduler.log").stat().st_size > 0
