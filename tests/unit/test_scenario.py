from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwokbench.errors import ScenarioError
from kwokbench.scenario import QpsArrival, Scenario, apply_overrides, json_schema, load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[2]
GOOD = """\
schema_version: 1
name: s
cluster:
  node_groups: [{name: cpu, count: 10}]
workloads:
  - name: pods
    count: 5
    arrival: {type: poisson, rate: 20}
"""


@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_scenarios_are_valid(path: Path) -> None:
    sc = load_scenario(path)
    assert sc.schema_version == 1


def test_defaults() -> None:
    sc = parse_scenario(GOOD)
    assert sc.schedulers[0].name == "default"
    assert sc.workloads[0].wait_for == "scheduled"
    assert sc.cluster.qps_limits is False
    assert parse_scenario(GOOD.replace("    arrival: {type: poisson, rate: 20}\n", "")).workloads[0].arrival == \
        QpsArrival(qps=100)


def test_unknown_field_names_line_and_path() -> None:
    bad = GOOD.replace("    count: 5\n", "    count: 5\n    cuont: 7\n")
    with pytest.raises(ScenarioError, match=r"^f.yaml:8: workloads\.0\.cuont: Extra inputs are not permitted"):
        parse_scenario(bad, "f.yaml")


def test_wrong_type_names_line_and_path() -> None:
    bad = GOOD.replace("count: 10", "count: lots")
    msg = r"f.yaml:4: cluster\.node_groups\.0\.count: Input should be a valid integer"
    with pytest.raises(ScenarioError, match=msg):
        parse_scenario(bad, "f.yaml")


def test_bad_arrival_field() -> None:
    bad = GOOD.replace("rate: 20", "rate: -1")
    with pytest.raises(ScenarioError, match=r"workloads\.0\.arrival\.rate: Input should be greater than 0"):
        parse_scenario(bad, "f.yaml")


def test_malformed_yaml_has_line_and_column() -> None:
    with pytest.raises(ScenarioError, match=r"^f.yaml:4:\d+: invalid YAML"):
        parse_scenario("schema_version: 1\nname: s\ncluster: {a: 1\nb: [unclosed\n", "f.yaml")


def test_not_a_mapping_and_wrong_version() -> None:
    with pytest.raises(ScenarioError, match="must be a YAML mapping"):
        parse_scenario("- a\n- b\n")
    with pytest.raises(ScenarioError, match="schema_version"):
        parse_scenario(GOOD.replace("schema_version: 1", "schema_version: 2"))


def test_duplicate_names() -> None:
    dup = GOOD + "  - name: pods\n    count: 1\n"
    with pytest.raises(ScenarioError, match="duplicate workload name"):
        parse_scenario(dup)


def test_overrides() -> None:
    sc = parse_scenario(GOOD, overrides=["workloads.0.count=50", "seed=7", "cluster.qps_limits=true",
                                         "workloads.0.arrival={type: qps, qps: 300}"])
    assert sc.workloads[0].count == 50 and sc.seed == 7 and sc.cluster.qps_limits
    assert sc.workloads[0].arrival == QpsArrival(qps=300)
    with pytest.raises(ScenarioError, match="no list item 3"):
        parse_scenario(GOOD, overrides=["workloads.3.count=1"])
    with pytest.raises(ScenarioError, match="expected path=value"):
        apply_overrides({}, ["nothing"])
    with pytest.raises(ScenarioError, match="Extra inputs are not permitted"):
        parse_scenario(GOOD, overrides=["workloads.0.bogus=1"])


def test_missing_file() -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(Path("/nonexistent/s.yaml"))


def test_schema_has_descriptions_everywhere() -> None:
    schema = json_schema()
    for name, model in schema["$defs"].items():
        for field, spec in model.get("properties", {}).items():
            assert spec.get("description"), f"{name}.{field} has no description"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_any_text_is_scenario_or_scenario_error(text: str) -> None:
    with contextlib.suppress(ScenarioError):
        assert isinstance(parse_scenario(text), Scenario)


_yamlish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(
        ["name", "count", "cluster", "workloads", "node_groups", "arrival", "type", "qps", "schema_version"]),
        kids, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["schema_version", "name", "cluster", "workloads", "schedulers", "seed"]),
                       _yamlish, max_size=6))
def test_fuzz_structured_documents(doc: dict[str, object]) -> None:
    import yaml

    with contextlib.suppress(ScenarioError):
        parse_scenario(yaml.safe_dump(doc))


def test_gangs_and_variant_binaries() -> None:
    doc = GOOD.replace("    count: 5\n", "    count: 12\n    gang: {size: 4, min_member: 3}\n")
    sc = parse_scenario(doc + "schedulers:\n  - {name: cos, binary: scheduler-plugins}\n"
                              "  - {name: ext, extender: {rule: gpu}, client_qps: 200}\n")
    gang = sc.workloads[0].gang
    assert gang is not None and (gang.size, gang.min_member, gang.template) == (4, 3, "podgroup")
    assert [s.binary for s in sc.schedulers] == ["scheduler-plugins", "kube-scheduler"]
    ext = sc.schedulers[1].extender
    assert ext is not None and ext.filter and ext.prioritize and sc.schedulers[1].client_qps == 200
    with pytest.raises(ScenarioError, match=r"count 13 is not a multiple of gang\.size 4"):
        parse_scenario(doc.replace("count: 12", "count: 13"))
    with pytest.raises(ScenarioError, match="min_member 5 is larger than the gang size 4"):
        parse_scenario(doc.replace("min_member: 3", "min_member: 5"))
    with pytest.raises(ScenarioError, match=r"extender\.rule"):
        parse_scenario(GOOD + "schedulers: [{name: x, extender: {rule: wasm}}]\n")
