"""Scheduler variants: each on a fresh identical cluster, with its fairness manifest; placement differs."""

from __future__ import annotations

from pathlib import Path

from kwokbench.store import load_run
from tests.conftest import REPO, kwokbench


def test_config_variants_spread_vs_binpack(tmp_path: Path) -> None:
    kwokbench("run", str(REPO / "scenarios/compare-default-configs.yaml"), "--out", str(tmp_path),
              "--variant", "spread", "--variant", "binpack",
              "--set", "cluster.node_groups.0.count=20", "--set", "workloads.0.count=200",
              "--set", "workloads.0.arrival.qps=100", check=True)
    runs = {load_run(p).meta["variant"]["name"]: load_run(p)
            for p in sorted((tmp_path / "compare-default-configs").iterdir())}
    assert set(runs) == {"spread", "binpack"}
    for name, run in runs.items():
        assert run.path.name.endswith(f"-{name}")
        assert run.meta["status"] == "complete"
        assert run.meta["fairness"]["scheduler_config"] == f"configs/{name}.yaml"
        assert run.meta["fairness"]["scheduler_client_qps"] == 5000  # injected into the config
        assert run.summary is not None and run.summary["pods_scheduled"] == 200
    assert runs["spread"].meta["cluster"]["name"] != runs["binpack"].meta["cluster"]["name"]  # fresh each
    used = {name: run.pods["node"].nunique() for name, run in runs.items()}
    # 200 × 500m CPU = 100 CPU on 20 nodes of 16: bin-packing fills few nodes, spreading uses them all
    assert used["spread"] == 20 and used["binpack"] <= 10, used
    res = kwokbench("report", str(tmp_path / "compare-default-configs"), "-o", str(tmp_path / "rep"), check=True)
    assert "report.html" in res.stdout
