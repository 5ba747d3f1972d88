"""The Python side of WASM plugins: guest directories, their cache key, and the guestURL in the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.cluster.kwokctl import ClusterOptions, scheduler_config_document
from kwokbench.errors import ScenarioError
from kwokbench.toolchain.wasm import guest_dir, guest_key, local_replaces

REPO = Path(__file__).resolve().parents[2]


def _guest(tmp: Path) -> Path:
    (tmp / "sdk").mkdir()
    (tmp / "sdk" / "go.mod").write_text("module example/sdk\n\ngo 1.24\n")
    (tmp / "sdk" / "sdk.go").write_text("package sdk\n")
    g = tmp / "g"
    g.mkdir()
    (g / "go.mod").write_text("module example/g\n\ngo 1.24\n\nrequire example/sdk v0.0.0\n\n"
                              "replace example/sdk => ../sdk\n")
    (g / "main.go").write_text("package main\n\nfunc main() {}\n")
    return g


def test_a_guest_is_a_go_module_with_a_main_package(tmp_path: Path) -> None:
    g = _guest(tmp_path)
    assert guest_dir(g) == g.resolve()
    with pytest.raises(ScenarioError, match="no such directory"):
        guest_dir(tmp_path / "nope")
    with pytest.raises(ScenarioError, match=r"no go\.mod"):
        guest_dir(tmp_path)
    (g / "main.go").write_text("package lib\n")
    with pytest.raises(ScenarioError, match="no package main"):
        guest_dir(g)


def test_the_cache_key_follows_the_guest_and_its_local_sdk(tmp_path: Path) -> None:
    g = _guest(tmp_path)
    assert local_replaces(g / "go.mod") == [(tmp_path / "sdk").resolve()]
    k1 = guest_key(g)
    (tmp_path / "sdk" / "sdk.go").write_text("package sdk\n\nconst X = 1\n")  # the SDK changed
    k2 = guest_key(g)
    (g / "main_test.go").write_text("package main\n")  # tests are not part of the guest
    assert k1 != k2 == guest_key(g)
    assert local_replaces(REPO / "plugins" / "gpufilter-wasm" / "go.mod") == [
        (REPO / "plugins" / "wasm" / "guest").resolve()]


def test_the_guest_url_lands_in_the_plugins_args_of_every_profile(tmp_path: Path) -> None:
    cfg = REPO / "scenarios" / "configs" / "gpufilter-wasm.yaml"
    doc = scheduler_config_document(ClusterOptions(scheduler_config=cfg,
                                                   scheduler_plugin_args={"Wasm": {"guestURL": "file:///g.wasm"}}))
    [profile] = doc["profiles"]
    [wasm] = [c for c in profile["pluginConfig"] if c["name"] == "Wasm"]
    assert wasm["args"] == {"callTimeout": "100ms", "poolSize": 16, "guestURL": "file:///g.wasm"}
    # no profile in the file: the default profile gets the plugin's args
    bare = scheduler_config_document(ClusterOptions(scheduler_plugin_args={"Wasm": {"guestURL": "file:///g"}}))
    assert bare["profiles"] == [{"schedulerName": "default-scheduler",
                                 "pluginConfig": [{"name": "Wasm", "args": {"guestURL": "file:///g"}}]}]
