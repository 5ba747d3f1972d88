"""The Kubernetes release as a setting (pure: no build, no cluster): release tags and their order, the oldest
release, a kind's client-library skew, a variant's own release, the toolchain's folder per release, and the
gate's comparability when the variants compare releases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwokbench.compare.gate import comparability
from kwokbench.errors import ScenarioError
from kwokbench.plan import check_scenario
from kwokbench.scenario import parse_scenario
from kwokbench.store import StoredRun
from kwokbench.toolchain import Toolchain, versions
from kwokbench.toolchain.plugin import PluginDir

REPO = Path(__file__).resolve().parents[2]


def test_release_tags_sort_as_releases_and_older_ones_are_refused() -> None:
    tags = ["v1.37.1", "v1.37.0", "v1.37.0-rc.1", "v1.37.0-alpha.2", "v1.37.0-beta.0", "v1.36.10", "v1.36.4"]
    assert sorted(tags, key=versions.tag_key) == ["v1.36.4", "v1.36.10", "v1.37.0-alpha.2", "v1.37.0-beta.0",
                                                  "v1.37.0-rc.1", "v1.37.0", "v1.37.1"]
    assert versions.kubernetes_tag("v1.35.0") == "v1.35.0"
    assert versions.kubernetes_tag("v1.38.0-alpha.0") == "v1.38.0-alpha.0"
    with pytest.raises(ValueError, match=r"older than v1\.35\.0"):
        versions.kubernetes_tag("v1.35.0-rc.1")  # before the oldest release, though of the same minor
    for bad in ("1.37.2", "v1.37", "v2.0.0", "v1.37.2-gke.1", "master"):
        with pytest.raises(ValueError, match="is not a Kubernetes release tag"):
            versions.kubernetes_tag(bad)


def test_a_kind_is_run_within_its_client_library_skew() -> None:
    assert versions.skew("v1.34.2", "v1.37.2") == 3
    assert versions.skew_problem("v1.34.2", "v1.37.2") is None
    assert versions.skew_problem("v1.36.4", "v1.36.4") is None
    too_old = versions.skew_problem("v1.33.4", "v1.37.2")
    assert too_old is not None and "4 minor releases older" in too_old and "at most 3" in too_old
    newer = versions.skew_problem("v1.36.1", "v1.35.0")
    assert newer is not None and "newer than the control plane's v1.35.0" in newer


def _scenario(text: str) -> Any:
    return parse_scenario(f"""schema_version: 1
name: s
cluster:
  node_groups: [{{name: cpu, count: 2}}]
workloads: [{{name: pods, template: pod, count: 4}}]
{text}""", Path("s.yaml"))


def test_a_variant_names_its_own_release_and_concurrent_variants_share_one() -> None:
    sc = _scenario("schedulers: [{name: old}, {name: new, kubernetes: v1.37.2}]")
    assert [sc.kubernetes_for(v) for v in sc.schedulers] == [versions.KUBERNETES, "v1.37.2"]
    sc = _scenario("schedulers: [{name: a}]").model_copy(deep=True)
    sc.cluster.kubernetes_version = "v1.35.4"
    assert sc.kubernetes_for(sc.schedulers[0]) == "v1.35.4"  # the cluster's, for a variant naming none
    with pytest.raises(ScenarioError, match=r"schedulers\.1\.kubernetes: .*older than v1\.35\.0"):
        _scenario("schedulers: [{name: old}, {name: new, kubernetes: v1.34.2}]")
    with pytest.raises(ScenarioError, match="one Kubernetes release"):
        _scenario("concurrent_schedulers: true\nschedulers: [{name: a, scheduler_name: a}, "
                  "{name: b, scheduler_name: b, kubernetes: v1.37.2}]")


def test_a_kind_outside_its_skew_is_refused_before_any_cluster() -> None:
    wasm = "{name: wasm, binary: wasm-extension, guest: 'example:nodenumber', kubernetes: %s}"
    sc = _scenario(f"schedulers: [{wasm % 'v1.37.2'}]")
    with pytest.raises(ScenarioError, match=r"scheduler wasm \(wasm-extension\): its Kubernetes v1\.33\.4 "
                                            r"libraries are 4 minor releases older"):
        check_scenario(sc, REPO / "scenarios")
    check_scenario(_scenario(f"schedulers: [{wasm % 'v1.36.4'}]"), REPO / "scenarios")  # 3 minors: run


def test_each_release_has_its_own_folder_and_plugin_build(tmp_path: Path) -> None:
    tc = Toolchain(tmp_path)
    assert tc.kubernetes == versions.KUBERNETES and tc.for_kubernetes(versions.KUBERNETES) is tc
    other = tc.for_kubernetes("v1.37.2")
    assert other.cache == tc.cache and other.kubernetes == "v1.37.2"
    assert other.component("kubernetes").dir(tmp_path).name == "kubernetes-v1.37.2"
    assert other.component("kwok").dir(tmp_path) == tc.component("kwok").dir(tmp_path)  # shared
    assert other.release_marker != tc.release_marker
    plugin = PluginDir(REPO / "plugins" / "nodenumber", "example.com/nodenumber")
    assert plugin.key() == plugin.key(versions.KUBERNETES) != plugin.key("v1.37.2")


def _run(tmp: Path, name: str, release: str, variant_release: str | None) -> StoredRun:
    meta: dict[str, Any] = {"status": "complete", "toolchain": {"kwok": versions.KWOK, "kubernetes": release},
                            "host": {"cpu_model": "x", "cpus": 2}, "fairness": {}, "cluster": {"nodes": 10},
                            "variant": {"name": name, "binary": "kube-scheduler", "kubernetes": variant_release}}
    return StoredRun(tmp / name, meta, {}, None, None)


def test_releases_the_variants_compare_are_not_a_comparability_warning(tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a", "v1.36.4", "v1.36.4"), _run(tmp_path, "b", "v1.37.2", "v1.37.2")
    assert comparability([a, b]) == []
    # the same variant on two releases (a scenario's cluster.kubernetes_version changed between base and head)
    c = _run(tmp_path, "c", "v1.37.2", None)
    d = _run(tmp_path, "d", "v1.36.4", None)
    assert any("toolchain.kubernetes" in w for w in comparability([c, d]))


def test_a_release_whose_staging_modules_the_proxy_refuses_is_named(tmp_path: Path) -> None:
    """What a build imports besides k8s.io/kubernetes itself: its staging modules at v0.N.P. A proxy (a local HTTP
    server standing in for proxy.golang.org's answers, as this machine's gave them for v1.36.0-rc.0) that refuses
    one the build imports is a problem; one no kwokbench binary imports (k8s.io/sample-cli-plugin) is not."""
    import http.server
    import threading

    from kwokbench.toolchain.install import _staging_refused

    gomod = ("module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
             "\tk8s.io/cri-client => ./staging/src/k8s.io/cri-client\n"
             "\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin\n)\n")
    served = {"/k8s.io/kubernetes/@v/v1.36.0-rc.0.mod": gomod, "/k8s.io/kubernetes/@v/v1.36.4.mod": gomod,
              "/k8s.io/api/@v/v0.36.0-rc.0.info": "{}", "/k8s.io/api/@v/v0.36.4.info": "{}",
              "/k8s.io/cri-client/@v/v0.36.4.info": "{}"}

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = served.get(self.path)
            self.send_response(200 if body is not None else 403)
            self.end_headers()
            self.wfile.write((body or "not available").encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"GOPROXY": f"http://127.0.0.1:{server.server_address[1]}"}  # the go command's settings
        assert _staging_refused(env, "v1.36.0-rc.0") == ["k8s.io/cri-client@v0.36.0-rc.0"]
        assert _staging_refused(env, "v1.36.4") == []  # sample-cli-plugin refused, but nothing imports it
        assert _staging_refused(env, "v1.37.0") == []  # no go.mod to read: nothing known to be missing
    finally:
        server.shutdown()
        server.server_close()
