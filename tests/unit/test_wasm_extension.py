"""The reference WASM extension as `binary: wasm-extension`, the pure parts: its variant's validation, the
configuration kwokbench writes (wasm at multiPoint, guestURL and guest_args), the guest checks, the pinned
source that upstream serves no identical archive of, and NodeNumber's rule as the builtin extender's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kwokbench.cluster.kwokctl import ClusterOptions, scheduler_config_document
from kwokbench.components import Setup, scheduler
from kwokbench.components import wasm_extension as wx
from kwokbench.components.extender.server import RULES, nodenumber_score, priorities
from kwokbench.components.wasm_extension import WasmExtension
from kwokbench.errors import ScenarioError, ToolchainError
from kwokbench.scenario import parse_scenario
from kwokbench.toolchain import sources

HEAD = "schema_version: 1\nname: s\ncluster: {node_groups: [{name: c, count: 3}]}\nworkloads: [{name: p, count: 1}]\n"


def _kind(tmp_path: Path, variant: str) -> WasmExtension:
    sc = parse_scenario(HEAD + f"schedulers: [{variant}]\n")
    k = scheduler(Setup(sc, tmp_path, sc.schedulers[0], None))  # type: ignore[arg-type]
    assert isinstance(k, WasmExtension)
    return k


def test_config_enables_wasm_at_multipoint_with_the_guest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWOKBENCH_HOME", str(tmp_path / "home"))
    (tmp_path / "g.wasm").write_bytes(b"\0asm\x01\0\0\0")
    k = _kind(tmp_path, "{name: w, binary: wasm-extension, guest: g.wasm, guest_args: {guestConfig: '{\"a\":1}'}}")
    copts = ClusterOptions()
    k.configure(copts)
    doc = scheduler_config_document(copts)
    [profile] = doc["profiles"]
    assert profile["plugins"] == {"multiPoint": {"enabled": [{"name": "wasm"}]}}
    [cfg] = profile["pluginConfig"]
    assert cfg == {"name": "wasm", "args": {"guestConfig": '{"a":1}', "guestURL": (tmp_path / "g.wasm").as_uri()}}
    assert k.replaces_kube_scheduler  # started by kwokbench: a failing guest is its own one line
    fair = k.fairness()["wasm_extension"]
    assert fair["kubernetes"] == "v1.33.4" and fair["skew_to_control_plane"] == 3
    # an example guest and a URL are passed as the plugin takes them
    assert _kind(tmp_path, "{name: w, binary: wasm-extension, guest: example:advanced}").guest_url().endswith(
        "/examples/advanced.wasm")
    url = "https://example.invalid/g.wasm"
    assert _kind(tmp_path, f"{{name: w, binary: wasm-extension, guest: '{url}'}}").guest_url() == url


def test_bad_guests_and_variants(tmp_path: Path) -> None:
    (tmp_path / "text.wasm").write_text("hello")
    with pytest.raises(ScenarioError, match="is not WebAssembly"):
        _kind(tmp_path, "{name: w, binary: wasm-extension, guest: text.wasm}").check()
    with pytest.raises(ScenarioError, match=re.escape("guest nope.wasm: no such file")):
        _kind(tmp_path, "{name: w, binary: wasm-extension, guest: nope.wasm}").check()
    with pytest.raises(ScenarioError, match="no such example of the reference"):
        _kind(tmp_path, "{name: w, binary: wasm-extension, guest: 'example:other'}").check()
    for variant, message in (("{name: w, binary: wasm-extension}", "needs guest"),
                             ("{name: w, guest: g.wasm}", r"schedulers.0.guest: not a setting of binary: "
                                                          r"kube-scheduler \(it applies to binary: wasm-extension\)"),
                             ("{name: w, binary: wasm-extension, guest: g.wasm, wasm: x}",
                              r"schedulers.0.wasm: not a setting of binary: wasm-extension \(it applies to binary: "
                              r"plugin\)")):
        with pytest.raises(ScenarioError, match=message):
            parse_scenario(HEAD + f"schedulers: [{variant}]\n")


def test_the_pinned_archive_must_be_given(tmp_path: Path) -> None:
    [pin] = wx.SOURCES
    assert pin.upstream.endswith("at commit 9b2791f") and pin.subdir == "scheduler"
    with pytest.raises(ToolchainError, match=re.escape("give KWOKBENCH_SOURCES or --source DIR holding the pinned")):
        sources.locate(wx.SOURCES, None, tmp_path / "w", tmp_path / "c")
    sums = Path(__file__).resolve().parents[3] / "shared" / "sources" / "SHA256SUMS"
    if sums.is_file():
        pinned = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
        assert pinned[pin.archive] == pin.sha256


def test_nodenumber_rule_of_the_extender() -> None:
    pod = {"metadata": {"name": "pods-x-13"}}
    nodes = [{"metadata": {"name": f"kb-cpu-{i}"}} for i in (3, 4, 13, 23)]
    assert [nodenumber_score(pod, n) for n in nodes] == [10, 0, 10, 10]
    assert nodenumber_score({"metadata": {"name": "pod-x"}}, nodes[1]) == 10  # no digit: every node alike
    assert RULES["nodenumber"][0](pod, nodes[1]) == ""  # it filters nothing
    out = priorities({"Pod": pod, "Nodes": {"items": nodes}}, "nodenumber")
    assert out == [{"Host": "kb-cpu-3", "Score": 10}, {"Host": "kb-cpu-4", "Score": 0},
                   {"Host": "kb-cpu-13", "Score": 10}, {"Host": "kb-cpu-23", "Score": 10}]


def test_scenarios_validate() -> None:
    for name in ("wasm-upstream", "wasm-upstream-vs-own"):
        doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.yaml").read_text())
        assert any(s.get("binary") == "wasm-extension" for s in doc["schedulers"])
