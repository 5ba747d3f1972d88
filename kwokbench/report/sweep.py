"""A sweep's table, sentences and charts, from its stored ``sweep.json`` (pure, offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from kwokbench.errors import KwokbenchError
from kwokbench.report.charts import _png
from kwokbench.sweep import trend

COMPONENTS = ("kube-apiserver", "etcd", "kube-scheduler")


def rows(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    out = []
    for p in sorted(doc["points"], key=lambda p: (p["nodes"], p["qps"])):
        if p.get("skipped"):
            out.append([str(p["nodes"]), f"{p['qps']:g}", "-", "-", "-", "-", "-", p["why"]])
            continue
        p99 = "-" if p.get("p99") is None else f"{p['p99'] * 1000:.0f} ms"
        acc = "-" if p.get("accepted") is None else f"{p['accepted']:.1f}"
        out.append([str(p["nodes"]), f"{p['qps']:g}", acc, f"{p['throughput']:.1f}", f"{p['ratio'] * 100:.0f}%", p99,
                    p.get("limited_by") or "-", "holds" if p["holds"] else p["why"]])
    columns = ["nodes", "offered pods/s", "accepted pods/s", "bound pods/s", "of offered", "p99 latency", "limited by",
               "verdict"]
    ordered = sorted(doc["points"], key=lambda p: (p["nodes"], p["qps"]))
    ceilings = [None if p.get("skipped") else _ceiling(p) for p in ordered]
    if any(ceilings):  # a column only when some point's host had a ceiling
        columns.insert(5, "of host ceiling")
        for row, p, c in zip(out, ordered, ceilings, strict=True):
            row.insert(5, f"{p['throughput'] / c * 100:.0f}% of {c:.0f}" if c else "-")
    return columns, out


def _ceiling(point: dict[str, Any]) -> float | None:
    """The in-process ceiling (pods/s) the point's run was analysed against, from its stored summary."""
    from kwokbench.store import SUMMARY, read_doc

    if point.get("ceiling"):  # recorded with the point (since shards: each cell names its host's ceiling)
        return float(point["ceiling"])
    try:
        c = (read_doc(Path(point["run"]), SUMMARY) or {}).get("ceiling") or {}
    except (KeyError, TypeError, KwokbenchError):
        return None
    return float(c["pods_per_second"]) if c.get("pods_per_second") else None


def _baseline(doc: dict[str, Any], key: str, component: str) -> dict[int, float]:
    """Per size, the component's figure at the lowest measured rate (the least load-dependent point)."""
    out: dict[int, float] = {}
    for n in doc["nodes"]:
        pts = _measured(doc, n)
        v = (pts[0].get(key) or {}).get(component) if pts else None
        if v:
            out[n] = float(v)
    return out


def trends(doc: dict[str, Any]) -> list[str]:
    """Control-plane RSS against cluster size (at each size's lowest rate), one fitted line per component."""
    out = []
    for c in COMPONENTS:
        by_size = _baseline(doc, "rss_peak_mib", c)
        fit = trend(list(by_size), list(by_size.values()))
        if fit is None:
            continue
        if fit[0] <= 0:
            out.append(f"{c} peak RSS: no growth with cluster size measurable over {len(by_size)} sizes "
                       f"({min(by_size.values()):.0f}–{max(by_size.values()):.0f} MiB)")
        else:
            out.append(f"{c} peak RSS ≈ {fit[1]:.0f} MiB + {fit[0] * 1000:.1f} MiB per 1000 nodes "
                       f"(fit over {len(by_size)} sizes at their lowest rate)")
    return out


def markdown(doc: dict[str, Any]) -> str:
    columns, body = rows(doc)
    lines = [f"# Sweep: {doc['scenario']} ({doc['variant']})", "",
             f"SLO: p99 created → scheduled <= {doc['slo_p99_seconds'] * 1000:.0f} ms and throughput >= "
             f"{doc['min_ratio'] * 100:.0f}% of target; {doc['duration_seconds']:g} s of load per point; "
             f"status: {doc['status']}.", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    lines += ["", *[f"- {s}" for s in doc.get("sentences", [])], *[f"- {t}" for t in trends(doc)], ""]
    return "\n".join(lines)


def _measured(doc: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return sorted((p for p in doc["points"] if p["nodes"] == n and not p.get("skipped")), key=lambda p: p["qps"])


def throughput_chart(doc: dict[str, Any]) -> bytes:
    fig, ax = plt.subplots(figsize=(8, 4))
    top = max(doc["qps"])
    ax.plot([0, top], [0, top], color="#bbb", ls="--", label="target")
    for n in doc["nodes"]:
        pts = _measured(doc, n)
        ax.plot([p["qps"] for p in pts], [p["throughput"] for p in pts], marker="o", label=f"{n} nodes")
        knee = doc.get("knees", {}).get(str(n))
        if knee:
            ax.annotate("knee", (knee, next(p["throughput"] for p in pts if p["qps"] == knee)), fontsize=8)
    ax.set(title="Achieved binding throughput vs submit rate", xlabel="target pods/s", ylabel="pods/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def latency_chart(doc: dict[str, Any]) -> bytes:
    fig, ax = plt.subplots(figsize=(8, 4))
    for n in doc["nodes"]:
        pts = [p for p in _measured(doc, n) if p.get("p99") is not None]
        ax.plot([p["qps"] for p in pts], [p["p99"] * 1000 for p in pts], marker="o", label=f"{n} nodes")
    ax.axhline(doc["slo_p99_seconds"] * 1000, color="red", ls="--", label="SLO")
    ax.set(title="p99 scheduling latency vs submit rate", xlabel="target pods/s", ylabel="ms")
    ax.set_yscale("symlog", linthresh=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def control_plane_chart(doc: dict[str, Any]) -> bytes:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for c in COMPONENTS:
        for ax, key in ((a1, "rss_peak_mib"), (a2, "cpu_seconds")):
            by_size = _baseline(doc, key, c)
            if not by_size:
                continue
            xs = sorted(by_size)
            line = ax.plot(xs, [by_size[x] for x in xs], marker="o", label=c.replace("kube-", ""))[0]
            fit = trend(xs, [by_size[x] for x in xs])
            if fit:
                grid = np.linspace(0, max(xs), 20)
                ax.plot(grid, fit[0] * grid + fit[1], ls=":", color=line.get_color())
    a1.set(title="Control-plane peak RSS vs nodes (dotted: linear fit)", xlabel="nodes", ylabel="MiB")
    a2.set(title="Control-plane CPU vs nodes (lowest rate of each size)", xlabel="nodes", ylabel="CPU seconds")
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    return _png(fig)


def write(doc: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fn in (("throughput_vs_qps", throughput_chart), ("latency_vs_qps", latency_chart),
                     ("control_plane_vs_nodes", control_plane_chart)):
        p = out / f"{name}.png"
        p.write_bytes(fn(doc))
        paths.append(p)
    md = out / "sweep.md"
    md.write_text(markdown(doc))
    return [md, *paths]
