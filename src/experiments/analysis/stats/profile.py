"""The d_k profile of a paired difference: where two variants are alike, from which
d_k on one is ahead, and where the difference crosses 0. Pure functions of
per-seed arrays [n_seeds, n_d_k] (NaN where a pair is missing).

A sub-claim like "alike for small d_k, additive ahead for large d_k" is a
statement about the whole profile Δ(d_k), so it is read as one:

- alike: TOST (two one-sided t-tests, level alpha each) at each d_k against a
  margin declared before the data. Equivalent where both one-sided nulls
  |Δ| >= margin are rejected, i.e. where the (1 - 2 alpha) t-interval lies inside
  ±margin. Each d_k answers its own question; no family-wise claim is made.
- ahead: a fixed-sequence step-down from the largest d_k. H0(d): Δ(d) <= null is
  tested one-sided at level alpha, largest d_k first; testing stops at the first
  d_k not rejected. The fixed order keeps the family-wise error at alpha with no
  correction, and the rejected d_k form one range [from_d, largest].
- crossover: d* is where the seed-mean profile, linear between swept points
  in log2 d_k, last crosses 0 from below. Its interval inverts the pointwise
  t-test: the points of log2 d_k around d* at which the (1 - alpha) interval of
  the per-seed interpolated Δ still contains 0. A bound that runs off the swept
  range is reported as open (None).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from experiments.analysis.stats.intervals import MIN_SEEDS, mean_ci

ALPHA = 0.05  # each one-sided test; the family-wise error of a step-down
GRID_PER_OCTAVE = 64  # resolution of the crossover's interval in log2 d_k


def _clean(diff) -> np.ndarray:
    x = np.asarray(diff, dtype=float)
    return x[np.isfinite(x)]


def one_sided_p(diff, null: float = 0.0, alternative: str = "greater") -> float:
    """p-value of the one-sample t-test of the per-seed differences against `null`.

    NaN below MIN_SEEDS finite seeds; 0 or 1 when the seeds agree exactly."""
    x = _clean(diff)
    if x.size < MIN_SEEDS:
        return math.nan
    if np.ptp(x) == 0:  # no spread: the test is degenerate, the sign decides
        above = x[0] > null if alternative == "greater" else x[0] < null
        return 0.0 if above else 1.0
    # scipy.stats.ttest_1samp's statistic and law, without its per-call checks (a margin sweep
    # calls this thousands of times)
    t = (x.mean() - null) / (x.std(ddof=1) / math.sqrt(x.size))
    return float(sps.t.sf(t, x.size - 1) if alternative == "greater" else sps.t.cdf(t, x.size - 1))


def tost_p(diff, margin: float) -> float:
    """TOST p-value for |Δ| < margin (statsmodels' ttost_paired: the larger of the two one-sided
    p-values); NaN below MIN_SEEDS finite seeds; where the seeds agree exactly, the sign decides."""
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin: must be a positive number, got {margin!r}")
    x = _clean(diff)
    if x.size < MIN_SEEDS or np.ptp(x) == 0:
        return max(one_sided_p(x, -margin, "greater"), one_sided_p(x, margin, "less"))
    return float(ttost_paired(x, np.zeros_like(x), -margin, margin)[0])


def equivalent(diff, margin: float, alpha: float = ALPHA) -> str:
    """'yes' where TOST rejects non-equivalence at alpha, 'no' where the (1 - 2 alpha)
    interval lies wholly outside ±margin, 'few' below MIN_SEEDS, else 'unclear'."""
    p = tost_p(diff, margin)
    if math.isnan(p):
        return "few"
    if p < alpha:
        return "yes"
    _, lo, hi = mean_ci(_clean(diff), 1 - 2 * alpha)
    return "no" if (lo >= margin or hi <= -margin) else "unclear"


def step_down(diffs, null: float = 0.0, alpha: float = ALPHA) -> list[bool]:
    """Fixed-sequence step-down over d_k (columns, ascending d_k), largest first.

    Returns, per column, whether H0: Δ <= null was rejected; testing stops at the
    first column not rejected (or with too few seeds), so the True entries form a
    suffix. Family-wise error <= alpha."""
    diffs = np.asarray(diffs, dtype=float)
    rejected = [False] * diffs.shape[1]
    for j in range(diffs.shape[1] - 1, -1, -1):
        p = one_sided_p(diffs[:, j], null, "greater")
        if not p < alpha:  # NaN (too few seeds) stops the sequence too
            break
        rejected[j] = True
    return rejected


def from_which(d_ks, rejected: list[bool]) -> int | None:
    """The smallest d_k of the rejected suffix (the answer to "from which d_k on"), or None."""
    hits = [d for d, r in zip(d_ks, rejected) if r]
    return int(min(hits)) if hits else None


@dataclass(frozen=True)
class Crossover:
    """d* with its interval; lo/hi None where the interval runs off the swept range,
    d_star None where the mean profile never crosses 0 from below."""
    d_star: float | None
    lo: float | None
    hi: float | None

    def text(self) -> str:
        if self.d_star is None:
            return "no crossing"
        lo = f"{self.lo:.3g}" if self.lo is not None else "open"
        hi = f"{self.hi:.3g}" if self.hi is not None else "open"
        return f"{self.d_star:.3g} [{lo}, {hi}]"


def _interpolate(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each row of y [seeds, points] linear in x, read at grid; NaN rows stay NaN."""
    return np.stack([np.interp(grid, x, row) if np.all(np.isfinite(row)) else np.full(grid.shape, np.nan)
                     for row in y])


def last_up(x: np.ndarray, mean: np.ndarray) -> float | None:
    """Where `mean` (at points x) last crosses 0 from below, linear between points; None if never."""
    ups = [j for j in range(x.size - 1) if mean[j] <= 0 < mean[j + 1]]
    if not ups:
        return None
    j = ups[-1]
    return float(x[j] + (x[j + 1] - x[j]) * (0 - mean[j]) / (mean[j + 1] - mean[j]))


def whole_curves(d_ks, diffs) -> tuple[np.ndarray, np.ndarray]:
    """(log2 d_k, the seeds of diffs [seeds, d_ks] with every point finite): the interpolation
    needs each seed's whole curve."""
    y = np.asarray(diffs, dtype=float)
    return np.log2(np.asarray(d_ks, dtype=float)), y[np.all(np.isfinite(y), axis=1)]


def zero_band(x: np.ndarray, y: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(grid in log2 d_k, whether the pointwise (1 - alpha) t-interval of the per-seed
    interpolated Δ contains 0 there)."""
    grid = np.linspace(x[0], x[-1], int(round((x[-1] - x[0]) * GRID_PER_OCTAVE)) + 1)
    _, lo, hi = mean_ci(_interpolate(x, y, grid).T, 1 - alpha)
    return grid, (lo <= 0) & (hi >= 0)


def crossover(d_ks, diffs, alpha: float = ALPHA) -> Crossover:
    """d* where the mean of diffs [seeds, d_ks] crosses 0 from below for the last time,
    linear in log2 d_k, and its interval by inverting the pointwise t-test around it.

    Seeds with a missing point are left out (the interpolation needs the whole curve)."""
    x, y = whole_curves(d_ks, diffs)
    if y.shape[0] < MIN_SEEDS or x.size < 2:
        return Crossover(None, None, None)
    x_star = last_up(x, y.mean(axis=0))
    if x_star is None:
        return Crossover(None, None, None)
    grid, holds_zero = zero_band(x, y, alpha)
    k = int(np.argmin(np.abs(grid - x_star)))
    left, right = k, k
    while left > 0 and holds_zero[left - 1]:
        left -= 1
    while right < grid.size - 1 and holds_zero[right + 1]:
        right += 1
    lo_x = None if left == 0 and holds_zero[0] else grid[left]
    hi_x = None if right == grid.size - 1 and holds_zero[-1] else grid[right]
    as_d = lambda v: None if v is None else float(2.0 ** v)
    return Crossover(float(2.0 ** x_star), as_d(lo_x), as_d(hi_x))


@functools.lru_cache(maxsize=512)
def _sd_ratios(n: int) -> np.ndarray:
    """The sample sd over the true one at n seeds (sqrt of chi-square / df), on a 4000-point
    quantile grid: the same for every sd, so computed once per n."""
    q = (np.arange(4000) + 0.5) / 4000
    ratios = np.sqrt(sps.chi2.ppf(q, n - 1) / (n - 1))
    ratios.setflags(write=False)  # shared by every caller through the cache
    return ratios


def tost_power(sd: float, n: int, margin: float, true_diff: float = 0.0, alpha: float = ALPHA) -> float:
    """Probability that TOST declares |Δ| < margin with n paired seeds of spread sd when the
    true mean difference is true_diff: both one-sided t-tests reject. Monte Carlo over the
    sample sd is avoided: the sd's chi-square law is integrated on a quantile grid. (statsmodels
    has TOST's test, not its power; R's PowerTOST computes this exactly with Owen's Q.)"""
    if n < MIN_SEEDS or not (math.isfinite(sd) and sd >= 0):
        return math.nan
    t = sps.t.ppf(1 - alpha, n - 1)
    if sd == 0:
        return float(abs(true_diff) < margin)
    s = sd * _sd_ratios(n)
    half = t * s / math.sqrt(n)  # mean must lie within ±(margin - half)
    se = sd / math.sqrt(n)
    room = np.clip(margin - half, 0, None)
    inside = sps.norm.cdf((room - true_diff) / se) - sps.norm.cdf((-room - true_diff) / se)
    return float(np.mean(np.where(room > 0, inside, 0.0)))


def one_sided_power(sd: float, n: int, effect: float, alpha: float = ALPHA) -> float:
    """Power of the one-sided t-test (H0: Δ <= 0) at a true difference `effect` over n paired
    seeds of spread sd (statsmodels' TTestPower: the noncentral t)."""
    if n < MIN_SEEDS or not (math.isfinite(sd) and sd > 0):
        return math.nan
    return float(TTestPower().power(effect_size=effect / sd, nobs=n, alpha=alpha, alternative="larger"))
