"""The trace benchmarks read files kwokbench does not ship: their pins match the guide, and without the files they
stop in one line (exit 2), not a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_traces  # noqa: E402


def test_the_guide_lists_every_pinned_file_with_its_sha256() -> None:
    guide = (ROOT / "docs" / "guides" / "traces.md").read_text()
    listed = dict((name, sha) for sha, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", guide, flags=re.M))
    assert listed == bench_traces.TRACE_FILES


def test_the_pins_are_the_shipped_checksums_where_the_files_are_here() -> None:
    sums = Path(os.environ.get("KWOKBENCH_TRACES") or ROOT.parent / "shared" / "traces") / "SHA256SUMS"
    if not sums.is_file():
        pytest.skip(f"no trace files here ({sums.parent}): the pins are checked where they are")
    shipped = dict((name, sha) for sha, name in (line.split() for line in sums.read_text().splitlines() if line))
    assert {n: shipped.get(n) for n in bench_traces.TRACE_FILES} == bench_traces.TRACE_FILES


@pytest.mark.parametrize("bench", ["bench_traces.py", "bench_gpushare_offline.py"])
def test_without_the_trace_files_a_benchmark_says_so_in_one_line(bench: str, tmp_path: Path) -> None:
    (tmp_path / "alibaba-gpu-2023").mkdir()
    (tmp_path / "alibaba-gpu-2023" / "openb_node_list_all_node.csv").write_text("sn,cpu_milli\n")
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench)], capture_output=True, text=True,
                         env={**os.environ, "KWOKBENCH_TRACES": str(tmp_path)}, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith(f"error: {tmp_path}/alibaba-gpu-2023/openb_node_list_all_node.csv: sha256 is not the "
                           "pinned 5a85c2af79c66a1e…"), line
    (tmp_path / "alibaba-gpu-2023" / "openb_node_list_all_node.csv").unlink()
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench)], capture_output=True, text=True,
                         env={**os.environ, "KWOKBENCH_TRACES": str(tmp_path)}, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "is not here: the trace files are not shipped" in res.stderr, res.stderr
