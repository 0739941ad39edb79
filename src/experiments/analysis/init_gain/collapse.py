"""The control's arithmetic, pure functions of arrays: a variant's AUC read at matched sigma_0
across d_k (the collapse), the d_k effect there and at a matched gain, and the sigma_0 at which it
falls to a comparator's (the crossover); bootstrap draws over seeds for each."""
from __future__ import annotations

import numpy as np

ALONE, TOO, UNCLEAR = "sigma_0 alone", "d_k too", "unclear"
BELOW, INSIDE, OPEN = "at or below the range", "inside", "open: above the range"


def common_grid(log_s: list[np.ndarray], n: int) -> np.ndarray:
    """n log2 sigma_0 values, evenly spaced over the range every d_k's points cover (empty where
    the ranges do not overlap)."""
    lo, hi = max(float(np.nanmin(x)) for x in log_s), min(float(np.nanmax(x)) for x in log_s)
    return np.linspace(lo, hi, n) if lo < hi else np.array([])


def read_at(log_s: np.ndarray, auc: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """AUC at each grid log2 sigma_0, linear between the points (sorted by sigma_0)."""
    order = np.argsort(log_s)
    return np.interp(grid, log_s[order], auc[order])


def d_k_effect(log2_d_k: np.ndarray, auc_by_d_k: np.ndarray) -> np.ndarray:
    """The AUC change across the d_k range on the least-squares line of AUC on log2 d_k, one per
    column of auc_by_d_k [d_k, ...] (positive: the larger d_k does better)."""
    x = log2_d_k - log2_d_k.mean()
    slope = (x[:, None] * (auc_by_d_k - auc_by_d_k.mean(axis=0))).sum(axis=0) / (x ** 2).sum()
    return slope * (log2_d_k.max() - log2_d_k.min())


def verdict(lo: float, hi: float, margin: float) -> str:
    """sigma_0 alone where [lo, hi] lies inside +-margin, d_k too where it lies outside, else unclear."""
    if not np.isfinite([lo, hi]).all():
        return UNCLEAR
    if -margin < lo and hi < margin:
        return ALONE
    return TOO if lo > margin or hi < -margin else UNCLEAR


def crossover(log_s: np.ndarray, auc: np.ndarray, comparator: float) -> tuple[float, str]:
    """(log2 sigma_0*, where): the smallest sigma_0 at which auc (ascending sigma_0) falls to the
    comparator's, linear between the two points around it; -inf at or below the first point,
    +inf where it never does."""
    order = np.argsort(log_s)
    x, gap = log_s[order], auc[order] - comparator
    under = np.flatnonzero(gap <= 0)
    if not len(under):
        return float("inf"), OPEN
    i = int(under[0])
    if i == 0:
        return float("-inf"), BELOW
    t = gap[i - 1] / (gap[i - 1] - gap[i])
    return float(x[i - 1] + t * (x[i] - x[i - 1])), INSIDE


def seed_draws(n_seeds: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """[n_boot, n_seeds] seed indices with replacement; the same draw serves every point (a seed's
    data stream is the same at every gain and d_k)."""
    return rng.integers(0, n_seeds, size=(n_boot, n_seeds))


def resampled_means(auc_by_seed: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """[..., n_boot] seed means of auc_by_seed [..., seeds] under each draw."""
    return np.nanmean(auc_by_seed[..., draws], axis=-1)


def interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval at `level`; infinite draws (a crossover outside the range) count at
    their end, so that the interval opens there."""
    samples = samples[~np.isnan(samples)]
    if not len(samples):
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    return (float(np.percentile(samples, tail, method="lower")),
            float(np.percentile(samples, 100 - tail, method="higher")))
