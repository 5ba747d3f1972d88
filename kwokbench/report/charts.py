"""matplotlib charts of stored runs (runs overlaid, one colour per run); each returns PNG bytes."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kwokbench.acceptance import OK, normalise_requests
from kwokbench.store import BINDING_RATE, StoredRun


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _t0(run: StoredRun) -> float:
    p = run.pods
    return float(p["created"].min()) if len(p) and "created" in p and p["created"].notna().any() else 0.0


def _label(run: StoredRun) -> str:
    return f"{run.meta.get('variant', {}).get('name', '?')} · {run.path.name[-13:]}"


def _mark_chaos(ax: Any, r: StoredRun, color: Any) -> None:
    """A dotted vertical line, labelled, at each chaos event of the run."""
    for e in ((r.summary or {}).get("chaos") or {}).get("events") or []:
        if e.get("t") is None:
            continue
        x = float(e["t"]) - _t0(r)
        ax.axvline(x, ls=":", color=color, lw=1.2)
        rec = e.get("recovery_seconds")
        label = e["action"] + (f" (back in {rec:.0f} s)" if rec is not None else "")
        ax.text(x, ax.get_ylim()[1] * 0.95, " " + label, fontsize=7, color=color, va="top", rotation=90)


def binding_rate(runs: list[StoredRun]) -> bytes:
    fig, ax = plt.subplots(figsize=(9, 4))
    for r in runs:
        f = r.path / BINDING_RATE
        if f.exists():
            df = pd.read_parquet(f)
            line = ax.plot(df["t"] - _t0(r), df["rate"], label=_label(r), lw=1.5)[0]
            _mark_chaos(ax, r, line.get_color())
        elif len(r.pods):  # no scrapes: the watch's per-second binds
            s = r.pods["scheduled"].dropna() - _t0(r)
            counts = s.astype(int).value_counts().sort_index()
            lines = ax.step(counts.index, counts.values, label=f"{_label(r)} (watch)", where="post")
            _mark_chaos(ax, r, lines[0].get_color())
    ax.set(title="Binding rate (apiserver POST pods/binding, 1 s scrapes)", xlabel="seconds since first pod created",
           ylabel="pods/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def _variant_colours(runs: list[StoredRun]) -> dict[str, Any]:
    names = list(dict.fromkeys(r.meta.get("variant", {}).get("name", "?") for r in runs))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(names)}


def cumulative_scheduled(runs: list[StoredRun]) -> bytes:
    """clusterloader2's view: objects offered, accepted by the apiserver (created), pods scheduled and
    running over time; a gap between two curves is a backlog. One colour per variant."""
    fig, ax = plt.subplots(figsize=(9, 4.2))
    colours = _variant_colours(runs)
    styles = {"offered": (":", 1.0), "accepted (created)": ("--", 1.2), "scheduled": ("-", 1.8),
              "running": ("-.", 1.0)}
    labelled: set[str] = set()
    for r in runs:
        variant = r.meta.get("variant", {}).get("name", "?")
        colour, t0 = colours[variant], _t0(r)
        req = normalise_requests(r.requests) if len(r.requests) else r.requests
        curves: dict[str, np.ndarray] = {}
        if len(req):
            curves["offered"] = req["scheduled"].to_numpy(dtype=np.float64)
            ok = req[req["status"].isin(OK)]
            curves["accepted (created)"] = (ok["dispatched"] + ok["latency"]).to_numpy(dtype=np.float64)
        for state in ("scheduled", "running"):
            if len(r.pods) and state in r.pods:
                curves[state] = r.pods[state].to_numpy(dtype=np.float64)
        for what, times in curves.items():
            t = np.sort(times[np.isfinite(times)]) - t0
            ls, lw = styles[what]
            key = f"{variant} · {what}"
            ax.plot(t, np.arange(1, len(t) + 1), ls=ls, lw=lw, color=colour,
                    label=None if key in labelled else key)
            labelled.add(key)
        _mark_chaos(ax, r, colour)
    ax.set(title="Offered, accepted, scheduled and running over time (a gap between curves is a backlog)",
           xlabel="seconds since first pod created", ylabel="objects / pods")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def latency(runs: list[StoredRun]) -> bytes:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    labels, bars = [], []
    for r in runs:
        p = r.pods[~r.pods["from_list"]] if len(r.pods) else r.pods
        d = ((p["scheduled"] - p["created"]).dropna().to_numpy() * 1000) if len(p) else np.zeros(0)
        if len(d):
            s = np.sort(d)
            a1.plot(s, np.linspace(0, 1, len(s)), label=_label(r))
            bars.append([np.percentile(d, q) for q in (50, 90, 99)])
        else:
            bars.append([0, 0, 0])
        labels.append(_label(r))
    a1.set(title="Scheduling latency CDF (created → scheduled)", xlabel="ms", ylabel="fraction of pods")
    a1.set_xscale("symlog", linthresh=10)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8)
    x = np.arange(3)
    w = 0.8 / max(len(runs), 1)
    for i, (lab, b) in enumerate(zip(labels, bars, strict=True)):
        a2.bar(x + i * w, b, w, label=lab)
    a2.set_xticks(x + w * (len(runs) - 1) / 2, ["p50", "p90", "p99"])
    a2.set(title="Scheduling latency percentiles", ylabel="ms")
    a2.legend(fontsize=8)
    return _png(fig)


def submit_rate(runs: list[StoredRun]) -> bytes:
    """Per run and phase: the offered rate next to what was sent and what the apiserver accepted."""
    fig, ax = plt.subplots(figsize=(9, 3.8))
    names: list[str] = []
    bars: dict[str, list[float]] = {"offered": [], "sent": [], "accepted": [], "apiserver counter": []}
    for r in runs:
        for ph in (r.summary or {}).get("submit", []):
            whole = (ph.get("rates") or {}).get("whole") or {}
            names.append(f"{_label(r)}\n{ph['phase']}")
            bars["offered"].append(ph.get("offered_qps") or ph.get("scheduled_qps") or ph.get("target_qps") or 0)
            bars["sent"].append(ph.get("sent_qps") or 0)
            bars["accepted"].append(ph.get("accepted_qps") or 0)  # older runs: not recorded
            bars["apiserver counter"].append(whole.get("apiserver_counter") or 0)
    x = np.arange(len(names))
    w = 0.2
    for i, (what, vals) in enumerate(bars.items()):
        ax.bar(x + (i - 1.5) * w, vals, w, label=what, color="#bbb" if what == "offered" else None)
    for i in range(len(names)):
        off, acc = bars["offered"][i], bars["accepted"][i]
        if off and acc and acc < 0.95 * off:
            ax.annotate(f"{acc / off * 100:.0f}% accepted", (x[i], off), ha="center", va="bottom", fontsize=8,
                        color="red")
    ax.set_xticks(x, names, fontsize=7)
    ax.set(title="Submit rate: offered vs sent vs accepted (whole phase)", ylabel="objects/s")
    ax.legend(fontsize=8)
    return _png(fig)


def node_allocation(runs: list[StoredRun]) -> bytes:
    """Requested CPU (and GPUs, when any pod asks for them) per node, empty nodes included."""
    has_gpu = any(len(r.pods) and "gpus" in r.pods and r.pods["gpus"].sum() > 0 for r in runs)
    fig, axes = plt.subplots(1, 2 if has_gpu else 1, figsize=(11 if has_gpu else 9, 3.5), squeeze=False)
    for col, (what, unit, scale) in enumerate([("cpu_m", "CPU cores", 1000.0), ("gpus", "GPUs", 1.0)][:axes.shape[1]]):
        ax = axes[0][col]
        for r in runs:
            p = r.pods
            if not len(p) or what not in p:
                continue
            placed = p[p["node"] != ""]
            per_node = placed.groupby("node")[what].sum() / scale
            nodes = (r.meta.get("cluster") or {}).get("nodes") or len(per_node)
            values = np.concatenate([per_node.to_numpy(), np.zeros(max(0, nodes - len(per_node)))])
            ax.hist(values, bins=30, alpha=0.5, label=_label(r))
        ax.set(title=f"{unit} requested per node (empty nodes included)", xlabel=unit, ylabel="nodes")
        ax.legend(fontsize=8)
    return _png(fig)


def control_plane(runs: list[StoredRun]) -> bytes:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    comps = ["kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok-controller"]
    x = np.arange(len(comps))
    w = 0.8 / max(len(runs), 1)
    for i, r in enumerate(runs):
        procs = (r.summary or {}).get("processes") or {}
        a1.bar(x + i * w, [procs.get(c, {}).get("cpu_seconds", 0) for c in comps], w, label=_label(r))
        a2.bar(x + i * w, [procs.get(c, {}).get("rss_peak_bytes", 0) / 2**20 for c in comps], w, label=_label(r))
    for a, title, unit in ((a1, "Control-plane CPU during the run", "CPU seconds"),
                           (a2, "Control-plane peak RSS", "MiB")):
        a.set_xticks(x + w * (len(runs) - 1) / 2, [c.replace("kube-", "") for c in comps], fontsize=8)
        a.set(title=title, ylabel=unit)
        a.legend(fontsize=7)
    return _png(fig)


def _grouped_bars(ax: Any, runs: list[StoredRun], names: list[str], values: list[list[float]]) -> None:
    x = np.arange(len(names))
    w = 0.8 / max(len(runs), 1)
    for i, (r, vals) in enumerate(zip(runs, values, strict=True)):
        ax.bar(x + i * w, vals, w, label=_label(r))
    ax.set_xticks(x + w * (len(runs) - 1) / 2, names, fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")


def scheduler_time(runs: list[StoredRun]) -> bytes:
    """Mean time per pod of the scheduling attempt, the algorithm, each extension point, and the extender."""
    points = ["PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind"]
    names = ["attempt", "algorithm", *points, "extender"]
    values = []
    for r in runs:
        s = (r.summary or {}).get("scheduler") or {}
        ext_points = s.get("extension_point_duration_seconds") or {}
        ext = (r.summary or {}).get("extender") or {}
        calls = sum((ext.get("calls") or {}).values())
        scheduled = max((r.summary or {}).get("pods_scheduled") or 0, 1)
        row = [(s.get("scheduling_attempt_duration_seconds") or {}).get("mean") or 0.0,
               (s.get("scheduling_algorithm_duration_seconds") or {}).get("mean") or 0.0,
               *[(ext_points.get(p) or {}).get("mean") or 0.0 for p in points],
               sum((ext.get("handling_seconds") or {}).values()) / scheduled if calls else 0.0]
        values.append([v * 1000 for v in row])
    fig, ax = plt.subplots(figsize=(11, 3.8))
    _grouped_bars(ax, runs, names, values)
    ax.set(title="Scheduler time per pod, mean (extension points from scheduler metrics; extender: its own "
                 "handling time)", ylabel="ms")
    return _png(fig)


def placement_quality(runs: list[StoredRun]) -> bytes:
    """What placement did, next to how fast: the lower the better for every bar."""
    names = ["pods pending", "gangs partly placed", "rule violations", "GPUs stranded", "nodes unused"]
    values = []
    for r in runs:
        pl = (r.summary or {}).get("placement") or {}
        u = pl.get("utilisation") or {}
        values.append([float((pl.get("pending") or {}).get("pods") or 0),
                       float(sum(g.get("partial", 0) for g in pl.get("gangs") or [])),
                       float((pl.get("rule_violations") or {}).get("violations") or 0),
                       float((pl.get("gpu_fragmentation") or {}).get("stranded_gpus") or 0),
                       float((u.get("nodes") or 0) - (u.get("nodes_used") or 0))])
    fig, ax = plt.subplots(figsize=(10, 3.6))
    _grouped_bars(ax, runs, names, values)
    ax.set(title="Placement quality (lower is better)", ylabel="count")
    return _png(fig)


CHARTS: dict[str, tuple[str, Callable[[list[StoredRun]], bytes]]] = {
    "binding_rate": ("Binding rate over time", binding_rate),
    "cumulative": ("Offered, accepted, scheduled, running", cumulative_scheduled),
    "latency": ("Scheduling latency", latency),
    "submit": ("Offered vs accepted submit rate", submit_rate),
    "allocation": ("Per-node allocation", node_allocation),
    "control_plane": ("Control-plane CPU and memory", control_plane),
    "scheduler_time": ("Scheduler time per pod by stage", scheduler_time),
    "placement": ("Placement quality", placement_quality),
}
