"""The trend page of `report --history`: plotly.js inline, one trace per metric, detect's change points,
hover text, and the runs' figures embedded for the two-run comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kwokbench.compare.detect import Ack, DetectResult
from kwokbench.compare.detect import detect as detect_
from kwokbench.compare.gate import METRICS
from kwokbench.history.index import build_index
from kwokbench.report.trend import COLOURS, DIV_ID, METRICS_ID, RUNS_ID, figure, trend_html, write_trend
from tests.unit.fake_runs import run_dir

STEP = [220.0, 231.0, 214.0, 226.0, 219.0, 224.0, 229.0, 216.0, 187.0, 190.0, 184.0, 193.0, 189.0, 186.0]
"""Throughput of 14 commits, the last 6 about 15% lower (as tests/integration/test_cli_history.py)."""
EVIL = "</script><script>alert('x')</script>"


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("runs")
    for i, v in enumerate(STEP):
        run_dir(root, i, v, commit=f"{i:02d}" + "c" * 38, hostname="h1" if i % 2 else "h2")
    return build_index([root]).rows


def detect(rows: list[dict[str, Any]], specs: list[str], acks: list[Ack] | None = None) -> DetectResult:
    """detect as the CLI calls it, figures as measured (the runs come from two hosts without ceilings)."""
    return detect_(rows, specs, normalise="none", acks=acks)


def _plot(page: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces and layout the page hands to Plotly.newPlot."""
    start = page.index("Plotly.newPlot(")
    rest = page[page.index(f'"{DIV_ID}"', start) + len(DIV_ID) + 2:].lstrip(" ,\n")
    decoder = json.JSONDecoder()
    data, end = decoder.raw_decode(rest)
    layout, _ = decoder.raw_decode(rest[end:].lstrip(" ,\n"))
    return data, layout


def _script(page: str, element_id: str) -> Any:
    m = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert m, element_id
    return json.loads(m.group(1))


def test_the_page_embeds_plotly_inline_and_loads_nothing(rows: list[dict[str, Any]], tmp_path: Path) -> None:
    path = write_trend(rows, detect(rows, []), tmp_path / "out")
    page = path.read_text()
    assert path.name == "trend.html"
    assert '<script src="http' not in page and "<link" not in page
    assert all("src=" not in tag for tag in re.findall(r"<script\b[^>]*>", page))
    # the library itself, not a loader of it (its text names its CDN only as the default of map data)
    assert "plotly.js v" in page and "Plotly.newPlot(" in page and len(page) > 1_000_000


def test_one_trace_per_metric_over_commits(rows: list[dict[str, Any]]) -> None:
    result = detect(rows, ["throughput:-10%", "latency_p99:+40%", "latency_p50:+40%"])
    fig = figure(rows, result)
    assert [t.name for t in fig.data] == ["throughput", "latency_p99", "latency_p50"]
    assert list(fig.data[0].y) == STEP and list(fig.data[0].x) == list(range(len(STEP)))
    assert list(fig.layout.xaxis.ticktext) == [f"{i:02d}ccccc" for i in range(len(STEP))]  # short commits
    data, layout = _plot(trend_html(rows, result))
    assert [(t["type"], t["name"]) for t in data] == [("scatter", "throughput"), ("scatter", "latency_p99"),
                                                       ("scatter", "latency_p50")]
    assert layout["xaxis3"]["title"]["text"] == "commit"


def test_change_points_are_marked_where_detect_found_them(rows: list[dict[str, Any]]) -> None:
    result = detect(rows, [])
    [change] = [c for s in result.series for c in s.changes]
    fig = figure(rows, result)
    [shape] = fig.layout.shapes
    assert shape.name == "change point throughput 8" and shape.x0 == shape.x1 == 7.5  # between 07… and 08…
    assert shape.line.color == COLOURS["regression"] and shape.yref == "y domain"  # the throughput subplot
    [note] = [a for a in fig.layout.annotations if "regression" in a.text]
    assert note.text == f"{change.magnitude * 100:+.1f}% regression"
    _, layout = _plot(trend_html(rows, result))  # and so in the file
    assert [(s["name"], s["x0"]) for s in layout["shapes"]] == [("change point throughput 8", 7.5)]
    acked = detect(rows, [], acks=[Ack("throughput", "08ccccc", "accepted <in review>")])
    [shape] = figure(rows, acked).layout.shapes
    assert shape.line.color == COLOURS["acked"]
    assert any(a.text == "-15.3% acked: accepted &lt;in review&gt;" for a in figure(rows, acked).layout.annotations)


def test_no_marker_without_a_change_and_short_history_says_so(rows: list[dict[str, Any]]) -> None:
    result = detect(rows[:8], ["throughput:-10%"])
    fig = figure(rows[:8], result)
    assert fig.layout.shapes == ()
    assert detect(rows[:5], ["throughput:-10%"]).series[0].enough is False
    short = figure(rows[:5], detect(rows[:5], ["throughput:-10%"]))
    assert "not enough history: 5 of 7 commits" in short.layout.annotations[0].text


def test_hover_shows_run_commit_and_host_escaped(rows: list[dict[str, Any]]) -> None:
    evil = [{**r, "hostname": EVIL} if i == 3 else r for i, r in enumerate(rows)]
    fig = figure(evil, detect(evil, ["throughput:-10%"]))
    texts = list(fig.data[0].text)
    assert f"runs: {rows[0]['run_id']}" not in texts[0] and f"run: {rows[0]['run_id']}" in texts[0]
    assert "<b>00cccccccccc</b> (main)" in texts[0] and "host: h2" in texts[0] and "throughput: 220" in texts[0]
    assert EVIL not in texts[3] and "&lt;/script&gt;" in texts[3]
    assert list(fig.data[0].customdata) == [r["run_id"] for r in rows]  # a click picks the run to compare


def test_the_runs_and_metric_definitions_are_embedded_as_json(rows: list[dict[str, Any]]) -> None:
    evil = [{**r, "hostname": EVIL} if i == 3 else r for i, r in enumerate(rows)]
    page = trend_html(evil, detect(evil, []))
    assert EVIL not in page  # neither in the runs' JSON nor in plotly's
    runs = _script(page, RUNS_ID)
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in rows]
    assert runs[0]["commit"] == "00" + "c" * 38 and runs[0]["host"] == "h2" and runs[3]["host"] == EVIL
    assert runs[8]["values"]["throughput"] == 187.0 and set(runs[0]["values"]) == set(METRICS)
    metrics = _script(page, METRICS_ID)
    assert metrics["throughput"] == {"description": METRICS["throughput"].description, "higher_is_better": True,
                                     "noise_floor": 0.05, "min_pods": 0, "worst_run": False}
    assert metrics["unscheduled"]["worst_run"] is True
    # the comparison opens on the two runs around the change point
    assert 'base.value = "7";' in page and 'cand.value = "8";' in page
