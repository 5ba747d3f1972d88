"""Offered vs sent vs accepted on synthetic request logs: every way a phase can fail to get its load."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kwokbench.figures.summary import summarize
from kwokbench.report.table import submit_rows, summary_rows

N, QPS = 1000, 100.0


def _log(dispatch_late: float = 0.0, wait: float = 0.0, wire: float = 0.005, status: int = 201,
         serve_rate: float | None = None) -> pd.DataFrame:
    """N requests due at QPS/s. ``serve_rate``: a server that completes one request per 1/serve_rate s
    (a queue builds when it is below QPS)."""
    sched = np.arange(N) / QPS + 1000.0
    dispatched = sched + dispatch_late
    sent = dispatched + wait
    answered = sent + wire
    if serve_rate is not None:
        answered = np.maximum.accumulate(np.maximum(sent + wire, 1000.0 + np.arange(N) / serve_rate))
    return pd.DataFrame({"phase": ["p"] * N, "index": np.arange(N), "scheduled": sched, "dispatched": dispatched,
                         "sent": sent, "latency": answered - dispatched, "status": np.full(N, status)})


def _phase(req: pd.DataFrame, connections: dict[str, int] | None = None) -> dict[str, object]:
    phases = [{"name": "p", "target_qps": QPS, "connections": connections or {"cap": 64, "peak": 8,
                                                                              "waited_at_cap": 0}}]
    return summarize(pd.DataFrame(), req, phases, N)["submit"][0]


def test_a_server_that_keeps_up_is_accepted_within_one_percent() -> None:
    ph = _phase(_log())
    assert ph["offered_qps"] == pytest.approx(QPS)
    assert ph["sent_qps"] == pytest.approx(QPS, rel=0.01)
    assert ph["accepted_qps"] == pytest.approx(QPS, rel=0.01)
    assert ph["rates"]["steady"]["accepted"] == pytest.approx(QPS, rel=0.01)
    assert ph["not_accepted"] is None
    assert ph["rates"]["wire_seconds"]["p50"] == pytest.approx(0.005)


def test_pacer_on_time_but_server_slow_is_an_overloaded_apiserver() -> None:
    # the pacer sends on time, but connections are all busy: requests wait, then each takes 0.3 s
    ph = _phase(_log(wait=0.0, wire=0.3, serve_rate=38.0), {"cap": 64, "peak": 64, "waited_at_cap": 600})
    assert ph["accepted_qps"] == pytest.approx(38.0, rel=0.05)
    assert ph["rates"]["steady"]["accepted"] == pytest.approx(38.0, rel=0.05)
    assert ph["achieved_ratio"] < 0.5
    assert ph["sent_qps"] == pytest.approx(QPS, rel=0.01)  # the send rate alone would say "all fine"
    assert ph["not_accepted"].startswith("submission overloaded the apiserver: accepted 38/s of 100/s offered")


def test_connection_cap_reached_while_the_server_is_fast_is_the_harness() -> None:
    req = _log(wire=0.004)
    req["sent"] = req["dispatched"] + np.linspace(0, 6, N)  # waits grow: every connection busy
    req["latency"] = req["sent"] + 0.004 - req["dispatched"]
    ph = _phase(req, {"cap": 4, "peak": 4, "waited_at_cap": 900})
    assert ph["achieved_ratio"] < 0.95
    assert ph["not_accepted"].startswith("harness-bound:")
    assert "all 4 connections were busy" in ph["not_accepted"] and "4 ms" in ph["not_accepted"]


def test_a_pacer_that_falls_behind_is_the_harness() -> None:
    req = _log()
    late = np.linspace(0, 8, N)  # kwokbench itself hands requests over later and later
    for col in ("dispatched", "sent"):
        req[col] = req[col] + late
    ph = _phase(req)
    assert ph["achieved_ratio"] < 0.95
    assert ph["not_accepted"].startswith("harness-bound:") and "pacer fell behind" in ph["not_accepted"]


def test_errors_are_not_accepted() -> None:
    req = _log()
    req.loc[req.index % 2 == 0, "status"] = 429
    ph = _phase(req)
    assert ph["created"] == N // 2 and ph["errors"] == {"429": N // 2}
    assert ph["accepted_qps"] == pytest.approx(QPS / 2, rel=0.02)
    assert ph["not_accepted"].startswith("creates failed:")


def test_the_apiserver_view_from_pods() -> None:
    req = _log()
    created = req["scheduled"].to_numpy() + 0.006
    pods = pd.DataFrame({"created": created, "creation_timestamp": np.floor(created), "scheduled": created + 0.01,
                         "running": np.nan, "finished": np.nan, "from_list": False, "workload": "p"})
    ph = summarize(pods, req, [{"name": "p", "target_qps": QPS}], N)["submit"][0]
    assert ph["rates"]["whole"]["apiserver_watch"] == pytest.approx(QPS, rel=0.01)
    assert ph["rates"]["whole"]["apiserver_creation_timestamp"] == pytest.approx(QPS, rel=0.12)


def test_older_summaries_still_render() -> None:
    v1 = {"phase": "p", "requests": 10, "created": 10, "target_qps": 100.0, "achieved_qps": 99.0,
          "achieved_ratio": 0.99, "errors": {}}
    rows = submit_rows(v1)
    assert "older run" in rows[0][0] and "99.0 / 100.0" in rows[0][1]
    _, all_rows = summary_rows({"pods_scheduled": 1, "pods_expected": 1, "submit": [v1]})
    assert any("older run" in r[0] for r in all_rows)


def test_stranded_pods_count_in_latency_at_the_phase_timeout() -> None:
    created = np.arange(100) / 100.0
    scheduled = created + 0.01
    scheduled[:5] = np.nan  # five pods never scheduled
    pods = pd.DataFrame({"created": created, "scheduled": scheduled, "running": np.nan, "finished": np.nan,
                         "from_list": False, "workload": "p"})
    phases = [{"name": "p", "target_qps": 100.0, "wait_for": "scheduled", "timeout_seconds": 60.0,
               "timed_out": True}]
    s = summarize(pods, pd.DataFrame(), phases, 100)
    lat = s["latency"]["created_to_scheduled"]
    assert lat["censored"] == 5 and lat["max"] == pytest.approx(60.0) and lat["p99"] > 1.0
    assert s["phases_timed_out"] == ["p"] and s["pods_unscheduled"] == 5
    # without the phase timeout the stranded pods would vanish and p99 would read 10 ms
    plain = summarize(pods, pd.DataFrame(), [], 100)["latency"]["created_to_scheduled"]
    assert plain["p99"] == pytest.approx(0.01)


def test_a_create_whose_answer_was_lost_but_made_its_pod_is_counted() -> None:
    """An apiserver restarting mid-load: 300 creates lose their connection, 13 of them after the apiserver took
    them (CI saw 13 such pods beside 1124 failures). The client counts 700; the watch saw 713."""
    req = _log()
    req.loc[req.index >= 700, "status"] = -1
    made = req["index"] < 713
    created = req.loc[made, "scheduled"].to_numpy() + 0.006
    pods = pd.DataFrame({"created": created, "scheduled": created + 0.01, "running": np.nan, "finished": np.nan,
                         "from_list": False, "workload": "p"})
    ph = summarize(pods, req, [{"name": "p", "target_qps": QPS}], N)["submit"][0]
    assert (ph["created"], ph["seen"], ph["made_unanswered"]) == (700, 713, 13)
    assert ph["errors"] == {"connection error": 300}
    assert ph["not_accepted"].endswith("13 of them made their pod all the same (answer lost)")
    # without pods (another kind, or none seen) there is nothing to compare with
    assert _phase(req)["made_unanswered"] is None
