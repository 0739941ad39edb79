"""The clauses of sub-claim 4 (quality), as pure functions of per-seed arrays.

(a) crossover: Δ = additive − unscaled accuracy AUC, seed by seed, at each
    variant's best lr. Its per-seed slope against log2 d_k is above 0, Δ at the
    largest d_k is above 0, and at the smallest d_k Δ lies within ±margin.
    The margin comes from the seed spread: ALIKE_FRACTION (1) × the pooled
    between-seed sd of the two variants' AUC there (never below MARGIN_FLOOR).
    "Alike" then reads: swapping the compatibility function moves the AUC by
    less than reseeding one variant does, so that one run of each could not
    tell them apart. Half that sd (a "medium" standardised effect) would leave
    8 seeds without power unless the pairing removed most of the noise (the
    power table in tests/test_lr_study.py). A margin set to the
    detectable difference of Δ itself would be circular (the interval of a
    near-zero mean always fits inside its own detectable effect, so noise would
    pass as "alike"); the between-seed sd is a property of each variant alone,
    and the paired Δ, which shares data and init, is usually far tighter.
(b) the fix: scaled − unscaled at the largest d_k, paired, above 0.
(c) the lr view: the per-seed best lr of unscaled drifts with d_k (slope of
    log2 best lr against log2 d_k excludes 0); "no drift" when the interval lies
    within ±drift band (lr_select.drift_band: the optimum moves by less than
    half a grid step over the whole sweep), even if it excludes 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from experiments.analysis.verdicts.rules import Part, judge
from experiments.analysis.stats.intervals import (
    LEVEL,
    MIN_SEEDS,
    NAN_INTERVAL,
    above,
    below,
    count,
    detectable,
    mean_ci,
    per_seed_slopes,
    within,
)

ALIKE_FRACTION = 1.0  # "alike": |Δ| below this many between-seed sds of one variant
MARGIN_FLOOR = 0.005  # AUC (fraction correct): the margin never falls below half a point


def alike_margin(a, b) -> float:
    """ALIKE_FRACTION × the pooled between-seed sd of a and b (per-seed AUCs of two variants at
    one d_k), at least MARGIN_FLOOR; NaN when either has fewer than two finite seeds."""
    a, b = (np.asarray(x, dtype=float) for x in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return math.nan
    pooled = math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
    return max(ALIKE_FRACTION * pooled, MARGIN_FLOOR)


def equivalence_power(sd: float, n: int, margin: float, level: float = LEVEL) -> float:
    """Probability that the interval of a paired mean with true value 0 and sd `sd` over n seeds
    lies wholly inside ±margin (the 'alike' clause answering yes): noncentral t, scipy."""
    if n < MIN_SEEDS or not (math.isfinite(sd) and math.isfinite(margin)):
        return math.nan
    if sd == 0:
        return 1.0
    t = sps.t.ppf(0.5 + level / 2, n - 1)
    # |mean| + t s/√n < margin, mean ~ N(0, sd²/n), s² ~ sd² χ²/(n-1): integrate over s
    q = np.linspace(1e-4, 1 - 1e-4, 2001)
    s = sd * np.sqrt(sps.chi2.ppf(q, n - 1) / (n - 1))
    room = np.clip(margin - t * s / math.sqrt(n), 0, None)
    return float(np.mean(2 * sps.norm.cdf(room * math.sqrt(n) / sd) - 1))


def crossover_rule(d_ks, delta, add_small, uns_small) -> list[Part]:
    """(a) on delta [seeds, d_ks] (additive − unscaled AUC, NaN where a pair is missing)."""
    d_ks = np.asarray(d_ks, dtype=float)
    delta = np.asarray(delta, dtype=float).reshape(-1, d_ks.size)
    slopes = per_seed_slopes(np.log2(d_ks), delta, log_x=False, log_y=False)
    margin = alike_margin(add_small, uns_small)
    d_lo, d_hi = int(d_ks[0]), int(d_ks[-1])
    parts = [judge("slope of Δ AUC per doubling of d_k", "above 0", slopes, "above", 0.0, digits=3),
             judge(f"Δ AUC at d_k={d_hi}", "above 0", delta[:, -1], "above", 0.0, digits=3)]
    m = f"{margin:.3f}" if math.isfinite(margin) else "n/a"  # NaN margin: 'unclear' (or 'few')
    return parts + [judge(f"Δ AUC at d_k={d_lo}", f"within ±{m}", delta[:, 0], "within",
                          -margin, margin, digits=3)]


def fix_rule(diff_large, d_large) -> Part:
    """(b) scaled − unscaled AUC at the largest d_k, per seed: above 0."""
    return judge(f"Δ AUC scaled − unscaled at d_k={int(d_large)}", "above 0", diff_large, "above", 0.0,
                 digits=3)


def drift_part(label: str, slopes, band: float) -> Part:
    """(c) one variant's per-seed slopes of log2(best lr) against log2 d_k: 'no' if the interval
    lies within ±band (no drift a grid could act on), else 'yes' if it excludes 0 (the optimum
    drifts), else 'unclear'."""
    slopes = np.asarray(slopes, dtype=float)
    n = count(slopes)
    ci = mean_ci(slopes) if n else NAN_INTERVAL
    question = f"interval excludes 0 (no drift if within ±{band:.2f})"
    if n < MIN_SEEDS:
        answer = "few"
    elif math.isfinite(band) and within(ci, -band, band) == "yes":
        answer = "no"  # even if it excludes 0: under half a grid step over the sweep, no grid could act on it
    elif "yes" in (above(ci, 0.0), below(ci, 0.0)):
        answer = "yes"
    else:
        answer = "unclear"
    return Part(label, question, answer, ci, n, detectable(slopes) if n else math.nan)


def includes_zero(part: Part) -> str:
    """'includes 0' / 'excludes 0' / 'no interval' for a slope clause."""
    _, lo, hi = part.ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return "includes 0" if lo <= 0 <= hi else "excludes 0"
