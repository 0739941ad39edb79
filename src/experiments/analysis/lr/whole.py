"""The optimum's drift with d_k read from whole lr curves, and beside it from every seed with the
pruned rates at their bound.

train.prune stops the rates that can no longer be the best, so a seed's best rate is chosen among
the survivors: where one rate survived, every seed's best is that rate and the per-seed slopes of
lr.views collapse to zero-width intervals. The seeds that train.prune.spare_seeds kept whole
(every rate trained to the budget) show the whole curve instead. Here, per (condition, variant):

1. per d_k, the seed-mean validation AUC at every rate of the grid (a diverged run at chance,
   lr.select.scored);
2. its optimum in log2(lr), refined off the grid by the vertex of the parabola through the best
   rate and its two neighbours: the grid's step (about 1.7 in log2 lr) would otherwise quantise
   the optimum, so that a drift smaller than a step reads as 0 or as a whole step. At an end of
   the grid the optimum is that end: nothing is measured past it, and a parabola extrapolated
   there would invent an optimum;
3. the slope of that optimum per doubling of d_k, by least squares over the d_ks;
4. its interval from a percentile bootstrap over whole seeds (scipy.stats.bootstrap, seeded):
   each resample redraws seeds with replacement and repeats 1-3. With few seeds the percentile
   interval is about the range of the seeds' own slopes and covers less than its label
   (stats.intervals says why), so below MIN_SEEDS, as every interval here, it has none: the
   estimate stands alone, with its number of seeds. On the committed study's curves (pruned
   rates at their bound), pairs of seeds gave intervals about half as wide as the spread of the
   pairs' own estimates: train.prune.spare_seeds of 3 or more gives a whole-curve interval.

"Whole" seeds are read from the runs, not from the key: a seed whose runs have no `pruned` status
at any rate of any d_k of the variant (the spared seeds of a pruned study; every seed of a study
without pruning). The same estimator on all the selection seeds, a pruned rate entered at its
bound on the final AUC (`accuracy_auc_bound`, training.prune.lane_bound, which the replay found
about unbiased), is the bound-based slope given beside it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from experiments.analysis.lr import select as lr_select
from experiments.analysis.stats.intervals import LEVEL, MIN_SEEDS

RESAMPLES = 2000
BOOTSTRAP_SEED = 0  # one seeded resampling: the same tables give the same interval


@dataclass(frozen=True)
class Curves:
    """One variant in one condition: val AUC [seeds, d_ks, rates] on log2 axes, and each d_k's
    chance (an optimum needs a mean past LEARNED_OVER_CHANCE x chance, as per seed in lr.select)."""
    auc: np.ndarray
    log_d_k: np.ndarray
    log_lr: np.ndarray
    chance: np.ndarray
    seeds: tuple

    def at(self, seeds: list, min_d_k: float = 0.0) -> "Curves":
        """These curves restricted to `seeds` and to the d_ks at or above min_d_k."""
        rows = [self.seeds.index(s) for s in seeds]
        cols = self.log_d_k >= math.log2(min_d_k) if min_d_k > 0 else np.ones(self.log_d_k.size, bool)
        return Curves(self.auc[rows][:, cols], self.log_d_k[cols], self.log_lr, self.chance[cols], tuple(seeds))


def curves_of(sc: pd.DataFrame, variant: str) -> Curves:
    """The selection seeds' val AUC of one variant (from lr.select.scored) as Curves; NaN where a
    (seed, d_k, rate) has no run."""
    runs = lr_select.selecting(sc[sc["attention"] == variant])
    cube = runs.pivot_table(index="seed", columns=["d_k", "lr"], values="val_auc", aggfunc="mean", dropna=False)
    d_ks, lrs = sorted(runs["d_k"].unique()), sorted(runs["lr"].dropna().unique())
    cube = cube.reindex(columns=pd.MultiIndex.from_product([d_ks, lrs]))
    auc = cube.to_numpy(dtype=float).reshape(len(cube), len(d_ks), len(lrs))
    chance = runs.groupby("d_k")["chance"].max().reindex(d_ks).to_numpy(dtype=float)
    return Curves(auc, np.log2(np.asarray(d_ks, float)), np.log2(np.asarray(lrs, float)), chance,
                  tuple(cube.index))


def whole_seeds(sc: pd.DataFrame, variant: str) -> list:
    """The selection seeds of `variant` trained at every rate of every d_k to the end: no run
    pruned, and a run at every (d_k, rate) the variant was trained at."""
    runs = lr_select.selecting(sc[sc["attention"] == variant])
    cell = pd.Series(list(zip(runs["d_k"], runs["lr"])), index=runs.index)
    per_seed = runs.assign(_cell=cell, _pruned=runs["status"].eq("pruned")).groupby("seed")
    whole = (per_seed["_cell"].nunique() == cell.nunique()) & ~per_seed["_pruned"].any()
    return sorted(whole.index[whole])


def vertex(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The abscissa of the vertex of the parabola through three points (x, y [..., 3]), or the
    middle x where the three are on a line or the parabola opens upwards."""
    x0, x1, x2 = np.moveaxis(x, -1, 0)
    y0, y1, y2 = np.moveaxis(y, -1, 0)
    num = (x1 - x0) ** 2 * (y1 - y2) - (x1 - x2) ** 2 * (y1 - y0)
    den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0)
    curved = den > 0  # the middle point above the chord: a maximum
    return np.where(curved, x1 - 0.5 * num / np.where(curved, den, 1.0), x1)


def optima(auc: np.ndarray, log_lr: np.ndarray, chance: np.ndarray) -> np.ndarray:
    """log2 of the refined optimal rate of the seed-mean curve, per d_k: auc [..., seeds, d_ks,
    rates] -> [..., d_ks]. NaN where no rate has a value or none took the mean past
    LEARNED_OVER_CHANCE x chance."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a (d_k, rate) no seed has: NaN, as meant
        mean = np.nanmean(auc, axis=-3)
    seen = np.isfinite(mean)
    best = np.argmax(np.where(seen, mean, -np.inf), axis=-1)
    inner = np.clip(best, 1, log_lr.size - 2) if log_lr.size >= 3 else best
    take = np.stack([inner - 1, inner, inner + 1], -1) if log_lr.size >= 3 else best[..., None]
    y = np.take_along_axis(np.where(seen, mean, np.nan), take, axis=-1)
    refined = vertex(log_lr[take], y) if log_lr.size >= 3 else log_lr[best]
    at_end = (best != inner) | ~np.isfinite(y).all(axis=-1)  # an end, or a neighbour unmeasured
    out = np.where(at_end, log_lr[best], refined)
    learned = lr_select.past_chance(np.nanmax(np.where(seen, mean, -np.inf), axis=-1), chance)
    return np.where(seen.any(axis=-1) & learned, out, np.nan)


def slope(log_d_k: np.ndarray, log_lr: np.ndarray) -> np.ndarray:
    """Least-squares slope of log2(optimal lr) per doubling of d_k (log_lr [..., d_ks]), over the
    d_ks where it is finite; NaN where fewer than two are."""
    ok = np.isfinite(log_lr)
    n = ok.sum(axis=-1)
    x = np.where(ok, log_d_k, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = np.where(ok, log_d_k - x.sum(axis=-1, keepdims=True) / n[..., None], 0.0)
        dy = np.where(ok, log_lr - np.nansum(log_lr, axis=-1, keepdims=True) / n[..., None], 0.0)
        out = (dx * dy).sum(axis=-1) / (dx * dx).sum(axis=-1)
    return np.where(n >= 2, out, np.nan)


@dataclass(frozen=True)
class Drift:
    """A slope of log2(optimal lr) per doubling of d_k: (estimate, low, high) and its seeds."""
    ci: tuple[float, float, float]
    n_seeds: int


NO_DRIFT = Drift((math.nan, math.nan, math.nan), 0)


def drift(c: Curves) -> Drift:
    """The slope of c's refined optima, its interval from a bootstrap over whole seeds."""
    n = len(c.seeds)
    if n == 0:
        return NO_DRIFT
    est = float(slope(c.log_d_k, optima(c.auc, c.log_lr, c.chance)))
    if n < MIN_SEEDS or not math.isfinite(est):
        return Drift((est, math.nan, math.nan), n)

    def statistic(idx, axis=-1):  # idx [..., n]: resampled seed rows, whole seeds at a time
        return slope(c.log_d_k, optima(c.auc[idx.astype(int)], c.log_lr, c.chance))

    res = sps.bootstrap((np.arange(n),), statistic, vectorized=True, n_resamples=RESAMPLES,
                        confidence_level=LEVEL, method="percentile", rng=np.random.default_rng(BOOTSTRAP_SEED))
    lo, hi = res.confidence_interval
    return Drift((est, float(lo), float(hi)), n)


def drifts(sc: pd.DataFrame, variant: str, min_d_k: float = 0.0) -> tuple[Drift, Drift]:
    """(from whole curves, from every selection seed with pruned rates at their bound) of one
    variant in one condition (sc from lr.select.scored), over the d_ks at or above min_d_k."""
    c = curves_of(sc, variant)
    whole = whole_seeds(sc, variant)
    return (drift(c.at(whole, min_d_k)) if len(whole) else NO_DRIFT), drift(c.at(list(c.seeds), min_d_k))
