"""The reference's TOST p, one-sided power and seeds needed come from statsmodels now; they give the
numbers the hand-written formulas gave (kept here as the reference they are checked against)."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments.analysis.stats import profile, robust


def hand_one_sided_p(x, null, greater):
    t = (x.mean() - null) / (x.std(ddof=1) / math.sqrt(x.size))
    return sps.t.sf(t, x.size - 1) if greater else sps.t.cdf(t, x.size - 1)


def hand_power(sd, n, effect, alpha=0.05):
    return sps.nct.sf(sps.t.ppf(1 - alpha, n - 1), n - 1, effect * math.sqrt(n) / sd)


def hand_seeds(sd, effect, target=0.8):
    for n in range(robust.MIN_SEEDS, robust.MOST_SEEDS + 1):
        if hand_power(sd, n, effect) >= target:
            return n
    return None


@pytest.mark.parametrize("seed", range(20))
def test_tost_p_is_the_larger_one_sided_p(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(rng.uniform(-0.06, 0.06), rng.uniform(0.005, 0.05), size=int(rng.integers(3, 25)))
    hand = max(hand_one_sided_p(x, -0.05, True), hand_one_sided_p(x, 0.05, False))
    assert profile.tost_p(x, 0.05) == pytest.approx(hand, rel=1e-9, abs=1e-15)


def test_tost_p_edges_as_before():
    assert math.isnan(profile.tost_p([0.01], 0.05))
    assert profile.tost_p([0.01, 0.01, 0.01], 0.05) == 0.0 and profile.tost_p([0.2, 0.2, 0.2], 0.05) == 1.0


@pytest.mark.parametrize("sd", [0.005, 0.02, 0.05, 0.2])
@pytest.mark.parametrize("effect", [0.002, 0.01, 0.03, 0.1])
def test_power_and_seeds_needed_agree_with_the_noncentral_t(sd, effect):
    for n in (robust.MIN_SEEDS, 8, 24, 100):
        assert profile.one_sided_power(sd, n, effect) == pytest.approx(hand_power(sd, n, effect), abs=1e-12)
    assert robust.one_sided_seeds(sd, effect) == hand_seeds(sd, effect)
