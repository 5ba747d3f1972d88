"""The measurement protocol and the versioned documents of a run (pure, no cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwokbench.errors import StoreError
from kwokbench.measure import Measurement, RunContext
from kwokbench.progress import Silent
from kwokbench.runner import _stop_measurements
from kwokbench.store import CHAOS, FAILED_SCHEDULING, PROMETHEUS, SUMMARY, RunDir, read_doc


class Counting:
    """A trivial measurement: it records its calls, and writes one document when stopped."""

    def __init__(self, name: str, calls: list[str], fail: str = "") -> None:
        self.name, self.calls, self.fail = name, calls, fail

    def start(self, ctx: RunContext) -> None:
        self.calls.append(f"start {self.name}")

    def stop(self) -> None:
        self.calls.append(f"stop {self.name}")
        if self.fail == "stop":
            raise RuntimeError("boom")

    def collect(self, ctx: RunContext) -> None:
        self.calls.append(f"collect {self.name}")
        if self.fail == "collect":
            raise RuntimeError("boom")


class Warnings(Silent):
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)


def test_measurements_stop_in_reverse_then_collect_and_one_failure_stops_nothing_else() -> None:
    calls: list[str] = []
    ms: list[Measurement] = [Counting("a", calls), Counting("b", calls, fail="stop"),
                             Counting("c", calls, fail="collect")]
    rep = Warnings()
    ctx: Any = object()  # the protocol hands it through; these measurements do not look at it
    for m in ms:
        m.start(ctx)
    _stop_measurements(ms, ctx, rep)
    assert calls == ["start a", "start b", "start c", "stop c", "stop b", "stop a", "collect a", "collect b",
                     "collect c"]
    assert rep.warnings == ["b: could not stop cleanly: boom", "c: could not collect: boom"]
    calls.clear()
    _stop_measurements(ms, None, rep)  # the cluster never came up: stop only, nothing to collect from
    assert calls == ["stop c", "stop b", "stop a"]


def test_older_documents_are_migrated_and_newer_ones_refused(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    (tmp_path / CHAOS).write_text(json.dumps([{"action": "delete-nodes"}]))  # before versioning: a bare list
    (tmp_path / FAILED_SCHEDULING).write_text(json.dumps({"default/p": "0/3 nodes are available"}))
    (tmp_path / SUMMARY).write_text(json.dumps({"pods_scheduled": 3}))  # summary v1 had no version key
    chaos = read_doc(tmp_path, CHAOS)
    assert chaos == {"events": [{"action": "delete-nodes"}], "format_version": 1, "migrated_from": 0}
    assert read_doc(tmp_path, FAILED_SCHEDULING)["messages"] == {"default/p": "0/3 nodes are available"}
    summary = read_doc(tmp_path, SUMMARY)
    assert summary is not None and summary["pods_scheduled"] == 3 and summary["migrated_from"] == 0
    rd.write_doc(PROMETHEUS, {"available": False})
    assert read_doc(tmp_path, PROMETHEUS) == {"format_version": 1, "available": False}
    assert read_doc(tmp_path, "host.json") is None
    (tmp_path / CHAOS).write_text(json.dumps({"format_version": 7, "events": []}))
    with pytest.raises(StoreError, match="format version 7 is not supported"):
        read_doc(tmp_path, CHAOS)
