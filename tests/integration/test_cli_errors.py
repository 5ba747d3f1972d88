"""Bad input through the real CLI: one line naming what and where, exit 2, never a traceback.

These need no cluster: every case is caught before one would be created.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_one_line_error, kwokbench

GOOD = (REPO / "scenarios" / "quickstart.yaml").read_text()


def _scenario(tmp_path: Path, text: str) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(("text", "needle"), [
    ("schema_version: 1\nname: [unclosed\n", "s.yaml:3:1: invalid YAML"),
    (GOOD.replace("    count: 1000\n", "    count: 1000\n    replicas: 3\n"),
     "workloads.0.replicas: Extra inputs are not permitted"),
    (GOOD.replace("count: 100\n", "count: many\n"), "cluster.node_groups.0.count: Input should be a valid integer"),
    (GOOD.replace("template: pod", "template: missing.yaml.j2"), "template not found: missing.yaml.j2"),
    (GOOD.replace("schedulers:\n  - name: default", "schedulers:\n  - name: default\n    config: nope.yaml"),
     "scheduler config nope.yaml: no such file"),
    (GOOD.replace("schema_version: 1", "schema_version: 7"), "schema_version: Input should be 1"),
    (GOOD.replace("schedulers:\n  - name: default", "schedulers:\n  - name: default\n    binary: plugins/none"),
     "scheduler default: binary 'plugins/none' is neither external, "),
    (GOOD.replace("schedulers:\n  - name: default", "schedulers:\n  - name: default\n    binary: /tmp"),
     "plugin directory /tmp: no go.mod"),
    (GOOD.replace("    template: pod\n", "    template: job\n    gang: {size: 2}\n")
     .replace("count: 1000\n", "count: 10\n"),
     "workload pods: gang members must be Pods, template job makes a Job"),
])
def test_validate_bad_scenarios(tmp_path: Path, text: str, needle: str) -> None:
    res = kwokbench("validate", _scenario(tmp_path, text))
    assert_one_line_error(res, needle)
    # run refuses the same file before creating anything
    assert_one_line_error(kwokbench("run", _scenario(tmp_path, text), "--out", str(tmp_path / "out")), needle)
    assert not (tmp_path / "out").exists()


def test_template_producing_an_invalid_manifest(tmp_path: Path) -> None:
    (tmp_path / "t.yaml.j2").write_text("kind: Pod\nmetadata: {name: '{{ name }}'}\n")
    res = kwokbench("validate", _scenario(tmp_path, GOOD.replace("template: pod", "template: t.yaml.j2")))
    assert_one_line_error(res, "rendered manifest lacks apiVersion")


def test_unknown_variant_and_bad_override(tmp_path: Path) -> None:
    s = _scenario(tmp_path, GOOD)
    assert_one_line_error(kwokbench("run", s, "--variant", "fast", "--out", str(tmp_path / "o")),
                          "unknown scheduler variant(s) fast (scenario has: default)")
    assert_one_line_error(kwokbench("validate", s, "--set", "workloads.5.count=1"), "no list item 5")


def test_missing_scenario_and_reports_dir_not_writable(tmp_path: Path) -> None:
    assert_one_line_error(kwokbench("validate", str(tmp_path / "none.yaml")), "cannot read scenario")
    (tmp_path / "blocker").write_text("a file, not a folder")
    res = kwokbench("run", str(REPO / "scenarios" / "quickstart.yaml"), "--out", str(tmp_path / "blocker"))
    assert_one_line_error(res, "cannot create run directory")
    assert_one_line_error(kwokbench("report", str(tmp_path / "none")), "no such run directory")


def test_report_refuses_newer_runs_and_an_output_that_is_a_file(tmp_path: Path) -> None:
    from tests.unit.fake_runs import fake_run, stored

    run = stored(fake_run(tmp_path / "sweep-x", "default", 1, 100.0))
    out = tmp_path / "a-file"
    out.write_text("not a folder")
    assert_one_line_error(kwokbench("report", str(run.path), "-o", str(out)),
                          f"report folder {out}: exists and is not a folder")
    meta = json.loads((run.path / "meta.json").read_text())
    (run.path / "meta.json").write_text(json.dumps({**meta, "scenario": {**meta["scenario"], "schema_version": 2}}))
    for cmd in ("report", "analyse"):
        assert_one_line_error(kwokbench(cmd, str(run.path)), "scenario schema_version 2 is not supported")
    (run.path / "meta.json").write_text(json.dumps(meta))
    (tmp_path / "sweep-x" / "sweep.json").write_text(json.dumps({"format_version": 2, "points": []}))
    assert_one_line_error(kwokbench("report", str(tmp_path / "sweep-x"), "-o", str(tmp_path / "r")),
                          "sweep.json: format version 2 is not supported")


def test_schema_is_json_and_help_is_instant() -> None:
    import json

    schema = json.loads(kwokbench("schema", check=True).stdout)
    assert schema["title"] == "Scenario"
    assert "Usage" in kwokbench("--help", check=True).stdout


def test_missing_toolchain_and_missing_go(tmp_path: Path) -> None:
    empty = {"KWOKBENCH_CACHE": str(tmp_path / "cache"), "KWOKBENCH_HOME": str(tmp_path / "home")}
    res = kwokbench("tools", "doctor", env=empty)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "kube-apiserver v1.36.4: not built" in res.stderr and "run `kwokbench tools install`" in res.stderr
    # no cached binaries and no Go: up says what to do instead of building or crashing
    no_go = {**empty, "PATH": str(Path(sys.executable).parent)}
    assert_one_line_error(kwokbench("tools", "install", "--from", "source", env=no_go), "Go is not on PATH")
    broken = tmp_path / "cache" / "toolchain" / "kwok-v0.8.0"
    broken.mkdir(parents=True)
    (broken / "kwokctl").write_text("#!/bin/sh\nexit 1\n")
    (broken / "kwokctl").chmod(0o755)
    res = kwokbench("tools", "doctor", env=empty)
    assert res.returncode == 2 and "kwokctl v0.8.0: wrong version" in res.stderr


@pytest.mark.parametrize(("files", "needle"), [
    (None, "no such directory"),
    ({}, "no go.mod"),
    ({"go.mod": "module example.com/p\n", "p.go": "package p\n"}, "does not export Name and New"),
    ({"go.mod": "module example.com/p\n", "p.go": "package p\nconst Name = \"P\"\n"}, "does not export New"),
])
def test_build_scheduler_rejects_non_plugin_directories(tmp_path: Path, files: dict[str, str] | None,
                                                        needle: str) -> None:
    d = tmp_path / "plugin"
    if files is not None:
        d.mkdir()
        for name, text in files.items():
            (d / name).write_text(text)
    assert_one_line_error(kwokbench("tools", "build-scheduler", str(d)), needle)


@pytest.mark.parametrize(("args", "needle"), [
    (["--nodes", "100,lots"], "--nodes '100,lots': expected comma-separated numbers"),
    (["--qps", "0,10"], "--qps '0,10': expected positive numbers"),
    (["--slo-p99", "soon"], "--slo-p99 'soon': expected a duration"),
    (["--variant", "nope"], "unknown scheduler variant nope"),
    (["--shard", "3/2"], "--shard '3/2': the shard must be between 1 and N"),
    (["--shard", "0/2"], "--shard '0/2': the shard must be between 1 and N"),
    (["--shard", "x"], "--shard 'x': expected i/N"),
])
def test_sweep_bad_arguments(tmp_path: Path, args: list[str], needle: str) -> None:
    res = kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), "--out", str(tmp_path / "out"), *args)
    assert_one_line_error(res, needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("shard", "needle"), [("3/2", "the shard must be between 1 and N"),
                                                ("0/2", "the shard must be between 1 and N"),
                                                ("x", "expected i/N")])
def test_run_bad_shard(tmp_path: Path, shard: str, needle: str) -> None:
    res = kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--repeat", "4", "--shard", shard,
                    "--out", str(tmp_path / "out"))
    assert_one_line_error(res, f"--shard {shard!r}: {needle}")
    assert not (tmp_path / "out").exists()


def test_attach_needs_an_existing_kubeconfig_and_refuses_stray_flags(tmp_path: Path) -> None:
    assert_one_line_error(kwokbench("up", "--kubeconfig", str(tmp_path / "none"), "--yes-this-is-a-test-cluster"),
                          "--kubeconfig")
    assert_one_line_error(kwokbench("up", "--context", "x"), "only go with --kubeconfig")


def test_extender_variant_refuses_a_reused_cluster(tmp_path: Path) -> None:
    res = kwokbench("run", str(REPO / "scenarios/extender-vs-plugin.yaml"), "--cluster", "any", "--variant", "extender",
                    "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "a variant with an extender needs a fresh cluster")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("k", ["0", "17", "two"])
def test_up_kwok_controllers_out_of_range(tmp_path: Path, k: str) -> None:
    """Refused before any toolchain or cluster is touched (KWOKBENCH_HOME stays empty)."""
    res = kwokbench("up", "--kwok-controllers", k, env={"KWOKBENCH_HOME": str(tmp_path / "home")})
    assert_one_line_error(res, f"--kwok-controllers {k!r}: expected a whole number from 1 to 16")
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["--scenario", "scenarios/dra.yaml", "--nodes", "3"], "--scenario gives the nodes: --nodes, --param"),
    (["--set", "cluster.node_groups.0.count=3"], "--set goes with --scenario"),
    (["--scenario", "scenarios/dra.yaml", "--set", "workloads.0.claims.0.device_class=nope"],
     "no node group's devices offer class nope"),
    (["--scenario", "scenarios/missing.yaml"], "cannot read scenario"),
])
def test_up_from_a_scenario_refuses_what_does_not_fit(tmp_path: Path, args: list[str], needle: str) -> None:
    """Before any cluster or build: nothing is created in the state dir."""
    home = tmp_path / "home"
    assert_one_line_error(kwokbench("up", *args, env={"KWOKBENCH_HOME": str(home)}), needle)
    assert not (home / "kwok" / "clusters").exists() or not any((home / "kwok" / "clusters").iterdir())


@pytest.mark.parametrize(("override", "needle"), [
    ("workloads.0.claims.0.device_class=tpu.example.com", "no node group's devices offer class tpu.example.com"),
    ("workloads.0.claims.0.capacity={memory: 81Gi}", "81Gi is more than any device of class gpu.kwokbench.io has"),
    ("cluster.node_groups.0.devices=[{count: 8}]", "cluster.node_groups.0.devices.0.driver: Field required"),
])
def test_run_refuses_claims_nothing_could_satisfy_before_any_cluster(tmp_path: Path, override: str,
                                                                     needle: str) -> None:
    home = tmp_path / "home"
    res = kwokbench("run", "scenarios/dra.yaml", "--set", override, "--out", str(tmp_path / "runs"),
                    env={"KWOKBENCH_HOME": str(home)})
    assert_one_line_error(res, needle)
    assert not (tmp_path / "runs").exists() and not (home / "kwok" / "clusters").exists()


@pytest.mark.parametrize(("args", "needle"), [
    (["tools", "install", "--kubernetes", "v1.34.2"], "--kubernetes: Kubernetes v1.34.2 is older than v1.35.0"),
    (["tools", "install", "--kubernetes", "1.37"], "--kubernetes: '1.37' is not a Kubernetes release tag"),
    (["tools", "install", "volcano", "--kubernetes", "v1.37.2"], "a scheduler built from sources has its own"),
    (["tools", "install", "--kubernetes", "v1.37.0-beta.0", "--substitute", "kube-proxy"],
     "--substitute 'kube-proxy': expected a staging module and a version, e.g. k8s.io/kube-proxy@v0.37.0"),
    (["bisect", "scenarios/quickstart.yaml", "--kubernetes", "v1.36.4,v1.37.2", "--metric", "latency_p50@churn:50%"],
     "--metric latency_p50@churn:50%: the scenario has no phase 'churn' (its phases: "),
    (["bisect", "scenarios/quickstart.yaml", "--kubernetes", "v1.36.4,v1.37.2", "--budget-minutes", "0"],
     "--budget-minutes 0: expected minutes > 0"),
    (["tools", "install", "yunikorn", "--substitute", "k8s.io/kube-proxy@v0.37.0"],
     "--kubernetes and --substitute build the control plane"),
    (["ceiling", "--nodes", "10", "--kubernetes", "v1.37"], "--kubernetes: 'v1.37' is not a Kubernetes release tag"),
    (["validate", "scenarios/kubernetes-upgrade.yaml", "--set", "schedulers.1.kubernetes=v1.34.9"],
     "schedulers.1.kubernetes: Value error, Kubernetes v1.34.9 is older than v1.35.0"),
    (["validate", "scenarios/gangs-six-ways.yaml", "--set", "schedulers.8.kubernetes=v1.35.4"],
     "gangs: native needs Kubernetes v1.36.0 or newer"),
    (["validate", "scenarios/wasm-upstream.yaml", "--set", "cluster.kubernetes_version=v1.37.2"],
     "its Kubernetes v1.33.4 libraries are 4 minor releases older than the control plane's v1.37.2"),
])
def test_a_kubernetes_release_kwokbench_cannot_run_is_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    """Each refused before anything is built or started (the module proxy's own refusal is e2e: it needs Go)."""
    home = tmp_path / "home"
    res = kwokbench(*args, env={"KWOKBENCH_HOME": str(home)})
    assert_one_line_error(res, needle)
    assert not (home / "kwok" / "clusters").exists()
