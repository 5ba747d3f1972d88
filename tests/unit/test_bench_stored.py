"""benchmarks/stored.py's provenance of figures computed here: the command a data file records is the one to run
again, without the path the machine that ran it wrote the file to."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import stored  # noqa: E402


def test_the_recorded_command_leaves_out_where_data_was_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_x.py", "--nodes", "10000", "--data", "/work/runs/x.json", "--repeat",
                                      "2", "--data=/tmp/y.json"])
    doc = stored.here("what", "bench_x.py")
    assert doc["command"] == ".venv/bin/python benchmarks/bench_x.py --nodes 10000 --repeat 2"
    assert stored.here("what", "bench_x.py", "--given")["command"] == ".venv/bin/python benchmarks/bench_x.py --given"
    # an argument the shell needs quoted stays quoted (an empty size list: --nodes '')
    monkeypatch.setattr(sys, "argv", ["bench_x.py", "--up-nodes", "10000", "--nodes", "", "--data", "x.json"])
    assert stored.here("what", "bench_x.py")["command"].endswith("bench_x.py --up-nodes 10000 --nodes ''")
