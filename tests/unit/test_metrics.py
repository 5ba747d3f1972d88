"""Metric derivations on real /metrics payloads captured from this toolchain (tests/unit/golden):
a quickstart run in which 1000 pods were bound between the first and the last snapshot."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard

from kwokbench.figures.analyse import kueue_cross_check
from kwokbench.metrics.derive import (
    SCRAPED,
    _bucket_quantile,
    binding_rate,
    client_bound,
    counter_increase,
    derive,
    histogram_quantiles,
    increase,
    kueue_section,
    load_series,
)
from kwokbench.metrics.parse import BINDING, sum_samples
from kwokbench.metrics.scrape import read_snapshots, write_frame

GOLDEN = Path(__file__).parent / "golden"
T_FIRST, T_LAST = 1795329995.19, 1795330007.69


def _payload(comp: str, tag: str) -> bytes:
    return gzip.decompress((GOLDEN / f"{comp}-{tag}.prom.gz").read_bytes())


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    (tmp_path / "scrapes").mkdir()
    for comp in ("kube-apiserver", "kube-scheduler"):
        with (tmp_path / "scrapes" / f"{comp}.prom.zst").open("wb") as f, \
                zstandard.ZstdCompressor().stream_writer(f) as w:
            write_frame(w, T_FIRST, 200, 5.0, _payload(comp, "first"))
            write_frame(w, T_FIRST + 1, -1, 10_000.0, b"")  # a failed scrape is kept but carries no data
            write_frame(w, T_LAST, 200, 5.0, _payload(comp, "last"))
    return tmp_path


def test_raw_payload_counts_bindings() -> None:
    assert sum_samples(_payload("kube-apiserver", "first").decode(), "apiserver_request_total", BINDING) == 0
    assert sum_samples(_payload("kube-apiserver", "last").decode(), "apiserver_request_total", BINDING) == 1000


def test_snapshot_stream_roundtrip_and_torn_tail(run_dir: Path) -> None:
    f = run_dir / "scrapes" / "kube-scheduler.prom.zst"
    snaps = list(read_snapshots(f))
    assert [s.status for s in snaps] == [200, -1, 200]
    assert snaps[2].payload == _payload("kube-scheduler", "last")
    torn = run_dir / "torn.zst"
    data = zstandard.ZstdDecompressor().decompressobj().decompress(f.read_bytes())
    torn.write_bytes(zstandard.ZstdCompressor().compress(data[: len(data) - 1000]))
    assert len(list(read_snapshots(torn))) == 2  # a run killed mid-write loses only the torn frame


def test_series_and_binding_rate_from_real_payloads(run_dir: Path) -> None:
    series = load_series(run_dir)
    assert set(series["component"]) == {"kube-apiserver", "kube-scheduler"}
    assert (series["name"] == SCRAPED).sum() == 4
    rate = binding_rate(series, None)
    assert rate["total_bindings"] == 1000  # absent in the first snapshot counts as 0
    assert rate["average"] == pytest.approx(1000 / (T_LAST - T_FIRST), rel=1e-3)
    attempts = counter_increase(series, "kube-scheduler", "scheduler_schedule_attempts_total", by="result")
    assert attempts == {"scheduled": 1000.0}
    h = histogram_quantiles(series, "kube-scheduler", "scheduler_scheduling_attempt_duration_seconds",
                            result="scheduled")
    assert h["count"] == 1000 and 0 < h["p50"] <= h["p90"] <= h["p99"] < 1
    ext = histogram_quantiles(series, "kube-scheduler", "scheduler_framework_extension_point_duration_seconds",
                              group_by="extension_point")
    assert {"Filter", "Score", "Bind"} <= set(ext)


def test_derive_cross_checks_against_timeline(run_dir: Path) -> None:
    created = np.linspace(T_FIRST + 0.5, T_LAST - 1.0, 1000)
    pods = pd.DataFrame({"created": created, "scheduled": created + 0.01})
    _, series, sec = derive(run_dir, pods, client_qps=5000)
    assert len(series) and set(series.columns) == {"t", "component", "name", "labels", "value"}
    assert sec["cross_check"]["agrees"] and sec["cross_check"]["bindings_from_metric"] == 1000
    assert sec["labels"] == []
    _, _, sec = derive(run_dir, pods.iloc[:900], client_qps=5000)
    assert not sec["cross_check"]["agrees"]  # a mismatch is reported, not hidden
    assert sec["cross_check"]["relative_difference"] == pytest.approx(100 / 900)


def test_increase_handles_counter_reset() -> None:
    assert increase(np.array([0.0, 10, 25, 3, 8])).tolist() == [10, 15, 3, 5]


def test_bucket_quantile_matches_histogram_quantile() -> None:
    le = np.array([0.1, 0.2, 0.4, np.inf])
    cum = np.array([10.0, 30, 40, 40])
    assert _bucket_quantile(0.5, le, cum) == pytest.approx(0.15)  # rank 20: halfway through (0.1, 0.2]
    assert _bucket_quantile(0.25, le, cum) == pytest.approx(0.1 * 10 / 10)
    assert _bucket_quantile(0.99, le, np.array([0.0, 0, 0, 5])) == 0.4  # +Inf bucket: highest finite bound


def _frame(rows: list[tuple[float, str, str, dict[str, str], float]]) -> pd.DataFrame:
    return pd.DataFrame([(t, c, n, json.dumps(lb, sort_keys=True), v) for t, c, n, lb, v in rows],
                        columns=["t", "component", "name", "labels", "value"])


def test_client_bound_by_limiter_wait_and_by_plateau() -> None:
    sched = "kube-scheduler"
    rows = [(t, sched, SCRAPED, {}, 1.0) for t in (0.0, 10.0)]
    rows += [(0.0, sched, "rest_client_rate_limiter_duration_seconds_sum", {}, 0.0),
             (10.0, sched, "rest_client_rate_limiter_duration_seconds_sum", {}, 4.0),
             (0.0, sched, "rest_client_rate_limiter_duration_seconds_count", {}, 0.0),
             (10.0, sched, "rest_client_rate_limiter_duration_seconds_count", {}, 500.0)]
    reasons = client_bound(_frame(rows), {"p50": 49.0}, client_qps=50, window_seconds=10)
    assert len(reasons) == 2 and all(r.startswith("client-bound") for r in reasons)
    calm = [(t, sched, SCRAPED, {}, 1.0) for t in (0.0, 10.0)]
    assert client_bound(_frame(calm), {"p50": 400.0}, client_qps=5000, window_seconds=10) == []


def test_kueue_section_from_real_payloads(tmp_path: Path) -> None:
    """Kueue v0.19.2's /metrics at the start and end of a kueue-vs-direct run (9 Jobs under a quota
    that holds 3 at a time, tests/e2e/test_kueue.py's settings), as scraped there."""
    (tmp_path / "scrapes").mkdir()
    with (tmp_path / "scrapes" / "kueue.prom.zst").open("wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        write_frame(w, 100.0, 200, 5.0, _payload("kueue", "first"))
        write_frame(w, 120.0, 200, 5.0, _payload("kueue", "last"))
    series = load_series(tmp_path)
    k = kueue_section(series, {"cpu_seconds": 0.4})
    assert k["admitted_workloads"] == {"batch": 9.0}
    assert k["admission_attempts"]["success"] == 9.0 and "inadmissible" in k["admission_attempts"]
    wait = k["admission_wait_time_seconds"]["batch"]
    assert wait["count"] == 9 and 4 < wait["mean"] < 10  # the later waves waited for earlier pods to finish
    assert k["pending_workloads_max"] == {"batch": 0.0}  # both snapshots are taken with nothing queued
    assert k["cpu_seconds"] == 0.4
    jobs = [{"jobs_admitted": 9}]
    assert kueue_cross_check(k, jobs)["agrees"]
    assert not kueue_cross_check(k, [{"jobs_admitted": 7}])["agrees"]
