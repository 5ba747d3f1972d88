"""simulate_error_rates on synthetic run series (the stored noise data gets its own test)."""

from __future__ import annotations

import numpy as np
import pytest

from kwokbench.compare.stats import simulate_error_rates


def _series(n: int, sd: float, drift: float = 0.0, seed: int = 0) -> list[float]:
    """Throughput of ``n`` identical runs in time order: lognormal noise plus a slow linear drift."""
    t = np.arange(n)
    return (400 * (1 + drift * t / n) * np.exp(sd * np.random.default_rng(seed).standard_normal(n))).tolist()


@pytest.mark.parametrize("mode", ["interleaved", "random"])
def test_three_percent_noise_meets_the_targets_at_five_runs(mode: str) -> None:
    r = simulate_error_rates(_series(40, 0.03), n=5, effect=-0.20, higher_is_better=True, max_regression=0.10,
                             trials=400, seed=1, mode=mode)  # type: ignore[arg-type]
    assert r["aa"]["regression"] <= 0.05 and r["aa"]["pass"] >= 0.90
    assert r["ab"]["regression"] >= 0.95
    assert sum(r["aa"].values()) == pytest.approx(1.0) and r["n"] == 5 and r["mode"] == mode


def test_interleaving_absorbs_drift_that_random_groups_do_not() -> None:
    # the host slows by 40% over the series; a 15% drop is still found when runs are paired in time
    series = _series(40, 0.01, drift=-0.4, seed=3)
    paired = simulate_error_rates(series, 5, -0.15, True, 0.10, trials=300, seed=2, mode="interleaved")
    mixed = simulate_error_rates(series, 5, -0.15, True, 0.10, trials=300, seed=2, mode="random")
    assert paired["ab"]["regression"] >= 0.95
    assert mixed["ab"]["regression"] < paired["ab"]["regression"] - 0.2


def test_latency_effects_are_rises_and_the_noise_floor_applies() -> None:
    series = [0.05 * x / 400 for x in _series(30, 0.03, seed=4)]
    r = simulate_error_rates(series, 5, 0.25, False, 0.10, trials=200, seed=0)
    assert r["ab"]["regression"] >= 0.9
    floored = simulate_error_rates(series, 5, 0.25, False, 0.10, trials=200, seed=0, noise_floor=0.40)
    assert floored["ab"]["regression"] == 0.0


def test_too_few_runs_for_two_groups() -> None:
    with pytest.raises(ValueError, match="need at least 10 runs"):
        simulate_error_rates([1.0] * 9, 5, -0.2, True, 0.1)
