"""The clauses of sub-claim 4 (quality), read on the d_k profile: pure functions of the swept
d_ks and per-seed differences [seeds, d_ks] over the d_ks that entered (quality_profile).

(a) additive − unscaled AUC:
    ahead: the fixed-sequence step-down from the largest d_k (family-wise 5%) gives
      the range where additive is ahead; YES if it includes the largest swept d_k,
      NO if additive is behind there or alike (TOST within the margin).
    crossover: d* where the mean profile crosses 0, with its interval (stats.profile).
    alike: TOST against the declared margin at each d_k below d* (every d_k where
      the profile never crosses); 'yes' if equivalent at one of them. Its power at
      the measured paired sd is stated per d_k.
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

import numpy as np

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import MIN_SEEDS, NAN_INTERVAL, count, detectable, mean_ci, within
from experiments.analysis.verdicts.rules import Answer, Method, Part

ALPHA = profile.ALPHA
NONE_ENTERED = "no d_k where scaled and one of the two variants learned"


def _fmt(ci) -> str:
    est, lo, hi = ci
    if not math.isfinite(est):
        return "n/a"
    return f"{est:+.3f} [{lo:+.3f}, {hi:+.3f}]" if math.isfinite(lo) else f"{est:+.3f}"


def _at(d_ks, diffs, j) -> tuple:
    x = np.asarray(diffs, dtype=float)[:, j]
    return x, (mean_ci(x) if count(x) else NAN_INTERVAL), int(count(x))


def d_k_list(d_ks: list[int]) -> str:
    """'d_k = 4, 8, 16': a set of swept d_k in words."""
    return "d_k = " + ", ".join(map(str, d_ks))


def not_measured(label: str, question: str, why: str) -> Part:
    return Part(label, question, Answer.FEW, NAN_INTERVAL, 0, math.nan, reading=why)


def _top_missing(d_ks, largest) -> str:
    return "" if d_ks and d_ks[-1] == largest else f"; the largest d_k, {largest}, not measured"


def _not_ahead(x, margin: float) -> bool:
    """Behind (one-sided, alpha), or equivalent within ±margin (TOST): not ahead, by the declared margin."""
    return profile.one_sided_p(x, 0.0, "less") < ALPHA or Answer(profile.equivalent(x, margin)) is Answer.YES


def ahead_part(d_ks, diffs, largest: int, margin: float, label: str = "(a) additive ahead of unscaled") -> Part:
    """'yes' where the step-down from the largest d_k rejects Δ <= 0 there (and maybe below),
    'no' where additive is behind or alike (TOST at ±margin) at the largest d_k, else 'unclear'."""
    question = f"ahead over a range including d_k = {largest}"
    if not d_ks:
        return not_measured(label, question, NONE_ENTERED)
    from_d = profile.from_which(d_ks, profile.step_down(diffs))
    reading = (f"ahead from d_k = {from_d} on (step-down, family-wise {ALPHA:.0%})" if from_d is not None
               else "ahead at no d_k")
    return _ahead_at_largest(d_ks, diffs, largest, margin, label, question, reading, from_d)


def _ahead_at_largest(d_ks, diffs, largest: int, margin: float, label: str, question: str, reading: str,
                      from_d: int | None) -> Part:
    """'yes' if ahead (one-sided, null 0: the step-down's first test) at the largest swept d_k,
    'no' if behind or alike there, 'unclear' otherwise or where that d_k did not enter; the range
    found is the step-down's, from `from_d` on."""
    x, ci, n = _at(d_ks, diffs, -1)
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif d_ks[-1] == largest and profile.one_sided_p(x, 0.0) < ALPHA:
        answer = Answer.YES
    elif _not_ahead(x, margin):
        answer = Answer.NO
    else:
        answer = Answer.UNCLEAR
    reading += f"; at d_k = {d_ks[-1]}: {_fmt(ci)}" + _top_missing(d_ks, largest)
    found = tuple(int(d) for d in d_ks if from_d is not None and d >= from_d)
    return Part(label, question, answer, ci, n, detectable(x) if n else math.nan, 3, reading, Method.STEP_DOWN,
                found, int(d_ks[-1]))


def crossover_of(d_ks, diffs) -> profile.Crossover:
    return profile.crossover(d_ks, diffs) if len(d_ks) >= 2 else profile.Crossover(None, None, None)


def alike_part(d_ks, diffs, margin: float, cross: profile.Crossover,
               label: str = "(a) additive and unscaled alike") -> Part:
    """TOST at ±margin at each d_k below d* (all d_ks without a crossing): 'yes' if equivalent at
    one, 'no' if the interval lies wholly outside ±margin at every one, else 'unclear'."""
    where = f"at or below d* = {cross.d_star:.3g}" if cross.d_star is not None else "at some d_k (no crossing)"
    question = f"equivalent within ±{margin:g} {where}"
    cols = [j for j, d in enumerate(d_ks) if cross.d_star is None or d <= cross.d_star]
    if not cols:
        return not_measured(label, question, "no d_k entered below d*")
    diffs = np.asarray(diffs, dtype=float)
    reads = {j: Answer(profile.equivalent(diffs[:, j], margin)) for j in cols}
    power = ", ".join(f"{d_ks[j]}: {_power(diffs[:, j], margin)}" for j in cols)
    hits = [d_ks[j] for j in cols if reads[j] is Answer.YES]
    shown = max((j for j in cols if reads[j] is Answer.YES), default=None)
    if shown is None:  # the d_k nearest to equivalence
        shown = min(cols, key=lambda j: abs(np.nanmean(diffs[:, j])) if count(diffs[:, j]) else math.inf)
    x, ci, n = _at(d_ks, diffs, shown)
    reading = (f"equivalent (TOST) at {d_k_list(hits)}" if hits else "equivalent at no d_k") + \
        f"; at d_k = {d_ks[shown]}: {_fmt(ci)}; power if truly equal at the paired sd: {power}"
    values = set(reads.values())
    answer = (Answer.YES if hits else Answer.FEW if values == {Answer.FEW} else Answer.NO if values == {Answer.NO}
              else Answer.UNCLEAR)
    return Part(label, question, answer, ci, n, detectable(x) if n else math.nan, 3, reading, Method.TOST,
                tuple(int(d) for d in hits), int(d_ks[shown]))


def _power(x, margin: float) -> str:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    p = profile.tost_power(float(np.std(x, ddof=1)), x.size, margin) if x.size > 1 else math.nan
    return f"{p:.0%}" if math.isfinite(p) else "n/a"


def fix_part(d_ks, diffs, margin: float, largest: int, label: str = "(b) scaled ahead of unscaled") -> Part:
    """From which d_k on scaled − unscaled exceeds the margin (step-down, null = margin); 'yes'
    if scaled is ahead (null 0) at the largest swept d_k, 'no' if behind or alike there."""
    question = f"ahead at d_k = {largest}"
    if not d_ks:
        return not_measured(label, question, NONE_ENTERED)
    from_d = profile.from_which(d_ks, profile.step_down(diffs, margin))
    reading = (f"ahead by more than {margin:g} from d_k = {from_d} on" if from_d is not None
               else f"ahead by more than {margin:g} at no d_k") + " (step-down)"
    return _ahead_at_largest(d_ks, diffs, largest, margin, label, question, reading, from_d)


def fix_from(d_ks, diffs, margin: float) -> int | None:
    """The smallest d_k from which scaled − unscaled exceeds the margin (the step-down)."""
    return profile.from_which(d_ks, profile.step_down(diffs, margin)) if d_ks else None


def lr_slope_part(variant: str, slopes, band: float, predicted: float | None) -> Part:
    """(c) one variant's per-seed slopes of log2(best lr) per doubling of d_k, beside the
    prediction; judged (within ±band of the predicted 0) where the prediction is a flat optimum."""
    slopes = np.asarray(slopes, dtype=float)
    n = count(slopes)
    ci = mean_ci(slopes) if n else NAN_INTERVAL
    pred = "none" if predicted is None else f"{predicted:+.1f}"
    question = f"flat: within ±{band:.2f}" if predicted == 0 else f"predicted {pred}"
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif predicted == 0 and math.isfinite(band):
        answer = Answer(within(ci, -band, band))
    else:
        answer = Answer.REPORTED
    reading = f"{_fmt(ci)} per doubling"
    return Part(f"{variant}: slope of log2 best lr", question, answer, ci, n,
                detectable(slopes) if n else math.nan, 2, reading)
