"""Apiserver writes per pod (pure, over a long frame of apiserver_request_total samples)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kwokbench.metrics.writes import brief, keep, writes_section


def _frame(samples: list[tuple[float, dict[str, str], float]]) -> pd.DataFrame:
    return pd.DataFrame([(t, json.dumps(lb), v) for t, lb, v in samples], columns=["t", "labels", "value"])


def _lb(verb: str, resource: str, code: str = "201", subresource: str = "", group: str = "") -> dict[str, str]:
    return {"verb": verb, "resource": resource, "code": code, "subresource": subresource, "group": group}


def test_writes_per_pod_counts_from_the_scrape_before_the_first_create_to_the_end() -> None:
    times = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    samples: list[tuple[float, dict[str, str], float]] = []
    for t, pods, events_core, events_new, leases in [(0, 0, 0, 0, 50), (1, 0, 0, 0, 60), (2, 40, 10, 50, 70),
                                                     (3, 100, 20, 130, 80), (4, 100, 20, 280, 90)]:
        samples += [(t, _lb("POST", "pods"), pods), (t, _lb("POST", "pods", subresource="binding"), pods),
                    (t, _lb("POST", "events"), events_core),
                    (t, _lb("POST", "events", group="events.k8s.io"), events_new),
                    (t, _lb("PUT", "leases", code="200"), leases)]
    samples += [(4.0, _lb("POST", "pods", code="409"), 7.0),  # refused: not a write that happened
                (4.0, _lb("GET", "pods", code="200"), 900.0)]  # a read
    # the first pod was created at 1.4 s: counted from the scrape at 1 s (nothing before it)
    w = writes_section(_frame(samples), times, 1.4, 100)
    assert w is not None and w["window_seconds"] == 3.0
    assert w["total"] == {"events": 300.0, "pods": 100.0, "pods/binding": 100.0, "leases": 30.0}
    assert list(w["per_pod"]) == ["events", "pods", "pods/binding", "leases"]  # largest first
    assert w["per_pod"]["events"] == pytest.approx(3.0) and w["per_pod"]["leases"] == pytest.approx(0.3)
    assert brief(w, top=2) == "events 3.00, pods 1.00, others 1.30 (all writes 5.30)"


def test_a_series_that_appears_late_or_restarts_counts_what_it_adds() -> None:
    times = np.array([0.0, 1.0, 2.0, 3.0])
    # created at 2 s with 5 already; the apiserver restarted before 3 s and counted 4 since
    samples = [(2.0, _lb("POST", "events"), 5.0), (3.0, _lb("POST", "events"), 4.0)]
    w = writes_section(_frame(samples), times, 0.0, 3)
    assert w is not None and w["total"] == {"events": 9.0}


@pytest.mark.parametrize(("start", "scheduled", "times"), [(None, 10, [0.0, 1.0]), (0.0, 0, [0.0, 1.0]),
                                                           (5.0, 10, [0.0, 1.0]), (0.0, 10, [0.0])])
def test_nothing_to_say_without_pods_a_start_or_scrapes_after_it(start: float | None, scheduled: int,
                                                                  times: list[float]) -> None:
    frame = _frame([(0.0, _lb("POST", "pods"), 1.0), (1.0, _lb("POST", "pods"), 2.0)])
    assert writes_section(frame, np.array(times), start, scheduled) is None
    assert brief(None) is None


def test_scrapes_keep_writes_only() -> None:
    assert keep({"verb": "PATCH"}) and keep({"verb": "APPLY"}) and keep({"verb": "POST"})
    assert not keep({"verb": "WATCH"}) and not keep({"verb": "LIST"}) and not keep({})


def test_the_raw_line_filter_drops_only_what_the_predicates_drop() -> None:
    """The apiserver payload's reads and other resources' latencies never reach the (slow) parser, and what is
    parsed is what parsing everything and applying KEEP gives."""
    from kwokbench.metrics import derive

    lines = ["# HELP apiserver_request_total Counter", "# TYPE apiserver_request_total counter"]
    for verb in ("GET", "LIST", "WATCH", "POST", "PATCH", "DELETE", "APPLY"):
        for res in ("pods", "events", "nodes"):
            lines.append(f'apiserver_request_total{{code="201",resource="{res}",verb="{verb}"}} 3')
    lines += ["# HELP apiserver_request_duration_seconds Histogram",
              "# TYPE apiserver_request_duration_seconds histogram"]
    for verb in ("GET", "POST"):
        for res in ("pods", "nodes"):
            for le in ("0.1", "+Inf"):
                lines.append(f'apiserver_request_duration_seconds_bucket{{le="{le}",resource="{res}",verb="{verb}"}} 1')
            lines.append(f'apiserver_request_duration_seconds_sum{{resource="{res}",verb="{verb}"}} 0.5')
            lines.append(f'apiserver_request_duration_seconds_count{{resource="{res}",verb="{verb}"}} 1')
    text = "\n".join(lines) + "\n"
    keep = derive.keep_of("kube-apiserver")
    got = derive.parse_payload(text, keep)
    saved = dict(derive.LINES)
    try:
        derive.LINES.clear()
        unfiltered = derive.parse_payload(text, keep)
    finally:
        derive.LINES.update(saved)
    assert got == unfiltered
    assert {lb["verb"] for name, lb, _ in got if name == "apiserver_request_total"} == {"POST", "PATCH", "DELETE",
                                                                                        "APPLY"}
    assert {(lb["resource"], lb["verb"]) for name, lb, _ in got if name.startswith("apiserver_request_dur")} == {
        ("pods", "POST")}
    pre = derive.prefilter(text, keep, derive.LINES)
    assert 'verb="GET"' not in pre and 'resource="nodes",verb="POST"}' not in pre.split("duration")[-1]
