"""A report of two variants × 4 repeats reads as two variants compared: one colour per variant in every
chart, a variant table with 95% intervals and a sentence saying which is faster and by how much, first."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from kwokbench.report import charts, variants
from kwokbench.report.render import write_report
from tests.unit.fake_runs import fake_run, two_variants


def test_t_interval_and_welch() -> None:
    e = variants.t_interval([1.0, 2.0, 3.0, None])
    assert e.mean == 2.0 and e.low is not None and e.high is not None
    assert math.isclose(e.high - 2.0, 4.302653 / math.sqrt(3), rel_tol=1e-5)  # t(0.975, 2) · s / √n
    assert variants.t_interval([5.0]) == variants.Estimate((5.0,), 5.0)
    assert variants.t_interval([]).mean is None
    a, b = variants.t_interval([10.0, 12.0, 11.0]), variants.t_interval([8.0, 9.0, 10.0])
    lo, hi = variants.welch_interval(a, b) or (0.0, 0.0)
    assert lo < 2.0 < hi and math.isclose((lo + hi) / 2, 2.0)
    assert variants.welch_interval(a, variants.t_interval([9.0])) is None


def test_variant_table_and_headline(tmp_path: Path) -> None:
    runs = two_variants(tmp_path)
    runs.append(fake_run(tmp_path, "fast", 99, 10.0))
    runs[-1].meta["status"] = "interrupted"  # left out of the figures, and said so
    found = variants.by_variant(runs)
    assert [(v.name, v.runs) for v in found] == [("default", 4), ("fast", 4)]
    assert found[1].ignored == ("interrupted",)
    assert found[0].throughput.mean == pytest.approx(103.0) and found[1].throughput.mean == pytest.approx(123.0)
    columns, rows = variants.rows(found)
    assert columns[:3] == ["variant", "runs", "throughput, mean (95% interval)"]
    assert rows[0][:3] == ["default", "4", "103.0 pods/s (98.9 – 107.1)"]
    assert rows[1][1] == "4 (1 ignored: interrupted)" and rows[1][5] == "1 in 1 of 4 runs (max 1)"
    # what each variant cost: the scheduler's CPU per pod, the apiserver's writes per pod (absent: "-")
    assert columns[6:] == ["scheduler CPU per pod", "apiserver writes per pod"] and rows[0][7] == "-"
    for i, r in enumerate(r for r in runs if r.meta["variant"]["name"] == "default"):
        assert r.summary is not None
        r.summary["scheduler"]["cpu_seconds_per_pod"] = 0.002 + 0.001 * (i % 2)
        r.summary["apiserver"] = {"writes": {"per_pod": {"events": 3.0, "pods": 1.0, "pods/binding": 1.0}}}
    row = variants.rows(variants.by_variant(runs))[1][0]
    assert row[6].startswith("2.50 ms (") and row[7] == "5.00 (5.00 – 5.00)", row
    [line] = variants.headline(found)
    assert line.startswith("fast schedules 19.4% more pods/s than default (123.0 vs 103.0 pods/s; 95% interval "
                           "+15.1% to +23.8%; 4 runs each); p99 latency ")


def test_headline_says_when_variants_are_not_distinguishable_or_have_one_run(tmp_path: Path) -> None:
    close = [fake_run(tmp_path / "a", v, i, 100.0 + 5 * (i % 3) + (v == "b")) for v in "ab" for i in range(3)]
    [line] = variants.headline(variants.by_variant(close))
    assert line.startswith("b and a are not distinguishable in throughput (106.0 vs 105.0 pods/s; +1.0%, 95% interval")
    single = [fake_run(tmp_path / "b", "x", 0, 100.0), fake_run(tmp_path / "b", "y", 1, 90.0)]
    [line] = variants.headline(variants.by_variant(single))
    assert "x schedules 11.1% more pods/s than y (100.0 vs 90.0 pods/s, 1 run each: no interval" in line
    assert variants.headline(variants.by_variant(single[:1])) == []


def test_html_leads_with_the_variant_comparison(tmp_path: Path) -> None:
    rep = write_report(two_variants(tmp_path / "runs"), tmp_path / "out")
    html = rep.html.read_text()
    body = html[html.index("<h1>"):]
    first = re.search(r"<p class=\"headline\">(.*?)</p>", body)
    assert first is not None and first.group(1).startswith("fast schedules 19.4% more pods/s than default")
    assert body.index("headline") < body.index("<h2>By variant</h2>") < body.index("<h2>Runs</h2>") \
        < body.index("<h2>Per run</h2>") < body.index("<h2>Charts</h2>")
    table = body[body.index("<h2>By variant</h2>"):body.index("</table>")]
    assert table.count("<tr>") == 3 and "103.0 pods/s (98.9 – 107.1)" in table


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every chart's figure, laid out as it would be saved, instead of its PNG."""
    got: list[Figure] = []

    def keep(fig: Figure) -> bytes:
        fig.tight_layout()
        fig.canvas.draw()
        got.append(fig)
        return b""

    monkeypatch.setattr(charts, "_png", keep)
    yield got
    plt.close("all")


def _colours(fig: Figure) -> set[str]:
    """Colours of every line and bar (the black per-run dots and grey helpers are not data series)."""
    out = set()
    for ax in fig.axes:
        out |= {to_hex(line.get_color()) for line in ax.get_lines() if line.get_xdata() is not None
                and len(line.get_xdata()) > 2}
        for p in ax.patches:
            if isinstance(p, Rectangle):
                out |= {to_hex(p.get_facecolor())} if p.get_height() or p.get_width() else set()
            else:  # a histogram's outline
                out.add(to_hex(p.get_facecolor() if p.get_fill() else p.get_edgecolor()))
    return out - {"#000000", "#bbbbbb", "#ffffff"}


@pytest.mark.parametrize("key", list(charts.CHARTS))
def test_every_chart_has_one_colour_per_variant(tmp_path: Path, figures: list[Figure], key: str) -> None:
    runs = two_variants(tmp_path)
    charts.CHARTS[key][1](runs)
    [fig] = figures
    colours = charts._variant_colours(runs)
    assert _colours(fig) == {to_hex(c) for c in colours.values()}, key
    labels = {t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    if key != "cumulative":  # that one names the curve of each variant: "default · scheduled"
        assert {"default (4 runs)", "fast (4 runs)"} <= labels, labels


def _overlapping(labels: list[Any]) -> list[tuple[str, str]]:
    boxes = [(t.get_text(), t.get_window_extent()) for t in labels if t.get_text()]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


@pytest.mark.parametrize("names", [["default", "fast"] * 4, [f"variant-{i}" for i in range(8)]])
def test_no_tick_labels_overlap_with_8_runs(tmp_path: Path, figures: list[Figure], names: list[str]) -> None:
    runs = [fake_run(tmp_path, name, i, 100.0 + i) for i, name in enumerate(names)]
    for _, fn in charts.CHARTS.values():
        fn(runs)
    for fig in figures:
        for ax in fig.axes:
            assert not _overlapping(ax.get_xticklabels()), ax.get_title()
            assert not _overlapping(ax.get_yticklabels()), ax.get_title()


def test_control_plane_chart_names_components_on_horizontal_bars(tmp_path: Path, figures: list[Figure]) -> None:
    charts.control_plane(two_variants(tmp_path))
    ax = figures[0].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["apiserver", "etcd", "scheduler", "controller-manager",
                                                            "kwok"]
    bars = [p for p in ax.patches if p.get_width()]
    assert len(bars) == 10  # 5 components × 2 variants, not × 8 runs
    # bar = mean of the variant's 4 runs (cpu_seconds 3 + repeat index)
    assert sorted({round(p.get_width(), 3) for p in bars}) == [6.0, 7.0]


def test_charts_and_report_survive_a_run_with_nothing_stored(tmp_path: Path) -> None:
    import pandas as pd

    from kwokbench.store import StoredRun

    meta = {**fake_run(tmp_path, "x", 0, 1.0).meta, "status": "failed"}
    empty = StoredRun(tmp_path / "empty", meta, None, pd.DataFrame(), pd.DataFrame())
    full = fake_run(tmp_path, "x", 1, 50.0)
    for _, fn in charts.CHARTS.values():  # with nothing to draw, a chart says why instead
        got = fn([empty])
        assert isinstance(got, charts.NotApplicable) and got.reason.startswith("no ")
        drawn = fn([empty, full])
        assert isinstance(drawn, bytes) and drawn.startswith(b"\x89PNG")
    rep = write_report([empty], tmp_path / "out")
    assert "<td>x</td><td>0 (1 ignored: failed)</td><td>-</td>" in rep.html.read_text()
    assert rep.charts == [] and len(rep.left_out) == len(charts.CHARTS)


def test_the_report_leaves_out_the_charts_that_do_not_apply_and_says_why(tmp_path: Path) -> None:
    """Runs of kube-scheduler (no YuniKorn queues) whose control plane was not measured (an attached cluster's)."""
    runs = two_variants(tmp_path)
    for r in runs:
        assert r.summary is not None
        r.summary.pop("yunikorn")
        r.summary.pop("processes")
    out = tmp_path / "out"
    out.mkdir()
    (out / "yunikorn_queues.png").write_bytes(b"an earlier report's chart")
    rep = write_report(runs, out)
    assert rep.left_out == ["Control-plane CPU and memory: no run measured its control-plane processes",
                            "YuniKorn queues over time: no run has YuniKorn queues"]
    html = rep.html.read_text()
    shown = re.findall(r'<img alt="([^"]+)"', html)
    assert shown == [title for key, (title, _) in charts.CHARTS.items() if key not in ("control_plane",
                                                                                       "yunikorn_queues")]
    assert "YuniKorn queues" not in "".join(re.findall(r"<h3>[^<]*</h3><img", html))
    assert [f'<p class="left-out">{line}</p>' in html for line in rep.left_out] == [True, True]
    assert sorted(p.name for p in out.glob("*.png")) == sorted(p.name for p in rep.charts)
    assert not (out / "yunikorn_queues.png").exists() and not (out / "control_plane.png").exists()
