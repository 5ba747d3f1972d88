"""One effective scheduler client QPS/burst: read from the configuration kube-scheduler is handed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kwokbench.cluster.kwokctl import (
    ClusterOptions,
    scheduler_client_limits,
    scheduler_config,
    scheduler_config_document,
)
from kwokbench.components import Setup, scheduler
from kwokbench.runner import cluster_options, fairness_manifest
from kwokbench.scenario import parse_scenario

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _limits(tmp: Path, config: str | None = None, **kw: object) -> tuple[float, int]:
    if config is not None:
        (tmp / "s.yaml").write_text(HEAD + config)
        kw["scheduler_config"] = tmp / "s.yaml"
    return scheduler_client_limits(scheduler_config_document(ClusterOptions(**kw)))  # type: ignore[arg-type]


@pytest.mark.parametrize(("qps_limits", "expected"), [(False, (5000.0, 10000)), (True, (50.0, 100))])
def test_qps_limits_without_config(tmp_path: Path, qps_limits: bool, expected: tuple[float, int]) -> None:
    assert _limits(tmp_path, qps_limits=qps_limits) == expected


def test_config_file_sets_qps(tmp_path: Path) -> None:
    cfg = "clientConnection: {qps: 120, burst: 240}\n"
    assert _limits(tmp_path, cfg, qps_limits=False) == (120.0, 240)  # the file wins over "unlimited"
    assert _limits(tmp_path, cfg, qps_limits=True) == (120.0, 240)
    # only qps in the file: kube-scheduler's default burst with limits kept, kwokbench's unlimited one without
    assert _limits(tmp_path, "clientConnection: {qps: 80}\n", qps_limits=True) == (80.0, 100)
    assert _limits(tmp_path, "clientConnection: {qps: 80}\n", qps_limits=False) == (80.0, 10000)
    assert _limits(tmp_path, "clientConnection: {qps: 0}\n", qps_limits=True) == (50.0, 100)  # 0 = unset


def test_client_qps_wins_over_config_file(tmp_path: Path) -> None:
    cfg = "clientConnection: {qps: 120, burst: 240}\n"
    assert _limits(tmp_path, cfg, scheduler_client_qps=40.0) == (40.0, 40)
    assert _limits(tmp_path, cfg, scheduler_client_qps=40.0, scheduler_client_burst=80) == (40.0, 80)
    assert _limits(tmp_path, None, scheduler_client_qps=300.0, qps_limits=True) == (300.0, 300)


def test_written_file_and_fairness_manifest_agree(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(HEAD + "clientConnection: {qps: 120}\n")
    sc = parse_scenario("schema_version: 1\nname: s\ncluster: {qps_limits: true, node_groups: [{name: c, count: 1}]}\n"
                        "schedulers: [{name: a, config: s.yaml}, {name: b, config: s.yaml, client_qps: 30}]\n"
                        "workloads: [{name: p, count: 1}]\n")
    for variant, expected in zip(sc.schedulers, [(120.0, 100), (30.0, 30)], strict=True):
        own = scheduler(Setup(sc, tmp_path, variant, None))  # type: ignore[arg-type]
        opts = cluster_options(sc, tmp_path, variant, "x", None, [own])  # type: ignore[arg-type]
        written = yaml.safe_load(scheduler_config(opts, tmp_path / "out.yaml").read_text())
        manifest = fairness_manifest(sc, variant, opts)
        assert scheduler_client_limits(written) == expected
        assert (manifest["scheduler_client_qps"], manifest["scheduler_client_burst"]) == expected


def test_document_is_not_modified_in_place() -> None:
    from kwokbench.cluster.kwokctl import with_client_limits

    doc = {"kind": "KubeSchedulerConfiguration", "clientConnection": {"qps": 5}}
    out = with_client_limits(doc, ClusterOptions(scheduler_client_qps=7))
    assert doc == {"kind": "KubeSchedulerConfiguration", "clientConnection": {"qps": 5}}
    assert out["clientConnection"] == {"qps": 7, "burst": 7} and out["leaderElection"] == {"leaderElect": False}
