"""``sweep --emit-job N``: the Indexed Job's shape (each pod one shard, 0-based index → i/N)."""

from __future__ import annotations

import subprocess

from kwokbench.cli.job_manifest import indexed_job, job_name, sweep_args


def test_indexed_job_shape() -> None:
    args = sweep_args("100,1000", "50,100", "1s", 20.0, 0.95, None, False, ["seed=3"])
    cm, job = indexed_job("kwokbench-q", "img:1", 4, 2, "q.yaml", "schema_version: 1\n", args, "kb-results", "bench")
    assert cm["kind"] == "ConfigMap" and cm["data"] == {"q.yaml": "schema_version: 1\n"}
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job" and job["metadata"]["namespace"] == "bench"
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 2)
    assert spec["backoffLimitPerIndex"] == 1 and spec["maxFailedIndexes"] == 4
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # backoffLimitPerIndex requires it
    [c] = pod["containers"]
    assert c["image"] == "img:1" and c["command"][:2] == ["sh", "-c"]
    assert {v["name"]: v for v in pod["volumes"]}["results"] == {"name": "results",
                                                                   "persistentVolumeClaim": {"claimName": "kb-results"}}
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/scenario", "/results"}


def test_each_pod_runs_its_own_one_based_shard() -> None:
    """The command, run by a shell as Kubernetes would with JOB_COMPLETION_INDEX set (0-based)."""
    _, job = indexed_job("kwokbench-q", "img", 3, 3, "q.yaml", "", sweep_args("100", "50", "1s", 20, 0.95, "fast",
                                                                              True, [], "0123abc", "main"), None)
    [c] = job["spec"]["template"]["spec"]["containers"]
    script = c["command"][2].replace("exec kwokbench", "echo kwokbench")
    for index, shard in ((0, "1/3"), (2, "3/3")):
        out = subprocess.run(["sh", "-c", script], env={"JOB_COMPLETION_INDEX": str(index)}, capture_output=True,
                             text=True, check=True).stdout.split()
        assert out[:3] == ["kwokbench", "sweep", "/scenario/q.yaml"]
        assert out[out.index("--shard") + 1] == shard and out[out.index("--out") + 1] == f"/results/shard-{index + 1}"
        assert out[out.index("--variant") + 1] == "fast" and "--no-stop-early" not in out
        # the Job's pods have no git and no CI environment: the commit under test is passed on
        assert (out[out.index("--commit") + 1], out[out.index("--ref") + 1]) == ("0123abc", "main")
    assert {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}["results"]["emptyDir"] == {}
    assert len(job_name("x" * 60)) <= 52
