"""DRA claims over the run: a watch of the ResourceClaims of the run's pods recording, for every holding of devices
(a claim may be allocated, cleared — an unreserve after a failed bind — and allocated again), when it was allocated
(the scheduler's allocation written), reserved for its pod and released (allocation cleared, or the claim deleted),
with the devices it was given and whether each was given shared; written as ``claims.parquet``, a row per holding
(``holding`` 0, 1, …; a claim never allocated has its row 0). The analysis reads it for the claims' section of the
summary (:func:`kwokbench.figures.claims.claims_section`)."""

from __future__ import annotations

from typing import Any, ClassVar

from kwokbench.cluster.claims import allocated_devices
from kwokbench.cluster.devices import API
from kwokbench.labels import RUN_LABEL, WORKLOAD_LABEL
from kwokbench.measure import ObjectWatch
from kwokbench.store import CLAIMS

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""On a claim kube-controller-manager made from a template: the claim's name in its pod."""
COLUMNS = ["namespace", "name", "workload", "pod", "pod_claim", "seen", "allocated", "reserved", "released", "deleted",
           "devices", "shareable", "shared", "consumed", "requests", "api_created", "holding", "gap"]
"""``gap``: the claim was deleted while the watch was cut (a relist after 410): released and deleted somewhere in
the gap, recorded at its bounds."""


class ClaimTimeline(ObjectWatch):
    name = "ResourceClaim"
    path = f"/apis/{API}/resourceclaims"
    file = CLAIMS
    columns: ClassVar[list[str]] = COLUMNS

    def __init__(self) -> None:
        super().__init__()
        self._holding: dict[tuple[str, str], int] = {}
        """Claim → the index of its current holding (its row's)."""

    def mine(self, claim: dict[str, Any]) -> bool:
        return bool(((claim.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL) == self.run_label)

    def vanished(self, key: tuple[str, str], gap_from: float, gap_to: float) -> None:
        """Deleted in a watch gap: its devices were free by the gap's end at the latest, perhaps from its start.
        Released at the gap's start (so no later claim on its devices reads as given twice), and marked."""
        row = self.rows.get((*key, str(self._holding.get(key, 0))))
        if row is None:
            return
        row["gap"] = True
        if row.get("allocated") is not None and row.get("released") is None:
            row["released"] = max(gap_from, float(row["allocated"]))
        row["deleted"] = row.get("deleted") or gap_to

    def handle(self, typ: str, claim: dict[str, Any], t: float) -> None:
        meta = claim.get("metadata") or {}
        labels = meta.get("labels") or {}
        claim_key = (meta.get("namespace", ""), meta.get("name", ""))
        n = self._holding.setdefault(claim_key, 0)
        row = self.rows.setdefault((*claim_key, str(n)), {
            "namespace": claim_key[0], "name": claim_key[1], "workload": labels.get(WORKLOAD_LABEL), "pod": "",
            "seen": t, "devices": "", "shareable": False, "shared": "", "holding": n,
            "pod_claim": (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION, ""),
            "api_created": meta.get("creationTimestamp")})
        owner = next((o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"), "")
        row["pod"] = owner or row["pod"]
        status = claim.get("status") or {}
        devices = allocated_devices(claim)
        if devices and row.get("released") is not None and typ != "DELETED":  # allocated again: a new holding
            self._holding[claim_key] = n = n + 1
            row = self.rows[(*claim_key, str(n))] = {
                **{k: row[k] for k in ("namespace", "name", "workload", "pod", "pod_claim", "api_created")},
                "seen": t, "devices": "", "shareable": False, "shared": "", "holding": n}
        if devices and row.get("allocated") is None:
            row["allocated"] = t
            row["devices"] = " ".join(devices)
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            row["shareable"] = any(r.get("shareID") for r in results)
            # per device, in the order of ``devices``: 1 given shared (a share ID), 0 whole
            row["shared"] = " ".join("1" if r.get("shareID") else "0" for r in results)
            # what it takes of each device's capacity, "capacity=quantity" in the order of ``devices`` ("-": the
            # device whole)
            # the request each device went to: <claim request>/<alternative> when first_available chose one
            row["requests"] = " ".join(str(r.get("request", "")) for r in results)
            row["consumed"] = " ".join(",".join(f"{k}={v}" for k, v in sorted(used.items())) or "-"
                                       for r in results for used in [r.get("consumedCapacity") or {}])
        if status.get("reservedFor") and row.get("reserved") is None:
            row["reserved"] = t
        # its devices are free again once the allocation is cleared (before the object goes: the controller
        # deallocates, then removes its finalizer)
        if row.get("allocated") is not None and row.get("released") is None and (not devices or typ == "DELETED"):
            row["released"] = t
        if typ == "DELETED":
            row["deleted"] = t
