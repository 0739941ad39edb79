"""Pure statistics over seeds: t-intervals, per-seed slopes, power, three-way tests.

The seed is the unit of replication, and seeds pair across variants and d_k
(same data stream, same init key). So a difference is taken seed by seed
before any interval (paired_diff_ci), and a slope against d_k is fitted to
each seed's own curve, the interval then taken over those per-seed slopes
(slope_ci): both respect the pairing, and both reduce to one interval over n
independent numbers.

Why Student's t and not the bootstrap: at 3 seeds a percentile bootstrap
interval is the min-max of the seeds (an all-minimum resample has
probability 1/27 > 2.5%), 76% coverage for a "95%" label, and BCa draws from
the same 27 resamples. The t-interval is exact for a normal seed spread at
every n >= 2, and the simulation in tests/test_coverage.py holds it within
±3 points of its level for skewness up to 1 (gamma(4), lognormal σ = 0.25)
from n = 3 on. It does not hold for strongly skewed spreads (exponential:
about 88% at n = 3..8, 92% at n = 20); no interval can at such n without an
assumption on the spread (Bahadur & Savage 1956).

Below MIN_SEEDS the bounds are NaN and every test on them answers 'few'.
Everything is closed form: the same inputs give the same interval.
Functions take one sample along the last axis; a 2-D input gives one
interval per row (the coverage test draws thousands of samples at once).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats as sps

LEVEL = 0.95  # two-sided coverage of every interval
POWER = 0.8  # probability of detection behind the "detectable" effect
MIN_SEEDS = 3  # below this the t-interval is not trusted (see the module docstring)

Interval = tuple[float, float, float]
NAN_INTERVAL: Interval = (math.nan, math.nan, math.nan)
METHOD = (f"{LEVEL:.0%} Student-t interval over seeds (paired seed by seed; slopes fitted per seed), "
          f"none below {MIN_SEEDS} seeds")


def _check_level(name: str, p: float) -> None:
    if not 0 < p < 1:
        raise ValueError(f"{name}: must lie strictly between 0 and 1, got {p!r}")


def _moments(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, mean, sd) of the finite entries along the last axis; NaN where undefined."""
    x = np.asarray(values, dtype=float)
    ok = np.isfinite(x)
    n = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, x, 0.0).sum(axis=-1) / n
        dev = np.where(ok, x - np.expand_dims(mean, -1), 0.0)
        sd = np.sqrt((dev * dev).sum(axis=-1) / (n - 1))
    return n, mean, np.where(n >= 2, sd, np.nan)


def _t(q: float, n: np.ndarray) -> np.ndarray:
    """Student-t quantile with n - 1 degrees of freedom; NaN below MIN_SEEDS."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.where(n >= MIN_SEEDS, sps.t.ppf(q, np.maximum(n - 1, 1)), np.nan)


def _out(*arrays):
    """Plain floats for one sample, arrays for many."""
    return tuple(float(a) if np.ndim(a) == 0 else a for a in arrays)


def count(values) -> int | np.ndarray:
    """Number of finite values (seeds) along the last axis."""
    n = np.isfinite(np.asarray(values, dtype=float)).sum(axis=-1)
    return int(n) if np.ndim(n) == 0 else n


def mean_ci(values, level: float = LEVEL) -> Interval:
    """(mean, lo, hi): the t-interval of the mean of per-seed values (NaN are dropped).

    Bounds are NaN below MIN_SEEDS finite values; the estimate is NaN with none."""
    _check_level("level", level)
    n, mean, sd = _moments(values)
    half = _t(0.5 + level / 2, n) * sd / np.sqrt(n)
    return _out(mean, mean - half, mean + half)


def paired_diff_ci(a, b, level: float = LEVEL) -> Interval:
    """mean(a - b) with its t-interval, a[i] and b[i] from the same seed.

    A pair with a NaN on either side is dropped as a whole."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired_diff_ci: a and b must pair seed for seed (same shape), "
                         f"got {a.shape} and {b.shape}")
    return mean_ci(a - b, level)


def detectable(values, level: float = LEVEL, power: float = POWER) -> float | np.ndarray:
    """Smallest true shift from a threshold that the interval would clear with
    probability `power`, from the seed spread: (t_{1-a/2} + t_{power}) sd / sqrt(n)
    (n - 1 degrees of freedom). NaN below MIN_SEEDS."""
    _check_level("level", level)
    _check_level("power", power)
    n, _, sd = _moments(values)
    out = (_t(0.5 + level / 2, n) + _t(power, n)) * sd / np.sqrt(n)
    return float(out) if np.ndim(out) == 0 else out


def per_seed_slopes(x, y, log_x: bool = True, log_y: bool = True) -> np.ndarray:
    """Least-squares slope of each seed's curve: y [..., n_seeds, m] against x [m].

    Points that are not finite (or not positive, on a log axis) are left out of
    that seed's fit; a seed with fewer than two distinct x left has slope NaN."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if y.shape[-1] != x.shape[-1]:
        raise ValueError(f"per_seed_slopes: y has {y.shape[-1]} points per seed, x has {x.shape[-1]}")
    with np.errstate(invalid="ignore", divide="ignore"):
        fx = np.log(x) if log_x else x
        fy = np.log(y) if log_y else y
        ok = np.isfinite(fx) & np.isfinite(fy)
        w = ok.astype(float)
        sw = w.sum(-1, keepdims=True)
        xm = (w * np.where(ok, fx, 0)).sum(-1, keepdims=True) / sw
        ym = (w * np.where(ok, fy, 0)).sum(-1, keepdims=True) / sw
        dx = np.where(ok, fx - xm, 0)
        sxx = (dx * dx).sum(-1)
        slope = (dx * np.where(ok, fy - ym, 0)).sum(-1) / sxx
    return np.where((sw[..., 0] >= 2) & (sxx > 1e-12), slope, np.nan)


def slope_ci(x, y, log_x: bool = True, log_y: bool = True, level: float = LEVEL) -> Interval:
    """t-interval over seeds of the per-seed slopes (y [n_seeds, m] against x [m])."""
    return mean_ci(per_seed_slopes(x, y, log_x, log_y), level)


# --- three-way tests on an interval -------------------------------------------------

def within(ci: Interval, lo: float, hi: float) -> str:
    """'yes' if the interval lies inside [lo, hi], 'no' if it misses it, else 'unclear'."""
    _, a, b = ci
    if not (math.isfinite(a) and math.isfinite(b)):
        return "unclear"
    if lo <= a and b <= hi:
        return "yes"
    if b < lo or a > hi:
        return "no"
    return "unclear"


def above(ci: Interval, threshold: float) -> str:
    """'yes' if the interval lies above threshold, 'no' if at or below it, else 'unclear'."""
    _, a, b = ci
    if not (math.isfinite(a) and math.isfinite(b)):
        return "unclear"
    if a > threshold:
        return "yes"
    if b <= threshold:
        return "no"
    return "unclear"


def below(ci: Interval, threshold: float) -> str:
    """'yes' if the interval lies below threshold, 'no' if at or above it, else 'unclear'."""
    est, a, b = ci
    return above((-est, -b, -a), -threshold)


def fmt_ci(ci: Interval, digits: int = 2) -> str:
    """'1.02 [0.97, 1.08]'; bounds omitted when unavailable."""
    est, a, b = ci
    if not math.isfinite(est):
        return "n/a"
    if not (math.isfinite(a) and math.isfinite(b)):
        return f"{est:.{digits}f} [n/a]"
    return f"{est:.{digits}f} [{a:.{digits}f}, {b:.{digits}f}]"
