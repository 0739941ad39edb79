"""The optimal multiplier of one cell: a quadratic in log2 c through the best grid point and its
neighbours, its vertex c*; a bootstrap over seeds for its interval. Pure functions of arrays."""
from __future__ import annotations

import numpy as np

INSIDE, EDGE_LOW, EDGE_HIGH, FLAT = "inside", "edge: low", "edge: high", "not concave"


def fit_window(n_points: int, best: int, half_width: int) -> slice:
    """2 * half_width + 1 grid points around `best`, shifted inwards at the grid's ends."""
    size = min(n_points, 2 * half_width + 1)
    lo = min(max(0, best - half_width), n_points - size)
    return slice(lo, lo + size)


def vertex(log2_c: np.ndarray, auc: np.ndarray, half_width: int) -> tuple[float, str]:
    """(log2 c*, where it lies) from seed-mean AUC per grid point (ascending log2 c). A concave fit's
    vertex, held inside the fitted window; the best grid point itself where the fit is not concave.
    The flag says where c* lies: inside the grid, or at an end (the optimum may lie beyond it)."""
    best = int(np.nanargmax(auc))
    window = fit_window(len(auc), best, half_width)
    x, y = log2_c[window], auc[window]
    ok = np.isfinite(y)
    if ok.sum() < 3:
        return float(log2_c[best]), FLAT
    a, b, _ = np.polyfit(x[ok], y[ok], 2)
    if a >= 0:
        return float(log2_c[best]), FLAT
    at = float(np.clip(-b / (2 * a), x[ok].min(), x[ok].max()))
    if best == 0 and at <= log2_c[0] + 1e-9:
        return at, EDGE_LOW
    if best == len(auc) - 1 and at >= log2_c[-1] - 1e-9:
        return at, EDGE_HIGH
    return at, INSIDE


def bootstrap_vertices(log2_c: np.ndarray, auc_by_seed: np.ndarray, half_width: int,
                       n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """log2 c* of `n_boot` resamples of the seeds (columns of auc_by_seed [grid, seeds], drawn with
    replacement, the same seeds at every c: a seed's lanes share its data and init)."""
    n_seeds = auc_by_seed.shape[1]
    draws = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
    return np.array([vertex(log2_c, np.nanmean(auc_by_seed[:, d], axis=1), half_width)[0] for d in draws])


def interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of bootstrap samples at `level` (0.95: 2.5% .. 97.5%)."""
    tail = 100 * (1 - level) / 2
    if not np.isfinite(samples).any():
        return float("nan"), float("nan")
    lo, hi = np.nanpercentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)
