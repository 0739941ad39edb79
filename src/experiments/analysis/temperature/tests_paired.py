"""The paired comparison of the confirmation: Δ = AUC(c*) − AUC(c = 1) seed by seed. Library tests
throughout: t interval (scipy.stats), TOST (statsmodels' ttost_paired), power (statsmodels'
TTestPower), the exact sign-flip permutation p (scipy.stats.permutation_test)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

RIGHT, TOO_MUCH, TOO_LITTLE, UNCLEAR = "right amount", "too much", "too little", "unclear"


@dataclass(frozen=True)
class Paired:
    n: int
    delta: float
    lo: float  # the interval at 1 - 2 alpha, TOST's own
    hi: float
    sd: float
    p_tost: float
    p_perm: float
    power_at_zero: float  # TOST's chance to call a true Δ = 0 the right amount
    power_observed: float  # the t test's chance to see a Δ of the observed size as nonzero


def paired(better: np.ndarray, paper: np.ndarray, margin: float, alpha: float) -> Paired:
    d = np.asarray(better, float) - np.asarray(paper, float)
    n, mean, sd = len(d), float(np.mean(d)), float(np.std(d, ddof=1)) if len(d) > 1 else math.nan
    if n < 2 or not math.isfinite(sd):
        return Paired(n, mean, math.nan, math.nan, sd, math.nan, math.nan, math.nan, math.nan)
    if sd == 0:  # every seed the same Δ: the interval is that point
        inside = abs(mean) < margin
        return Paired(n, mean, mean, mean, 0.0, 0.0 if inside else 1.0, math.nan, 1.0, 1.0)
    half = stats.t.ppf(1 - alpha, n - 1) * sd / math.sqrt(n)
    p_tost = float(ttost_paired(np.asarray(better, float), np.asarray(paper, float), -margin, margin)[0])
    p_perm = float(stats.permutation_test((d,), np.mean, permutation_type="samples",
                                          n_resamples=min(2 ** n, 10000), random_state=0).pvalue)
    at_zero = _tost_power_at_zero(n, sd, margin, alpha)
    observed = observed_power(abs(mean) / sd, n, alpha) if mean else float(2 * alpha)
    return Paired(n, mean, mean - half, mean + half, sd, p_tost, p_perm, at_zero, observed)


def observed_power(effect_size: float, n: int, alpha: float) -> float:
    """The two-sided t test's power at level 2 alpha (statsmodels' TTestPower). Where a large effect
    sends its far tail to NaN (about 4.5 sd at 4 seeds), the near tail alone, from the noncentral t:
    the far one is below 1e-300."""
    power = float(TTestPower().power(effect_size=effect_size, nobs=n, alpha=2 * alpha))
    if math.isfinite(power):
        return power
    df = n - 1
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, df), df, effect_size * math.sqrt(n)))


def _tost_power_at_zero(n: int, sd: float, margin: float, alpha: float) -> float:
    """TOST's power at a true Δ of 0 (the bound of Chow & Liu: 1 − the two one-sided misses, each
    from the noncentral t at margin / se), taking the observed paired sd as the truth."""
    df, nc = n - 1, margin / (sd / math.sqrt(n))
    return float(max(0.0, 1 - 2 * stats.nct.cdf(stats.t.ppf(1 - alpha, df), df, nc)))


def answer(p: Paired, c_star: float, margin: float, alpha: float) -> str:
    """right amount: TOST within ±margin; too much / too little: the interval above 0 and Δ past the
    margin, c* below / above 1; else unclear."""
    if not math.isfinite(p.delta):
        return UNCLEAR
    if p.p_tost < alpha:
        return RIGHT
    if p.lo > 0 and p.delta > margin:
        return TOO_MUCH if c_star < 1 else TOO_LITTLE
    return UNCLEAR
