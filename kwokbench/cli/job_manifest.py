"""``kwokbench sweep … --emit-job N``: a Kubernetes Indexed Job that runs a sweep as N shards (pure).

Each pod of the Job is one shard: Kubernetes gives it ``JOB_COMPLETION_INDEX`` (0-based), and its
command turns that into ``--shard index+1/N``. A shard that fails is retried once on its own
(``backoffLimitPerIndex: 1``) while the others go on (``maxFailedIndexes``: all of them may fail
without stopping the rest), so one bad node costs one shard, not the sweep; ``kwokbench merge`` then
says which points are missing. The scenario file travels in a ConfigMap beside the Job; results go to
``/results/shard-<i>`` on a PersistentVolumeClaim (or an ``emptyDir`` to try the manifest out).
"""

from __future__ import annotations

import shlex
from typing import Any

RESULTS = "/results"
SCENARIO_DIR = "/scenario"


def indexed_job(name: str, image: str, shards: int, parallelism: int, scenario_file: str, scenario_text: str,
                sweep_args: list[str], results_claim: str | None = None,
                namespace: str | None = None) -> list[dict[str, Any]]:
    """[ConfigMap, Job]: ``kubectl apply -f`` them; the pods run ``kwokbench sweep`` shard by shard."""
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": "kwokbench",
                                                     "kwokbench.io/sweep": name}}
    if namespace:
        meta["namespace"] = namespace
    command = " ".join(["exec kwokbench sweep", shlex.quote(f"{SCENARIO_DIR}/{scenario_file}"),
                        *map(shlex.quote, sweep_args),
                        f'--shard "$((JOB_COMPLETION_INDEX + 1))/{shards}"',
                        f'--out "{RESULTS}/shard-$((JOB_COMPLETION_INDEX + 1))"'])
    volume = ({"name": "results", "persistentVolumeClaim": {"claimName": results_claim}} if results_claim
              else {"name": "results", "emptyDir": {}})
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {**meta, "name": f"{name}-scenario"},
                  "data": {scenario_file: scenario_text}}
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {
            "completionMode": "Indexed", "completions": shards, "parallelism": min(parallelism, shards),
            "backoffLimitPerIndex": 1, "maxFailedIndexes": shards,
            "template": {
                "metadata": {"labels": dict(meta["labels"])},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "kwokbench", "image": image,
                        "command": ["sh", "-c", command],
                        "volumeMounts": [{"name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": True},
                                         {"name": "results", "mountPath": RESULTS}],
                    }],
                    "volumes": [{"name": "scenario", "configMap": {"name": f"{name}-scenario"}}, volume],
                },
            },
        },
    }
    return [config_map, job]


def sweep_args(nodes: str, qps: str, slo_p99: str, duration: float, min_ratio: float, variant: str | None,
               stop_early: bool, sets: list[str], commit: str | None = None, ref: str | None = None) -> list[str]:
    """The sweep's own options, passed on unchanged to every shard's ``kwokbench sweep``."""
    args = ["--nodes", nodes, "--qps", qps, "--slo-p99", slo_p99, "--duration", f"{duration:g}",
            "--min-ratio", f"{min_ratio:g}"]
    if variant:
        args += ["--variant", variant]
    if not stop_early:
        args.append("--no-stop-early")
    for s in sets:
        args += ["--set", s]
    if commit:
        args += ["--commit", commit]
    if ref:
        args += ["--ref", ref]
    return args


def job_name(scenario: str) -> str:
    """``kwokbench-<scenario>``, short enough for an Indexed Job's pod hostnames (<= 52 characters)."""
    return f"kwokbench-{scenario}"[:52].rstrip("-")
