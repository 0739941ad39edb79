"""Which learning rates of a job can no longer be its best: the pruning rule (pure numpy).

A job trains rates x seeds as lanes, and analysis.lr.select later keeps the rate
with the best seed-mean validation accuracy AUC (the mean accuracy over the
evaluations of the whole budget; a lane stopped at the threshold holds its last
accuracy over the rest; a diverged lane counts at chance throughout). At an
evaluation, each rate's final AUC is bounded from what its lanes have shown so
far:

    low  = (sum so far + left x last)                   / n_evals   (no further progress)
    high = (sum so far + sum_j min(1, last + slack + j x climb)) / n_evals

where `left` is the number of evaluations still to come (j = 1 .. left), `last`
the seed mean of the latest accuracies and `climb` its rise per evaluation over
the last `window` evaluations (0 if falling): a rate still climbing is given
credit for going on at that pace, a flat one at most `slack` above where it is. A rate whose `high` is below the best `low` of
the rates still in the running cannot become the best under that bound, and
its lanes stop. `slack = 1` is the sure bound (accuracy cannot pass 1), which
prunes almost nothing; a smaller slack bets that a rate will not climb more
than `slack` above where it stands. The replay of a committed study
(experiments.replay) measures what that bet costs. The rule looks only at
validation accuracy; the leader (the highest `low`) is never stopped, since
its `high` is at least its `low`.

A diverged lane's accuracy is unknown past its divergence: it enters at chance,
here its accuracy at step 0 (lr_select's own stand-in where the task's chance
is unknown), held over the whole budget.

The lanes of a job's first `spare_seeds` seeds are never stopped: they train
every rate to the budget, so that the optimum's drift with d_k can be read
from whole curves (analysis.lr.whole) rather than from the rates that survived;
3 or more give that slope an interval. Each spared seed gives back its share of
the lane-steps pruning saves (the replay: 38% on adam_mqar; 3 of 8 seeds spared
train about 23% more lane-steps than with none).
They still count in their rate's bounds while the rate is in the running, as
they would without the key; once a rate is out, no rate's decision reads it.
So the other seeds' decisions, and their numbers, are those of a job without
the key.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass  # not frozen: OmegaConf makes a frozen dataclass a read-only config node
class PruneRule:
    """train.prune: `enabled`; no rate stops before `min_frac` of the budget's evaluations;
    `slack` and `window` as above; the `keep_below` rates just below the leader are never
    stopped (a rate that learns more slowly early can end higher: the early leader is
    biased towards large rates); the lanes of the job's first `spare_seeds` seeds (seed ..
    seed + spare_seeds - 1) are never stopped. The values are those the replay chose on adam_mqar."""
    enabled: bool = False
    min_frac: float = 0.1
    slack: float = 0.15
    window: int = 4
    keep_below: int = 1
    spare_seeds: int = 0


def rule_of(train_cfg) -> PruneRule:
    """The PruneRule of a train config (off where the config has no `prune`)."""
    given = train_cfg.get("prune") if hasattr(train_cfg, "get") else None
    return PruneRule(**{k: given[k] for k in PruneRule.__dataclass_fields__ if k in given}) if given else PruneRule()


def held_curves(acc: np.ndarray, n_done: np.ndarray, diverged: np.ndarray, k: int) -> np.ndarray:
    """The first `k` evaluations of each lane as lr_select scores them.

    acc [lanes, >= k]: validation accuracy at each evaluation (anything past a lane's end);
    n_done [lanes]: how many evaluations each lane has (a stopped lane: its last one held);
    diverged [lanes]: the lane diverged (then it is at its step-0 accuracy throughout)."""
    acc = np.asarray(acc, dtype=float)[:, :k]
    idx = np.minimum(np.arange(k)[None, :], np.maximum(np.asarray(n_done)[:, None], 1) - 1)
    held = np.take_along_axis(acc, idx, axis=1)
    return np.where(np.asarray(diverged, bool)[:, None], acc[:, :1], held)


def bounds(curves: np.ndarray, n_evals: int, rule: PruneRule) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) bounds on each rate's final seed-mean AUC from curves [rates, seeds, k]."""
    k = curves.shape[-1]
    left = np.arange(1, n_evals - k + 1)  # (left,)
    so_far = np.nanmean(curves.sum(axis=-1), axis=-1)  # (R,); seeds a rate lacks are NaN
    mean = np.nanmean(curves, axis=1)  # (R, k)
    last = mean[:, -1]
    w = min(rule.window, k - 1)
    climb = np.maximum(0.0, (last - mean[:, -1 - w]) / w) if w > 0 else np.zeros_like(last)
    ahead = np.minimum(1.0, last[:, None] + rule.slack + climb[:, None] * left[None, :])  # (R, left)
    low = (so_far + left.size * last) / n_evals
    high = (so_far + ahead.sum(axis=-1)) / n_evals
    return low, high


def to_stop(curves: np.ndarray, running: np.ndarray, n_evals: int, rule: PruneRule) -> np.ndarray:
    """[rates] bool: the rates in the running (`running`) that can no longer be the best.

    curves [rates, seeds, k]: held_curves of each rate's lanes over the k evaluations so
    far, out of `n_evals` for the whole budget. Rates already out of the running take no
    part (their curves stop where they were pruned)."""
    running = np.asarray(running, bool)
    k = curves.shape[-1]
    if not rule.enabled or k >= n_evals or k < max(2, rule.min_frac * n_evals) or running.sum() < 2:
        return np.zeros_like(running)
    low, high = bounds(curves, n_evals, rule)
    score = np.where(running & np.isfinite(low), low, -np.inf)
    lead = int(np.argmax(score))
    stop = running & (high < score[lead])
    stop[max(0, lead - rule.keep_below):lead] = False  # rates are in ascending order
    return stop  # NaN (a lane without a curve) compares False: kept


def lane_bound(acc: list[float], n_evals: int, rule: PruneRule) -> float:
    """The `high` bound of one lane's final AUC from its accuracies so far: what a pruned lane
    enters the LR sensitivity at (the replay found it about unbiased there, the held AUC not)."""
    return float(bounds(np.asarray(acc, dtype=float)[None, None, :], n_evals, rule)[1][0])


def lanes_to_stop(accs: list[list[float]], rates: list[float], diverged: list[bool], active: list[int],
                  out: set[float], n_evals: int, rule: PruneRule, spared: list[bool] | None = None) -> list[int]:
    """The active lanes whose rate is out (stopped now or before; a rate stopped now joins
    `out`), but for the spared lanes, which train on to the budget.

    accs[i]: lane i's validation accuracies so far (a lane that ended has fewer);
    rates[i]: its learning rate; out: the rates stopped before (in place);
    spared[i]: lane i is one of the job's first spare_seeds seeds (None: none is)."""
    if not rule.enabled:
        return []
    grid = sorted(set(rates))
    k = max(len(a) for a in accs)
    per_rate = max(rates.count(r) for r in grid)
    curves = np.full((len(grid), per_rate, k), np.nan)
    slot = dict.fromkeys(grid, 0)
    for a, r, bad in zip(accs, rates, diverged):
        row = np.asarray(a + [math.nan] * (k - len(a)), dtype=float)[None]
        curves[grid.index(r), slot[r]] = held_curves(row, np.array([len(a)]), np.array([bad]), k)[0]
        slot[r] += 1
    stop = to_stop(curves, np.array([r not in out for r in grid]), n_evals, rule)
    out.update(r for r, s in zip(grid, stop) if s)
    return [i for i in active if rates[i] in out and not (spared and spared[i])]


def spared_seeds(first_seed: int, rule: PruneRule) -> range:
    """The seeds whose lanes the rule never stops: the job's first `spare_seeds`."""
    return range(first_seed, first_seed + rule.spare_seeds) if rule.enabled else range(0)
