from __future__ import annotations

import numpy as np
import pytest

from kwokbench.load.pacer import schedule, target_rate
from kwokbench.scenario import PoissonArrival, QpsArrival, RampArrival


def test_fixed_qps_is_open_loop_schedule() -> None:
    off = schedule(QpsArrival(qps=500), 1000)
    assert off[0] == 0 and off[1] == pytest.approx(0.002) and off[-1] == pytest.approx(999 / 500)
    assert np.all(np.diff(off) > 0)


def test_poisson_rate_and_seed() -> None:
    a = schedule(PoissonArrival(type="poisson", rate=200), 20000, seed=3)
    b = schedule(PoissonArrival(type="poisson", rate=200), 20000, seed=3)
    c = schedule(PoissonArrival(type="poisson", rate=200), 20000, seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert len(a) / a[-1] == pytest.approx(200, rel=0.03)
    gaps = np.diff(a)
    assert np.std(gaps) == pytest.approx(np.mean(gaps), rel=0.05)  # exponential: sd == mean


def test_ramp_rates() -> None:
    r = RampArrival(type="ramp", start_qps=10, end_qps=110, duration_seconds=10)
    off = schedule(r, 2000)
    n_ramp = (10 + 110) * 10 / 2  # 600 objects during the ramp
    assert np.sum(off < 10) == pytest.approx(n_ramp, abs=1)
    assert np.sum(off < 1) == pytest.approx(10 + 10 / 2, abs=1)
    after = np.diff(off[off > 10.5])
    assert after == pytest.approx(np.full(len(after), 1 / 110))
    assert np.all(np.diff(off) >= 0)
    assert target_rate(r) == 110


def test_flat_ramp() -> None:
    off = schedule(RampArrival(type="ramp", start_qps=50, end_qps=50, duration_seconds=2), 200)
    assert off == pytest.approx(np.arange(200) / 50)
