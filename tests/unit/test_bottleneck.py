"""``limited_by`` on synthetic runs, one per verdict: the per-second series a real run stores (pod timeline,
process CPU samples, the scheduler's pending pods) made up so that exactly one stage holds the pods back."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kwokbench.figures.bottleneck import BUSY_CORES, backlog, cores, limited_by
from kwokbench.report.table import summary_rows
from kwokbench.sweep import evaluate, first_failure, sentence

T0 = 1_800_000_000.0
COMPONENTS = ("kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok-controller")
QUIET = {"kube-apiserver": 0.6, "etcd": 0.15, "kube-scheduler": 0.2, "kube-controller-manager": 0.08,
         "kwok-controller": 0.15}


def timeline(n: int, arrive: float, bind: float | None = None, latency: float = 0.01,
             running_lag: float = 0.02, kwok: float | None = None) -> pd.DataFrame:
    """``n`` pods arriving at ``arrive``/s, scheduled at most at ``bind``/s, Running at most at ``kwok``/s."""
    i = np.arange(n, dtype=np.float64)
    created = T0 + i / arrive
    scheduled = created + latency if bind is None else np.maximum(created + latency, T0 + i / bind)
    running = scheduled + running_lag if kwok is None else np.maximum(scheduled + running_lag, T0 + i / kwok)
    return pd.DataFrame({"created": created, "scheduled": scheduled, "running": running, "finished": np.nan,
                         "from_list": False})


def procs(seconds: int, cores_by: dict[str, float]) -> pd.DataFrame:
    """1 s samples of cumulative CPU seconds, each component at a constant number of cores."""
    rows = [(T0 - 1 + s, c, cores_by.get(c, 0.0) * s, 100 << 20) for s in range(seconds + 3) for c in COMPONENTS]
    return pd.DataFrame(rows, columns=["t", "component", "cpu_seconds", "rss_bytes"])


def pending(values: list[float] | np.ndarray) -> pd.DataFrame:
    """The scheduler's active queue at each 1 s scrape (with the other queues empty)."""
    rows = []
    for s, v in enumerate(values):
        for q in ("active", "backoff", "unschedulable", "gated"):
            rows.append((T0 + s, "kube-scheduler", "scheduler_pending_pods", json.dumps({"queue": q}),
                         float(v) if q == "active" else 0.0))
    return pd.DataFrame(rows, columns=["t", "component", "name", "labels", "value"])


def summary(offered: float, accepted: float, bound: float, not_accepted: str | None = None, busy: float = 0.6,
            labels: list[str] | None = None, create_p99: float = 0.02) -> dict[str, Any]:
    return {"submit": [{"phase": "pods", "offered_qps": offered, "accepted_qps": accepted,
                        "not_accepted": not_accepted, "rates": {"window": [T0, T0 + 10], "last_answer": T0 + 10}}],
            "binding_rate": {"available": True, "average": bound},
            "host": {"cpu_busy_fraction": busy}, "labels": labels or [],
            "apiserver": {"create_pod_latency_seconds": {"p99": create_p99},
                          "binding_latency_seconds": {"p99": create_p99}}}


def meta(wait_for: str = "scheduled") -> dict[str, Any]:
    return {"host": {"cpus": 2}, "phases": [{"name": "pods", "wait_for": wait_for, "harness_cpu_seconds": 0.3,
                                             "harness_setup_cpu_seconds": 0.01}]}


def judge(s: dict[str, Any], pods: pd.DataFrame, cpu: dict[str, float], queue: list[float] | np.ndarray,
          m: dict[str, Any] | None = None) -> dict[str, Any]:
    seconds = int(np.ceil(pods["scheduled"].max() - T0)) + 1
    return limited_by(s, m or meta(), pending(queue), procs(seconds, cpu), pods)


def test_arrival_bound_when_pods_are_scheduled_as_they_arrive() -> None:
    out = judge(summary(100, 100, 100), timeline(1000, 100), QUIET, [0, 1, 2, 0] * 3)
    assert out["verdict"] == "arrival"
    assert out["sentence"].startswith("arrival-bound: pods were scheduled as fast as they arrived (100/s bound")
    assert out["evidence"]["backlog_max"] <= 2 and out["evidence"]["queue_max"] == 2


def test_scheduler_client_bound_when_the_limiter_is_found() -> None:
    label = "client-bound: the binding rate plateaus at 50/s, at the scheduler's client QPS limit of 50"
    pods = timeline(500, 250, bind=50)
    out = judge(summary(250, 250, 50, labels=[label]), pods, QUIET, [0] * 11)
    assert out["verdict"] == "scheduler-client"
    assert "plateaus at 50/s" in out["sentence"] and "client_qps" in out["sentence"]


def test_scheduler_bound_when_its_queue_grows_while_it_is_busy() -> None:
    pods = timeline(3000, 1000, bind=300)
    grown = backlog(pods, (T0, float(pods["scheduled"].max())))  # the backlog sits in the scheduler's queue
    cpu = {**QUIET, "kube-scheduler": 0.98, "kube-apiserver": 0.7}
    out = judge(summary(2000, 1000, 300), pods, cpu, grown * 0.95)
    assert out["verdict"] == "scheduler"
    assert out["sentence"].startswith("scheduler-bound: kube-scheduler at 0.98 cores")
    assert f"its queue grew to {grown.max() * 0.95:.0f} pods" in out["sentence"]
    assert out["evidence"]["cores"]["kube-scheduler"]["busy_share"] == pytest.approx(1.0)


def test_apiserver_bound_when_pods_wait_outside_the_scheduler_queue() -> None:
    pods = timeline(3000, 400, bind=300)
    cpu = {**QUIET, "kube-apiserver": 1.0, "kube-scheduler": 0.3}
    out = judge(summary(400, 395, 300, create_p99=0.4), pods, cpu, [0, 3, 1] * 4)
    assert out["verdict"] == "apiserver"
    assert "pods waited outside the scheduler's queue" in out["sentence"]
    assert "kube-apiserver at 1.00 cores" in out["sentence"] and "create p99 400 ms" in out["sentence"]


def test_etcd_bound_when_etcd_is_the_busier_store() -> None:
    pods = timeline(3000, 400, bind=300)
    out = judge(summary(400, 395, 300), pods, {**QUIET, "etcd": 1.1, "kube-apiserver": 0.5}, [0] * 12)
    assert out["verdict"] == "etcd" and "etcd at 1.10 cores" in out["sentence"]


def test_apiserver_bound_when_it_did_not_accept_the_offered_load() -> None:
    na = ("submission overloaded the apiserver: accepted 300/s of 500/s offered (60%); requests took 0.40 s on "
          "the wire (p50)")
    out = judge(summary(500, 300, 300, not_accepted=na), timeline(1500, 300), {**QUIET, "kube-apiserver": 1.1},
                [0] * 6)
    assert out["verdict"] == "apiserver" and out["sentence"].startswith("apiserver-bound: submission overloaded")


def test_host_bound_when_the_cpus_are_full_and_nothing_dominates() -> None:
    pods = timeline(3000, 400, bind=300)
    even = dict.fromkeys(COMPONENTS, 0.38)
    out = judge(summary(400, 395, 300, busy=0.99), pods, even, [0] * 12)
    assert out["verdict"] == "host"
    assert out["sentence"].startswith("host-bound: the host's 2 CPUs 99% busy")


def test_host_bound_when_memory_is_full() -> None:
    pods = timeline(3000, 400, bind=300)
    even = dict.fromkeys(COMPONENTS, 0.2)  # 50% of the CPUs: not CPU
    m = {**meta(), "host": {"cpus": 2, "memory_bytes": 5 * (100 << 20) / 0.95}}  # 5 processes of 100 MiB each
    out = judge(summary(400, 395, 300, busy=0.5), pods, even, [0] * 12, m)
    assert out["verdict"] == "host" and "95% of its memory held by the control plane" in out["sentence"]
    assert out["evidence"]["memory_share"] == pytest.approx(0.95)


def test_host_bound_when_a_starved_scheduler_holds_the_queue() -> None:
    """Pods wait in the scheduler's queue, but it gets a third of a core on a full host: not its fault."""
    pods = timeline(3000, 400, bind=300)
    grown = backlog(pods, (T0, float(pods["scheduled"].max())))
    cpu = {**QUIET, "kube-apiserver": 1.0, "kube-scheduler": 0.3, "kwok-controller": 0.4}
    out = judge(summary(400, 395, 300, busy=0.97), pods, cpu, grown)
    assert out["verdict"] == "host" and "in the scheduler's queue" in out["sentence"]


def test_harness_bound_when_the_phase_says_so() -> None:
    na = ("harness-bound: accepted 145/s of 1500/s offered (10%); all 2 connections were busy (2998 requests "
          "waited up to 18.75 s for one) while the server answered in 10 ms (raise workloads[].connections)")
    out = judge(summary(1500, 145, 145, not_accepted=na), timeline(3000, 145), QUIET, [0] * 21)
    assert out["verdict"] == "harness" and out["sentence"] == na


def test_kwok_bound_when_pods_wait_to_be_running() -> None:
    pods = timeline(2000, 200, running_lag=0.05, kwok=100)
    out = judge(summary(200, 200, 200), pods, {**QUIET, "kwok-controller": 0.9}, [0] * 11, meta("running"))
    assert out["verdict"] == "kwok"
    assert out["sentence"].startswith("kwok-bound: pods were scheduled as they arrived but waited")
    # the same lag does not matter when the phase only waited for scheduling
    assert judge(summary(200, 200, 200), pods, QUIET, [0] * 11)["verdict"] == "arrival"


def test_nothing_scheduled_is_undetermined() -> None:
    pods = timeline(10, 10).assign(scheduled=np.nan, running=np.nan)
    out = limited_by(summary(10, 10, 0), meta(), pending([]), procs(2, QUIET), pods)
    assert out == {"verdict": None, "sentence": "undetermined: no pod was scheduled", "evidence": {}}


def test_cores_weigh_intervals_by_their_part_inside_the_window() -> None:
    frame = pd.DataFrame({"t": [0.0, 1.0, 2.0, 3.0], "component": "kube-scheduler",
                          "cpu_seconds": [0.0, 1.0, 1.2, 0.5], "rss_bytes": 1})  # a restart in the last second
    c = cores(frame, (0.5, 3.0))["kube-scheduler"]
    # 0.5 s at 1 core, 1 s at 0.2, 1 s at 0.5 (counted from 0 after the restart)
    assert c["mean"] == pytest.approx((0.5 * 1.0 + 0.2 + 0.5) / 2.5)
    assert c["max"] == 1.0 and c["busy_share"] == pytest.approx(0.5 / 2.5)
    assert BUSY_CORES == 0.8


def test_summary_row_and_sweep_cause() -> None:
    s = {"limited_by": {"verdict": "scheduler", "sentence": "scheduler-bound: kube-scheduler at 0.98 cores"}}
    assert ["limited by", "scheduler-bound: kube-scheduler at 0.98 cores"] in summary_rows(s)[1]
    ok = {**evaluate({"throughput": {"average": 50.0}, "latency": {"created_to_scheduled": {"p99": 0.1}},
                      "pods_scheduled": 1, "pods_expected": 1,
                      "limited_by": {"verdict": "arrival", "sentence": "arrival-bound: …"}}, 50, 1.0, 0.95),
          "nodes": 20}
    bad = {**evaluate({"throughput": {"average": 170.0}, "latency": {"created_to_scheduled": {"p99": 4.6}},
                       "pods_scheduled": 1, "pods_expected": 1,
                       "limited_by": {"verdict": "scheduler", "sentence": "scheduler-bound: queue grew"}},
                      800, 1.0, 0.95), "nodes": 20}
    assert ok["limited_by"] == "arrival" and bad["limited_by"] == "scheduler"
    assert first_failure([ok, bad], 20) is bad and first_failure([ok], 20) is None
    assert sentence(20, 50, 1.0, [50, 800], bad) == (
        "with 20 nodes this control plane sustains 50 pods/s within a 1 s p99 (it failed at 800/s); at 800/s "
        "scheduler-bound: queue grew")


def test_not_accepted_on_a_full_host_without_a_busy_store_is_the_host() -> None:
    na = "submission overloaded the apiserver: accepted 300/s of 500/s offered (60%); requests took 0.20 s"
    cpu = {**QUIET, "kube-apiserver": 0.5, "kwok-controller": 0.9}
    out = judge(summary(500, 300, 300, not_accepted=na, busy=0.97), timeline(1500, 300), cpu, [0] * 6)
    assert out["verdict"] == "host" and "the busiest process kwok-controller" in out["sentence"]
    # the same with the apiserver slow to answer: it is the apiserver's
    slow = judge(summary(500, 300, 300, not_accepted=na, busy=0.97, create_p99=0.8), timeline(1500, 300), cpu,
                 [0] * 6)
    assert slow["verdict"] == "apiserver"


def test_scheduler_bound_on_a_full_host_when_it_is_a_main_consumer() -> None:
    """Measured: 5000 nodes scored in full, 600 pods at 100/s; the backlog sits in the scheduler's queue and
    it has a third of the host, next to the apiserver: the scheduler, not the host, sets the pace."""
    pods = timeline(600, 100, bind=58)
    grown = backlog(pods, (T0, float(pods["scheduled"].max())))
    cpu = {**QUIET, "kube-apiserver": 0.68, "kube-scheduler": 0.64, "kube-controller-manager": 0.23}
    out = judge(summary(100, 100, 58, busy=1.0), pods, cpu, grown)
    assert out["verdict"] == "scheduler", out["sentence"]
    assert "the host's 2 CPUs 100% busy" in out["sentence"]


def test_a_client_limit_counts_only_when_binding_fell_behind() -> None:
    label = "client-bound: the scheduler's client rate limiter delayed its requests 1.2s in total (2 ms on average)"
    short = timeline(100, 250, bind=60)  # 0.4 s of arrivals: the backlog stays under a second of them
    out = judge(summary(250, 250, 60, labels=[label]), short, QUIET, [0] * 3)
    assert out["evidence"]["backlog_max"] <= out["evidence"]["backlog_allowance"]
    assert out["verdict"] == "scheduler-client"
    kept = judge(summary(100, 100, 100, labels=[label]), timeline(1000, 100), QUIET, [0] * 11)
    assert kept["verdict"] == "arrival"


def _cap_bound_phase(offered: float, accepted: float, wire_p99: float) -> dict[str, Any]:
    """A submission phase every connection of which was busy while the wire's median stayed fast: what
    :func:`kwokbench.figures.acceptance.verdict` alone calls harness-bound."""
    from kwokbench.figures.acceptance import verdict

    ph: dict[str, Any] = {
        "phase": "pods", "offered_qps": offered, "accepted_qps": accepted, "requests": 3000, "created": 3000,
        "achieved_ratio": accepted / offered, "achieved_ratio_window": "steady",
        "connections": {"cap": 64, "peak": 64, "waited_at_cap": 2500},
        "rates": {"window": [T0, T0 + 10], "last_answer": T0 + 10,
                  "steady": {"offered": offered, "accepted": accepted},
                  "send_lateness_seconds": {"p50": 0.001, "p99": 0.01, "max": 0.02},
                  "connection_wait_seconds": {"p50": 0.5, "p99": 3.0, "max": 4.2},
                  "wire_seconds": {"p50": 0.05, "p99": wire_p99, "max": wire_p99 + 1}}}
    ph["not_accepted"] = verdict(ph)
    assert ph["not_accepted"].startswith("harness-bound") and "raise workloads[].connections" in ph["not_accepted"]
    return ph


def test_a_saturated_apiserver_is_the_one_cause_not_the_harness() -> None:
    """The YuniKorn run (1000 nodes, 3000 pods at 500/s) printed "limited by: apiserver-bound" and a submission
    note "harness-bound … raise workloads[].connections", with the apiserver at 1.05 cores the whole window and
    wire p99 10.5 s. The note defers to the verdict: the connections were busy because the apiserver was slow."""
    s = summary(500, 240, 200)
    s["submit"] = [_cap_bound_phase(500, 240, 10.5)]
    pods = timeline(3000, 240, bind=200)  # scheduling fell behind too: pods waited outside any scheduler queue
    out = judge(s, pods, {**QUIET, "kube-apiserver": 1.05}, [0] * 16)
    assert out["verdict"] == "apiserver" and out["sentence"].startswith("apiserver-bound")
    note = s["submit"][0]["not_accepted"]
    assert note.startswith("submission overloaded the apiserver: accepted 240/s of 500/s offered (48%")
    assert "p99 10.50 s" in note and "would not help" in note and "harness" not in note
    s["limited_by"] = out
    printed = " ".join(v for _, v in summary_rows(s)[1])
    assert "harness-bound" not in printed and "apiserver-bound" in printed
    assert out["evidence"]["not_accepted"] == note


def test_busy_connections_with_a_saturated_apiserver_are_not_harness_bound_when_scheduling_kept_up() -> None:
    s = summary(500, 240, 240)
    s["submit"] = [_cap_bound_phase(500, 240, 10.5)]
    out = judge(s, timeline(2400, 240), {**QUIET, "kube-apiserver": 1.05}, [0] * 11)
    assert out["verdict"] == "apiserver"
    assert out["sentence"].startswith("apiserver-bound: the offered load was not accepted (240/s bound")
    assert "wire p99 10500 ms" in out["sentence"]
    assert s["submit"][0]["not_accepted"].startswith("submission overloaded the apiserver")
    # the same busy connections with an idle apiserver answering fast stay the harness's
    s = summary(500, 240, 240)
    s["submit"] = [_cap_bound_phase(500, 240, 0.08)]
    out = judge(s, timeline(2400, 240), {**QUIET, "kube-apiserver": 1.05}, [0] * 11)
    assert out["verdict"] == "harness" and s["submit"][0]["not_accepted"].startswith("harness-bound")
