"""Reports of stored runs: PNG charts, one self-contained HTML file, and Markdown.

Everything comes from stored run directories (offline). The HTML embeds its charts as data URIs and
autoescapes every string that came from a scenario or a cluster.
"""

from __future__ import annotations

import base64
import os
import statistics
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from kwokbench.compare.gate import DEFAULT_GATES, GateResult, comparability, gate
from kwokbench.compare.stats import Comparison
from kwokbench.errors import StoreError
from kwokbench.report import variants
from kwokbench.report.charts import CHARTS, NotApplicable
from kwokbench.report.table import summary_rows
from kwokbench.store import StoredRun


@dataclass
class Report:
    html: Path
    markdown: Path
    charts: list[Path]
    warnings: list[str]
    left_out: list[str]
    """One line per chart left out because it does not apply to these runs: its title and why."""


def _row_values(runs: list[StoredRun]) -> tuple[list[str], list[list[str]]]:
    """One column per run, one row per summary metric."""
    tables = [summary_rows(r.summary or {})[1] for r in runs]
    keys: list[str] = []
    for t in tables:
        keys += [k for k, _ in t if k not in keys]
    rows = [[k, *[dict((a, b) for a, b in t).get(k, "-") for t in tables]] for k in keys]
    return ["metric", *[f"{r.meta.get('variant', {}).get('name', '?')} {r.path.name}" for r in runs]], rows


def _mde(c: Comparison) -> str:
    return f"{c.mde * 100:.0f}%" if c.mde is not None else "-"


def _change(c: Comparison) -> str:
    if c.ratio is None:
        return "-"
    ci = f" ({(c.ci[0] - 1) * 100:+.0f}%..{(c.ci[1] - 1) * 100:+.0f}%)" if c.ci and c.method != "worst run" else ""
    return f"{(c.ratio - 1) * 100:+.1f}%{ci}"


def gate_rows(result: GateResult) -> tuple[list[str], list[list[str]]]:
    """The gate's table for a terminal: the reason carries the change, its interval and the p-value."""
    return (["metric", "verdict", "runs", "MDE", "detail"],
            [[c.metric, c.verdict, c.runs, _mde(c), c.reason] for c in result.comparisons])


def markdown(runs: list[StoredRun], result: GateResult | None) -> str:
    cols, rows = _row_values(runs)
    out = [f"## kwokbench: {', '.join(sorted({str(r.meta.get('scenario', {}).get('name')) for r in runs}))}", ""]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "---|" * len(cols))
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    if result is not None:
        out += ["", "### Gate", "", "| metric | verdict | runs | change (90% CI) | min. detectable | detail |",
                "|---|---|---|---|---|---|"]
        out += ["| " + " | ".join(x.replace("|", "\\|") for x in (c.metric, f"**{c.verdict}**", c.runs, _change(c),
                                                                 _mde(c), c.reason)) + " |"
                for c in result.comparisons]
        out += ["", *[f"_{n}_" for n in result.notes]] if result.notes else []
    warnings = (result.warnings if result else comparability(runs))
    if warnings:
        out += ["", *[f"> ⚠️ {w}" for w in warnings]]
    return "\n".join(out) + "\n"


def _median(values: tuple[float, ...]) -> str:
    return f"{statistics.median(values):.3g}" if values else "-"


def detectable_line(result: GateResult) -> str:
    """The smallest change these runs could detect, per gated timing figure (95% power at one-sided 0.05, in
    the worse direction), beside what each gate allows: what a pass here is worth."""
    seen = sorted(((c.mde, c) for c in result.comparisons if c.mde is not None and c.method != "worst run"),
                  key=lambda mc: mc[0])
    if not seen:
        return ""
    parts = [f"{c.metric} {mde * 100:.0f}% (allowed {c.allowed * 100:.0f}%)" for mde, c in seen]
    return "**Smallest change these runs could detect** (95% power, one-sided p < 0.05): " + "; ".join(parts) + "."


def gate_markdown(result: GateResult, title: str = "kwokbench gate") -> str:
    """The verdict as a pull request shows it ($GITHUB_STEP_SUMMARY): one row per gated metric with both sides'
    medians, the change and its 90% interval (the one the tests used), and the verdict; then how runs were paired,
    and the warnings."""
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️"}
    verdict = {0: "pass", 1: "regression", 3: "inconclusive"}[result.exit_code]
    out = [f"## {title}: {icon[verdict]} {verdict}", "",
           "| metric | base (median) | head (median) | change (interval tested) | verdict | min. detectable | detail |",
           "|---|---|---|---|---|---|---|"]
    out += ["| " + " | ".join(x.replace("|", "\\|") for x in (
        c.metric, _median(c.baseline), _median(c.candidate), _change(c), f"{icon[c.verdict]} {c.verdict}",
        _mde(c), c.reason)) + " |" for c in result.comparisons]
    if line := detectable_line(result):
        out += ["", line]
    out += ["", *[f"_{n}_" for n in result.notes]] if result.notes else []
    out += ["", *[f"> ⚠️ {w}" for w in result.warnings]] if result.warnings else []
    return "\n".join(out) + "\n"


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(result: GateResult, title: str = "kwokbench gate") -> list[str]:
    """GitHub workflow commands for the gate's findings: an error per regression, a warning per inconclusive
    metric, nothing for a pass (a pull request's diff should carry only what needs the author)."""
    kind = {"regression": "error", "inconclusive": "warning"}
    return [f"::{kind[c.verdict]} title={_escape(title, prop=True)}::{_escape(f'{c.metric} {c.verdict}: {c.reason}')}"
            for c in result.comparisons if c.verdict in kind]


def junit(result: GateResult, name: str = "kwokbench-gate") -> str:
    suite = ET.Element("testsuite", name=name, tests=str(len(result.comparisons)),
                       failures=str(sum(c.verdict == "regression" for c in result.comparisons)),
                       skipped=str(sum(c.verdict == "inconclusive" for c in result.comparisons)))
    for c in result.comparisons:
        case = ET.SubElement(suite, "testcase", classname="kwokbench.compare.gate", name=c.metric)
        props = ET.SubElement(case, "properties")
        for k, v in (("verdict", c.verdict), ("runs", c.runs), ("method", c.method),
                     ("ratio", c.ratio), ("ci_low", c.ci[0] if c.ci else None), ("ci_high", c.ci[1] if c.ci else None),
                     ("p_value", c.p_value), ("min_detectable_change", c.mde), ("allowed_change", c.allowed)):
            if v is not None and v != "":
                ET.SubElement(props, "property", name=k, value=f"{v:.6g}" if isinstance(v, float) else str(v))
        if c.verdict == "regression":
            ET.SubElement(case, "failure", message=c.reason).text = c.reason
        elif c.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message=c.reason)
        ET.SubElement(case, "system-out").text = c.reason
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


_HTML = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kwokbench report: {{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
th{background:#f3f3f3}.warn{background:#fff6d6;padding:.5rem 1rem;border-left:4px solid #e0a800}
.regression{color:#b00020;font-weight:bold}.pass{color:#1b7f3b;font-weight:bold}.inconclusive{color:#a66b00}
img{max-width:100%;border:1px solid #eee;margin:.5rem 0}
.headline{font-size:1.1rem;font-weight:600;margin:.4rem 0}
</style></head><body>
<h1>kwokbench report: {{ title }}</h1>
{% for line in by_variant.headline %}<p class="headline">{{ line }}</p>{% endfor %}
<h2>By variant</h2>
<table class="variants"><tr>{% for c in by_variant.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in by_variant.rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
<p><small>Mean over a variant's complete runs, with a t-based 95% interval when it has 2 or more; latency is
created → scheduled. The per-run detail follows.</small></p>
{% for w in warnings %}<p class="warn">{{ w }}</p>{% endfor %}
<h2>Runs</h2>
<table><tr><th>run</th><th>variant</th><th>status</th><th>scenario</th><th>description</th><th>nodes</th>
<th>kubernetes</th><th>host</th><th>scheduler client QPS/burst</th></tr>
{% for r in runs %}<tr><td>{{ r.path.name }}</td><td>{{ r.meta.variant.name }}</td><td>{{ r.meta.status }}</td>
<td>{{ r.meta.scenario.name }}</td><td>{{ r.meta.scenario.description }}</td><td>{{ r.meta.cluster.nodes }}</td>
<td>{{ r.meta.toolchain.kubernetes }}</td><td>{{ r.meta.host.cpu_model }} ×{{ r.meta.host.cpus }}</td>
<td>{{ r.meta.fairness.scheduler_client_qps }}/{{ r.meta.fairness.scheduler_client_burst }}</td></tr>{% endfor %}
</table>
<h2>Per run</h2>
<table><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}</table>
{% if profiles %}<h2>CPU profiles</h2>
<p><small>Where each profiled component spent its CPU during the first phase: the top functions by own
(flat) time, with the time of what they called (cumulative). Open a file with <code>go tool pprof -http=:8080
FILE</code> for the call graph.</small></p>
{% for p in profiles %}<h3>{{ p.component }} · {{ p.run }}</h3>
{% if p.error %}<p class="warn">no profile: {{ p.error }}</p>{% else %}
<p><a href="{{ p.href }}">{{ p.file }}</a>: {{ "%.1f"|format(p.total) }} s of CPU in {{ p.seconds }} s,
{{ p.samples }} samples</p>
{% for title, rows in (("by own time (flat)", p.top), ("by cumulative time", p.top_cum)) %}
<table class="profile"><caption>{{ title }}</caption>
<tr><th>function</th><th>flat</th><th>flat %</th><th>cum</th><th>cum %</th></tr>
{% for r in rows %}<tr><td>{{ r.function }}</td><td>{{ "%.2f s"|format(r.flat) }}</td>
<td>{{ "%.1f%%"|format(r.flat_share * 100) }}</td><td>{{ "%.2f s"|format(r.cum) }}</td>
<td>{{ "%.1f%%"|format(r.cum_share * 100) }}</td></tr>{% endfor %}</table>{% endfor %}{% endif %}
{% endfor %}{% endif %}
{% if gate %}<h2>Against the baseline</h2>
<table><tr><th>metric</th><th>verdict</th><th>runs</th><th>candidate / baseline</th><th>90% CI</th>
<th>min. detectable change</th><th>detail</th></tr>
{% for c in gate.comparisons %}<tr><td>{{ c.metric }}</td><td class="{{ c.verdict }}">{{ c.verdict }}</td>
<td>{{ c.runs }}</td><td>{{ "%.3f"|format(c.ratio) if c.ratio is not none else "-" }}</td>
<td>{{ "%.3f – %.3f"|format(c.ci[0], c.ci[1]) if c.ci else "-" }}</td>
<td>{{ "%.0f%%"|format(c.mde * 100) if c.mde is not none else "-" }}</td><td>{{ c.reason }}</td></tr>{% endfor %}
</table>{% endif %}
<h2>Charts</h2>
{% for title, data in charts %}<h3>{{ title }}</h3><img alt="{{ title }}" src="data:image/png;base64,{{ data }}">
{% endfor %}
{% if left_out %}<h3>Left out</h3>
{% for line in left_out %}<p class="left-out">{{ line }}</p>
{% endfor %}{% endif %}
<p><small>kwokbench {{ version }} · generated offline from stored runs</small></p>
</body></html>
""")


def make_report_dir(out: Path) -> None:
    """The folder a report is written to; StoreError (one line) when it is a file or cannot be made."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise StoreError(f"report folder {out}: exists and is not a folder") from None
    except OSError as e:
        raise StoreError(f"cannot create report folder {out}: {e.strerror}") from e


def write_report(runs: list[StoredRun], out: Path, baseline: list[StoredRun] | None = None,
                 gates: list[str] | None = None) -> Report:
    from kwokbench import __version__

    make_report_dir(out)
    charts: list[tuple[str, str]] = []
    paths = []
    left_out = []
    for key, (title, fn) in CHARTS.items():
        png = fn(runs)
        p = out / f"{key}.png"
        if isinstance(png, NotApplicable):
            p.unlink(missing_ok=True)  # an earlier report's chart in this folder is not one of this report's
            left_out.append(f"{title}: {png.reason}")
            continue
        p.write_bytes(png)
        paths.append(p)
        charts.append((title, base64.b64encode(png).decode()))
    result = None
    if baseline:
        candidates = [r for r in runs if r.path not in {b.path for b in baseline}]
        if candidates:
            result = gate(baseline, candidates, gates or DEFAULT_GATES)
    warnings = result.warnings if result else comparability(runs)
    columns, rows = _row_values(runs)
    title = ", ".join(sorted({str(r.meta.get("scenario", {}).get("name")) for r in runs}))
    doc = _HTML.render(title=title, by_variant=variants.view(runs), runs=[_view(r) for r in runs], columns=columns,
                       rows=rows, profiles=profiles(runs, out), gate=result, charts=charts, left_out=left_out,
                       warnings=warnings, version=__version__)
    html_path = out / "report.html"
    html_path.write_text(doc)
    md_path = out / "summary.md"
    md_path.write_text(markdown(runs, result))
    return Report(html_path, md_path, paths, warnings, left_out)


def profiles(runs: list[StoredRun], out: Path) -> list[dict[str, Any]]:
    """Every run's CPU profiles for the report: the top table and a link to the file, relative to ``out``."""
    found = []
    for r in runs:
        for comp, p in ((r.summary or {}).get("profiles") or {}).items():
            href = os.path.relpath((r.path / p["file"]).resolve(), out.resolve()) if p.get("file") else ""
            found.append({"run": r.path.name, "component": comp, "href": href, "file": p.get("file"),
                          "error": p.get("error"), "total": p.get("total") or 0.0, "seconds": p.get("seconds"),
                          "samples": p.get("samples"), "top": p.get("top") or [], "top_cum": p.get("top_cum") or []})
    return found


class _Attr(dict[str, Any]):
    """Dict with attribute access and '-' for missing keys, for the template."""

    def __getattr__(self, k: str) -> Any:
        v = self.get(k, "-")
        return _Attr(v) if isinstance(v, dict) else v


def _view(r: StoredRun) -> Any:
    return type("RunView", (), {"path": r.path, "meta": _Attr(r.meta)})()

