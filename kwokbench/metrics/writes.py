"""What a run cost the control plane in writes: the apiserver's successful write requests per resource, per pod
scheduled, from the first pod created to the end of the run (pure, over a stored run).

Two schedulers that bind the same pods can load the apiserver and etcd very differently: every event, status
patch or annotation a scheduler writes per pod is a request the apiserver must admit and a key etcd must store,
on the same cores that accept the pods. ``apiserver_request_total`` counts them (label ``verb``: POST, PUT,
PATCH, DELETE, APPLY…; ``code``; ``resource`` and ``subresource``). Kept from each scrape: every write verb's
series. The section sums the increases of the 2xx series per ``resource[/subresource]`` (events of the core
and ``events.k8s.io`` groups together) from the scrape before the first pod was created to the run's last
scrape (a scheduler's events are posted asynchronously, after its bindings; the cluster's bring-up is left out),
and divides by the pods scheduled. Writes that come with time, not pods (node leases, node status),
grow with the run's length. Per pod, kube-scheduler writes one event and one binding; YuniKorn v1.8.0's shim
one binding and three events (``Scheduling``, ``Scheduled``, ``PodBindSuccessful``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from kwokbench.metrics.parse import increase

WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"})


def keep(labels: dict[str, str]) -> bool:
    """Which ``apiserver_request_total`` samples a scrape keeps: every write (reads are not kept)."""
    return labels.get("verb") in WRITE_VERBS


def _key(labels: dict[str, str]) -> str | None:
    if labels.get("verb") not in WRITE_VERBS or not str(labels.get("code", "")).startswith("2"):
        return None
    sub = labels.get("subresource") or ""
    return f"{labels.get('resource', '')}/{sub}" if sub else str(labels.get("resource", ""))


def writes_section(requests: pd.DataFrame, times: np.ndarray, start: float | None,
                   scheduled: int) -> dict[str, Any] | None:
    """``{window_seconds, per_pod: {resource: writes / pods scheduled}, total: {resource: writes}}`` (largest
    first) from the apiserver's ``apiserver_request_total`` samples (long frame: t, labels as JSON, value) and
    its scrape times, counted from ``start`` (the first pod created) to the last scrape; None without pods
    scheduled or a scrape after ``start``."""
    times = np.sort(np.asarray(times, dtype=np.float64))
    if start is None or not scheduled or len(times) < 2 or times[-1] <= start or not len(requests):
        return None
    # from the scrape before the first create (interpolating inside that second would drop a share of the
    # first second's pods on a short run) to the last scrape
    window = (float(times[max(int(np.searchsorted(times, start, side="right")) - 1, 0)]), float(times[-1]))
    keys = requests["labels"].map(lambda x: _key(json.loads(x)))
    frame = requests.assign(key=keys).dropna(subset=["key"])
    totals: dict[str, float] = {}
    for key, g in frame.groupby("key"):
        # label sets summed per scrape; a series not yet created counts 0, a decrease is a restart from 0
        v = g.groupby("t")["value"].sum().reindex(times, fill_value=0.0).to_numpy(dtype=np.float64)
        cum = np.concatenate([[0.0], np.cumsum(increase(v))])
        n = float(cum[-1] - cum[times >= window[0]][0])
        if n > 0:
            totals[str(key)] = n
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"window_seconds": float(window[1] - window[0]),
            "per_pod": {k: v / scheduled for k, v in ordered}, "total": dict(ordered)}


def brief(section: dict[str, Any] | None, top: int = 5) -> str | None:
    """One line: the largest writes per pod, e.g. ``events 3.09, pods 1.00, pods/binding 1.00, …``."""
    per_pod = (section or {}).get("per_pod") or {}
    if not per_pod:
        return None
    shown = [f"{k} {v:.2f}" for k, v in list(per_pod.items())[:top]]
    rest = sum(list(per_pod.values())[top:])
    return ", ".join(shown) + (f", others {rest:.2f}" if rest >= 0.005 else "") + \
        f" (all writes {sum(per_pod.values()):.2f})"
