"""Kueue on a kwokctl cluster, the pure parts: its configuration, the queue manifests, reading Workloads,
and the build recipe. The process itself is exercised against a real cluster (e2e)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from kwokbench.cluster import processes
from kwokbench.components.kueue import build as tk
from kwokbench.components.kueue import cluster as kq
from kwokbench.components.kueue.component import queue_objects
from kwokbench.errors import ClusterError, ScenarioError, ToolchainError
from kwokbench.scenario import parse_scenario
from kwokbench.toolchain import versions

PORTS = kq.KueuePorts(metrics=18443, health=18081, webhook=19443)


def test_config_runs_kueue_outside_the_cluster_without_webhooks(tmp_path: Path) -> None:
    cfg = kq.render_config(PORTS, tmp_path / "certs")
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and cfg["kind"] == "Configuration"
    assert cfg["internalCertManagement"] == {"enable": False}  # no rotator waiting for a kubelet-mounted Secret
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["manageJobsWithoutQueueName"] is False
    assert cfg["integrations"] == {"frameworks": ["batch/job"]}
    # every listener on loopback and on the given port: several clusters share a host
    assert cfg["health"] == {"healthProbeBindAddress": "127.0.0.1:18081"}
    assert cfg["metrics"] == {"bindAddress": "127.0.0.1:18443"}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 19443, "certDir": str(tmp_path / "certs")}
    assert cfg["clientConnection"] == {"qps": -1, "burst": 10000}  # Kueue: qps < 0 = no client rate limiter
    assert cfg["featureGates"] == {"VisibilityOnDemand": False}
    assert "pprofBindAddress" not in cfg
    assert yaml.safe_load(yaml.safe_dump(cfg)) == cfg


def test_config_options() -> None:
    cfg = kq.render_config(PORTS, Path("/c"), qps=50, burst=100, frameworks=("batch/job", "pod"), pprof_port=6060,
                           feature_gates={"VisibilityOnDemand": True, "TopologyAwareScheduling": False},
                           manage_jobs_without_queue_name=True, namespace="queues")
    assert cfg["clientConnection"] == {"qps": 50, "burst": 100}
    assert cfg["integrations"]["frameworks"] == ["batch/job", "pod"]
    assert cfg["pprofBindAddress"] == "127.0.0.1:6060"
    assert cfg["featureGates"] == {"VisibilityOnDemand": True, "TopologyAwareScheduling": False}
    assert cfg["manageJobsWithoutQueueName"] is True and cfg["namespace"] == "queues"


def test_queue_manifests() -> None:
    rf = kq.resource_flavor("on-demand", {"instance-type": "x"})
    assert rf == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "on-demand"},
                  "spec": {"nodeLabels": {"instance-type": "x"}}}
    assert kq.resource_flavor()["spec"] == {}
    cq = kq.cluster_queue("cq", "on-demand", {"cpu": 8, "memory": "32Gi"}, cohort="all")
    assert cq["spec"] == {
        "namespaceSelector": {},  # left out, a ClusterQueue admits nothing (the webhook does not default it)
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                            "flavors": [{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "8"},
                                                                            {"name": "memory",
                                                                             "nominalQuota": "32Gi"}]}]}],
        "cohortName": "all",
    }
    strict = kq.cluster_queue("cq", "f", {"cpu": "1"}, queueing_strategy="StrictFIFO",
                              namespace_selector={"matchLabels": {"team": "a"}})["spec"]
    assert strict["queueingStrategy"] == "StrictFIFO" and strict["namespaceSelector"] == {"matchLabels": {"team": "a"}}
    with pytest.raises(ValueError, match="quota"):
        kq.cluster_queue("cq", "f", {})
    assert kq.local_queue("lq", "cq", "team-a") == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team-a"}, "spec": {"clusterQueue": "cq"}}


QUEUES = """\
schema_version: 1
name: s
cluster:
  node_groups: [{name: c, count: 3}]
  kueue:
    cluster_queues:
      - {name: spot, quota: {cpu: 8}, flavor: spot-flavor, queueing_strategy: StrictFIFO}
      - {name: batch, quota: {cpu: 4, memory: 16Gi}, flavor: spot-flavor}
      - {name: plain, quota: {cpu: 2}}
    local_queues: [{name: lq, cluster_queue: spot, namespace: team-a}]
workloads: [{name: j, template: job, count: 2, namespace: team-a, queue: lq}]
"""


def test_the_scenarios_flavors_and_strategies_become_its_queue_objects() -> None:
    sc = parse_scenario(QUEUES)
    assert sc.cluster.kueue is not None
    objs = queue_objects(sc.cluster.kueue)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("ResourceFlavor", "default-flavor"), ("ResourceFlavor", "spot-flavor"),  # each once
        ("ClusterQueue", "spot"), ("ClusterQueue", "batch"), ("ClusterQueue", "plain"), ("LocalQueue", "lq")]
    spot, batch, plain = (o["spec"] for o in objs[2:5])
    assert spot["queueingStrategy"] == "StrictFIFO" and batch["queueingStrategy"] == "BestEffortFIFO"
    assert [f["name"] for f in spot["resourceGroups"][0]["flavors"]] == ["spot-flavor"]
    assert [f["name"] for f in plain["resourceGroups"][0]["flavors"]] == ["default-flavor"]
    assert objs[-1]["metadata"]["namespace"] == "team-a" and objs[-1]["spec"] == {"clusterQueue": "spot"}
    for bad, message in (("queueing_strategy: StrictFIFO", "queueing_strategy: Input should be 'BestEffortFIFO' or "
                                                           "'StrictFIFO'"),
                         ("flavor: spot-flavor", "flavor: String should match pattern")):
        with pytest.raises(ScenarioError, match=message) as e:
            parse_scenario(QUEUES.replace(bad, bad.replace(": ", ": Fair_"), 1))
        assert "\n" not in str(e.value)


def test_a_queued_job_is_suspended_labelled_and_aimed_at_kwok_nodes() -> None:
    job = kq.queued_job("j", "lq", parallelism=3, cpu="1", memory="1Gi", run_for="20s", labels={"run": "r1"})
    assert job["metadata"]["labels"] == {"app": "kwokbench", "kueue.x-k8s.io/queue-name": "lq", "run": "r1"}
    spec = job["spec"]
    assert spec["suspend"] is True  # what Kueue's Job webhook would have defaulted
    assert (spec["parallelism"], spec["completions"]) == (3, 3)
    pod = spec["template"]
    assert pod["metadata"]["annotations"] == {kq.COMPLETE_DELAY_ANNOTATION: "20s"}
    assert pod["metadata"]["labels"] == {"app": "kwokbench", "run": "r1"}
    assert pod["spec"]["tolerations"] == [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
    instant = kq.queued_job("k", "lq", completions=5)
    assert "annotations" not in instant["spec"]["template"]["metadata"]
    assert (instant["spec"]["parallelism"], instant["spec"]["completions"]) == (1, 5)


def test_the_completion_stage_takes_over_annotated_job_pods_only(tmp_path: Path) -> None:
    st = kq.delayed_completion_stage()
    assert st["kind"] == "Stage" and st["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Pod"}
    exprs = {e["key"]: e for e in st["spec"]["selector"]["matchExpressions"]}
    annotation = f'.metadata.annotations["{kq.COMPLETE_DELAY_ANNOTATION}"]'
    assert exprs[annotation]["operator"] == "Exists"
    assert exprs[".metadata.ownerReferences.[].kind"]["values"] == ["Job"]
    assert exprs[".status.phase"]["values"] == ["Running"]
    # kwok's own pod-complete stage has no weight: among matching stages only positive weights are taken
    assert st["spec"]["weight"] == 1
    assert st["spec"]["delay"]["durationFrom"] == {"expressionFrom": annotation}
    assert "phase: Succeeded" in st["spec"]["next"]["statusTemplate"]
    f = kq.write_stage_config(tmp_path / "d" / "stage.yaml")
    assert yaml.safe_load(f.read_text()) == st


def _wl(*conds: tuple[str, str, str]) -> dict[str, object]:
    return {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": t, "status": s, "lastTransitionTime": ts} for t, s, ts in conds]}}


def test_reading_workloads_and_queues() -> None:
    pending = _wl(("QuotaReserved", "False", "2026-01-01T00:00:01Z"))
    assert kq.workload_state(pending) == "pending"
    assert kq.workload_state({"metadata": {}}) == "pending"
    reserved = _wl(("QuotaReserved", "True", "2026-01-01T00:00:02Z"))
    assert kq.workload_state(reserved) == "reserved"
    admitted = _wl(("QuotaReserved", "True", "2026-01-01T00:00:02Z"), ("Admitted", "True", "2026-01-01T00:00:03Z"))
    assert kq.workload_state(admitted) == "admitted"
    done = _wl(("QuotaReserved", "False", "2026-01-01T00:00:09Z"), ("Admitted", "False", "2026-01-01T00:00:09Z"),
               ("Finished", "True", "2026-01-01T00:00:09Z"))
    assert kq.workload_state(done) == "finished"
    base = 1767225600.0  # 2026-01-01T00:00:00Z
    assert kq.workload_times(admitted) == {"created": base, "quota_reserved": base + 2, "admitted": base + 3,
                                           "finished": None}
    assert kq.queue_depth({"status": {"pendingWorkloads": 8, "reservingWorkloads": 4, "admittedWorkloads": 4}}) == {
        "pending": 8, "reserving": 4, "admitted": 4}
    assert kq.queue_depth({}) == {"pending": 0, "reserving": 0, "admitted": 0}


def test_kueue_errors_become_one_line(tmp_path: Path) -> None:
    log = tmp_path / "kueue.log"
    assert kq.last_log_line(log) == "no log"
    log.write_text('{"level":"info","msg":"Starting manager"}\n'
                   '{"level":"error","msg":"Unable to start manager","error":"connection refused"}\n'
                   '{"level":"info","msg":"shutting down"}\n')
    assert kq.last_log_line(log) == "Unable to start manager: connection refused"
    log.write_text("panic: boom\n\n")
    assert kq.last_log_line(log) == "panic: boom"
    assert kq.log_error("not json") is None


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_certs_are_made_once(tmp_path: Path) -> None:
    crt, key = kq.write_certs(tmp_path / "certs")
    assert crt.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert "PRIVATE KEY-----" in key.read_text()
    first = crt.read_bytes()
    assert kq.write_certs(tmp_path / "certs") == (crt, key) and crt.read_bytes() == first
    assert sorted(p.name for p in (tmp_path / "certs").iterdir()) == ["tls.crt", "tls.key"]
    (tmp_path / "file").write_text("")
    with pytest.raises(ClusterError, match="metrics certificate"):
        kq.ensure_metrics_certs(tmp_path / "file" / "certs")


def test_the_kueue_process_is_a_component_of_its_cluster(tmp_path: Path) -> None:
    argv = [str(tmp_path / "bin" / "kueue"), "--config=x"]
    assert processes._matches(argv, None, tmp_path, "kueue")
    assert processes._matches(argv, None, tmp_path, None)  # found by ``down`` even without a pid file
    assert not processes._matches(["/usr/bin/kueue"], "/", tmp_path, "kueue")


GOMOD_WITH_REPLACES = """module sigs.k8s.io/kueue

go 1.26.0

replace github.com/foo/bar => github.com/fork/bar v1.2.3
"""


def test_build_recipe(tmp_path: Path) -> None:
    out = tmp_path / "kueue"
    cmds = tk.build_commands(out, "module sigs.k8s.io/kueue\n\ngo 1.26.0\n", "v0.19.2")
    assert cmds[0] == ["go", "mod", "init", "kwokbench.local/kueuebuild"]
    assert cmds[1] == ["go", "get", "-tool", "sigs.k8s.io/kueue/cmd/kueue@v0.19.2"]
    assert cmds[2][:4] == ["go", "build", "-trimpath", "-ldflags"]
    assert "-X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.19.2" in cmds[2][4]
    assert cmds[2][-3:] == ["-o", str(out), "sigs.k8s.io/kueue/cmd/kueue"]
    with_replaces = tk.build_commands(out, GOMOD_WITH_REPLACES, "v0.19.2")
    assert with_replaces[1] == ["go", "mod", "edit", "-replace=github.com/foo/bar=github.com/fork/bar@v1.2.3"]
    assert tk.KUEUE_VERSION == versions.KUEUE
    assert tk.kueue_binary(tmp_path) == tmp_path / f"kueue-{versions.KUEUE}" / "kueue"


def test_a_binary_is_known_by_its_build_info(tmp_path: Path) -> None:
    b = tmp_path / "kueue"
    assert not tk.is_built(b)
    b.write_bytes(b"\x7fELF....path\tsigs.k8s.io/kueue/cmd/kueue\nmod\tsigs.k8s.io/kueue\tv0.19.2\th1:x=\n")
    assert tk.is_built(b, "v0.19.2")
    assert not tk.is_built(b, "v0.19.1")
    b.write_bytes(b"#!/bin/sh\nmod\tsigs.k8s.io/kueue\tv0.19.2\t")
    assert not tk.is_built(b, "v0.19.2")


def test_a_failed_build_is_summarised_in_one_line() -> None:
    err = ("`go get -tool sigs.k8s.io/kueue/cmd/kueue@v0.19.2` failed with exit 1; last lines of the Go output:\n"
           "  go: downloading x v1\n  sigs.k8s.io/scheduler-library@v0.1.0-alpha1: verifying module: 404 Not Found")
    assert tk._summary(err) == ("`go get -tool sigs.k8s.io/kueue/cmd/kueue@v0.19.2` failed with exit 1: "
                                "sigs.k8s.io/scheduler-library@v0.1.0-alpha1: verifying module: 404 Not Found")
    assert tk._summary("cannot run go: not found") == "cannot run go: not found"


def test_a_failed_build_names_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text('#!/bin/sh\nif [ "$1" = version ]; then echo "go version go1.26.8 linux/amd64"; exit 0; fi\n'
                  'echo "go: downloading x v1"; echo "go: something broke"; exit 1\n')
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    module = tmp_path / "mod"
    module.mkdir()
    (module / "go.mod").write_text("module sigs.k8s.io/kueue\n")
    (module / "go.sum").write_text("")
    monkeypatch.setattr(tk, "_download_module", lambda *_: {"GoMod": module / "go.mod", "Dir": module})
    cache = tmp_path / "cache"
    with pytest.raises(ToolchainError) as e:
        tk.build_kueue(cache=cache)
    msg = str(e.value)
    log = cache / f"kueue-{versions.KUEUE}.log"
    assert "\n" not in msg and msg.endswith(f"(see {log})") and "go: something broke" in msg
    assert "go: something broke" in log.read_text()
    assert not tk.kueue_binary(cache).exists()
    assert sorted(p.name for p in cache.iterdir()) == [".locks", log.name]  # the staged work directory is gone
