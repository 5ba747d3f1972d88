"""A history of ten real runs, one per (made-up) commit: detect finds a step injected into the last five, an ack
file mutes it, and `report --history` opens in headless Chromium with its plot and a working two-run comparison.

The ten runs were made on the session cluster on 2026-11-26 (100 pods at 100/s each: arrival-bound, so their
throughput is steady) and are kept recorded, meta.json and summary.json of each, in tests/e2e/data/history: detect
and the trend page read nothing else. What makes such a history live is checked by one run here: it records its
commit and ref, and the history index reads it (~10 s, where the ten live runs cost 76 s). The step is made in a
copy of the ten (throughput halved in the last five summaries), as a regression would leave it: a step well beyond
what a loaded CI host does to one run's throughput (a 20% step was once placed a commit early)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kwokbench.cluster import ClusterInfo
from kwokbench.store import SUMMARY, find_runs, read_meta
from tests.conftest import REPO, kwokbench
from tests.support.browser import headless

COMMITS = [f"{i:02d}" + "7e2e" * 9 + "ab" for i in range(10)]
STEP_AT = 5
"""The first commit after the step (its runs and every later one's lose half their throughput)."""


RECORDED = Path(__file__).parent / "data" / "history" / "quickstart"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stepped = tmp_path_factory.mktemp("history") / "quickstart"
    shutil.copytree(RECORDED, stepped)
    runs = find_runs([stepped])
    assert sorted(read_meta(r)["code"]["commit"] for r in runs) == COMMITS
    for run in runs:
        if COMMITS.index(read_meta(run)["code"]["commit"]) >= STEP_AT:
            doc = json.loads((run / SUMMARY).read_text())
            doc["throughput"]["average"] *= 0.5
            (run / SUMMARY).write_text(json.dumps(doc))
    return stepped


def test_a_run_records_its_commit_and_ref_for_the_history(cluster: ClusterInfo, tmp_path: Path) -> None:
    """What the recorded history was made of, live: a run given --commit and --ref stores them, and `history`
    lists it under that commit with its throughput."""
    commit = "ff" + "7e2e" * 9 + "ab"
    kwokbench("run", str(REPO / "scenarios/quickstart.yaml"), "--cluster", cluster.name, "--out", str(tmp_path),
              "--commit", commit, "--ref", "main", "--set", "workloads.0.count=100",
              "--set", "workloads.0.arrival.qps=100", check=True)
    [run] = find_runs([tmp_path / "quickstart"])
    code = read_meta(run)["code"]
    assert code["commit"] == commit and code["ref"] == "main", code
    res = kwokbench("history", str(tmp_path), "--format", "json", "--metric", "throughput", check=True)
    rows = json.loads(res.stdout)
    assert [r["commit"] for r in rows] == [commit] and rows[0]["throughput"] > 0, rows


def test_detect_finds_the_step_and_an_ack_mutes_it(history: Path, tmp_path: Path) -> None:
    res = kwokbench("detect", str(history), "--metric", "throughput:-10%", "--json")
    assert res.returncode == 1, (res.stdout, res.stderr)
    [metric] = json.loads(res.stdout)["metrics"]
    [change] = metric["changes"]
    assert change["before"]["commit"] == COMMITS[STEP_AT - 1] and change["after"]["commit"] == COMMITS[STEP_AT]
    assert change["direction"] == "regression" and -0.65 < change["magnitude"] < -0.35
    ack = tmp_path / "ack.yaml"
    ack.write_text(f"- metric: throughput\n  commit: {COMMITS[STEP_AT][:10]}\n  reason: e2e step\n")
    res = kwokbench("detect", str(history), "--metric", "throughput:-10%", "--ack", str(ack))
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert "acked" in res.stdout


def test_trend_opens_in_chromium_with_its_plot_and_comparison(history: Path, tmp_path: Path) -> None:
    res = kwokbench("report", "--history", str(history), "-o", str(tmp_path / "trend"), check=True)
    assert "1 new regression(s)" in res.stdout
    page = tmp_path / "trend" / "trend.html"

    from selenium.webdriver.support.ui import Select

    driver = headless(tmp_path / "profile")
    try:
        driver.get(page.as_uri())
        # the plot drew: one line per default metric (throughput, latency_p99) and the change point's line
        assert driver.execute_script("return document.querySelectorAll('.plotly .main-svg').length") > 0
        assert driver.execute_script("return document.querySelectorAll('.scatterlayer .trace').length") == 2
        assert driver.execute_script("return document.querySelectorAll('.shapelayer path').length") >= 1
        assert "regression" in driver.find_element("css selector", "table.changes").text
        runs = driver.find_elements("css selector", "#baseline option")
        assert len(runs) == len(COMMITS)
        Select(driver.find_element("id", "baseline")).select_by_index(0)
        Select(driver.find_element("id", "candidate")).select_by_index(len(COMMITS) - 1)
        rows = {r.find_elements("tag name", "td")[0].text: [td.text for td in r.find_elements("tag name", "td")]
                for r in driver.find_elements("css selector", "#compare tbody tr")}
        assert {"throughput", "latency_p99", "unscheduled"} <= set(rows)
        assert rows["throughput"][5] == "worse" and rows["throughput"][4].startswith("-")
        assert rows["unscheduled"][5] == "pass"
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()
