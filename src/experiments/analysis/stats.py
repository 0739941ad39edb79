"""Pure statistics over seeds: bootstrap intervals and three-way interval tests.

The resampling unit is the seed. Every function takes plain arrays and a fixed
generator seed, so that the same inputs give the same interval on every run.
An interval is `(estimate, lo, hi)`; with fewer than two seeds in some group
the bounds are NaN and every test on them answers "unclear".
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

N_BOOT = 2000  # resamples per interval
LEVEL = 0.95  # two-sided coverage of every interval
SEED = 0  # generator seed: fixed, so reruns give identical reports

Interval = tuple[float, float, float]
NAN_INTERVAL: Interval = (math.nan, math.nan, math.nan)


def _clean(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    return a[np.isfinite(a)]


def _percentiles(samples: np.ndarray, level: float) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def _boot_means(values: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return values[idx].mean(axis=1)  # (n_boot,)


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = N_BOOT, level: float = LEVEL,
                      seed: int = SEED) -> Interval:
    """Mean of per-seed values with a percentile bootstrap interval."""
    a = _clean(values)
    if len(a) == 0:
        return NAN_INTERVAL
    if len(a) < 2:
        return (float(a.mean()), math.nan, math.nan)
    rng = np.random.default_rng(seed)
    return (float(a.mean()), *_percentiles(_boot_means(a, rng, n_boot), level))


def bootstrap_diff_ci(a: Sequence[float], b: Sequence[float], n_boot: int = N_BOOT,
                      level: float = LEVEL, seed: int = SEED) -> Interval:
    """mean(a) - mean(b), seeds of each group resampled independently."""
    a, b = _clean(a), _clean(b)
    if len(a) == 0 or len(b) == 0:
        return NAN_INTERVAL
    est = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return (est, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    diffs = _boot_means(a, rng, n_boot) - _boot_means(b, rng, n_boot)
    return (est, *_percentiles(diffs, level))


def _ols_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of each row of y (k, m) against x (m,)."""
    xc = x - x.mean()
    return (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)


def slope(x: Sequence[float], y: Sequence[float], log_x: bool = True, log_y: bool = True) -> float:
    """Least-squares slope of y against x (log-log by default)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0 if log_x else True) & (y > 0 if log_y else True)
    x, y = x[ok], y[ok]
    if len(x) < 2 or np.ptp(x) == 0:
        return math.nan
    fx = np.log(x) if log_x else x
    fy = np.log(y) if log_y else y
    return float(_ols_slopes(fx, fy[None, :])[0])


def bootstrap_slope_ci(groups: Mapping[float, Sequence[float]], log_y: bool = True,
                       n_boot: int = N_BOOT, level: float = LEVEL, seed: int = SEED) -> Interval:
    """Slope of the seed-mean of y against log(x), with a bootstrap interval.

    `groups` maps each x (e.g. d_k) to its per-seed values. Each replicate
    resamples the seeds of every x independently, averages them, and fits a
    line through (log x, log mean) (or (log x, mean) when log_y is False: the
    change per factor e of x; divide by log2(e) for "per doubling").
    """
    clean = {float(x): _clean(v) for x, v in groups.items() if x > 0}
    clean = {x: v for x, v in sorted(clean.items()) if len(v) > 0}
    if log_y:
        clean = {x: v[v > 0] for x, v in clean.items()}
        clean = {x: v for x, v in clean.items() if len(v) > 0}
    if len(clean) < 2:
        return NAN_INTERVAL
    xs = np.log(np.array(list(clean)))
    means = np.array([v.mean() for v in clean.values()])
    est = float(_ols_slopes(xs, (np.log(means) if log_y else means)[None, :])[0])
    if min(len(v) for v in clean.values()) < 2:
        return (est, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    boot = np.stack([_boot_means(v, rng, n_boot) for v in clean.values()], axis=1)  # (n_boot, m)
    fy = np.log(boot) if log_y else boot
    return (est, *_percentiles(_ols_slopes(xs, fy), level))


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
