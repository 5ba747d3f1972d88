"""Pure statistics for comparing groups of runs: bootstrap CI of a ratio, Mann-Whitney, noise.

A regression must be both *significant* and *larger than a minimum effect* (asv's rule): a 1%
slowdown that is statistically certain does not fail a gate set at 10%, and a 30% drop seen in two
noisy samples is "inconclusive", not "pass".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

Verdict = Literal["pass", "regression", "inconclusive"]
MIN_SAMPLES = 3
NOISY_CV = 0.10


@dataclass(frozen=True)
class Comparison:
    metric: str
    higher_is_better: bool
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    ratio: float | None
    """candidate / baseline of the means."""
    ci: tuple[float, float] | None
    """95% bootstrap interval of the ratio."""
    p_value: float | None
    max_regression: float
    verdict: Verdict
    reason: str
    noisy: bool


def cv(values: np.ndarray) -> float:
    m = float(np.mean(values))
    return float(np.std(values, ddof=1) / abs(m)) if len(values) > 1 and m else 0.0


def bootstrap_ratio_ci(base: np.ndarray, cand: np.ndarray, seed: int = 0,
                       resamples: int = 5000) -> tuple[float, float]:
    """Percentile bootstrap of mean(cand)/mean(base), resampling each group independently."""
    rng = np.random.default_rng(seed)
    b = rng.choice(base, size=(resamples, len(base)), replace=True).mean(axis=1)
    c = rng.choice(cand, size=(resamples, len(cand)), replace=True).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = c / b
    r = r[np.isfinite(r)]
    return float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))


def compare(metric: str, baseline: list[float], candidate: list[float], higher_is_better: bool,
            max_regression: float = 0.10, alpha: float = 0.05) -> Comparison:
    base = np.asarray([v for v in baseline if v is not None and np.isfinite(v)], dtype=np.float64)
    cand = np.asarray([v for v in candidate if v is not None and np.isfinite(v)], dtype=np.float64)
    noisy = cv(base) >= NOISY_CV or cv(cand) >= NOISY_CV
    common: dict[str, Any] = dict(metric=metric, higher_is_better=higher_is_better, baseline=tuple(base),
                                  candidate=tuple(cand), max_regression=max_regression, noisy=noisy)
    if len(base) < MIN_SAMPLES or len(cand) < MIN_SAMPLES:
        ratio = float(cand.mean() / base.mean()) if len(base) and len(cand) and base.mean() else None
        return Comparison(**common, ratio=ratio, ci=None, p_value=None, verdict="inconclusive",
                          reason=f"too few samples ({len(base)} baseline, {len(cand)} candidate; need "
                                 f"{MIN_SAMPLES} each)")
    if base.mean() == 0:
        return Comparison(**common, ratio=None, ci=None, p_value=None, verdict="inconclusive",
                          reason="baseline mean is 0")
    ratio = float(cand.mean() / base.mean())
    lo, hi = bootstrap_ratio_ci(base, cand)
    worse = "less" if higher_is_better else "greater"
    p = float(sps.mannwhitneyu(cand, base, alternative=worse).pvalue)
    # "goodness" of the candidate relative to baseline: < 1 means worse, whatever the metric's direction
    good, good_lo, good_hi = (ratio, lo, hi) if higher_is_better else (1 / ratio, 1 / hi, 1 / lo)
    limit = 1.0 - max_regression
    change = f"{(ratio - 1) * 100:+.1f}% (95% CI {(lo - 1) * 100:+.1f}%..{(hi - 1) * 100:+.1f}%)"
    if good_hi < limit or (p < alpha and good < limit):
        verdict: Verdict = "regression"
        reason = f"{change}, worse than the allowed {max_regression * 100:.0f}% (Mann-Whitney p={p:.3f})"
    elif good_lo >= limit:
        verdict, reason = "pass", f"{change}, within the allowed {max_regression * 100:.0f}%"
    else:
        verdict = "inconclusive"
        reason = f"{change}: the interval straddles the allowed {max_regression * 100:.0f}% (p={p:.3f})"
    return Comparison(**common, ratio=ratio, ci=(lo, hi), p_value=p, verdict=verdict, reason=reason)
