"""The Kubernetes release as a setting (pure: no build, no cluster): release tags and their order, the oldest
release, a kind's client-library skew, a variant's own release, the toolchain's folder per release, and the
gate's comparability when the variants compare releases."""

from __future__ import annotations

from collections.abc import Iterator
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


GOMOD = ("module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
         "\tk8s.io/cri-client => ./staging/src/k8s.io/cri-client\n"
         "\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin\n)\n")


@pytest.fixture
def proxy() -> Iterator[dict[str, str]]:
    """A local HTTP server standing in for proxy.golang.org's answers as this machine's gave them for v1.36.0-rc.0:
    the go command's settings pointing at it; anything not served is refused (403, "not available")."""
    import http.server
    import threading

    served = {"/k8s.io/kubernetes/@v/v1.36.0-rc.0.mod": GOMOD, "/k8s.io/kubernetes/@v/v1.36.4.mod": GOMOD,
              "/k8s.io/api/@v/v0.36.0-rc.0.info": "{}", "/k8s.io/api/@v/v0.36.4.info": "{}",
              "/k8s.io/cri-client/@v/v0.36.4.info": "{}",
              "/k8s.io/cri-client/@v/list": "v0.35.4\nv0.36.10\nv0.36.4\nv0.36.5\nv0.37.0-rc.1\n"}

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
        yield {"GOPROXY": f"http://127.0.0.1:{server.server_address[1]}"}
    finally:
        server.shutdown()
        server.server_close()


def test_a_release_whose_staging_modules_the_proxy_refuses_is_named(proxy: dict[str, str]) -> None:
    """What a build imports besides k8s.io/kubernetes itself: its staging modules at v0.N.P. A refused one the
    build imports is a problem; one no kwokbench binary imports (k8s.io/sample-cli-plugin) is not."""
    from kwokbench.toolchain.install import _staging_refused

    assert _staging_refused(proxy, "v1.36.0-rc.0") == ["k8s.io/cri-client@v0.36.0-rc.0"]
    assert _staging_refused(proxy, "v1.36.4") == []  # sample-cli-plugin refused, but nothing imports it
    assert _staging_refused(proxy, "v1.37.0") == []  # no go.mod to read: nothing known to be missing


def test_a_refused_staging_module_names_the_substitute_that_builds_it(proxy: dict[str, str]) -> None:
    """The hint names the first release of the refused module's minor that the proxy lists (v0.36.4, not the
    lexically first v0.36.10, nor a pre-release); a refused module the user already substitutes is no problem."""
    from kwokbench.toolchain.install import _substitute_hint

    hint = _substitute_hint(proxy, ["k8s.io/cri-client@v0.36.0-rc.0"])
    assert "`--substitute k8s.io/cri-client@v0.36.4`" in hint and "records which packages" in hint
    assert _substitute_hint(proxy, ["k8s.io/api@v0.38.0-beta.0"]) == ""  # nothing of that minor listed: no guess


def test_a_substitute_replaces_that_staging_module_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from kwokbench.errors import ToolchainError
    from kwokbench.toolchain import install

    monkeypatch.setattr(install, "_download_gomod", lambda module, version: GOMOD)
    cmds = install.kubernetes_wrapper("w", "v1.36.0-rc.0", {"k8s.io/cri-client": "v0.36.4"})
    assert cmds[-1][3:] == ["-replace=k8s.io/api=k8s.io/api@v0.36.0-rc.0",
                            "-replace=k8s.io/cri-client=k8s.io/cri-client@v0.36.4",
                            "-replace=k8s.io/sample-cli-plugin=k8s.io/sample-cli-plugin@v0.36.0-rc.0"]
    with pytest.raises(ToolchainError, match=r"--substitute k8s.io/kubelet: not a staging module"):
        install.kubernetes_wrapper("w", "v1.36.0-rc.0", {"k8s.io/kubelet": "v0.36.4"})
    tc = Toolchain(kubernetes="v1.36.0-rc.0", substitutes={"k8s.io/cri-client": "v0.36.4"})
    assert tc.component("kubernetes").substitutes == (("k8s.io/cri-client", "v0.36.4"),)


@pytest.mark.parametrize("given, want", [
    (["k8s.io/kube-proxy@v0.37.0"], {"k8s.io/kube-proxy": "v0.37.0"}),
    (["k8s.io/cri-streaming@v0.37.0-rc.1", "k8s.io/kube-proxy@v0.37.0"],
     {"k8s.io/cri-streaming": "v0.37.0-rc.1", "k8s.io/kube-proxy": "v0.37.0"}),
    (["kube-proxy@v0.37.0"], "expected a staging module and a version"),
    (["k8s.io/kube-proxy"], "expected a staging module and a version"),
    (["k8s.io/kube-proxy@v0.37.0", "k8s.io/kube-proxy@v0.37.1"], "names k8s.io/kube-proxy twice"),
])
def test_substitutes_are_parsed_or_refused_in_one_line(given: list[str], want: object) -> None:
    from kwokbench.errors import ToolchainError
    from kwokbench.toolchain.provenance import parse_substitutes

    if isinstance(want, dict):
        assert parse_substitutes(given) == want
    else:
        with pytest.raises(ToolchainError, match=str(want)):
            parse_substitutes(given)


def test_a_build_records_what_it_substituted_and_what_the_checksum_database_did_not_check(tmp_path: Path) -> None:
    """GONOSUMDB's syntax is Go's (comma-separated globs over leading path elements); the record keeps the hash
    Go computed for each exempted module (go.sum's, not its go.mod line), and a build of the release's own checked
    modules writes none."""
    from kwokbench.toolchain import provenance

    assert provenance.matches("k8s.io/kubernetes,github.com/google/cadvisor/lib", "github.com/google/cadvisor/lib")
    assert provenance.matches("github.com/google", "github.com/google/cadvisor/lib")
    assert provenance.matches("*.io/kube*", "k8s.io/kubernetes")
    assert not provenance.matches("k8s.io/kubernetes", "k8s.io/kube")
    assert not provenance.matches("github.com/google/cadvisor/lib", "github.com/google/cadvisor")
    gosum = ("k8s.io/kubernetes v1.37.0-beta.0 h1:AAA=\nk8s.io/kubernetes v1.37.0-beta.0/go.mod h1:BBB=\n"
             "k8s.io/api v0.37.0-beta.0 h1:CCC=\ngithub.com/google/cadvisor/lib v0.60.4 h1:DDD=\n")
    got = provenance.unchecked(gosum, {"GONOSUMDB": "k8s.io/kubernetes", "GOPRIVATE": "github.com/google"})
    assert got == {"k8s.io/kubernetes@v1.37.0-beta.0": "h1:AAA=", "github.com/google/cadvisor/lib@v0.60.4": "h1:DDD="}
    assert len(provenance.unchecked(gosum, {"GOSUMDB": "off"})) == 3
    assert provenance.unchecked(gosum, {}) == {}

    assert provenance.write(tmp_path, "v1.37.2", {}, [], {}) is None
    assert provenance.read(tmp_path) is None
    doc = provenance.write(tmp_path, "v1.37.0-beta.0", {"k8s.io/kube-proxy": "v0.37.0"},
                           ["k8s.io/kube-proxy/config/v1alpha1", "k8s.io/kube-proxyish"], got)
    assert provenance.read(tmp_path) == doc
    assert doc is not None and doc["substituted"]["k8s.io/kube-proxy"] == {
        "release_has": "v0.37.0-beta.0", "built_with": "v0.37.0",
        "packages_imported": ["k8s.io/kube-proxy/config/v1alpha1"]}
    assert provenance.describe(doc) == (
        "k8s.io/kube-proxy v0.37.0 instead of v0.37.0-beta.0 (imported: k8s.io/kube-proxy/config/v1alpha1); "
        "2 modules not checked by the checksum database (k8s.io/kubernetes@v1.37.0-beta.0, "
        "github.com/google/cadvisor/lib@v0.60.4)")
    assert Toolchain(tmp_path.parent, "v1.37.0-beta.0").build_record() is None  # another cache: no record


def test_a_build_the_checksum_database_refuses_names_the_setting_that_fetches_it() -> None:
    from kwokbench.toolchain.install import sumdb_hint

    tail = ["go: k8s.io/kubernetes/cmd/kube-controller-manager imports",
            "\tgithub.com/google/cadvisor/lib/manager: github.com/google/cadvisor/lib@v0.60.4: verifying module: "
            "github.com/google/cadvisor/lib@v0.60.4: reading https://proxy.golang.org/sumdb/sum.golang.org/lookup/"
            "github.com/google/cadvisor/lib@v0.60.4: 404 Not Found"]
    assert "GONOSUMDB=github.com/google/cadvisor/lib added" in sumdb_hint(tail)
    assert sumdb_hint(["go: build failed: undefined: x"]) == ""
