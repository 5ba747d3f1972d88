"""Every documented scenario field is set by a shipped scenario or a test (read statically:
tests/support/scenario_fields.py says what counts). A field nobody sets can fail on every use unseen: the
kube-scheduler flags did (issue #55)."""

from __future__ import annotations

from tests.support.scenario_fields import documented, override_fields, used

NOT_YET_EXERCISED = {
    # Fields no shipped scenario and no test sets yet (issue #55 burns this list down); a field leaves it when
    # something sets it, and a new field may not join it.
    "ChaosEvent.group", "ClusterQueueSpec.flavor", "ClusterQueueSpec.queueing_strategy", "DeviceSpec.device_class",
    "DeviceSpec.name", "ExtenderSpec.weight", "ExternalSpec.manifests", "ExternalSpec.metrics_port",
    "ExternalSpec.version_command", "GangSpec.min_member", "GangSpec.schedule_timeout_seconds", "GangSpec.template",
    "KaiConfig.schedule_period", "KaiConfig.status_controllers", "KaiQueueSpec.over_quota_weight",
    "KaiQueueSpec.priority", "NodeGroupSpec.template", "SubRequestSpec.capacity",
    "SubRequestSpec.count", "TraceSpec.nodes", "TraceSpec.time_scale", "VolcanoConfig.actions",
    "VolcanoConfig.agent_scheduler_args", "VolcanoConfig.conf_file", "VolcanoConfig.configurations",
    "VolcanoConfig.tiers", "VolcanoPlugin.name", "VolcanoQueueSpec.deserved", "VolcanoQueueSpec.priority",
    "VolcanoQueueSpec.reclaimable", "VolcanoQueueSpec.weight", "VolcanoTier.plugins", "WorkloadSpec.scheduler",
    "YuniKornConfig.placement_rules", "YuniKornConfig.queues_file", "YuniKornQueueSpec.parent",
    "YuniKornQueueSpec.properties", "YuniKornQueueSpec.queues", "ClusterSpec.kwok_controllers",
}


def test_every_documented_field_is_set_somewhere() -> None:
    doc = documented()
    assert doc >= NOT_YET_EXERCISED, f"no longer fields: {sorted(NOT_YET_EXERCISED - doc)}"
    unused = doc - set(used())
    assert not unused - NOT_YET_EXERCISED, (
        f"documented but set by no shipped scenario and no test: {sorted(unused - NOT_YET_EXERCISED)}")
    assert not NOT_YET_EXERCISED - unused, (
        f"now set somewhere, drop from NOT_YET_EXERCISED: {sorted(NOT_YET_EXERCISED - unused)}")


def test_the_flags_are_exercised() -> None:
    """The fields issue #55 found failing on every use: each set by a test that brings a cluster up with it."""
    where = used()
    for f in ("ClusterSpec.extra_args", "KubeSchedulerBase.extra_args"):
        assert any(w.startswith("tests/e2e/") for w in where.get(f, [])), (f, where.get(f))


def test_override_paths_resolve_through_every_kind() -> None:
    assert override_fields("workloads.0.claims.0.shared_by=2".partition("=")[0]) == {
        "Scenario.workloads", "WorkloadSpec.claims", "ClaimSpec.shared_by"}
    assert "KubeSchedulerBase.extra_args" in override_fields("schedulers.1.extra_args")
    assert override_fields("nothing.here") == set()
