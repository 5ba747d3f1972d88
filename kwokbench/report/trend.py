"""A history's trend as one interactive HTML file: each metric over commits with detect's change points
marked, and any two runs compared side by side.

Plotly draws the trend, its library embedded inline (no CDN: the file opens offline, as the report does).
What is plotted is exactly the series ``detect`` analysed (one point per commit, the median of its runs,
normalised by the host's ceiling when detect did so), so a marked change is the one ``kwokbench detect``
reports. The comparison is a few lines of page JavaScript over the gate figures of every run, embedded as
JSON together with the gate's definition of each metric (direction, noise floor, minimum pods): the same
rules the gate applies, on one run a side (so it says "worse" beyond the noise floor, never "regression"
by a test it cannot make, except for the counts the gate compares worst run against worst run).
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from kwokbench.compare.detect import MIN_POINTS, RATES, TIMES, ChangePoint, DetectResult, Point, SeriesResult
from kwokbench.compare.gate import METRICS
from kwokbench.report.history import detect_rows

FILE_NAME = "trend.html"
DIV_ID = "kwokbench-trend"
RUNS_ID = "kwokbench-runs"
METRICS_ID = "kwokbench-metrics"
COLOURS = {"regression": "#b00020", "improvement": "#1b7f3b", "acked": "#888888"}


def short(p: Point) -> str:
    """The x label of a point: its commit as git abbreviates it, else its run."""
    return p.commit[:7] if p.commit else f"run {p.runs[0][:16]}"


def _json(doc: Any) -> Markup:
    """JSON safe inside a <script> element (no ``</script>`` or comment opener can end it early)."""
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else None


def runs_doc(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every run of the history with its gate figures, in start order: what the comparison view reads."""
    out = []
    for r in rows:
        started = r.get("started_at")
        out.append({"run_id": r["run_id"], "commit": r.get("commit"), "ref": r.get("ref"),
                    "host": r.get("hostname"), "status": r.get("status"), "scenario": r.get("scenario"),
                    "variant": r.get("variant"), "started_at": started.isoformat() if started is not None else None,
                    "pods_scheduled": r.get("pods_scheduled"),
                    "values": {name: _number(r.get(name)) for name in METRICS}})
    return out


def metrics_doc() -> dict[str, dict[str, Any]]:
    """The gate's metric definitions, as the page's comparison applies them."""
    return {m.name: {"description": m.description, "higher_is_better": m.higher_is_better,
                     "noise_floor": m.noise_floor, "min_pods": m.min_pods, "worst_run": m.worst_run}
            for m in METRICS.values()}


def _unit(s: SeriesResult) -> str:
    name = s.spec.metric.name
    if name in RATES:
        return "share of host ceiling" if s.normalised else "per second"
    if name in TIMES:
        return "s × host ceiling (pods/s)" if s.normalised else "seconds"
    return "ratio" if name.startswith("duet_") else "share" if name.endswith(("_allocation", "_fragmentation")) \
        else "count"


def _hover(p: Point, name: str, hosts: dict[str, str]) -> str:
    """Plotly's hover text is a little HTML: every figure from a run is escaped."""
    e = html.escape
    where = sorted({hosts.get(r, "?") for r in p.runs})
    lines = [f"<b>{e(p.commit[:12]) if p.commit else 'no commit'}</b>" + (f" ({e(p.ref)})" if p.ref else ""),
             f"{e(name)}: {p.value:.4g}" + (f" (median of {len(p.runs)})" if len(p.runs) > 1 else ""),
             f"run{'s' if len(p.runs) > 1 else ''}: {e(', '.join(p.runs))}", f"host: {e(', '.join(where))}"]
    return "<br>".join(lines)


def _change_label(c: ChangePoint) -> str:
    what = f"acked: {c.acked}" if c.acked else c.direction
    return html.escape(f"{c.magnitude * 100:+.1f}% {what}")


def figure(rows: list[dict[str, Any]], result: DetectResult) -> Any:
    """One subplot and one trace per metric over the commits (x: commit order, labelled by short commit);
    a dashed line between the two commits of each change point, coloured by its verdict."""
    from plotly.subplots import make_subplots

    hosts = {str(r["run_id"]): str(r.get("hostname") or "?") for r in rows}
    first: dict[str, tuple[datetime, str, Point]] = {}  # every commit of every series on one axis
    for s in result.series:
        for p in s.points:
            if p.label not in first or (p.started, p.runs[0]) < first[p.label][:2]:
                first[p.label] = (p.started, p.runs[0], p)
    axis = sorted(first.values(), key=lambda f: f[:2])
    position = {f[2].label: i for i, f in enumerate(axis)}

    def x(p: Point) -> int:
        return position[p.label]

    n = max(1, len(result.series))
    titles = [f"{s.spec.spec}: {s.spec.metric.description}"
              + ("" if s.enough else f" (not enough history: {len(s.points)} of {MIN_POINTS} commits)")
              for s in result.series]
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=0.2 / n, subplot_titles=titles)
    for k, s in enumerate(result.series, start=1):
        name = s.spec.metric.name
        fig.add_scatter(x=[x(p) for p in s.points], y=[p.value for p in s.points], mode="lines+markers", name=name,
                        text=[_hover(p, name, hosts) for p in s.points], customdata=[p.runs[0] for p in s.points],
                        hovertemplate="%{text}<extra></extra>", row=k, col=1)
        fig.update_yaxes(title_text=_unit(s), row=k, col=1)
        for c in s.changes:
            verdict = "acked" if c.acked else c.direction
            fig.add_vline(x=(x(c.before) + x(c.after)) / 2, row=k, col=1, name=f"change point {name} {c.index}",
                          line={"color": COLOURS[verdict], "dash": "dash", "width": 2},
                          annotation_text=_change_label(c), annotation_position="top right", annotation_yshift=-18,
                          annotation_font_color=COLOURS[verdict])
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(axis))), ticktext=[short(f[2]) for f in axis])
    fig.update_xaxes(showticklabels=True)
    fig.update_xaxes(title_text="commit", row=n, col=1)
    fig.update_layout(height=320 * n + 80, showlegend=False, margin={"t": 60, "b": 40},
                      hoverlabel={"align": "left"}, template="plotly_white")
    return fig


def _preselect(runs: list[dict[str, Any]], result: DetectResult) -> tuple[int, int]:
    """The runs the comparison opens on: those around the first change point, else the first and the last."""
    ids = [r["run_id"] for r in runs]
    for s in result.series:
        for c in s.changes:
            if c.before.runs[-1] in ids and c.after.runs[0] in ids:
                return ids.index(c.before.runs[-1]), ids.index(c.after.runs[0])
    return 0, max(0, len(runs) - 1)


_PAGE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kwokbench trend: {{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1300px;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
th{background:#f3f3f3}.warn{background:#fff6d6;padding:.5rem 1rem;border-left:4px solid #e0a800}
.regression{color:#b00020;font-weight:bold}.pass,.improvement{color:#1b7f3b;font-weight:bold}
.inconclusive,.acked{color:#a66b00}select{font-size:.9rem;max-width:40rem}
</style></head><body>
<h1>kwokbench trend: {{ title }}</h1>
<p>{{ runs|length }} run(s) over {{ commits }} commit(s). Each point is a commit: the median of its complete
runs, in the order they were first measured; a dashed line marks a change point found by <code>kwokbench
detect</code> (E-divisive means). Hover a point for its runs, commit and host; click one to compare it.</p>
{% for n in notes %}<p><small>{{ n }}</small></p>{% endfor %}
{% for w in warnings %}<p class="warn">{{ w }}</p>{% endfor %}
<h2>Change points</h2>
<table class="changes"><tr>{% for c in change_columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in change_rows %}<tr>{% for c in row %}<td{% if loop.index == 2 %} class="{{ c.split()[0] }}"{% endif %}>
{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
<h2>Trend</h2>
{{ plot }}
<h2>Compare two runs</h2>
<p><label>baseline <select id="baseline"></select></label>
<label>candidate <select id="candidate"></select></label></p>
<p id="compare-warnings" class="warn" hidden></p>
<table id="compare"><thead><tr><th>metric</th><th>baseline</th><th>candidate</th><th>candidate / baseline</th>
<th>change</th><th>verdict</th><th>detail</th></tr></thead><tbody></tbody></table>
<p><small>One run a side: a change beyond the metric's noise floor is shown, but only <code>kwokbench gate</code>
over repeated runs gives a verdict; counts (unscheduled) compare worst run against worst run, as the gate
does.</small></p>
<script type="application/json" id="{{ runs_id }}">{{ runs_json }}</script>
<script type="application/json" id="{{ metrics_id }}">{{ metrics_json }}</script>
<script>
(function () {
  "use strict";
  const runs = JSON.parse(document.getElementById("{{ runs_id }}").textContent);
  const metrics = JSON.parse(document.getElementById("{{ metrics_id }}").textContent);
  const base = document.getElementById("baseline"), cand = document.getElementById("candidate");
  const body = document.querySelector("#compare tbody"), warn = document.getElementById("compare-warnings");
  runs.forEach(function (r, i) {
    [base, cand].forEach(function (sel) {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = r.run_id + " · " + (r.commit ? r.commit.slice(0, 12) : "no commit") + " · " + (r.host || "?")
        + (r.status === "complete" ? "" : " · " + r.status);
      sel.appendChild(o);
    });
  });
  base.value = "{{ preselect[0] }}";
  cand.value = "{{ preselect[1] }}";
  const g4 = function (v) {  // as Python's {:.4g}
    return v === null || v === undefined ? "-" : String(parseFloat(Number(v).toPrecision(4)));
  };
  const VERDICT_CLASS = {"regression": "regression", "worse": "regression", "pass": "pass", "better": "pass",
                         "inconclusive": "inconclusive"};
  const pct = function (f) { return (f * 100).toFixed(0) + "%"; };
  function verdict(m, b, c, bv, cv) {
    if (bv === null || cv === null) return ["-", "not measured in both runs"];
    if (b.status !== "complete" || c.status !== "complete") return ["inconclusive", "a run did not complete"];
    if (m.worst_run) return cv > bv ? ["regression", "any increase is a regression"] : ["pass", "no increase"];
    const short = [b, c].filter(function (r) { return r.pods_scheduled !== null && r.pods_scheduled < m.min_pods; });
    if (short.length) return ["inconclusive", "needs >= " + m.min_pods + " pods scheduled per run"];
    if (bv === 0) return ["-", "baseline is 0"];
    const change = cv / bv - 1;
    if (Math.abs(change) < m.noise_floor) return ["within noise", "below the noise floor (" + pct(m.noise_floor) + ")"];
    const worse = m.higher_is_better ? change < 0 : change > 0;
    return [worse ? "worse" : "better", "beyond the noise floor (" + pct(m.noise_floor)
      + "); one run a side: run `kwokbench gate` on repeats for a verdict"];
  }
  function render() {
    const b = runs[Number(base.value)], c = runs[Number(cand.value)];
    body.replaceChildren();
    if (!b || !c) return;
    Object.keys(metrics).forEach(function (name) {
      const m = metrics[name], bv = b.values[name], cv = c.values[name];
      if (bv === null && cv === null) return;
      const v = verdict(m, b, c, bv, cv);
      const ratio = bv !== null && cv !== null && bv !== 0 ? cv / bv : null;
      const cells = [name, g4(bv), g4(cv), ratio === null ? "-" : ratio.toFixed(3),
                     ratio === null ? "-" : ((ratio - 1) * 100 >= 0 ? "+" : "") + ((ratio - 1) * 100).toFixed(1) + "%",
                     v[0], v[1]];
      const tr = document.createElement("tr");
      cells.forEach(function (text, i) {
        const td = document.createElement("td");
        td.textContent = text;
        if (i === 5) td.className = VERDICT_CLASS[text] || "";
        if (i === 0) td.title = m.description;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    const notes = [];
    if (b === c) notes.push("the same run on both sides");
    if (b.host !== c.host) notes.push("different hosts (" + b.host + " vs " + c.host + "): figures of two machines");
    warn.textContent = notes.join("; ");
    warn.hidden = notes.length === 0;
  }
  base.addEventListener("change", render);
  cand.addEventListener("change", render);
  const plot = document.getElementById("{{ div_id }}");
  if (plot && plot.on) {
    plot.on("plotly_click", function (ev) {
      const id = ev.points && ev.points[0] && ev.points[0].customdata;
      const i = runs.findIndex(function (r) { return r.run_id === id; });
      if (i < 0) return;
      base.value = cand.value;
      cand.value = String(i);
      render();
    });
  }
  render();
})();
</script>
<p><small>kwokbench {{ version }} · generated offline from stored runs</small></p>
</body></html>
""")


def trend_html(rows: list[dict[str, Any]], result: DetectResult) -> str:
    """The page: detect's table, the plot (plotly.js inline), the comparison view and its data."""
    from kwokbench import __version__

    fig = figure(rows, result)
    plot = fig.to_html(full_html=False, include_plotlyjs=True, div_id=DIV_ID,
                       config={"displaylogo": False, "responsive": True})
    runs = runs_doc(rows)
    columns, change_rows = detect_rows(result)
    title = ", ".join(sorted({f"{r.get('scenario')}/{r.get('variant')}" for r in rows})) or "no runs"
    commits = len({p.label for s in result.series for p in s.points})
    return _PAGE.render(title=title, runs=runs, commits=commits, notes=result.notes, warnings=result.warnings,
                        change_columns=columns, change_rows=change_rows, plot=Markup(plot), runs_id=RUNS_ID,
                        metrics_id=METRICS_ID, div_id=DIV_ID, runs_json=_json(runs), metrics_json=_json(metrics_doc()),
                        preselect=_preselect(runs, result), version=__version__)


def write_trend(rows: list[dict[str, Any]], result: DetectResult, out: Path) -> Path:
    """``out/trend.html``; StoreError when the folder cannot be made."""
    from kwokbench.report.render import make_report_dir

    make_report_dir(out)
    path = out / FILE_NAME
    path.write_text(trend_html(rows, result))
    return path
