"""Kueue's view of the run: a watch of its Workloads (one per queued Job) recording when each appeared,
got quota, was admitted and finished (local receive times; the API's condition times have whole-second
resolution and are kept beside them), written as ``kueue_workloads.parquet``."""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from kwokbench.components.kueue.cluster import API_VERSION, condition_time
from kwokbench.measure import ObjectWatch
from kwokbench.store import KUEUE_WORKLOADS

STATES = (("QuotaReserved", "reserved"), ("Admitted", "admitted"), ("Finished", "finished"))
COLUMNS = ["namespace", "name", "job", "seen", "reserved", "admitted", "finished", "api_created",
           "api_admitted", "api_finished"]


class KueueWorkloads(ObjectWatch):
    name = "Kueue Workload"
    path = f"/apis/{API_VERSION}/workloads"
    file = KUEUE_WORKLOADS
    columns: ClassVar[list[str]] = COLUMNS

    def mine(self, wl: dict[str, Any]) -> bool:
        meta = wl.get("metadata") or {}
        job = next((o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), "")
        return not self.run_label or self.run_label in job

    def handle(self, _typ: str, wl: dict[str, Any], t: float) -> None:
        meta = wl.get("metadata") or {}
        job = next((o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), "")
        key = (meta.get("namespace", ""), meta.get("name", ""))
        row = self.rows.setdefault(key, {"namespace": key[0], "name": key[1], "job": job, "seen": t})
        for cond, col in STATES:
            if row.get(col) is None and condition_time(wl, cond) is not None:
                row[col] = t
        row["api_admitted"] = condition_time(wl, "Admitted")
        row["api_finished"] = condition_time(wl, "Finished")
        created = meta.get("creationTimestamp")
        row["api_created"] = pd.Timestamp(created).timestamp() if created else None
