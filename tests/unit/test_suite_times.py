"""The suite's time table (tests/support/times.py) from a hand-made time file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.times import by_file, by_tier, load_times, table

TIMES = {
    "tests/e2e/test_a.py::test_one": {"setup": 100.0, "call": 20.0, "teardown": 0.5, "outcome": "passed"},
    "tests/e2e/test_a.py::test_two": {"setup": 0.0, "call": 30.0, "teardown": 0.0, "outcome": "passed"},
    "tests/e2e/test_b.py::test_x[p]": {"setup": 1.0, "call": 5.0, "teardown": 0.0, "outcome": "failed"},
    "tests/unit/test_c.py::test_y": {"setup": 0.0, "call": 0.25, "teardown": 0.0, "outcome": "passed"},
}


def test_files_sum_their_phases_slowest_first() -> None:
    rows = by_file(TIMES)
    assert [r["file"] for r in rows] == ["tests/e2e/test_a.py", "tests/e2e/test_b.py", "tests/unit/test_c.py"]
    assert rows[0]["tests"] == 2 and rows[0]["setup"] == 100.0 and rows[0]["call"] == 50.0
    assert rows[0]["total"] == pytest.approx(150.5)


def test_tiers_and_the_table() -> None:
    assert by_tier(TIMES) == {"e2e": (3, pytest.approx(156.5)), "unit": (1, 0.25)}
    md = table(TIMES, top=2)
    assert "| all | 4 | 2.6 |" in md
    assert "| `tests/e2e/test_a.py` | 2 | 100 | 50 | 2.5 |" in md
    assert "test_b.py` |" not in md  # under half a minute: left out of the file rows
    assert md.count("::test_") == 2  # the two slowest tests


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"version": 2, "tests": {}}))
    with pytest.raises(SystemExit, match="not a time file of version 1"):
        load_times(f)
    f.write_text(json.dumps({"version": 1, "tests": TIMES}))
    assert load_times(f) == TIMES
