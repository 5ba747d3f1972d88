"""The scraper's last round, against a real HTTP server on port 0 (a slow /metrics whose counter counts its own
requests): the round after stop must begin after stop, and an endpoint whose last scrape fails is asked again.
CI's failure it guards: a scheduler's schedule_attempts 79 short of the 300 pods the watch saw bound, because the
round in flight when stop came was taken for the last one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwokbench.cluster.endpoints import Endpoint
from kwokbench.metrics.scrape import SCRAPES, Scraper, read_snapshots
from tests.support.http import Quiet, serving

SLOW = 0.6
"""Seconds each answer takes: longer than the scrape interval, so stop nearly always lands mid-round."""


class Metrics:
    def __init__(self) -> None:
        self.requests = 0
        self.fail_from: float | None = None  # requests begun after this time fail ...
        self.failures_left = 0  # ... this many of them
        self.in_flight = threading.Event()
        self.lock = threading.Lock()


@pytest.fixture
def server() -> Iterator[tuple[str, Metrics]]:
    state = Metrics()

    class Handler(Quiet):
        def do_GET(self) -> None:
            begun = time.time()
            state.in_flight.set()
            time.sleep(SLOW)
            with state.lock:
                state.requests += 1
                fail = state.fail_from is not None and begun >= state.fail_from and state.failures_left > 0
                if fail:
                    state.failures_left -= 1
                body = b"" if fail else f"c_total {state.requests}\n".encode()
            state.in_flight.clear()
            self.send(500 if fail else 200, body)

    with serving(Handler) as url:
        yield f"{url}/metrics", state


def _started(url: str, state: Metrics, run: Path) -> Scraper:
    """A scraper every 0.2 s of the slow endpoint, once it has answered twice."""
    s = Scraper([Endpoint("c", url, None)], {}, run, interval=0.2)
    assert s.wait_started(60)
    deadline = time.time() + 30
    while state.requests < 2 and time.time() < deadline:
        time.sleep(0.05)
    return s


def _frames(run: Path) -> list[tuple[float, int]]:
    return [(s.t, s.status) for s in read_snapshots(run / SCRAPES / "c.prom.zst")]


def test_the_last_round_begins_after_stop_even_when_stop_lands_mid_round(server: tuple[str, Metrics],
                                                                         tmp_path: Path) -> None:
    url, state = server
    s = _started(url, state, tmp_path)
    assert state.in_flight.wait(10)  # a round is in flight
    stopped = time.time()
    s.stop()
    frames = _frames(tmp_path)
    assert frames[-1][1] == 200 and frames[-1][0] >= stopped, (frames[-3:], stopped)


def test_a_failed_last_scrape_is_asked_again(server: tuple[str, Metrics], tmp_path: Path) -> None:
    url, state = server
    s = _started(url, state, tmp_path)
    with state.lock:
        state.fail_from, state.failures_left = time.time(), 2  # the next two answers fail
    stopped = time.time()
    stats = s.stop()
    frames = _frames(tmp_path)
    after = [st for t, st in frames if t >= stopped]
    assert after[-1] == 200 and 500 in after, frames[-5:]
    assert stats["failed"] >= 1  # recorded, not hidden
