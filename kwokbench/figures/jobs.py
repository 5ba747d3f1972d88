"""Job-level figures of a stored run (pure): what batch users and Kueue users ask about.

Per Job phase: when each Job was accepted by the apiserver (the request log), when all its pods were
scheduled and finished (the pod timeline; a Job's pods are named ``<job>-<suffix>``), and with Kueue
(``kueue_workloads.parquet``) when its Workload was admitted. From those: submit → admitted, admitted
(or created, without Kueue) → all pods scheduled, the makespan (first Job accepted → last pod finished,
or scheduled when none finish), and the queue depth over time — Workloads created but not yet admitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def _dist(v: np.ndarray) -> dict[str, float | None]:
    v = v[~np.isnan(v)]
    if not len(v):
        return dict.fromkeys(("p50", "p90", "p99", "max"))
    return {"p50": float(np.percentile(v, 50)), "p90": float(np.percentile(v, 90)),
            "p99": float(np.percentile(v, 99)), "max": float(v.max())}


def queue_depth(seen: np.ndarray, admitted: np.ndarray, end: float | None = None) -> pd.DataFrame:
    """Step series (t, depth) of Workloads seen but not admitted; a never-admitted one stays counted."""
    events = sorted([(float(t), 1) for t in seen if not np.isnan(t)] +
                    [(float(t), -1) for t in admitted if not np.isnan(t)])
    t, d, depth = [], [], 0
    for when, step in events:
        depth += step
        t.append(when)
        d.append(depth)
    if end is not None and t and end > t[-1]:
        t.append(end)
        d.append(depth)
    return pd.DataFrame({"t": t, "depth": d})


def _time_weighted_mean(series: pd.DataFrame) -> float | None:
    if len(series) < 2:
        return None
    t, d = series["t"].to_numpy(), series["depth"].to_numpy()
    span = t[-1] - t[0]
    return float((d[:-1] * np.diff(t)).sum() / span) if span > 0 else None


def job_name_of_pod(pod: str) -> str:
    """A Job controller's pod ``<job>-<5 random characters>`` → ``<job>``."""
    return pod.rsplit("-", 1)[0]


def jobs(pods: pd.DataFrame, requests: pd.DataFrame, phases: list[dict[str, Any]], run_label: str,
         workloads: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The ``jobs`` section: one entry per phase whose objects are Jobs."""
    out = []
    for ph in phases:
        if ph.get("kind") != "Job":
            continue
        name = ph["name"]
        req = requests[(requests["phase"] == name) & (requests["status"] == 201)] if len(requests) else requests
        accepted = pd.Series((req["sent"] + req["latency"]).to_numpy(),
                             index=[f"{name}-{run_label}-{int(i)}" for i in req["index"]], dtype=float)
        p = pods[pods["workload"] == name] if len(pods) else pods
        per_job = int(ph.get("pods_expected", 0) // max(int(ph.get("count", 1)), 1)) or 1
        if len(p):
            g = p.assign(job=p["name"].map(job_name_of_pod)).groupby("job")
            scheduled_all = g["scheduled"].max().where(g["scheduled"].count() >= per_job)
            finished_all = g["finished"].max().where(g["finished"].count() >= per_job)
        else:
            scheduled_all = finished_all = pd.Series(dtype=float)
        frame = pd.DataFrame({"accepted": accepted}).join(scheduled_all.rename("scheduled_all"), how="left") \
            .join(finished_all.rename("finished_all"), how="left")
        entry: dict[str, Any] = {"phase": name, "jobs": len(frame), "pods_per_job": per_job,
                                 "jobs_all_pods_scheduled": int(frame["scheduled_all"].notna().sum()),
                                 "jobs_finished": int(frame["finished_all"].notna().sum())}
        start = float(frame["accepted"].min()) if len(frame) else np.nan
        last = frame["finished_all"].max() if frame["finished_all"].notna().any() else frame["scheduled_all"].max()
        entry["makespan_seconds"] = float(last - start) if len(frame) and not pd.isna(last) else None
        entry["makespan_until"] = "last pod finished" if frame["finished_all"].notna().any() else "last pod scheduled"
        if workloads is not None and len(workloads):
            wl = workloads[workloads["job"].isin(frame.index)].drop_duplicates("job").set_index("job")
            frame = frame.join(wl[["seen", "admitted"]], how="left")
            entry["submit_to_admitted_seconds"] = _dist((frame["admitted"] - frame["accepted"]).to_numpy(float))
            entry["admitted_to_all_scheduled_seconds"] = _dist(
                (frame["scheduled_all"] - frame["admitted"]).to_numpy(float))
            entry["jobs_admitted"] = int(frame["admitted"].notna().sum())
            depth = queue_depth(frame["seen"].to_numpy(float), frame["admitted"].to_numpy(float),
                                end=float(last) if not pd.isna(last) else None)
            entry["queue_depth_max"] = int(depth["depth"].max()) if len(depth) else 0
            entry["queue_depth_mean"] = _time_weighted_mean(depth)
        else:
            entry["created_to_all_scheduled_seconds"] = _dist(
                (frame["scheduled_all"] - frame["accepted"]).to_numpy(float))
        out.append(entry)
    return out
