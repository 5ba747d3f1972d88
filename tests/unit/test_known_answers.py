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
    assert cloggers.wait_for == "created"
    moving = orjson.loads(ManifestFactory(resolve_template(churn.template), churn.params, "m").body(0))
    assert moving["metadata"]["labels"]["role"] == "churn" and "affinity" not in moving["spec"]
    assert churn.delete_after == "5s" and churn.wait_for == "scheduled"


def test_the_dra_claim_controller_shape_fills_nine_tenths_through_claim_templates() -> None:
    """kubernetes#140877: one GPU per pod, each pod's claim made by kube-controller-manager from a
    ResourceClaimTemplate; 90% of the GPUs filled by long-running pods, then the last 10% churned by one-pod Jobs
    whose pods complete one after another (clusterloader2's testing/dra shape), never more pods than GPUs; gated on
    the churn's own created → scheduled."""
    sc = load_scenario(REPO / "scenarios/known-dra-claim-controller.yaml")
    gpus = sum(g.count * sum(d.count for d in g.devices) for g in sc.cluster.node_groups)
    fill, churn = sc.workloads
    # shared_by 1: every pod its own claim, made from a ResourceClaimTemplate
    assert fill.count == 0.9 * gpus and all(c.shared_by == 1 and c.count == 1 for w in (fill, churn) for c in w.claims)
    assert churn.template == "job" and churn.params["parallelism"] == 1 and churn.params["completions"] > 1
    assert fill.count + churn.count * churn.params["parallelism"] <= gpus and churn.complete_after == "20s"
    assert sc.gates == ["latency_p50@churn:50%", "latency_p99@churn:50%"]
    assert sc.cluster.controller_manager  # the controller that makes the claims is the thing measured
