"""d*'s uncertainty beyond the local interval (profile.crossover): the whole set of d_k where
the pointwise interval contains 0, and a bootstrap over seeds. Pure functions of the d_k
profile [seeds, d_ks]; the same log2-linear interpolation as profile.crossover.

- zero set: every stretch of d_k (on the interpolated profile) where the pointwise 95%
  t-interval contains 0, not only the stretch around d*; a profile that returns to 0 at large
  d_k shows a second stretch there.
- bootstrap: whole seeds resampled with replacement (a seed's curve stays together, as the
  pairing requires), d* recomputed on each resample's mean profile; the percentile interval
  over the resamples that cross, the share that never cross from below, and the share whose
  last crossing lies above FAR_D_K. numpy's generator with a fixed seed draws the resamples
  (scipy.stats.bootstrap wants a finite statistic on every resample, and "no crossing" is
  an outcome here, not a number).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import LEVEL, MIN_SEEDS

RESAMPLES = 4000  # bootstrap resamples of the seeds
BOOT_SEED = 0  # the resampling's seed: the same profile gives the same interval
FAR_D_K = 16  # a last crossing above this is far from the swept small d_k


@dataclass(frozen=True)
class Stretch:
    """One stretch [lo, hi] of d_k; a bound None where it runs off the swept range."""
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class BootCrossing:
    """d* over bootstrap resamples of the seeds: the percentile interval of those that cross
    (None: fewer than half cross), the share with no crossing, the share above `far`."""
    lo: float | None
    hi: float | None
    no_crossing: float
    beyond: float
    far: float
    resamples: int
    seed: int


def zero_set(d_ks, diffs, alpha: float = profile.ALPHA) -> tuple[Stretch, ...]:
    """Every stretch of d_k where the pointwise (1 - alpha) interval of Δ contains 0; () where
    too few whole seeds or fewer than two d_k."""
    x, y = profile.whole_curves(d_ks, diffs)
    if y.shape[0] < MIN_SEEDS or x.size < 2:
        return ()
    grid, holds = profile.zero_band(x, y, alpha)
    edges = np.flatnonzero(np.diff(np.r_[0, holds.astype(int), 0]))  # starts and ends, alternating
    out = []
    for start, stop in zip(edges[::2], edges[1::2]):
        lo = None if start == 0 else float(2.0 ** grid[start])
        hi = None if stop == grid.size else float(2.0 ** grid[stop - 1])
        out.append(Stretch(lo, hi))
    return tuple(out)


def _last_crossings(x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """d* (NaN: no crossing) of each resample's mean profile; rows [resamples, seeds]."""
    means = y[rows].mean(axis=1)  # [resamples, d_ks]
    found = [profile.last_up(x, m) for m in means]
    return np.array([np.nan if v is None else 2.0 ** v for v in found])


def bootstrap(d_ks, diffs, resamples: int = RESAMPLES, seed: int = BOOT_SEED, far: float = FAR_D_K,
              level: float = LEVEL) -> BootCrossing | None:
    """d* over `resamples` draws of the whole seeds with replacement; None where too few whole
    seeds or fewer than two d_k."""
    x, y = profile.whole_curves(d_ks, diffs)
    if y.shape[0] < MIN_SEEDS or x.size < 2:
        return None
    rows = np.random.default_rng(seed).integers(0, y.shape[0], size=(resamples, y.shape[0]))
    stars = _last_crossings(x, y, rows)
    crossed = stars[np.isfinite(stars)]
    tail = (1 - level) / 2
    lo, hi = (np.quantile(crossed, [tail, 1 - tail]) if crossed.size * 2 >= resamples else (None, None))
    return BootCrossing(None if lo is None else float(lo), None if hi is None else float(hi),
                        float(np.mean(~np.isfinite(stars))), float(np.sum(crossed > far) / resamples),
                        far, resamples, seed)
