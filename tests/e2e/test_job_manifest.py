"""The emitted Indexed Job is accepted by a real apiserver (server-side dry run: nothing is created), and its
pods' command, run here as the Job's containers would run it (same shell command, JOB_COMPLETION_INDEX set, the
ConfigMap's scenario and the results volume at local folders), leaves shards that merge into one sweep, each
run recording the commit given to ``sweep --emit-job``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from kwokbench.cluster import ClusterInfo
from kwokbench.toolchain import Toolchain
from tests.conftest import REPO, kwokbench


def test_emitted_job_passes_server_side_dry_run(cluster: ClusterInfo, toolchain: Toolchain, tmp_path: Path) -> None:
    res = kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), "--nodes", "20,40", "--qps", "20,800",
                    "--emit-job", "3", "--parallelism", "2", "--image", "kwokbench:e2e", check=True)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(res.stdout)
    out = subprocess.run([str(toolchain.path("kubectl")), "--kubeconfig", str(cluster.kubeconfig), "apply",
                          "--dry-run=server", "-f", str(manifest)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "job.batch/kwokbench-quickstart created (server dry run)" in out.stdout
    assert "configmap/kwokbench-quickstart-scenario created (server dry run)" in out.stdout


def test_the_jobs_own_command_leaves_shards_that_merge(tmp_path: Path) -> None:
    res = kwokbench("sweep", str(REPO / "scenarios/quickstart.yaml"), "--nodes", "20", "--qps", "20,40",
                    "--duration", "3", "--slo-p99", "1s", "--no-stop-early", "--emit-job", "2",
                    "--image", "kwokbench:e2e", "--commit", "0123abc", "--ref", "main", check=True)
    config_map, job = list(yaml.safe_load_all(res.stdout))
    [container] = job["spec"]["template"]["spec"]["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    scenario_dir, results = tmp_path / "scenario", tmp_path / "results"
    scenario_dir.mkdir()
    for name, text in config_map["data"].items():  # the ConfigMap volume: its files, as the pod sees them
        (scenario_dir / name).write_text(text)
    shell, flag, command = container["command"]
    assert (shell, flag) == ("sh", "-c")
    command = command.replace(mounts["scenario"], str(scenario_dir)).replace(mounts["results"], str(results))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for index in range(job["spec"]["completions"]):  # what the Job's pods run, one completion index each
        done = subprocess.run([shell, flag, command], env={**env, "JOB_COMPLETION_INDEX": str(index)},
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
    shards = sorted(results.glob("shard-*/quickstart/sweep-*"))
    assert [p.parent.parent.name for p in shards] == ["shard-1", "shard-2"]
    kwokbench("merge", *map(str, shards), "-o", str(tmp_path / "merged"), check=True)
    merged = json.loads((tmp_path / "merged" / "sweep.json").read_text())
    assert sorted((p["nodes"], p["qps"]) for p in merged["points"]) == [(20, 20.0), (20, 40.0)]
    # the pods know the commit under test only from the emitted command (no git, no CI environment there)
    codes = [json.loads(p.read_text())["code"] for p in results.rglob("meta.json")]
    assert len(codes) == 2 and all((c["commit"], c["ref"], c["source"]) == ("0123abc", "main", "option")
                                   for c in codes), codes
