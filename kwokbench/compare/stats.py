"""Pure statistics for comparing groups of runs: t-tests on log values, minimum detectable change, noise.

Run-to-run figures of a scheduler are positive and their spread grows with their size, so groups are
compared on the log scale: the ratio of geometric means, with a t interval. At 3..10 runs a side that
is valid where a percentile bootstrap (too narrow with 3 values) and Mann-Whitney (cannot reach
p < 0.05 at 3 vs 3) are not. When runs come in pairs made close in time (an interleaved
``run --repeat``), the paired t-test on per-pair log ratios lets slow drift of the host cancel.

A regression must be both *significant* and *larger than the allowed change* (asv's rule): a 1%
slowdown that is statistically certain does not fail a gate set at 10%, and a 30% drop seen in two
noisy samples is "inconclusive", not "pass". A pass must be shown too: the runs must exclude a worsening
beyond the allowed change (non-inferiority); "same" needs both ends within it (two one-sided tests). One
procedure decides for the gate, bisect and detect (:func:`decide`), and every verdict says why.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy.special import stdtr, stdtrit  # Student's t, as scipy.stats.t computes it (importing that costs 0.7 CPU-s)

Verdict = Literal["pass", "regression", "inconclusive"]
Values = Sequence[float] | npt.NDArray[np.float64]
MIN_SAMPLES = 3
"""Runs a side for an unpaired comparison."""
MIN_PAIRS = 2
"""Pairs for a paired comparison (one degree of freedom: wide, but a t interval is still valid)."""
NOISY_CV = 0.10
ALPHA = 0.05
POWER = 0.95
"""The minimum detectable change is the change found with this probability at significance ALPHA."""


@dataclass(frozen=True)
class Comparison:
    metric: str
    higher_is_better: bool
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    """Values used, in pair order when ``pairs`` > 0."""
    ratio: float | None
    """candidate / baseline of the geometric means (paired: geometric mean of the per-pair ratios)."""
    ci: tuple[float, float] | None
    """The ratio's t interval at ``level`` (the interval the tests used)."""
    p_value: float | None
    """One-sided p-value of the change in the worse direction (t-test on logs)."""
    max_regression: float
    verdict: Verdict
    reason: str
    noisy: bool
    mde: float | None = None
    """Minimum detectable change: the relative change in the worse direction (a drop for higher-is-better
    metrics, a rise otherwise) that these runs detect with 95% power at alpha 0.05, given their spread."""
    method: str = ""
    """How the groups were compared: ``paired t-test``, ``Welch t-test``, ``worst run``, or "" (not tested)."""
    pairs: int = 0
    """Pairs compared (0: unpaired)."""
    noise_floor: float = 0.0
    """Relative change below which this metric never counts as a regression."""
    noise: str = ""
    """Why the comparison is flagged noisy ("" when it is not)."""
    decision: str = ""
    """The three-way answer (:func:`decide`): regression, same, better, inconclusive; "" when not tested."""
    more: int | None = None
    """Inconclusive: about how many more pairs (runs a side) would decide; None when none would."""
    level: float = 0.90
    """Confidence of ``ci`` (two-sided): the one-sided tests at alpha 0.05 at each end."""

    @property
    def runs(self) -> str:
        return f"{self.pairs} pairs" if self.pairs else f"{len(self.baseline)} vs {len(self.candidate)}"

    @property
    def allowed(self) -> float:
        """The change the gate tolerates: the allowed regression, or the metric's noise floor if larger."""
        return max(self.max_regression, self.noise_floor)


def cv(values: npt.NDArray[np.float64]) -> float:
    m = float(np.mean(values)) if len(values) else 0.0
    return float(np.std(values, ddof=1) / abs(m)) if len(values) > 1 and m else 0.0


def _floats(a: npt.NDArray[np.float64]) -> tuple[float, ...]:
    return tuple(float(x) for x in a)


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _worse_from_log(d: float, higher_is_better: bool) -> float:
    """The relative change in the worse direction of a move of ``d`` (>= 0) on the log scale."""
    return 1.0 - math.exp(-d) if higher_is_better else math.exp(d) - 1.0


def log_difference(base: npt.NDArray[np.float64], cand: npt.NDArray[np.float64],
                   paired: bool) -> tuple[float, float, float]:
    """(mean log(cand/base), its standard error, degrees of freedom): paired t or Welch."""
    lb, lc = np.log(base), np.log(cand)
    if paired:
        d = lc - lb
        return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))), float(len(d) - 1)
    vb, vc = float(lb.var(ddof=1)) / len(lb), float(lc.var(ddof=1)) / len(lc)
    se = math.sqrt(vb + vc)
    denom = vb ** 2 / (len(lb) - 1) + vc ** 2 / (len(lc) - 1)
    df = (vb + vc) ** 2 / denom if denom > 0 else float(len(lb) + len(lc) - 2)
    return float(lc.mean() - lb.mean()), se, df


def minimum_detectable_log(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The shift on the log scale a one-sided t-test at ``alpha`` detects with probability ``power``."""
    return float((stdtrit(df, 1 - alpha) + stdtrit(df, power)) * se)


def _clean(baseline: Values, candidate: Values, paired: bool) -> tuple[npt.NDArray[np.float64],
                                                                       npt.NDArray[np.float64]]:
    if paired:
        if len(baseline) != len(candidate):
            raise ValueError("paired groups must have the same length")
        kept = [(float(b), float(c)) for b, c in zip(baseline, candidate, strict=True) if _finite(b) and _finite(c)]
        return np.asarray([b for b, _ in kept], dtype=np.float64), np.asarray([c for _, c in kept], dtype=np.float64)
    return (np.asarray([float(v) for v in baseline if _finite(v)], dtype=np.float64),
            np.asarray([float(v) for v in candidate if _finite(v)], dtype=np.float64))


def _geo_ratio(base: npt.NDArray[np.float64], cand: npt.NDArray[np.float64]) -> float | None:
    if not len(base) or not len(cand) or (base <= 0).any() or (cand <= 0).any():
        return None
    return float(math.exp(np.log(cand).mean() - np.log(base).mean()))


def inconclusive(metric: str, baseline: Values, candidate: Values, higher_is_better: bool, max_regression: float,
                 reason: str, noise_floor: float = 0.0, paired: bool = False) -> Comparison:
    """A comparison that could not be decided, and why."""
    base, cand = _clean(baseline, candidate, paired)
    return Comparison(metric=metric, higher_is_better=higher_is_better, baseline=_floats(base),
                      candidate=_floats(cand), ratio=_geo_ratio(base, cand), ci=None, p_value=None,
                      max_regression=max_regression,
                      verdict="inconclusive", decision="inconclusive", reason=reason, noisy=False,
                      pairs=len(base) if paired else 0,
                      noise_floor=noise_floor)


def compare(metric: str, baseline: Values, candidate: Values, higher_is_better: bool,
            max_regression: float = 0.10, alpha: float = ALPHA, paired: bool = False,
            noise_floor: float = 0.0) -> Comparison:
    """Candidate vs baseline values of one metric (``paired``: the i-th values of both groups form a pair),
    decided by :func:`decide` at the allowed change (``max_regression``, or ``noise_floor`` if larger).

    regression: worse than the allowed change and significantly worse; pass: the runs exclude a worsening beyond
    the allowed change (same, better, or at least not worse: a pass these runs could have failed); inconclusive:
    they cannot tell, and the reason says about how many more pairs (or runs a side) would. The interval printed
    is the one the tests used (two-sided 90%: a one-sided test at alpha 0.05 at each end)."""
    base, cand = _clean(baseline, candidate, paired)
    allowed = max(max_regression, noise_floor)
    common: dict[str, Any] = dict(metric=metric, higher_is_better=higher_is_better, baseline=_floats(base),
                                  candidate=_floats(cand), max_regression=max_regression,
                                  pairs=len(base) if paired else 0, noise_floor=noise_floor)
    if paired and len(base) < MIN_PAIRS:
        return inconclusive(metric, base, cand, higher_is_better, max_regression, noise_floor=noise_floor,
                            paired=True, reason=f"too few samples ({len(base)} pair(s); need {MIN_PAIRS})")
    if not paired and (len(base) < MIN_SAMPLES or len(cand) < MIN_SAMPLES):
        return inconclusive(metric, base, cand, higher_is_better, max_regression, noise_floor=noise_floor,
                            reason=f"too few samples ({len(base)} baseline, {len(cand)} candidate; need "
                                   f"{MIN_SAMPLES} each)")
    if (base <= 0).any() or (cand <= 0).any():
        return inconclusive(metric, base, cand, higher_is_better, max_regression, noise_floor=noise_floor,
                            paired=paired, reason="a run has a value <= 0, so there is no ratio of geometric "
                                                  "means (see the unscheduled pods)")
    diff, se, df = log_difference(base, cand, paired)
    bad = -diff if higher_is_better else diff  # > 0: the candidate is worse
    exact = se <= 1e-12  # identical ratios in every pair (or no spread at all): the estimate is exact
    n = len(base) if paired else min(len(base), len(cand))
    d = decide(bad, max(se, 1e-12), df, n, higher_is_better, allowed, alpha)
    p = (0.0 if bad > 0 else 1.0 if bad < 0 else 0.5) if exact else float(stdtr(df, -bad / se))
    mde = 0.0 if exact else _worse_from_log(minimum_detectable_log(se, df, alpha), higher_is_better)
    if paired:  # the spread that matters is that of the pair ratios: drift shared by a pair cancels
        spread = float(np.std(np.log(cand) - np.log(base), ddof=1))
        noise = f"the pair ratios vary by {_pct(spread)}" if spread >= NOISY_CV else ""
    else:
        spread = max(cv(base), cv(cand))
        noise = f"stdev {_pct(spread)} of the mean in a group" if spread >= NOISY_CV else ""
    if mde > allowed:
        noise = ", ".join(filter(None, [noise, f"these runs detect only changes beyond {_pct(mde)}"]))
    test = (f"paired t-test, {len(base)} pairs" if paired else f"Welch t-test, {len(base)} vs {len(cand)} runs")
    floor = f" ({metric}'s noise floor; {_pct(max_regression)} asked)" if noise_floor > max_regression else ""
    stats_ = f"(p={p:.3f} worse, {test}); minimum detectable change {_pct(mde)}"
    verdict: Verdict = ("regression" if d.decision == "regression"
                        else "pass" if d.decision in ("same", "better") or d.not_worse else "inconclusive")
    reason = f"{d.reason}{floor} {stats_}"
    if verdict == "inconclusive" and noise:
        reason += f"; noisy: {noise}"
    return Comparison(**common, ratio=d.ratio, ci=(d.ratio, d.ratio) if exact else d.interval, p_value=p,
                      verdict=verdict, reason=reason,
                      noisy=bool(noise), mde=mde, method="paired t-test" if paired else "Welch t-test", noise=noise,
                      decision=d.decision, more=d.more, level=d.level)


def compare_worst(metric: str, baseline: Values, candidate: Values, allowed: float = 0.10) -> Comparison:
    """Counts of defects (pods left unscheduled, gangs partly placed, devices given twice).

    Where the baseline runs have none, the scenario expects none: any in a candidate run is a regression (one
    stranded pod is a defect, not noise). Where the baseline has some (pods pending by design: a trace's fill, an
    over-subscribed cluster), the count varies from run to run by itself, so it is compared as a figure is (counts
    plus one, unpaired, :func:`compare` at ``allowed``): worse only when significantly worse beyond it."""
    base, cand = _clean(baseline, candidate, paired=False)
    common: dict[str, Any] = dict(metric=metric, higher_is_better=False, baseline=_floats(base),
                                  candidate=_floats(cand), max_regression=0.0, ci=None, p_value=None, noisy=False,
                                  method="worst run")
    if not len(base) or not len(cand):
        return Comparison(**common, ratio=None, verdict="inconclusive", decision="inconclusive",
                          reason=f"no {metric} figure in {'the baseline' if not len(base) else 'the candidate'} runs")
    b, c = float(base.max()), float(cand.max())
    ratio = c / b if b else None
    if b > 0:  # pending by design: the count's own spread decides
        got = compare(metric, base + 1, cand + 1, False, allowed)
        return replace(got, baseline=_floats(base), candidate=_floats(cand), method="counts (some by design)",
                       reason=f"the baseline runs have {metric} too (by design: {b:g} at most), so the counts are "
                              f"compared as a figure: {got.reason}")
    if c > 0:
        return Comparison(**common, ratio=ratio, verdict="regression", decision="regression",
                          reason=f"worst candidate run {c:g} {metric}, the baseline runs none (the scenario expects "
                                 "none: any is a regression)")
    return Comparison(**common, ratio=ratio, verdict="pass", decision="same",
                      reason=f"none: no {metric} in any run, baseline or candidate")


def simulate_error_rates(values_by_run: Sequence[float], n: int, effect: float, higher_is_better: bool,
                         max_regression: float, trials: int = 2000, seed: int = 0,
                         mode: Literal["interleaved", "random"] = "interleaved",
                         noise_floor: float = 0.0) -> dict[str, Any]:
    """How often the gate's rule says regression / pass / inconclusive on groups drawn from real runs.

    ``values_by_run`` is one metric of identical runs in the order they ran. Each trial draws an A/A pair
    of groups of ``n`` runs, ``interleaved`` (2n consecutive runs split alternately into A and B, compared
    paired, as ``run --repeat`` makes them) or ``random`` (2n runs drawn without replacement, unpaired),
    and the same groups as A/B with B's values multiplied by ``1 + effect`` (``effect=-0.2``: a 20% drop).
    Returns the rates of each verdict for A/A (false alarms) and A/B (detection)."""
    v = np.asarray(values_by_run, dtype=np.float64)
    if n < 1 or len(v) < 2 * n:
        raise ValueError(f"need at least {2 * n} runs to draw two groups of {n}, got {len(v)}")
    rng = np.random.default_rng(seed)
    verdicts: dict[str, list[str]] = {"aa": [], "ab": []}
    for _ in range(trials):
        if mode == "interleaved":
            start = int(rng.integers(0, len(v) - 2 * n + 1))
            window = v[start:start + 2 * n]
            a, b = (window[0::2], window[1::2]) if rng.random() < 0.5 else (window[1::2], window[0::2])
        else:
            idx = rng.choice(len(v), size=2 * n, replace=False)
            a, b = v[idx[:n]], v[idx[n:]]
        paired = mode == "interleaved"
        for key, cand in (("aa", b), ("ab", b * (1 + effect))):
            verdicts[key].append(compare("simulated", a, cand, higher_is_better, max_regression, paired=paired,
                                         noise_floor=noise_floor).verdict)
    rates = {k: {x: vs.count(x) / trials for x in ("regression", "pass", "inconclusive")}
             for k, vs in verdicts.items()}
    return {"n": n, "mode": mode, "trials": trials, "effect": effect, **rates}


# ---- the three-way decision ------------------------------------------------------------------------

Decision = Literal["regression", "same", "better", "inconclusive"]
MAX_MORE = 1000
"""Most extra pairs :func:`decide` will say would decide; beyond it, "more runs would not decide"."""


@dataclass(frozen=True)
class Decided:
    """What a group of pairs (or two groups of runs) can say about a change, at a margin."""

    decision: Decision
    ratio: float
    """candidate / baseline (geometric)."""
    interval: tuple[float, float]
    """The ratio's two-sided ``level`` interval: its ends are exactly the one-sided tests at ``alpha`` each
    (worse than 0, beyond the margin, within it), so the interval printed is the interval tested."""
    level: float
    margin: float
    """The allowed change, relative, in the worse direction (the equivalence bounds are ±its log)."""
    not_worse: bool
    """The interval excludes a change worse than the margin (non-inferiority shown: a gate may pass)."""
    more: int | None
    """Decided: 0. Else how many more pairs (paired) or runs a side would decide if the estimate and the spread
    stayed as they are; None when no number would (the estimate sits on the margin)."""
    reason: str


@functools.lru_cache(maxsize=4096)
def _t(alpha: float, df: float) -> float:
    """The t quantile at 1 - alpha (one-sided)."""
    return float(stdtrit(df, 1 - alpha))


def _bounds(higher_is_better: bool, margin: float) -> float:
    """The margin on the log scale, in the worse direction (``bad`` units: > 0 is worse)."""
    if margin <= 0:
        raise ValueError("the allowed change must be > 0")
    return -math.log(1 - margin) if higher_is_better and margin < 1 else math.log(1 + margin)


def decide(bad: float, se: float, df: float, n: int, higher_is_better: bool, margin: float,
           alpha: float = ALPHA) -> Decided:
    """The three-way verdict from an estimate on the log scale.

    ``bad`` is the mean log change in the worse direction (> 0: the candidate is worse), ``se`` its standard
    error on ``df`` degrees of freedom from ``n`` pairs (or runs a side), ``margin`` the allowed change. With
    ``[lo, hi]`` = ``bad`` ± t(1-alpha, df)·se and ``m`` the margin's log:

    - *regression*: the estimate is worse than the margin and ``lo > 0`` (significantly worse, asv's rule);
    - *better*: the mirror: better than the margin and ``hi < 0``;
    - *same*: ``-m < lo`` and ``hi < m``: two one-sided tests (TOST) show the change within ±margin;
    - *inconclusive* otherwise, with ``more``: the pairs that would decide were estimate and spread to stay.
    ``not_worse`` (``hi < m``) is the gate's pass: a regression of the margin is excluded at ``alpha``."""
    m = _bounds(higher_is_better, margin)
    t = _t(alpha, df) if df > 0 else math.inf
    h = t * se
    lo, hi = bad - h, bad + h
    level = 1 - 2 * alpha
    # as a ratio of candidate to baseline (the worse direction is down for higher-is-better metrics)
    sign = -1.0 if higher_is_better else 1.0
    ratio = math.exp(sign * bad)
    ends = sorted((math.exp(sign * lo), math.exp(sign * hi)))
    interval = (ends[0], ends[1])
    not_worse = hi < m
    decision: Decision
    if bad > m and lo > 0:
        decision = "regression"
    elif bad < -m and hi < 0:
        decision = "better"
    elif -m < lo and hi < m:
        decision = "same"
    else:
        decision = "inconclusive"
    more = 0 if decision != "inconclusive" else _more(bad, se, n, m, alpha)
    change = f"{(ratio - 1) * 100:+.1f}% ({level * 100:.0f}% CI {(interval[0] - 1) * 100:+.1f}%.."
    change += f"{(interval[1] - 1) * 100:+.1f}%)"
    allowed = f"±{margin * 100:.0f}%"
    reason = {
        "regression": f"{change}: worse beyond the allowed {margin * 100:.0f}%",
        "better": f"{change}: better beyond {margin * 100:.0f}%",
        "same": f"{change}: the same within {allowed}",
        "inconclusive": f"{change}: " + (
            f"not worse beyond the allowed {margin * 100:.0f}% (shown), the same within {allowed} not shown"
            if not_worse else
            f"beyond the allowed {margin * 100:.0f}% but not significant" if bad > m else
            f"better by more than {margin * 100:.0f}% but not significant" if bad < -m else
            f"within {allowed} but not shown (the interval reaches beyond it)")
        + ("" if more is None else f"; about {more} more pairs (or runs a side) would decide"),
    }[decision]
    return Decided(decision, ratio, interval, level, margin, not_worse, more, reason)


def _more(bad: float, se: float, n: int, m: float, alpha: float) -> int | None:
    """Pairs beyond ``n`` at which the same estimate and spread would be decided (same, or beyond the margin and
    significant); None when none up to :data:`MAX_MORE` would."""
    sd = se * math.sqrt(max(n, 1))
    target = abs(bad) if abs(bad) > m else m - abs(bad)
    if target <= 0 or sd <= 0:
        return None if target <= 0 else 1
    for k in range(n + 1, n + MAX_MORE + 1):
        if _t(alpha, k - 1) * sd / math.sqrt(k) < target:
            return k - n
    return None


def decide_groups(baseline: Values, candidate: Values, higher_is_better: bool, margin: float,
                  paired: bool = True, alpha: float = ALPHA) -> Decided:
    """:func:`decide` on two groups of positive values (paired: the i-th of each form a pair)."""
    base, cand = _clean(baseline, candidate, paired)
    need = MIN_PAIRS if paired else MIN_SAMPLES
    if len(base) < need or len(cand) < need or (base <= 0).any() or (cand <= 0).any():
        raise ValueError(f"need at least {need} positive values a side")
    diff, se, df = log_difference(base, cand, paired)
    bad = -diff if higher_is_better else diff
    return decide(bad, max(se, 1e-12), df, len(base) if paired else min(len(base), len(cand)), higher_is_better,
                  margin, alpha)


# ---- sequential pairs ------------------------------------------------------------------------------

LOOK_GROWTH = 1.5
"""How many times more pairs each look of a sequential comparison has than the one before (about)."""


def looks(first: int = 3, most: int = 20, growth: float = LOOK_GROWTH) -> list[int]:
    """The numbers of pairs at which a sequential comparison is tested: ``first``, then about ``growth`` times
    more each time, and ``most`` last."""
    if first < MIN_PAIRS or most < first:
        raise ValueError(f"looks need {MIN_PAIRS} <= first <= most, got {first}, {most}")
    out, n = [first], float(first)
    while out[-1] < most:
        n *= growth
        out.append(min(most, max(out[-1] + 1, round(n))))
    return out


def look_alpha(alpha: float, schedule: Sequence[int]) -> float:
    """The per-look significance that keeps each one-sided error of the whole sequence at most ``alpha``
    (Bonferroni over the looks: conservative; the real rates are measured by :func:`simulate_sequential`)."""
    return alpha / len(schedule)


def decide_sequential(log_ratios: Values, higher_is_better: bool, margin: float,
                      schedule: Sequence[int], alpha: float = ALPHA) -> tuple[Decided | None, int]:
    """Test the pairs' log ratios (candidate over baseline) at each look of ``schedule`` reached; return the first
    decision and the pairs it used, or (None, pairs) when the pairs so far have not decided and the schedule has a
    later look; at the last look, the decision as it stands (inconclusive included)."""
    a = look_alpha(alpha, schedule)
    d = np.asarray(log_ratios, dtype=np.float64)
    last: Decided | None = None
    for n in schedule:
        if n > len(d):
            return None, len(d)
        x = d[:n]
        sd = float(x.std(ddof=1))
        bad = float(-x.mean() if higher_is_better else x.mean())
        last = decide(bad, max(sd / math.sqrt(n), 1e-12), n - 1, n, higher_is_better, margin, a)
        if last.decision != "inconclusive":
            return last, n
    return last, len(d[:schedule[-1]])


def simulate_sequential(sd: float, effect: float, higher_is_better: bool, margin: float, schedule: Sequence[int],
                        trials: int = 2000, seed: int = 0, alpha: float = ALPHA) -> dict[str, Any]:
    """The sequential rule's outcome rates on simulated pairs: log ratios normal with spread ``sd`` (the pair
    ratio's, measured), shifted by ``effect`` (relative, e.g. -0.05 for 5% lower); and the pairs it used."""
    rng = np.random.default_rng(seed)
    shift = math.log(1 + effect)
    counts: dict[str, int] = {"regression": 0, "same": 0, "better": 0, "inconclusive": 0}
    used: list[int] = []
    for _ in range(trials):
        x = rng.normal(shift, sd, schedule[-1])
        got, n = decide_sequential(x, higher_is_better, margin, schedule, alpha)
        assert got is not None
        counts[got.decision] += 1
        used.append(n)
    return {"trials": trials, "sd": sd, "effect": effect, "margin": margin,
            **{k: v / trials for k, v in counts.items()}, "pairs_median": float(np.median(used)),
            "pairs_mean": float(np.mean(used))}
