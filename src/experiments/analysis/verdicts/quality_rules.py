"""The clauses of sub-claim 4 (quality), read on the d_k profile: pure functions of the swept
d_ks and per-seed differences [seeds, d_ks] over the d_ks that entered (quality_profile).

(a) additive − unscaled AUC:
    ahead: the fixed-sequence step-down from the largest d_k (family-wise 5%) gives
      the range where additive is ahead; YES if it includes the largest swept d_k,
      NO if additive is behind there or alike (TOST within the margin).
    crossover: d* where the mean profile crosses 0, with its interval (stats.profile).
    alike: TOST against the declared margin at each of the declared small d_ks that was
      swept and entered (conf/analysis.yaml: alike_d_ks), never below a cutoff estimated
      from the data; 'yes' where it holds at the declared share of them (alike_share), 'no'
      where the interval lies wholly outside ±margin at more than 1 − share of them. Its
      power at the measured paired sd is stated per d_k.
(b) scaled − unscaled: the same step-down with the margin as null says from which
    d_k on scaled is ahead by more than the margin; 'yes' if scaled is ahead (null 0)
    at the largest swept d_k, 'no' if behind or alike there.
A clause whose largest swept d_k did not enter (scaled did not learn there) cannot
answer 'yes': that d_k was not measured.
(c) per variant, the slope of log2(best lr) per doubling of d_k beside the Adam-step
    prediction (lr.theory); judged on muP alone, whose prediction is a flat optimum:
    'yes' if its interval lies within ±band (under half a grid step over the sweep),
    'no' if wholly outside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import MIN_SEEDS, NAN_INTERVAL, count, detectable, mean_ci, within
from experiments.analysis.verdicts.rules import Answer, Method, Part

ALPHA = profile.ALPHA


class Missing(Enum):
    """Why a clause of the profile measured nothing."""
    NONE_ENTERED = "no d_k entered"  # scaled and neither variant of the pair learned at one d_k
    NONE_DECLARED = "none of the declared d_ks entered"
    NO_ADDITIVE = "no additive runs"


@dataclass(frozen=True)
class AheadOver:
    """(a): is the variant ahead over a range of d_k that includes `d_k`, the largest swept?"""
    d_k: int


@dataclass(frozen=True)
class AheadAt:
    """(b): is the variant ahead at `d_k`, the largest swept? Its range: ahead by more than `margin`."""
    d_k: int
    margin: float


@dataclass(frozen=True)
class Equivalent:
    """(a): equivalent within ±margin at `share` or more of the `declared` d_ks; `judged`: those
    of them that were swept and entered (the others cannot count either way)."""
    margin: float
    declared: tuple[int, ...]
    share: float
    judged: tuple[int, ...]


@dataclass(frozen=True)
class LrSlope:
    """(c): flat within ±band where the `predicted` slope is 0, else reported beside it (None: none)."""
    band: float
    predicted: float | None
    from_d_k: int | None = None  # judged over the d_ks from this one on (a base width), else all


def _at(d_ks, diffs, j) -> tuple:
    x = np.asarray(diffs, dtype=float)[:, j]
    return x, (mean_ci(x) if count(x) else NAN_INTERVAL), int(count(x))


def not_measured(label: str, question, why: Missing, test: Method = Method.INTERVAL) -> Part:
    return Part(label, question, Answer.FEW, NAN_INTERVAL, 0, math.nan, test=test, missing=why)


def _not_ahead(x, margin: float, alpha: float = ALPHA) -> bool:
    """Behind (one-sided, alpha), or equivalent within ±margin (TOST): not ahead, by the declared margin."""
    return (profile.one_sided_p(x, 0.0, "less") < alpha
            or Answer(profile.equivalent(x, margin, alpha)) is Answer.YES)


def ahead_part(d_ks, diffs, largest: int, margin: float, label: str = "(a) additive ahead of unscaled",
               alpha: float = ALPHA) -> Part:
    """'yes' where the step-down from the largest d_k rejects Δ <= 0 there (and maybe below),
    'no' where additive is behind or alike (TOST at ±margin) at the largest d_k, else 'unclear'.
    Every test at level `alpha` (a look's, in a two-stage confirmation: verdicts.top_up)."""
    question = AheadOver(largest)
    if not d_ks:
        return not_measured(label, question, Missing.NONE_ENTERED)
    from_d = profile.from_which(d_ks, profile.step_down(diffs, alpha=alpha))
    return _ahead_at_largest(d_ks, diffs, largest, margin, label, question, from_d, alpha)


def _ahead_at_largest(d_ks, diffs, largest: int, margin: float, label: str, question,
                      from_d: int | None, alpha: float = ALPHA) -> Part:
    """'yes' if ahead (one-sided, null 0: the step-down's first test) at the largest swept d_k,
    'no' if behind or alike there, 'unclear' otherwise or where that d_k did not enter; the range
    found is the step-down's, from `from_d` on."""
    x, ci, n = _at(d_ks, diffs, -1)
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif d_ks[-1] == largest and profile.one_sided_p(x, 0.0) < alpha:
        answer = Answer.YES
    elif _not_ahead(x, margin, alpha):
        answer = Answer.NO
    else:
        answer = Answer.UNCLEAR
    found = tuple(int(d) for d in d_ks if from_d is not None and d >= from_d)
    return Part(label, question, answer, ci, n, detectable(x) if n else math.nan, 3, Method.STEP_DOWN,
                found, int(d_ks[-1]))


def crossover_of(d_ks, diffs) -> profile.Crossover:
    return profile.crossover(d_ks, diffs) if len(d_ks) >= 2 else profile.Crossover(None, None, None)


def alike_part(d_ks, diffs, margin: float, declared, share: float,
               label: str = "(a) additive and unscaled alike", alpha: float = ALPHA) -> Part:
    """TOST at ±margin at each declared d_k that entered: 'yes' at `share` of them or more, 'no'
    where the interval lies wholly outside ±margin at more than 1 − share of them, else 'unclear'
    (see share_answer); `ci` is at the judged d_k furthest from equivalence (largest TOST p)."""
    judged = tuple(int(d) for d in d_ks if d in set(declared))
    question = Equivalent(margin, tuple(int(d) for d in declared), share, judged)
    if not judged:
        return not_measured(label, question, Missing.NONE_DECLARED, Method.TOST)
    diffs = np.asarray(diffs, dtype=float)
    cols = [list(d_ks).index(d) for d in judged]
    reads = {j: Answer(profile.equivalent(diffs[:, j], margin, alpha)) for j in cols}
    hits = tuple(int(d_ks[j]) for j in cols if reads[j] is Answer.YES)
    tost = {j: profile.tost_p(diffs[:, j], margin) for j in cols}
    shown = max(cols, key=lambda j: tost[j] if math.isfinite(tost[j]) else math.inf)
    x, ci, n = _at(d_ks, diffs, shown)
    power = tuple((int(d_ks[j]), _power(diffs[:, j], margin, alpha)) for j in cols)
    return Part(label, question, share_answer(list(reads.values()), share), ci, n,
                detectable(x) if n else math.nan, 3, Method.TOST, hits, int(d_ks[shown]), power)


def share_answer(reads: list[Answer], share: float) -> Answer:
    """'yes' where TOST said yes at `share` of the judged d_ks or more, 'no' where it said no (wholly
    outside ±margin) at more than 1 − share of them, 'few' where every one had too few seeds."""
    k, tol = len(reads), 1e-9
    if reads.count(Answer.YES) >= share * k - tol:
        return Answer.YES
    if reads.count(Answer.NO) > (1 - share) * k + tol:
        return Answer.NO
    return Answer.FEW if set(reads) == {Answer.FEW} else Answer.UNCLEAR


def _power(x, margin: float, alpha: float = ALPHA) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return profile.tost_power(float(np.std(x, ddof=1)), x.size, margin, 0.0, alpha) if x.size > 1 else math.nan


def fix_part(d_ks, diffs, margin: float, largest: int, label: str = "(b) scaled ahead of unscaled",
             alpha: float = ALPHA) -> Part:
    """From which d_k on scaled − unscaled exceeds the margin (step-down, null = margin); 'yes'
    if scaled is ahead (null 0) at the largest swept d_k, 'no' if behind or alike there."""
    question = AheadAt(largest, margin)
    if not d_ks:
        return not_measured(label, question, Missing.NONE_ENTERED)
    from_d = profile.from_which(d_ks, profile.step_down(diffs, margin, alpha))
    return _ahead_at_largest(d_ks, diffs, largest, margin, label, question, from_d, alpha)


def fix_from(d_ks, diffs, margin: float, alpha: float = ALPHA) -> int | None:
    """The smallest d_k from which scaled − unscaled exceeds the margin (the step-down)."""
    return profile.from_which(d_ks, profile.step_down(diffs, margin, alpha)) if d_ks else None


def lr_slope_part(variant: str, slopes, band: float, predicted: float | None, from_d_k: int | None = None) -> Part:
    """(c) one variant's per-seed slopes of log2(best lr) per doubling of d_k (over the d_ks from
    `from_d_k` where it names one: lr.views.judged_from), beside the prediction; judged (within
    ±band of the predicted 0) where the prediction is a flat optimum."""
    slopes = np.asarray(slopes, dtype=float)
    n = count(slopes)
    ci = mean_ci(slopes) if n else NAN_INTERVAL
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif predicted == 0 and math.isfinite(band):
        answer = Answer(within(ci, -band, band))
    else:
        answer = Answer.REPORTED
    scope = f" over d_k ≥ {from_d_k}" if from_d_k else ""
    return Part(f"{variant}: slope of log2 best lr{scope}", LrSlope(band, predicted, from_d_k), answer, ci, n,
                detectable(slopes) if n else math.nan, 2)
