"""A variant's plugin_args, as its kube-scheduler gets them: `{trace.seed}` is the pod list's seed, so the FGD
policies' own random draws and node order follow `--set workloads.0.trace.seed=N` (issue #52: they stayed 42)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench import components
from kwokbench.errors import ScenarioError
from kwokbench.plan import check_scenario, setup_of
from kwokbench.scenario import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "scenarios" / "alibaba-gpu-2023-policies.yaml"


def _args(overrides: list[str]) -> dict[str, object]:
    sc = load_scenario(POLICIES, overrides)
    v = next(v for v in sc.schedulers if v.name == "random")
    kind = components.scheduler(setup_of(sc, POLICIES.parent, v, None))
    return kind.plugin_args()["GPUShare"]  # type: ignore[attr-defined,no-any-return]


def test_the_plugins_seed_follows_the_pod_lists() -> None:
    assert _args([]) == {"policy": "Random", "seed": 42}
    assert _args(["workloads.0.trace.seed=43"]) == {"policy": "Random", "seed": 43}


def test_a_trace_seed_without_a_trace_is_one_line() -> None:
    sc = parse_scenario("""\
schema_version: 1
name: s
cluster:
  node_groups: [{name: cpu, count: 2, params: {cpu: 8}}]
schedulers:
  - name: plugin
    binary: ../plugins/gpushare
    config: configs/gpushare.yaml
    plugin_args: {GPUShare: {seed: "{trace.seed}"}}
workloads:
  - {name: pods, count: 4}
""", "s.yaml")
    with pytest.raises(ScenarioError, match=r"plugin_args \{trace\.seed\} is the seed of the scenario's trace "
                                            r"workload, and it has no trace workload"):
        check_scenario(sc, ROOT / "scenarios")
