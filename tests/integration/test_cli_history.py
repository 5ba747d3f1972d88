"""history and detect through the real CLI: rows, exit codes, one-line errors and warnings. No cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, assert_one_line_error, kwokbench
from tests.unit.fake_runs import run_dir

STEP = [220.0, 231.0, 214.0, 226.0, 219.0, 224.0, 229.0, 216.0, 187.0, 190.0, 184.0, 193.0, 189.0, 186.0]
"""Throughput of 14 commits, the last 6 about 15% lower."""


def _history(root: Path) -> list[Path]:
    return [run_dir(root, i, v, commit=f"{i:02d}" + "c" * 38) for i, v in enumerate(STEP)]


def test_history_lists_runs_and_skips_an_unreadable_one_with_one_warning(tmp_path: Path) -> None:
    runs = _history(tmp_path)
    (runs[3] / "summary.json").write_text("{broken")
    res = kwokbench("history", str(tmp_path), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert len(rows) == len(STEP) - 1 and rows[0]["commit"] == "00" + "c" * 38 and rows[0]["throughput"] == 220.0
    warnings = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and "skipped an unreadable run" in warnings[0] and runs[3].name in warnings[0]
    table = kwokbench("history", str(tmp_path), "--metric", "throughput")
    assert table.returncode == 0 and "00cccccccc" in table.stdout and "index " in table.stdout


def test_history_piped_keeps_whole_cells_and_says_which_format_has_every_column(tmp_path: Path) -> None:
    """A CI log (stdout a pipe, COLUMNS=80): fewer columns, each whole, never "quicks…"."""
    runs = [run_dir(tmp_path, i, v, commit=f"{i:02d}" + "c" * 38, scenario="quickstart-with-gangs",
                    variant="coscheduling", ceiling=400.0) for i, v in enumerate(STEP[:3])]
    res = kwokbench("history", str(tmp_path), env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    assert "…" not in res.stdout
    table = [line for line in res.stdout.splitlines() if line.startswith("│")]
    assert [line.split("│")[1].strip() for line in table] == [r.name for r in runs]
    assert all("quickstart-with-gangs" in line and "coscheduling" in line for line in table)
    assert max(len(line) for line in res.stdout.splitlines() if line[:1] in "┏┃┡│└") <= 80
    [said] = [line for line in res.stdout.splitlines() if "left out" in line]
    assert said.startswith("column(s) left out to fit 80 characters (", 2) and "status" in said
    assert said.endswith("--format csv or --format json gives every column")
    # wide enough: every column, no such line
    wide = kwokbench("history", str(tmp_path), env={"COLUMNS": "250"})
    assert "left out" not in wide.stdout and "of ceiling" in wide.stdout and "main" in wide.stdout


def test_detect_finds_the_drop_and_an_ack_mutes_it(tmp_path: Path) -> None:
    _history(tmp_path / "runs")
    res = kwokbench("detect", str(tmp_path / "runs"), "--metric", "throughput:-10%", "--json")
    assert res.returncode == 1, (res.stdout, res.stderr)
    [change] = json.loads(res.stdout)["metrics"][0]["changes"]
    assert change["before"]["commit"].startswith("07") and change["after"]["commit"].startswith("08")
    assert change["direction"] == "regression" and change["new"]
    ack = tmp_path / "ack.yaml"
    ack.write_text("- metric: throughput\n  commit: 08ccccc\n  reason: accepted in review\n")
    res = kwokbench("detect", str(tmp_path / "runs"), "--metric", "throughput:-10%", "--ack", str(ack))
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert "acked" in res.stdout and "07cccccccccc → 08cccccccccc" in res.stdout


def test_detect_with_too_little_history_exits_3(tmp_path: Path) -> None:
    for i in range(4):
        run_dir(tmp_path, i, 200.0, commit=f"{i:02d}" + "c" * 38)
    res = kwokbench("detect", str(tmp_path), "--metric", "throughput:-10%")
    assert res.returncode == 3, (res.stdout, res.stderr)
    assert "not enough history" in res.stdout and "needs >= 7" in res.stdout


def test_detect_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    _history(tmp_path / "runs")
    ack = tmp_path / "ack.yaml"
    ack.write_text("- metric: thruput\n  commit: 08ccccc\n  reason: typo\n")
    res = kwokbench("detect", str(tmp_path / "runs"), "--ack", str(ack))
    assert_one_line_error(res, "entry 1: unknown metric 'thruput'")
    assert len(res.stderr.strip().splitlines()) == 1
    assert_one_line_error(kwokbench("detect", str(tmp_path / "runs"), "--metric", "speed:+5%"),
                          "unknown metric 'speed'")
    assert_one_line_error(kwokbench("detect", str(tmp_path / "nowhere")), "no such run directory")
    assert_one_line_error(kwokbench("history", str(tmp_path / "runs"), "--format", "xml"),
                          "--format 'xml': expected one of table, csv, json, parquet")


def test_report_history_writes_the_trend_page_and_bad_input_is_2(tmp_path: Path) -> None:
    _history(tmp_path / "runs")
    res = kwokbench("report", "--history", str(tmp_path / "runs"), "--metric", "throughput:-10%", "-o",
                    str(tmp_path / "out"))
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert "trend.html (14 runs, 1 change point(s), 1 new regression(s))" in res.stdout
    page = (tmp_path / "out" / "trend.html").read_text()
    assert "Plotly.newPlot(" in page and "-15.3% regression" in page
    # the index file stands for the folder it indexes
    index = tmp_path / "runs" / ".kwokbench-history.duckdb"
    res = kwokbench("report", "--history", str(index), "-o", str(tmp_path / "again"))
    assert res.returncode == 0 and (tmp_path / "again" / "trend.html").exists(), res.stderr
    assert_one_line_error(kwokbench("report", "--history", str(tmp_path / "runs"), "--baseline",
                                    str(tmp_path / "runs"), "-o", str(tmp_path / "x")), "--baseline goes with")
    assert_one_line_error(kwokbench("report", str(tmp_path / "runs"), "--lookback", "3", "-o", str(tmp_path / "x")),
                          "--lookback goes with --history")
    assert_one_line_error(kwokbench("report", "--history", str(tmp_path / "runs"), "--metric", "speed:-10%"),
                          "unknown metric 'speed'")
    assert_one_line_error(kwokbench("report", "--history", str(tmp_path / "runs"), "--scenario", "nope"),
                          "no run of scenario nope")


FLAT = [200.0, 203.0, 198.0, 201.0, 199.0, 202.0, 200.0, 197.0, 201.0, 199.0, 203.0, 198.0, 200.0, 202.0]
"""Throughput of 14 commits without a change: every command below exits 0."""


def test_history_detect_and_report_at_once_on_one_index(tmp_path: Path) -> None:
    """Three kwokbench processes on one folder's index at once, each of them perhaps indexing: none fails
    (DuckDB lets one process write the file: a writer waits, readers share it)."""
    runs = [run_dir(tmp_path / "runs", i, v, commit=f"{i:02d}" + "c" * 38) for i, v in enumerate(FLAT)]
    commands = [["history", str(tmp_path / "runs")],
                ["detect", str(tmp_path / "runs"), "--metric", "throughput:-10%"],
                ["report", "--history", str(tmp_path / "runs"), "--metric", "throughput:-10%", "-o",
                 str(tmp_path / "out")]]
    for round_ in ("no index yet", "index up to date", "changed runs"):
        if round_ == "changed runs":
            for r in runs[::3]:  # rewritten summaries, as `analyse` leaves them: every command writes rows
                st = (r / "summary.json").stat()
                os.utime(r / "summary.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        procs = [subprocess.Popen([sys.executable, "-m", "kwokbench", *c], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"},
                                  stdin=subprocess.DEVNULL, cwd=REPO) for c in commands]
        results = [(c[0], p.returncode, out, err) for c, p in zip(commands, procs, strict=True)
                   for out, err in [p.communicate(timeout=300)]]
        assert [(name, code) for name, code, _, _ in results] == [("history", 0), ("detect", 0), ("report", 0)], \
            (round_, results)
        assert all("lock" not in err.lower() and "warning" not in err for _, _, _, err in results), (round_, results)
    assert "14 run(s) read" not in results[0][2]  # the last round read only what changed
