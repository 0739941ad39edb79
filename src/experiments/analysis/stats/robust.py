"""Beside each t-test on paired seed differences: the sign-flip permutation test, and the
power at the observed difference as well as at 0. Pure functions of one per-seed sample.

The sign-flip test asks the t-test's question without its normal law: under H0 (Δ = null,
a spread symmetric about it) each seed's x − null is as likely negative as positive, so the
2^n sign patterns are equally likely. The statistic is the mean of x − null; a sign flip
keeps the sum of squares, so the t statistic is a monotone function of that mean and both
tests rank the patterns alike. It is exact up to EXACT_SEEDS seeds (scipy enumerates every
pattern); beyond that Monte Carlo over MONTE_CARLO patterns from a fixed seed (the same
inputs give the same p). At n seeds its smallest p-value is 2^-n: at 4 seeds or fewer it can
never reject at 0.05, which is its answer, not a failure.
"""

from __future__ import annotations

import math

import numpy as np
from statsmodels.stats.power import TTestPower
from scipy import stats as sps

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import MIN_SEEDS

EXACT_SEEDS = 14  # 2^14 = 16,384 sign patterns: enumerated at or below this many seeds
MONTE_CARLO = 2 ** EXACT_SEEDS  # patterns drawn beyond it
MC_SEED = 0  # the Monte Carlo draw's seed, fixed so that a p-value is reproducible
MOST_SEEDS = 400  # the largest seed count a "seeds needed" search tries


def _clean(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[np.isfinite(x)]


def _mean(a, axis=-1):
    return np.mean(a, axis=axis)


def sign_flip_p(diff, null: float = 0.0, alternative: str = "greater") -> float:
    """p-value of the sign-flip permutation test of the mean of diff − null (one-sided,
    as profile.one_sided_p); NaN below MIN_SEEDS finite seeds."""
    x = _clean(diff) - null
    if x.size < MIN_SEEDS:
        return math.nan
    res = sps.permutation_test((x,), _mean, permutation_type="samples", alternative=alternative,
                               vectorized=True, n_resamples=MONTE_CARLO, random_state=MC_SEED)
    return float(res.pvalue)


def sign_flip_tost_p(diff, margin: float) -> float:
    """The sign-flip TOST: the larger of the two one-sided sign-flip p-values against ±margin."""
    return max(sign_flip_p(diff, -margin, "greater"), sign_flip_p(diff, margin, "less"))


def is_exact(n: int) -> bool:
    """Whether the sign-flip p-value at n seeds enumerates every pattern (else Monte Carlo)."""
    return n <= EXACT_SEEDS


def _sd(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if x.size > 1 else math.nan


def fewest_seeds(power_at, target: float) -> int | None:
    """The fewest seeds n in [MIN_SEEDS, MOST_SEEDS] with power_at(n) >= target; None if none.
    Power rises with n at a fixed true Δ and sd, so a bisection finds it."""
    lo, hi = MIN_SEEDS, MOST_SEEDS
    if not power_at(hi) >= target:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= target else (mid + 1, hi)
    return lo


def tost_seeds(sd: float, margin: float, delta: float = 0.0, target: float = 0.8,
               alpha: float = profile.ALPHA) -> int | None:
    """The fewest paired seeds for TOST at ±margin to reach `target` power when the true Δ and sd
    are these; None where Δ lies outside ±margin (TOST's alternative) or past MOST_SEEDS."""
    if not abs(delta) < margin:
        return None
    return fewest_seeds(lambda k: profile.tost_power(sd, k, margin, delta, alpha), target)


def one_sided_seeds(sd: float, effect: float, target: float = 0.8, alpha: float = profile.ALPHA) -> int | None:
    """The fewest paired seeds for the one-sided t-test to reach `target` power at a true
    difference `effect` above its null (statsmodels' TTestPower.solve_power, rounded up); None where
    effect <= 0 or past MOST_SEEDS."""
    if not effect > 0 or not (math.isfinite(sd) and sd > 0):
        return None
    power = lambda k: profile.one_sided_power(sd, k, effect, alpha)  # noqa: E731
    if power(MIN_SEEDS) >= target:
        return MIN_SEEDS
    if not power(MOST_SEEDS) >= target:
        return None
    n = math.ceil(TTestPower().solve_power(effect_size=effect / sd, nobs=None, alpha=alpha, power=target,
                                           alternative="larger") - 1e-9)
    return n if power(n) >= target else n + 1  # the solver's last digit: the fewest n that reach it


def tost_powers(diff, margin: float, target: float = 0.8) -> tuple[float, float, int | None, int | None]:
    """(TOST's power if truly equal, its power at the observed mean and paired sd, the seeds for
    `target` power at Δ = 0, the seeds for it at the observed Δ: None where the observed Δ lies
    outside ±margin, or more than MOST_SEEDS would be needed)."""
    x = _clean(diff)
    sd, n = _sd(x), x.size
    if n < MIN_SEEDS:
        return math.nan, math.nan, None, None
    delta = float(x.mean())
    return (profile.tost_power(sd, n, margin, 0.0), profile.tost_power(sd, n, margin, delta),
            tost_seeds(sd, margin, 0.0, target), tost_seeds(sd, margin, delta, target))


def one_sided_powers(diff, null: float = 0.0, target: float = 0.8) -> tuple[float, int | None]:
    """(power of the one-sided t-test of Δ > null at the observed Δ − null and paired sd, the seeds
    for `target` power there: None where the observed Δ is not above the null)."""
    x = _clean(diff)
    sd, n = _sd(x), x.size
    if n < MIN_SEEDS:
        return math.nan, None
    effect = float(x.mean()) - null
    return profile.one_sided_power(sd, n, effect), one_sided_seeds(sd, effect, target)
