"""kwok Stages kwokbench adds to the kwok controller's defaults, each driven by a pod annotation whose value is a
Go duration: kwok's delay counts from the moment the pod matches the stage (for these, from Running).

- :func:`delete_after_stage`: a replayed trace's pod ends when its lifetime is over: deleted once the duration in
  ``kwokbench.io/delete-after`` has passed, so the cluster fills and drains as in production.
- the complete-after stage of Jobs (:func:`kwokbench.components.kueue.cluster.delayed_completion_stage`) is one of
  them too.

Each is a kwok config file given to the controller beside its defaults; a pod without the annotation never
matches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kwokbench.trace.kube import DELETE_AFTER_ANNOTATION


def delay_stage(name: str, annotation: str, match: list[dict[str, Any]], then: dict[str, Any]) -> dict[str, Any]:
    """A Stage acting on a Running pod (not being deleted) that carries ``annotation`` and matches ``match``,
    the annotation's duration after it started matching."""
    expr = f'.metadata.annotations["{annotation}"]'
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                *match,
                {"key": expr, "operator": "Exists"},
            ]},
            "weight": 1,
            # an annotation that is not a Go duration (nor an RFC 3339 time) means no delay
            "delay": {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": expr}},
            "next": then,
        },
    }


def delete_after_stage(name: str = "kwokbench-pod-delete-after") -> dict[str, Any]:
    return delay_stage(name, DELETE_AFTER_ANNOTATION, [], {"delete": True})


def write_config(path: Path, stage: dict[str, Any]) -> Path:
    """``stage`` as a kwok config file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(stage, sort_keys=False))
    return path
