"""The console without a terminal (CI logs): final counts, heartbeats, whole lines, wide tables."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from kwokbench.cli import console
from kwokbench.toolchain.install import Component, Toolchain


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """stderr and stdout of the console as a pipe (not a terminal), COLUMNS unset."""
    monkeypatch.delenv("COLUMNS", raising=False)
    buf = io.StringIO()
    monkeypatch.setattr(console, "console", console.make_console(stderr=True, file=buf))
    monkeypatch.setattr(console, "out", console.make_console(file=buf))
    return buf


def test_counter_end_line_shows_the_count_reached(log: io.StringIO) -> None:
    with console.counter("creating 100 nodes", 100) as advance:
        for n in range(1, 101):
            advance(n)
    lines = log.getvalue().splitlines()
    assert lines[0] == "… creating 100 nodes"
    assert lines[-1].startswith("✓ creating 100 nodes (100/100) ("), lines
    assert "0/100" not in log.getvalue().replace("100/100", "")


def test_counter_that_fails_prints_no_success_line(log: io.StringIO) -> None:
    with pytest.raises(RuntimeError), console.counter("creating 10 nodes", 10) as advance:
        advance(3)
        raise RuntimeError("boom")
    assert "✓" not in log.getvalue()


def test_heartbeat_while_a_step_reports_nothing(log: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "HEARTBEAT_SECONDS", 0.05)
    with console.status("building kubernetes") as update:
        time.sleep(0.3)  # e.g. a silent `go build`
        update("go build k8s.io/kubernetes/cmd/kube-apiserver")
        time.sleep(0.2)
    lines = log.getvalue().splitlines()
    beats = [line for line in lines if line.startswith("  … building kubernetes (")]
    assert len(beats) >= 3, lines
    assert beats[-1].endswith("s): go build k8s.io/kubernetes/cmd/kube-apiserver")
    assert lines[-1].startswith("✓ building kubernetes (")
    n = len(lines)
    time.sleep(0.2)  # the heartbeat stopped with the step
    assert len(log.getvalue().splitlines()) == n


def test_heartbeat_of_a_counter_shows_progress(log: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "HEARTBEAT_SECONDS", 0.05)
    with console.counter("creating 5000 nodes", 5000) as advance:
        advance(1200)
        time.sleep(0.3)
        advance(5000)
    assert any(line.startswith("  … creating 5000 nodes (") and line.endswith("s): 1200/5000")
               for line in log.getvalue().splitlines()), log.getvalue()


def test_default_heartbeat_is_the_readmes_30_seconds() -> None:
    assert console.HEARTBEAT_SECONDS == 30.0


def test_long_lines_are_never_split_and_tables_are_wide(log: io.StringIO) -> None:
    path = "/very/" + "long-folder-name/" * 20 + "run"
    console.info(f"stored in {path}")
    console.warn(f"{path} is a long path")
    console.table("t", ["path", "note"], [[path, "x"], ["short", "y " * 40]])
    lines = log.getvalue().splitlines()
    assert lines[0] == f"stored in {path}" and lines[1] == f"warning: {path} is a long path"
    assert max(len(line) for line in lines[2:]) <= console.PLAIN_WIDTH
    assert max(len(line) for line in lines[2:]) > 80


def test_columns_sets_the_width_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    buf = io.StringIO()
    c = console.make_console(file=buf)
    assert c.width == 120
    c.print("x" * 300)
    assert buf.getvalue() == "x" * 300 + "\n"
    monkeypatch.delenv("COLUMNS")
    assert console.make_console(file=io.StringIO()).width == console.PLAIN_WIDTH


def test_a_fitted_table_keeps_whole_columns_in_priority_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    buf = io.StringIO()
    monkeypatch.setattr(console, "out", console.make_console(file=buf))
    columns = ["run", "scenario", "host", "throughput", "latency_p99"]
    rows = [["20260101T000000Z-0a1b2c", "quickstart-gang-scheduling", "ci-runner-1", "212.5", "0.031"]]
    left_out = console.fitted_table("t", columns, rows, ["run", "throughput", "scenario", "latency_p99"])
    lines = buf.getvalue().splitlines()
    # run (23) + throughput (10) + latency_p99 (11) fit in 60 with their borders; scenario (26) does not
    assert left_out == ["scenario", "host"]
    assert "…" not in buf.getvalue() and max(len(line.rstrip()) for line in lines) <= 60
    assert "20260101T000000Z-0a1b2c │ 212.5      │ 0.031" in buf.getvalue()
    assert lines[2].split("┃")[1:-1] == [" run                     ", " throughput ", " latency_p99 "]
    # a first column wider than the console is still shown (rich wraps it): a table is never empty
    assert console.fitted_table("t", ["run"], [["x" * 80]], ["run"]) == []


def test_a_silent_build_step_prints_heartbeats(log: io.StringIO, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """The toolchain build through the real reporter: a command that prints nothing for a while (as
    `go build` does for minutes) still shows a line every HEARTBEAT_SECONDS, naming the command."""
    monkeypatch.setattr(console, "HEARTBEAT_SECONDS", 0.05)
    comp = Component("slow", "v1", (), lambda c, out: [["sh", "-c", "sleep 0.4"]])
    Toolchain(tmp_path)._build(comp, console.RichReporter())
    beats = [line for line in log.getvalue().splitlines() if line.startswith("  … building slow v1")]
    assert len(beats) >= 3 and beats[-1].endswith("s): sh -c sleep 0.4"), log.getvalue()
    assert (tmp_path / "toolchain" / "slow-v1").is_dir()


def test_the_core_reports_events_and_the_console_chooses_their_look(log: io.StringIO) -> None:
    rep = console.RichReporter()
    rep.info("path /tmp/[bold]x[/] kept as it is")  # a message is text, never markup
    rep.heading("repeat 1/2, variant a")
    rep.cached("kwok v0.8.0", "/cache/[x]")
    text = log.getvalue()
    assert "path /tmp/[bold]x[/] kept as it is" in text
    assert "repeat 1/2, variant a" in text and "kwok v0.8.0: cached in /cache/[x]" in text
    assert console.styled("regression", "regression") == "[red]regression[/]"
    assert console.styled("other", "[x]") == "\\[x]"
