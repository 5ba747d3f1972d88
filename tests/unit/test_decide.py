"""The three-way decision (regression / same / better / inconclusive) on simulated pairs with known answers, and
the sequential rule's error rates, measured by simulation (not assumed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kwokbench.compare import stats


def _pairs(effect: float, sd: float, n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = 100 * np.exp(rng.normal(0, 0.2, n))  # the host's drift: shared by both runs of a pair
    noise = rng.normal(0, sd, n)
    return base, base * (1 + effect) * np.exp(noise)


def test_an_a_a_with_enough_pairs_is_same_and_its_interval_is_the_tested_one() -> None:
    base, cand = _pairs(0.0, 0.02, 12)
    d = stats.decide_groups(base, cand, higher_is_better=True, margin=0.05)
    assert d.decision == "same" and d.not_worse and d.more == 0
    assert d.level == pytest.approx(0.90)
    # TOST at alpha 0.05 each side: the 90% interval lies inside ±5%
    assert 1 / 1.05 < d.interval[0] <= d.ratio <= d.interval[1] < 1.05
    assert "90% CI" in d.reason and "the same within ±5%" in d.reason


def test_a_drop_beyond_the_margin_is_a_regression_and_a_rise_is_better() -> None:
    base, cand = _pairs(-0.15, 0.02, 6)
    d = stats.decide_groups(base, cand, higher_is_better=True, margin=0.05)
    assert d.decision == "regression" and not d.not_worse and d.interval[1] < 1.0
    up = stats.decide_groups(base, base * 1.15, higher_is_better=True, margin=0.05)
    assert up.decision == "better" and up.not_worse and "better beyond 5%" in up.reason
    # for a lower-is-better figure (latency, CPU per pod) the same rise is the regression
    assert stats.decide_groups(base, base * 1.15 * np.exp(np.linspace(-0.01, 0.01, 6)), higher_is_better=False,
                               margin=0.05).decision == "regression"


def test_too_few_pairs_say_how_many_more_would_decide() -> None:
    base, cand = np.array([100.0, 120.0, 90.0]), np.array([104.0, 116.4, 90.9])  # +4%, -3%, +1%
    d = stats.decide_groups(base, cand, higher_is_better=True, margin=0.05)
    assert d.decision == "inconclusive" and d.more is not None and d.more > 0
    assert f"about {d.more} more pairs (or runs a side) would decide" in d.reason
    # with that many pairs of the same spread and estimate, it decides
    x = np.log(cand / base)
    sd, bad = float(x.std(ddof=1)), float(-x.mean())
    n = 3 + d.more
    again = stats.decide(bad, sd / math.sqrt(n), n - 1, n, True, 0.05)
    assert again.decision != "inconclusive"


def test_an_estimate_on_the_margin_can_never_be_decided() -> None:
    m = -math.log(1 - 0.05)
    assert stats.decide(m, 0.01, 4, 5, True, 0.05).more is None


def test_the_looks() -> None:
    assert stats.looks(3, 20) == [3, 4, 7, 10, 15, 20]
    assert stats.looks(5, 5) == [5]
    with pytest.raises(ValueError):
        stats.looks(1, 5)


def test_sequential_stops_at_the_first_decided_look() -> None:
    schedule = stats.looks(3, 20)
    rng = np.random.default_rng(0)
    got, n = stats.decide_sequential(rng.normal(math.log(0.7), 0.02, 20), True, 0.05, schedule)
    assert got is not None and got.decision == "regression" and n == 3
    got, n = stats.decide_sequential(rng.normal(0, 0.02, 5), True, 0.05, schedule)
    assert (got is None and n == 5) or (got is not None and got.decision == "same")


@pytest.mark.parametrize("sd", [0.03, 0.10])
def test_sequential_error_rates_within_bounds(sd: float) -> None:
    """Measured by simulation: A/A false regressions <= 5% (Bonferroni over the looks keeps them lower) at a pair
    spread of 3% (a duet's, hoped) and 10% (today's sequential pairs on a quiet host); a change twice the margin
    found >= 95% of the time at 3%."""
    schedule = stats.looks(3, 20)
    aa = stats.simulate_sequential(sd, 0.0, True, 0.05, schedule, trials=1000)
    assert aa["regression"] <= 0.05, aa
    if sd <= 0.03:
        assert aa["same"] >= 0.95, aa
        hit = stats.simulate_sequential(sd, -0.10, True, 0.05, schedule, trials=1000)
        assert hit["regression"] >= 0.95, hit
