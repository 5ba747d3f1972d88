"""`report` and `gate` over two real runs; the HTML opens in headless Chromium (or Chrome) with its charts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwokbench.cluster import ClusterInfo
from kwokbench.report.charts import CHARTS
from tests.conftest import REPO, assert_one_line_error, kwokbench
from tests.support.browser import headless

EVIL = "<script>alert('x')</script> & co"


@pytest.fixture(scope="module")
def two_runs(cluster: ClusterInfo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    for _ in range(2):
        kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", cluster.name, "--out", str(out),
                  "--set", "workloads.0.count=300", "--set", "workloads.0.arrival.qps=150",
                  "--set", f"description={EVIL}", check=True)
    return out / "quickstart"


def test_report_opens_in_chromium_with_charts_and_escapes(two_runs: Path, tmp_path: Path) -> None:
    runs = sorted(p for p in two_runs.iterdir() if p.is_dir())
    res = kwokbench("report", str(runs[1]), "--baseline", str(runs[0]), "-o", str(tmp_path / "rep"), check=True)
    assert "report.html" in res.stdout
    html = (tmp_path / "rep" / "report.html").read_text()
    assert EVIL not in html and "&lt;script&gt;" in html
    assert "src=\"http" not in html and "<link" not in html  # self-contained
    assert '<p class="left-out">YuniKorn queues over time: no run has YuniKorn queues</p>' in html
    # ... and the quickstart requests no GPUs: GPU allocation against arrived workload is left out too
    assert '<p class="left-out">GPU allocation against arrived workload: no run requested GPUs</p>' in html
    # ... and it has one workload: there are no tenants to draw apart
    assert "CPUs held by each workload over time: no run has several workloads" in html
    assert html.count('class="left-out"') == 3 and "chart left out, YuniKorn queues over time" in res.stdout
    md = (tmp_path / "rep" / "summary.md").read_text()
    assert md.startswith("## kwokbench: quickstart") and "pods scheduled" in md

    driver = headless(tmp_path / "profile")
    try:
        driver.get((tmp_path / "rep" / "report.html").as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        # no YuniKorn queues, no GPUs, one workload: those three charts are left out, said so, not drawn empty
        assert len(images) == len(CHARTS) - 3
        assert all(done and w > 300 and h > 200 for done, w, h in images), images
        assert driver.execute_script("return document.scripts.length") == 0  # the scenario's <script> is text
        assert EVIL in driver.find_element("tag name", "body").text
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        png = tmp_path / "shot.png"
        driver.save_screenshot(str(png))
    finally:
        driver.quit()
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("L"))
    assert int(pixels.max()) - int(pixels.min()) > 100  # not blank
    assert len(np.unique(pixels)) > 20


def test_gate_on_two_runs_is_inconclusive_and_bad_input_is_2(two_runs: Path, tmp_path: Path) -> None:
    runs = sorted(p for p in two_runs.iterdir() if p.is_dir())
    res = kwokbench("gate", "--baseline", str(runs[0]), "--candidate", str(runs[1]),
                    "--junit", str(tmp_path / "j.xml"))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "too few samples" in res.stdout
    assert "<testsuite" in (tmp_path / "j.xml").read_text()
    assert_one_line_error(kwokbench("gate", "--baseline", str(runs[0]), "--candidate", str(tmp_path / "none")),
                          "no such run directory")
    assert_one_line_error(kwokbench("gate", "--baseline", str(runs[0]), "--candidate", str(runs[1]),
                                    "--metric", "speed:10%"), "unknown metric 'speed'")
