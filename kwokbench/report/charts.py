"""matplotlib charts of stored runs; each returns PNG bytes, or :class:`NotApplicable` with the reason.

A chart that has nothing to draw for these runs (YuniKorn queues in runs of kube-scheduler, control-plane
processes of a cluster kwokbench did not start) says so instead of drawing an empty frame: the report leaves
it out and lists it with its reason.

One colour per scheduler variant in every chart, so two variants × 4 repeats read as two things
compared, not eight: the lines of a variant's repeats are thin lines of its colour, and a bar is the
mean of the variant's runs with a dot per run.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kwokbench.figures.acceptance import OK, normalise_requests
from kwokbench.store import BINDING_RATE, StoredRun


@dataclass(frozen=True)
class NotApplicable:
    """What a chart returns when the runs hold nothing it would draw."""

    reason: str
    """Why, in a few words the report shows after the chart's title ("no run has YuniKorn queues")."""


Chart = bytes | NotApplicable


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _t0(run: StoredRun) -> float:
    p = run.pods
    return float(p["created"].min()) if len(p) and "created" in p and p["created"].notna().any() else 0.0


def _variant(run: StoredRun) -> str:
    return str((run.meta.get("variant") or {}).get("name", "?"))


def _by_variant(runs: list[StoredRun]) -> dict[str, list[int]]:
    """Variant → indexes of its runs, variants in the order they first appear."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        out.setdefault(_variant(r), []).append(i)
    return out


def _variant_colours(runs: list[StoredRun]) -> dict[str, Any]:
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(_by_variant(runs))}


def _variant_label(variant: str, n: int) -> str:
    return f"{variant} ({n} runs)" if n > 1 else variant


def _repeats(runs: list[StoredRun]) -> bool:
    return any(len(ix) > 1 for ix in _by_variant(runs).values())


BARS_NOTE = "bar: mean of a variant's runs, dot: one run"


class _Lines:
    """Colour, width and a once-per-variant legend label for the line of each run."""

    def __init__(self, runs: list[StoredRun]) -> None:
        self.colours = _variant_colours(runs)
        self.counts = {v: len(ix) for v, ix in _by_variant(runs).items()}
        self._labelled: set[str] = set()

    def style(self, run: StoredRun, suffix: str = "") -> dict[str, Any]:
        v = _variant(run)
        label = None if v + suffix in self._labelled else _variant_label(v, self.counts[v]) + suffix
        self._labelled.add(v + suffix)
        repeats = self.counts[v] > 1
        return {"color": self.colours[v], "lw": 0.9 if repeats else 1.6, "alpha": 0.75 if repeats else 1.0,
                "label": label}


def _variant_bars(ax: Any, runs: list[StoredRun], names: list[str], values: list[list[float]],
                  horizontal: bool = False, legend: bool = True) -> None:
    """One bar per variant and category: the mean of the variant's runs, and a dot per run when it has
    repeats. ``values[i]`` are run i's values per category (NaN: not measured in that run)."""
    groups = _by_variant(runs)
    colours = _variant_colours(runs)
    x = np.arange(len(names))
    k = max(len(groups), 1)
    w = 0.8 / k
    for j, (variant, ix) in enumerate(groups.items()):
        vals = np.array([values[i] for i in ix], dtype=np.float64).reshape(len(ix), len(names))
        seen = np.isfinite(vals)
        mean = np.where(seen, vals, 0.0).sum(axis=0) / np.maximum(seen.sum(axis=0), 1)
        pos = x + (j - (k - 1) / 2) * w
        label = _variant_label(variant, len(ix))
        if horizontal:
            ax.barh(pos, mean, w, color=colours[variant], label=label)
        else:
            ax.bar(pos, mean, w, color=colours[variant], label=label)
        if len(ix) > 1:
            for row in vals:
                xs, ys = (row, pos) if horizontal else (pos, row)
                ax.scatter(xs, ys, s=9, color="black", alpha=0.6, zorder=3, linewidths=0)
    if horizontal:
        ax.set_yticks(x, names, fontsize=8)
        ax.invert_yaxis()  # the first category on top
        ax.grid(alpha=0.3, axis="x")
    else:
        ax.set_xticks(x, names, fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    if legend:
        _legend(ax, fontsize=7)


def _legend(ax: Any, **kw: Any) -> None:
    """A legend when something is labelled (matplotlib warns on an empty one, e.g. for a run without pods)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


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


def binding_rate(runs: list[StoredRun]) -> Chart:
    if not any((r.path / BINDING_RATE).exists() or len(r.pods) for r in runs):
        return NotApplicable("no run has a scraped binding rate or a pod timeline")
    fig, ax = plt.subplots(figsize=(9, 4))
    lines = _Lines(runs)
    for r in runs:
        f = r.path / BINDING_RATE
        if f.exists():
            df = pd.read_parquet(f)
            style = lines.style(r)
            ax.plot(df["t"] - _t0(r), df["rate"], **style)
            _mark_chaos(ax, r, style["color"])
        elif len(r.pods):  # no scrapes: the watch's per-second binds
            s = r.pods["scheduled"].dropna() - _t0(r)
            counts = s.astype(int).value_counts().sort_index()
            style = lines.style(r, " (watch)")
            ax.step(counts.index, counts.values, where="post", **style)
            _mark_chaos(ax, r, style["color"])
    ax.set(title="Binding rate (apiserver POST pods/binding, 1 s scrapes)", xlabel="seconds since first pod created",
           ylabel="pods/s")
    ax.grid(alpha=0.3)
    _legend(ax, fontsize=8)
    return _png(fig)


def cumulative_scheduled(runs: list[StoredRun]) -> Chart:
    """clusterloader2's view: objects offered, accepted by the apiserver (created), pods scheduled and
    running over time; a gap between two curves is a backlog. One colour per variant."""
    if not any(len(r.requests) or len(r.pods) for r in runs):
        return NotApplicable("no run recorded its requests or a pod timeline")
    fig, ax = plt.subplots(figsize=(9, 4.2))
    colours = _variant_colours(runs)
    thin = {v: 0.6 if len(ix) > 1 else 1.0 for v, ix in _by_variant(runs).items()}
    styles = {"offered": (":", 1.0), "accepted (created)": ("--", 1.2), "scheduled": ("-", 1.8),
              "running": ("-.", 1.0)}
    labelled: set[str] = set()
    for r in runs:
        variant = _variant(r)
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
            ax.plot(t, np.arange(1, len(t) + 1), ls=ls, lw=lw * thin[variant], color=colour,
                    label=None if key in labelled else key)
            labelled.add(key)
        _mark_chaos(ax, r, colour)
    ax.set(title="Offered, accepted, scheduled and running over time (a gap between curves is a backlog)",
           xlabel="seconds since first pod created", ylabel="objects / pods")
    ax.grid(alpha=0.3)
    _legend(ax, fontsize=7, ncol=2)
    return _png(fig)


def latency(runs: list[StoredRun]) -> Chart:
    delays = []
    for r in runs:
        p = r.pods[~r.pods["from_list"]] if len(r.pods) else r.pods
        delays.append(((p["scheduled"] - p["created"]).dropna().to_numpy() * 1000) if len(p) else np.zeros(0))
    if not any(len(d) for d in delays):
        return NotApplicable("no pod of these runs was seen created and scheduled")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    lines = _Lines(runs)
    bars: list[list[float]] = []
    for r, d in zip(runs, delays, strict=True):
        if len(d):
            s = np.sort(d)
            a1.plot(s, np.linspace(0, 1, len(s)), **lines.style(r))
            bars.append([float(np.percentile(d, q)) for q in (50, 90, 99)])
        else:
            bars.append([np.nan] * 3)
    a1.set(title="Scheduling latency CDF (created → scheduled)", xlabel="ms", ylabel="fraction of pods")
    a1.set_xscale("symlog", linthresh=10)
    a1.grid(alpha=0.3)
    _legend(a1, fontsize=8)
    _variant_bars(a2, runs, ["p50", "p90", "p99"], bars)
    a2.set(title="Scheduling latency percentiles" + (f"\n({BARS_NOTE})" if _repeats(runs) else ""), ylabel="ms")
    return _png(fig)


_SUBMIT = {"offered": "offered", "sent": "sent", "accepted": "accepted", "apiserver counter": "apiserver\ncounter"}


def submit_rate(runs: list[StoredRun]) -> Chart:
    """Per phase: the offered rate next to what was sent and what the apiserver accepted, per variant."""
    phases: list[str] = []
    per_run: list[dict[tuple[str, str], float]] = []
    for r in runs:
        got: dict[tuple[str, str], float] = {}
        for ph in (r.summary or {}).get("submit", []):
            name = str(ph["phase"])
            phases += [] if name in phases else [name]
            whole = (ph.get("rates") or {}).get("whole") or {}
            got[(name, "offered")] = ph.get("offered_qps") or ph.get("scheduled_qps") or ph.get("target_qps") or 0
            got[(name, "sent")] = ph.get("sent_qps") or 0
            got[(name, "accepted")] = ph.get("accepted_qps") or 0  # older runs: not recorded
            got[(name, "apiserver counter")] = whole.get("apiserver_counter") or 0
        per_run.append(got)
    if not phases:
        return NotApplicable("no run recorded the rates of its submit phases")
    keys = [(ph, what) for ph in phases for what in _SUBMIT]
    names = [f"{ph}: {_SUBMIT[what]}" if len(phases) > 1 else _SUBMIT[what] for ph, what in keys]
    values = [[float(got.get(k, np.nan)) for k in keys] for got in per_run]
    fig, ax = plt.subplots(figsize=(max(9.0, 1.1 * len(keys)), 3.8))
    _variant_bars(ax, runs, names, values)
    groups = _by_variant(runs)
    w = 0.8 / max(len(groups), 1)
    for j, ix in enumerate(groups.values()):
        for p_i, ph in enumerate(phases):
            off = _mean([values[i][keys.index((ph, "offered"))] for i in ix])
            acc = _mean([values[i][keys.index((ph, "accepted"))] for i in ix])
            if off and acc and acc < 0.95 * off:
                x = p_i * len(_SUBMIT) + 2 + (j - (len(groups) - 1) / 2) * w
                ax.annotate(f"{acc / off * 100:.0f}%", (x, acc), ha="center", va="bottom", fontsize=7, color="red")
    ax.set(title="Submit rate: offered vs sent vs accepted, whole phase (red: share of the offered rate accepted)"
                 + (f"\n{BARS_NOTE}" if _repeats(runs) else ""), ylabel="objects/s")
    return _png(fig)


def _mean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else 0.0


def node_allocation(runs: list[StoredRun]) -> Chart:
    """Requested CPU (and GPUs, when any pod asks for them) per node, empty nodes included: one outline per
    variant, its runs pooled and counted per run."""
    if not any(len(r.pods) and "cpu_m" in r.pods and "node" in r.pods for r in runs):
        return NotApplicable("no run has a pod timeline with the pods' requests and nodes")
    has_gpu = any(len(r.pods) and "gpus" in r.pods and r.pods["gpus"].sum() > 0 for r in runs)
    fig, axes = plt.subplots(1, 2 if has_gpu else 1, figsize=(11 if has_gpu else 9, 3.5), squeeze=False)
    colours = _variant_colours(runs)
    for col, (what, unit, scale) in enumerate([("cpu_m", "CPU cores", 1000.0), ("gpus", "GPUs", 1.0)][:axes.shape[1]]):
        ax = axes[0][col]
        per_variant: dict[str, list[np.ndarray]] = {}
        for variant, ix in _by_variant(runs).items():
            for i in ix:
                p = runs[i].pods
                if not len(p) or what not in p:
                    continue
                placed = p[p["node"] != ""]
                per_node = placed.groupby("node")[what].sum() / scale
                nodes = (runs[i].meta.get("cluster") or {}).get("nodes") or len(per_node)
                per_variant.setdefault(variant, []).append(
                    np.concatenate([per_node.to_numpy(dtype=np.float64), np.zeros(max(0, nodes - len(per_node)))]))
        if per_variant:
            bins = np.histogram_bin_edges(np.concatenate([a for arrays in per_variant.values() for a in arrays]), 30)
            for variant, arrays in per_variant.items():
                values = np.concatenate(arrays)
                weights = np.full(len(values), 1.0 / len(arrays))
                ax.hist(values, bins=bins, weights=weights, histtype="stepfilled", alpha=0.25, color=colours[variant])
                ax.hist(values, bins=bins, weights=weights, histtype="step", lw=1.4, color=colours[variant],
                        label=_variant_label(variant, len(arrays)))
            _legend(ax, fontsize=8)
        ax.set(title=f"{unit} requested per node (empty nodes included)", xlabel=unit,
               ylabel="nodes, mean per run" if _repeats(runs) else "nodes")
    return _png(fig)


_COMPONENTS = {"kube-apiserver": "apiserver", "etcd": "etcd", "kube-scheduler": "scheduler",
               "kube-controller-manager": "controller-manager", "kwok-controller": "kwok"}


def control_plane(runs: list[StoredRun]) -> Chart:
    """CPU and peak RSS per component as horizontal bars, so the component names never overlap."""
    procs = [(r.summary or {}).get("processes") or {} for r in runs]
    if not any(c in p for p in procs for c in _COMPONENTS):
        return NotApplicable("no run measured its control-plane processes")
    k = len(_by_variant(runs))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 1.4 + len(_COMPONENTS) * (0.2 + 0.16 * k)))

    def figure(comp: dict[str, Any], key: str, scale: float) -> float:
        v = comp.get(key)
        return float(v) / scale if v is not None else np.nan

    cpu = [[figure(p.get(c) or {}, "cpu_seconds", 1.0) for c in _COMPONENTS] for p in procs]
    rss = [[figure(p.get(c) or {}, "rss_peak_bytes", 2**20) for c in _COMPONENTS] for p in procs]
    for a, vals, title, unit in ((a1, cpu, "Control-plane CPU during the run", "CPU seconds"),
                                 (a2, rss, "Control-plane peak RSS", "MiB")):
        _variant_bars(a, runs, list(_COMPONENTS.values()), vals, horizontal=True, legend=False)
        a.set(title=title, xlabel=unit)
    # one legend for both, beside the bars rather than over them
    _legend(a2, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=BARS_NOTE.replace(", ", ",\n")
              if _repeats(runs) else None, title_fontsize=7)
    return _png(fig)


def scheduler_time(runs: list[StoredRun]) -> Chart:
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
    if not any(v for row in values for v in row):
        return NotApplicable("no run has kube-scheduler's timing metrics or an extender's handling time")
    fig, ax = plt.subplots(figsize=(11, 3.8))
    _variant_bars(ax, runs, names, values)
    ax.set(title="Scheduler time per pod, mean (extension points from scheduler metrics; extender: its own "
                 "handling time)" + (f"\n{BARS_NOTE}" if _repeats(runs) else ""), ylabel="ms")
    return _png(fig)


def placement_quality(runs: list[StoredRun]) -> Chart:
    """What placement did, next to how fast: the lower the better for every bar (zeros are good news, so
    the chart is only left out when no run has placement figures at all)."""
    if not any((r.summary or {}).get("placement") for r in runs):
        return NotApplicable("no run has placement figures")
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
    _variant_bars(ax, runs, names, values)
    ax.set(title="Placement quality (lower is better)" + (f"\n{BARS_NOTE}" if _repeats(runs) else ""),
           ylabel="count")
    return _png(fig)


def _panels_over_time(runs: list[StoredRun], per: dict[str, list[tuple[StoredRun, list[float], list[float],
                                                                        dict[str, float]]]],
                      ylabel: str, title: str, step: bool = False) -> bytes:
    """A panel per name (at most 4), a line per run coloured by variant, and each run's limits as black lines
    (``--`` dashed, ``:`` dotted), all on one y scale."""
    names = sorted(per)[:4]
    fig, axes = plt.subplots(1, len(names), figsize=(11, 3.8), squeeze=False, sharey=True)
    colours, counts = _variant_colours(runs), _by_variant(runs)
    for ax, name in zip(axes[0], names, strict=False):
        labelled: set[str] = set()
        for r, t, ys, limits in per[name]:
            v = _variant(r)
            label = None if v in labelled else _variant_label(v, len(counts[v]))
            if step:
                ax.step(t, ys, where="post", color=colours[v], label=label)
            else:
                ax.plot(t, ys, color=colours[v], linewidth=1.2, label=label)
            labelled.add(v)
            for style, lim in limits.items():
                ax.axhline(lim, color="#000000", linestyle=style, linewidth=1)
        ax.set_ylim(bottom=0)
        ax.set(title=name, xlabel="s since the first pod")
        _legend(ax)
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title)
    return _png(fig)


def yunikorn_queues(runs: list[StoredRun]) -> Chart:
    """Each YuniKorn queue's allocated CPUs over time (a panel per queue, a colour per variant, every run
    drawn) against its guarantee (dashed) and max (dotted): what queue fairness is judged by."""
    per: dict[str, list[tuple[StoredRun, list[float], list[float], dict[str, float]]]] = {}
    for r in runs:
        for name, q in (((r.summary or {}).get("yunikorn") or {}).get("queues") or {}).items():
            if name != "root" and (ser := q.get("series") or {}).get("vcore"):
                limits = {style: lim / 1000 for key, style in (("guaranteed", "--"), ("max", ":"))
                          if (lim := (q.get(key) or {}).get("vcore"))}
                per.setdefault(name, []).append((r, ser["t"], [x / 1000 for x in ser["vcore"]], limits))
    if not per:
        return NotApplicable("no run has YuniKorn queues")
    return _panels_over_time(runs, per, "CPUs allocated", "YuniKorn queues over time (dashed: guaranteed, dotted: max)",
                             step=True)


def pressure(runs: list[StoredRun]) -> Chart:
    """The cluster under pressure over time: allocation per resource, pods waiting, GPUs free but useless to every
    waiting pod (a colour per variant, every run drawn)."""
    have = [(r, a) for r in runs if (a := (r.summary or {}).get("allocation")) and (a.get("series") or {}).get("t")]
    if not have:
        return NotApplicable("no run has allocation figures (its nodes were not read at its end)")
    gpus = any(a.get("gpu_capacity") for _, a in have)
    panels = [("cpu", "CPU allocated"), ("gpu", "GPU allocated"), ("pending", "pods waiting"),
              ("fragmented_gpus", "GPUs free but useless")] if gpus else \
        [("cpu", "CPU allocated"), ("memory", "memory allocated"), ("pending", "pods waiting")]
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 3.6), squeeze=False)
    colours, counts = _variant_colours(runs), _by_variant(runs)
    labelled: set[str] = set()
    for r, a in have:
        v, ser = _variant(r), a["series"]
        for ax, (key, _) in zip(axes[0], panels, strict=True):
            ys = [None if y is None else (y * 100 if key in ("cpu", "gpu", "memory") else y) for y in ser[key]]
            ax.plot(ser["t"], ys, color=colours[v], linewidth=1,
                    label=None if v in labelled else _variant_label(v, len(counts[v])))
        labelled.add(v)
    for ax, (key, title) in zip(axes[0], panels, strict=True):
        ax.set(title=title, xlabel="s since the first pod", ylabel="%" if key in ("cpu", "gpu", "memory") else "")
        ax.set_ylim(bottom=0)
    _legend(axes[0][0])
    fig.suptitle("The cluster under pressure")
    return _png(fig)


def gpu_vs_arrived(runs: list[StoredRun]) -> Chart:
    """GPU allocation against the workload arrived, both as % of the GPU capacity (the FGD paper's figure):
    pods in creation order, what the bound ones among the first so many hold."""
    have = [(r, c) for r in runs if len(c := ((r.summary or {}).get("allocation") or {})
                                        .get("gpu_allocated_vs_arrived") or []) > 2]
    if not have:
        return NotApplicable("no run requested GPUs")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    colours, counts = _variant_colours(runs), _by_variant(runs)
    labelled: set[str] = set()
    for r, curve in have:
        v = _variant(r)
        ax.plot([p["arrived"] for p in curve], [p["allocated"] for p in curve], color=colours[v], linewidth=1.2,
                label=None if v in labelled else _variant_label(v, len(counts[v])))
        labelled.add(v)
    top = max(p["arrived"] for _, c in have for p in c)
    ax.plot([0, min(top, 100)], [0, min(top, 100)], color="#999999", linestyle=":", linewidth=1, label="all placed")
    ax.set(xlabel="workload arrived (% of GPU capacity)", ylabel="GPUs allocated (% of capacity)",
           title="GPU allocation against arrived workload")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    _legend(ax)
    return _png(fig)


def tenants(runs: list[StoredRun]) -> Chart:
    """Each workload's CPUs held over time (a panel per workload, a colour per variant, every run drawn): what each
    tenant got when several submit at once, whichever scheduler and queues placed them."""
    per: dict[str, list[tuple[StoredRun, list[float], list[float], dict[str, float]]]] = {}
    for r in runs:
        a = (r.summary or {}).get("allocation") or {}
        for name, w in (a.get("by_workload") or {}).items():
            per.setdefault(name, []).append((r, (a.get("series") or {}).get("t") or [], w["series"]["cpu"], {}))
    if not per:
        return NotApplicable("no run has several workloads with allocation figures")
    return _panels_over_time(runs, per, "CPUs held", "CPUs held by each workload over time")


CHARTS: dict[str, tuple[str, Callable[[list[StoredRun]], Chart]]] = {
    "binding_rate": ("Binding rate over time", binding_rate),
    "cumulative": ("Offered, accepted, scheduled, running", cumulative_scheduled),
    "latency": ("Scheduling latency", latency),
    "submit": ("Offered vs accepted submit rate", submit_rate),
    "allocation": ("Per-node allocation", node_allocation),
    "control_plane": ("Control-plane CPU and memory", control_plane),
    "scheduler_time": ("Scheduler time per pod by stage", scheduler_time),
    "placement": ("Placement quality", placement_quality),
    "pressure": ("The cluster under pressure", pressure),
    "gpu_vs_arrived": ("GPU allocation against arrived workload", gpu_vs_arrived),
    "yunikorn_queues": ("YuniKorn queues over time", yunikorn_queues),
    "tenants": ("CPUs held by each workload over time", tenants),
}
