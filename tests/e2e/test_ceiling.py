"""`kwokbench ceiling` for real: scheduler_perf built from Go modules, a 500-node run, and a quickstart
summary that then shows its throughput against that ceiling."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kwokbench.cluster import ClusterInfo
from kwokbench.toolchain import Toolchain
from tests.conftest import REPO, kwokbench


@pytest.fixture
def cache(toolchain: Toolchain, tmp_path: Path) -> Path:
    """A cache of its own for the ceilings, sharing the real toolchain (and the test binary, built into
    it once): ceilings stored here never reach other tests' summaries."""
    c = tmp_path / "cache"
    c.mkdir()
    for d in ("toolchain", "build"):
        (toolchain.cache / d).mkdir(parents=True, exist_ok=True)
        (c / d).symlink_to(toolchain.cache / d)
    return c


@pytest.mark.timeout(1800)  # the first time, building the test binary takes minutes
def test_ceiling_then_quickstart_shows_the_ratio(cluster: ClusterInfo, cache: Path, tmp_path: Path) -> None:
    env = {"KWOKBENCH_CACHE": str(cache)}
    res = kwokbench("ceiling", "--nodes", "500", "--pods", "1000", "--timeout", "600", env=env, timeout=1700,
                    check=True)
    assert "500Nodes" in res.stdout and "ceiling (median of the runs)" in res.stdout
    stored = list((cache / "ceilings").glob("*/*/500Nodes-*.json"))
    assert len(stored) == 1, stored
    doc = json.loads(stored[0].read_text())
    assert doc["format_version"] == 1 and doc["workload"] == "500Nodes" and doc["kubernetes"].startswith("v1.36")
    assert doc["pods_per_second"] > 0 and doc["runs"][0]["wall_seconds"] > 0
    assert doc["runs"][0]["pods_per_second"] == doc["pods_per_second"] and doc["runs"][0]["average"] > 0
    assert doc["host"]["cpus"] == os.cpu_count()

    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", cluster.name, "--out",
                    str(tmp_path / "runs"), "--set", "workloads.0.count=300", env=env, check=True)
    assert "of this host's in-process ceiling" in res.stdout and "host CPU over the pending window" in res.stdout
    run = next((tmp_path / "runs" / "quickstart").iterdir())
    s = json.loads((run / "summary.json").read_text())
    c = s["ceiling"]
    assert c["pods_per_second"] == doc["pods_per_second"] and c["workload"] == "500Nodes"
    assert c["ratio"] == pytest.approx(s["throughput"]["average"] / doc["pods_per_second"])
    assert 0 <= c["age_seconds"] < 1800
    assert 0 < s["processes"]["kube-scheduler"]["cores_share"] <= 1 and s["kwokbench_cpu"]["cores_share"] > 0
