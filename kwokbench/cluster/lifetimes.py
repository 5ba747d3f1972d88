"""Pods that end when a trace says: a kwok Stage deletes a Running pod once the duration in its
``kwokbench.io/delete-after`` annotation has passed (kwok's delay counts from the moment the pod matches, i.e.
from Running), so a replayed cluster fills and drains as in production.

It is a second kwok config file for the controller, like the complete-after stage of Jobs
(:func:`kwokbench.cluster.kueue.write_stage_config`); a pod without the annotation never matches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kwokbench.trace.kube import DELETE_AFTER_ANNOTATION


def delete_after_stage(name: str = "kwokbench-pod-delete-after") -> dict[str, Any]:
    expr = f'.metadata.annotations["{DELETE_AFTER_ANNOTATION}"]'
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": expr, "operator": "Exists"},
            ]},
            "weight": 1,
            "delay": {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": expr}},
            "next": {"delete": True},
        },
    }


def write_lifetime_config(path: Path) -> Path:
    """:func:`delete_after_stage` as a kwok config file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(delete_after_stage(), sort_keys=False))
    return path
