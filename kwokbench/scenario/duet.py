"""Duets: two scheduler variants at the same time on one control plane, compared over the same instants.

Benchmarks on a shared host are noisy because the host's speed moves between runs; two builds run side by side
see the same host at the same instants, so their *ratio* keeps what a sequence of runs loses (Bulej et al., "Duet
Benchmarking", 2020). A duet run of a scenario (``duet: true``) is the scenario's cluster twice, as two identical
node pools, and its workload twice, one for each variant: object i goes to side i mod 2 (so each side is offered the
scenario's rate, in lockstep with the other), its pods carry that side's schedulerName and a nodeSelector for the
side's pool. Between repeats the sides swap pools and start order, so only the variant differs on average.

:func:`expand` makes one repeat's scenario; :func:`section` derives the summary's ``duet`` section from the pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwokbench.scenario import NodeGroupSpec, PoissonArrival, QpsArrival, RampArrival, Scenario, WorkloadSpec

if TYPE_CHECKING:
    import pandas as pd

POOL_LABEL = "kwokbench.io/duet-pool"
"""Node label whose value is the schedulerName of the side that owns the node in this run."""
POOLS = ("a", "b")
EARLY = 0.10
"""A side whose last pod was scheduled this share of the common window before the other's "finished early"."""


def _doubled(a: QpsArrival | PoissonArrival | RampArrival) -> QpsArrival | PoissonArrival | RampArrival:
    if isinstance(a, QpsArrival):
        return a.model_copy(update={"qps": a.qps * 2})
    if isinstance(a, PoissonArrival):
        return a.model_copy(update={"rate": a.rate * 2})
    return a.model_copy(update={"start_qps": a.start_qps * 2, "end_qps": a.end_qps * 2})


def expand(sc: Scenario, repeat: int) -> tuple[Scenario, dict[str, Any]]:
    """The scenario a duet's ``repeat`` runs (pools, workloads doubled; on odd repeats the sides' pools and start
    order swapped) and its record for ``meta.json`` (which variant had which pool, who started first)."""
    assert sc.duet and len(sc.schedulers) == 2
    order = list(sc.schedulers) if repeat % 2 == 0 else list(reversed(sc.schedulers))
    owner = {pool: v for pool, v in zip(POOLS, order, strict=True)}
    groups: list[NodeGroupSpec] = []
    for g in sc.cluster.node_groups:
        for pool, v in owner.items():
            labels = {**(g.params.get("labels") or {}), POOL_LABEL: v.effective_scheduler_name}
            groups.append(g.model_copy(update={"name": f"{g.name[:28]}-{pool}",  # names: at most 30
                                               "params": {**g.params, "labels": labels}}))
    workloads: list[WorkloadSpec] = []
    for w in sc.workloads:
        workloads.append(w.model_copy(update={"count": w.count * 2, "arrival": _doubled(w.arrival)}))
    out = sc.model_copy(update={"cluster": sc.cluster.model_copy(update={"node_groups": groups}),
                                "workloads": workloads, "schedulers": order})
    record = {"variants": [v.name for v in sc.schedulers], "baseline": sc.schedulers[0].name,
              "candidate": sc.schedulers[1].name, "started_first": order[0].name,
              "pools": {v.name: pool for pool, v in owner.items()},
              "scheduler_names": {v.name: v.effective_scheduler_name for v in sc.schedulers}}
    return out, record


SIDES = ("base", "head")
"""The sides' variant names in a duet of one file's variant against another's (:func:`against`)."""


def against(head: Scenario, head_dir: Path, other: Scenario, other_dir: Path, variant: str,
            where: str) -> Scenario:
    """The duet of ``variant`` as ``other`` (a file in another folder: a pull request's base checkout) defines it,
    side ``base``, against ``variant`` as ``head`` defines it, side ``head``: the cluster, workload and gates are
    ``head``'s; each side's relative paths resolve in its own file's folder. ``where`` names ``other`` in errors."""
    from pydantic import ValidationError

    from kwokbench.errors import ScenarioError
    from kwokbench.scenario import scenario_model

    sides = []
    for side, sc, folder, named in (("base", other, other_dir, where), ("head", head, head_dir, "the scenario")):
        found = [v for v in sc.schedulers if v.name == variant]
        if not found:
            raise ScenarioError(f"variant {variant}: not in {named} (its variants: "
                                f"{', '.join(v.name for v in sc.schedulers)})")
        v = found[0]
        root = Path(v.root) if v.root else folder
        sides.append({**v.model_dump(mode="json", exclude_unset=True), "name": side,
                      "scheduler_name": f"duet-{side}", "root": str(root.resolve())})
    doc = {**head.model_dump(mode="json", exclude_unset=True), "schedulers": sides, "duet": True}
    try:
        return scenario_model().model_validate(doc)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        raise ScenarioError(f"a duet of variant {variant} against {where}: "
                            f"{'.'.join(str(x) for x in err['loc']) or '(top level)'}: "
                            f"{str(err['msg']).removeprefix('Value error, ')}") from None


def _side(p: pd.DataFrame, t0: float, t1: float) -> dict[str, Any]:
    import numpy as np  # analysis only: validating a scenario loads no analysis library

    created, scheduled = p["created"].to_numpy(dtype=float), p["scheduled"].to_numpy(dtype=float)
    done = scheduled[~np.isnan(scheduled)]
    lat = (scheduled - created)[~np.isnan(scheduled)]
    in_window = int(((done >= t0) & (done <= t1)).sum()) if t1 > t0 else 0
    return {"pods": len(p), "scheduled": len(done),
            "unscheduled": len(p) - len(done),
            "last_scheduled": float(done.max()) if len(done) else None,
            "throughput": in_window / (t1 - t0) if t1 > t0 else None,
            "latency_p50": float(np.percentile(lat, 50)) if len(lat) else None,
            "latency_p90": float(np.percentile(lat, 90)) if len(lat) else None,
            "latency_p99": float(np.percentile(lat, 99)) if len(lat) else None}


def section(pods: pd.DataFrame, record: Mapping[str, Any], schedulers: Mapping[str, Any] | None,
            limited_by: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each side's figures over the window both were at work (the first pod created to the earlier side's last pod
    scheduled), the candidate's over the baseline's, and what the duet could not compare."""
    import numpy as np
    import pandas as pd

    names: dict[str, str] = dict(record["scheduler_names"])
    by_name = {n: v for v, n in names.items()}
    sched = pods["scheduler"].astype("string").fillna("") if "scheduler" in pods else pd.Series([""] * len(pods))
    sides = {v: pods[sched == n] for v, n in names.items()}
    lasts = [float(np.nanmax(p["scheduled"].to_numpy(dtype=float))) for p in sides.values()
             if len(p) and p["scheduled"].notna().any()]
    t0 = float(np.nanmin(pods["created"].to_numpy(dtype=float))) if len(pods) else 0.0
    t1 = min(lasts) if len(lasts) == len(sides) else t0
    out: dict[str, Any] = {**{k: record[k] for k in ("baseline", "candidate", "pools", "started_first")},
                           **({"variant": record["variant"]} if record.get("variant") else {}),
                           "window_seconds": t1 - t0, "sides": {}, "ratios": {}, "notes": []}
    for v, p in sides.items():
        fig = _side(p, t0, t1)
        own = (schedulers or {}).get(v) or {}
        cpu = own.get("cpu_seconds")
        fig["cpu_seconds"] = cpu
        fig["cpu_per_pod"] = cpu / fig["scheduled"] if cpu is not None and fig["scheduled"] else None
        attempts = own.get("schedule_attempts") or {}
        fig["attempts_per_pod"] = (sum(float(x) for x in attempts.values()) / fig["scheduled"]
                                   if attempts and fig["scheduled"] else None)
        out["sides"][v] = fig
    base, cand = out["sides"][record["baseline"]], out["sides"][record["candidate"]]
    for k in ("throughput", "latency_p50", "latency_p90", "latency_p99", "cpu_per_pod", "attempts_per_pod"):
        b, c = base.get(k), cand.get(k)
        out["ratios"][k] = c / b if b and c is not None else None
    if len(lasts) == len(sides) and t1 > t0:
        gap = abs(lasts[0] - lasts[1]) / (t1 - t0)
        if gap > EARLY:
            first = min(out["sides"], key=lambda v: out["sides"][v]["last_scheduled"] or np.inf)
            out["notes"].append(f"{first} finished {gap * 100:.0f}% of the common window before the other: its "
                                "pods after that are outside the window (throughput compares the window only)")
    elif len(lasts) < len(sides):
        out["notes"].append("a side scheduled no pod: nothing to compare")
    verdict = (limited_by or {}).get("verdict")
    if verdict == "arrival":
        out["notes"].append("both sides kept up with the offered rate: throughput measures the offer, not the "
                            "schedulers; compare their CPU and attempts per pod")
    elif verdict and verdict != "scheduler":
        out["notes"].append(f"the run was {verdict}-bound: both sides' throughput measures that limit, not their "
                            "schedulers; compare their CPU and attempts per pod")
    unknown = sorted(set(sched.unique()) - set(by_name) - {""})
    if unknown:
        out["notes"].append(f"pods of schedulerName {', '.join(unknown)} belong to neither side")
    return out
