"""Steps to threshold as censored data: Kaplan-Meier over seeds, restricted mean, "reached k/n".

A run that never reaches the threshold is censored at its budget (its total
steps): it is not the same as a run that reaches it at the last step, and a
mean that counts "never" as the budget hides that. So a cell is summarised by
its survival curve S(t) = P(not yet at threshold after t steps) from
scipy.stats.ecdf on CensoredData, by how many seeds reached the threshold,
and by the restricted mean (the area under S from 0 to tau, tau the shortest
budget: the mean of min(T, tau)). Two groups are compared on the restricted
mean, seed by seed; two groups that both never reach the threshold have no
difference to report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from experiments.analysis.stats.intervals import NAN_INTERVAL, Interval, paired_diff_ci


@dataclass(frozen=True)
class Survival:
    n: int  # seeds
    reached: int  # seeds that reached the threshold
    tau: float  # restriction time: the shortest budget
    times: np.ndarray  # steps at which S changes (events and censorings)
    surv: np.ndarray  # S just after each of `times`
    restricted_mean: float  # integral of S over [0, tau]
    median: float  # first step with S <= 0.5; NaN if S stays above it

    @property
    def reached_text(self) -> str:
        return f"{self.reached}/{self.n}"


def _split(steps, budgets) -> tuple[np.ndarray, np.ndarray]:
    steps = np.asarray(steps, dtype=float).ravel()
    budgets = np.broadcast_to(np.asarray(budgets, dtype=float), steps.shape)
    if not np.isfinite(budgets).all():
        raise ValueError("kaplan_meier: every run needs a finite budget (its total steps)")
    return steps, budgets


def kaplan_meier(steps, budgets) -> Survival | None:
    """Survival of 'not yet at threshold' over seeds; steps NaN = never (censored at its budget).

    None when there are no runs."""
    steps, budgets = _split(steps, budgets)
    if steps.size == 0:
        return None
    hit = np.isfinite(steps)
    km = sps.ecdf(sps.CensoredData(uncensored=steps[hit], right=budgets[~hit])).sf
    times, surv = np.asarray(km.quantiles, float), np.asarray(km.probabilities, float)
    tau = float(budgets.min())
    below = times[surv <= 0.5]
    return Survival(int(steps.size), int(hit.sum()), tau, times, surv,
                    restricted_mean(times, surv, tau), float(below[0]) if below.size else math.nan)


def restricted_mean(times: np.ndarray, surv: np.ndarray, tau: float) -> float:
    """Area under the right-continuous step function S (1 before times[0]) over [0, tau]."""
    edges = np.concatenate([[0.0], np.minimum(times, tau), [tau]])
    levels = np.concatenate([[1.0], surv])
    return float(np.sum(levels * np.diff(edges).clip(min=0)))


def restricted(steps, budgets, tau: float) -> np.ndarray:
    """Per-seed min(T, tau), T = budget where never reached (tau <= every budget)."""
    steps, budgets = _split(steps, budgets)
    return np.minimum(np.where(np.isfinite(steps), steps, budgets), tau)


def restricted_diff(steps_a, budgets_a, steps_b, budgets_b) -> Interval | None:
    """Paired t-interval of the restricted-mean difference a - b (seeds aligned);
    None when neither group has a run that reached the threshold."""
    a, ba = _split(steps_a, budgets_a)
    b, bb = _split(steps_b, budgets_b)
    if not (np.isfinite(a).any() or np.isfinite(b).any()):
        return None
    if a.size == 0 or b.size == 0:
        return NAN_INTERVAL
    tau = float(min(ba.min(), bb.min()))
    return paired_diff_ci(restricted(a, ba, tau), restricted(b, bb, tau))
