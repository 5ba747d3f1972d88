"""The known answers' scenarios render the objects their upstream shapes need (docs/results/known-answers.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

from kwokbench.manifests import ManifestFactory, resolve_template
from kwokbench.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]


def test_the_async_api_calls_shape_never_places_its_cloggers_and_churns_the_pods_they_name() -> None:
    """kubernetes#135900: pods whose affinity and anti-affinity name the same churning pods (no node can take
    them, and every bind or delete of a churning pod requeues them), pods that fit and go 5 s after they run,
    and the scheduler's client at its stock 50 QPS."""
    sc = load_scenario(REPO / "scenarios/known-async-api-calls.yaml")
    [v] = sc.schedulers
    assert (v.client_qps, v.client_burst) == (50, 100)
    cloggers, churn = sc.workloads
    pod = orjson.loads(ManifestFactory(resolve_template(cloggers.template), cloggers.params, "c").body(0))
    aff = pod["spec"]["affinity"]
    want = [{"labelSelector": {"matchLabels": {"role": "churn"}}, "topologyKey": "kubernetes.io/hostname"}]
    assert aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == want
    assert aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == want
    assert pod["spec"]["preemptionPolicy"] == "Never" and cloggers.wait_for == "created"
    moving = orjson.loads(ManifestFactory(resolve_template(churn.template), churn.params, "m").body(0))
    assert moving["metadata"]["labels"]["role"] == "churn" and "affinity" not in moving["spec"]
    assert churn.delete_after == "5s" and churn.wait_for == "scheduled"
