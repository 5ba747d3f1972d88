"""Every documented scenario field is set by a shipped scenario or a test (read statically:
tests/support/scenario_fields.py says what counts). A field nobody sets can fail on every use unseen: the
kube-scheduler flags did (issue #55)."""

from __future__ import annotations

from tests.support.scenario_fields import documented, listed_fields, override_fields, used

NOT_YET_EXERCISED: set[str] = set()
"""Fields no shipped scenario and no test sets yet (issue #55 burnt the list down to none): a field leaves it when
something sets it, and a new field may not join it."""


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


REACHES_A_PROCESS = (
    "VolcanoConfig.actions", "VolcanoConfig.tiers", "VolcanoConfig.configurations", "VolcanoConfig.conf_file",
    "VolcanoConfig.agent_scheduler_args", "KaiConfig.schedule_period", "KaiConfig.status_controllers",
    "YuniKornConfig.queues_file", "YuniKornConfig.placement_rules", "ExternalSpec.metrics_port",
    "ExternalSpec.version_command", "ExternalSpec.manifests", "ClusterSpec.kwok_controllers", "ExtenderSpec.weight")
"""Fields that reach a process (a batch scheduler's configuration or flags, the processes a cluster runs) which unit
tests alone set until issue #55: each is now brought up once on a real cluster, in a run an e2e test already made,
which asserts what reached the process."""


def test_the_fields_that_reach_a_process_are_brought_up() -> None:
    where = used()
    assert set(REACHES_A_PROCESS) <= documented(), sorted(set(REACHES_A_PROCESS) - documented())
    missing = {f: where.get(f) for f in REACHES_A_PROCESS
               if not any(w.startswith("tests/e2e/") for w in where.get(f, []))}
    assert not missing, f"set by no e2e test (only: {missing})"


def test_override_paths_resolve_through_every_kind() -> None:
    assert override_fields("workloads.0.claims.0.shared_by=2".partition("=")[0]) == {
        "Scenario.workloads", "WorkloadSpec.claims", "ClaimSpec.shared_by"}
    assert "KubeSchedulerBase.extra_args" in override_fields("schedulers.1.extra_args")
    assert override_fields("nothing.here") == set()


def test_a_list_a_test_helper_puts_in_a_stub_scenario_counts_for_what_it_sets() -> None:
    volcano = listed_fields("[{name: v, binary: volcano, volcano: {actions: [allocate]}}]")
    assert {"Scenario.schedulers", "VolcanoConfig.actions", "VolcanoSpec.volcano"} <= volcano
    gangs = listed_fields("[{name: g, count: 8, gang: {size: 4, min_member: 2}}]")
    assert {"Scenario.workloads", "GangSpec.min_member"} <= gangs
    # the stub around the list sets nothing on the list's behalf; what does not validate sets nothing
    assert not {f for f in volcano | gangs if f.startswith(("ClusterSpec.", "NodeGroupSpec."))}
    assert listed_fields("[{name: v, binary: volcano, volcano: {queues: [{name: root}]}}]") == set()
    assert listed_fields("[1, 2]") == set() and listed_fields("name: x") == set()
