"""The robust statistics beside sub-claim 4's t-tests (stats.robust, stats.crossing): the sign-flip
permutation test, the power at the observed Δ, and d*'s interval both ways. SYNTHETIC per-seed
samples (not data), small and closed-form where the answer is known."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments.analysis.stats import crossing, profile, robust


def _sample(mean: float, sd: float, n: int) -> np.ndarray:
    """n values with exactly this mean and sample sd (normal quantiles, standardised)."""
    z = sps.norm.ppf((np.arange(n) + 0.5) / n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def test_sign_flip_is_exact_at_few_seeds():
    x = np.array([1.0, 2, 3, 4, 5])
    assert robust.sign_flip_p(x) == pytest.approx(1 / 32)  # only the observed signs give a mean this large
    assert robust.sign_flip_p(x, 0.0, "less") == pytest.approx(1.0)
    assert robust.sign_flip_p(x + 10, 10.0) == pytest.approx(1 / 32)  # the null shifts the sample
    assert math.isnan(robust.sign_flip_p([1.0, 2.0]))  # below MIN_SEEDS
    assert robust.sign_flip_p([1.0, np.nan, 2, 3]) == pytest.approx(1 / 8)  # NaN seeds dropped


def test_sign_flip_beyond_the_exact_range_is_reproducible():
    x = _sample(0.02, 0.05, 20)
    assert not robust.is_exact(20) and robust.is_exact(robust.EXACT_SEEDS)
    p = robust.sign_flip_p(x)
    assert p == robust.sign_flip_p(x) and 0 < p < 0.2  # a fixed Monte Carlo seed
    assert abs(p - profile.one_sided_p(x)) < 0.03  # near the t-test on a normal-looking sample


def test_sign_flip_and_t_can_disagree():
    x = [0.05, 0.039, -0.008, -0.014, 0.045, 0.001, 0.012, 0.012]  # heavy-tailed: t rejects, sign-flip not
    assert profile.one_sided_p(x) < 0.05 <= robust.sign_flip_p(x)


def test_tost_power_at_the_observed_delta_reproduces_the_audit():
    # assoc_recall/Adam at d_k = 4 in the current reference: Δ = −0.034, paired sd 0.029, 10 seeds
    if_equal, at_observed, seeds_if_equal, seeds_at_observed = robust.tost_powers(_sample(-0.034, 0.029, 10), 0.05)
    assert if_equal > 0.99 and 0.45 < at_observed < 0.53 and seeds_if_equal <= 6 and 20 <= seeds_at_observed <= 24
    outside = robust.tost_powers(_sample(-0.142, 0.141, 10), 0.05)  # its d_k = 2: Δ outside the margin
    assert outside[3] is None and 65 <= outside[2] <= 75  # about 70 seeds if truly equal
    assert robust.tost_powers([0.1, 0.2], 0.05)[2:] == (None, None)


def test_tost_seeds_are_the_fewest_that_reach_the_power():
    n = robust.tost_seeds(0.04, 0.05)
    assert profile.tost_power(0.04, n, 0.05) >= 0.8 > profile.tost_power(0.04, n - 1, 0.05)
    stricter = robust.tost_seeds(0.04, 0.05, alpha=0.025)
    assert profile.tost_power(0.04, stricter, 0.05, 0.0, 0.025) >= 0.8 and stricter > n
    assert robust.tost_seeds(0.04, 0.05, delta=0.06) is None  # Δ outside the margin
    assert robust.tost_seeds(5.0, 0.05) is None  # past MOST_SEEDS


def test_one_sided_power_and_its_seeds():
    power, seeds = robust.one_sided_powers(_sample(0.02, 0.04, 8))
    assert 0.3 < power < 0.6 and 20 < seeds < 30  # (1.645 + 0.84)^2 (0.04 / 0.02)^2 ≈ 25
    assert robust.one_sided_powers(_sample(-0.02, 0.04, 8))[1] is None  # Δ on the null's side


D_KS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
X = np.log2(D_KS)


def _profile(truth, sd=0.02, seeds=8, seed=0):
    return truth + sd * np.random.default_rng(seed).standard_normal((seeds, len(D_KS)))


def test_the_zero_set_finds_every_stretch():
    back = np.where(X < 3, -0.1, np.where((X > 5) & (X < 8), 0.0, 0.1))  # crosses near 5.7, 0 again at 64-128
    stretches = crossing.zero_set(D_KS, _profile(back))
    assert len(stretches) == 2
    first, second = stretches
    assert 4 < first.lo < 2 ** 2.5 < first.hi < 8 and 32 < second.lo <= 64 and 128 <= second.hi < 256
    assert crossing.zero_set(D_KS, _profile(np.full(X.shape, 0.2))) == ()  # 0 nowhere
    (everywhere,) = crossing.zero_set(D_KS, _profile(np.zeros(X.shape), sd=0.05))
    assert everywhere.lo is None and everywhere.hi is None  # open at both ends


def test_the_bootstrap_over_seeds():
    clear = crossing.bootstrap(D_KS, _profile(0.05 * (X - 3)))
    assert clear.no_crossing == 0 and 6 < clear.lo < 8 < clear.hi < 11 and clear.beyond == 0
    assert clear == crossing.bootstrap(D_KS, _profile(0.05 * (X - 3)))  # a fixed seed
    never = crossing.bootstrap(D_KS, _profile(np.full(X.shape, 0.2)))
    assert never.no_crossing == 1 and never.lo is None
    late = crossing.bootstrap(D_KS, _profile(np.where(X < 3, -0.1, np.where(X < 9, 0.0, 0.1)), sd=0.03))
    assert late.beyond > 0.2  # the last crossing often found far above 16
    assert crossing.bootstrap(D_KS, _profile(X, seeds=2)) is None
