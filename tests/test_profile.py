"""The d_k profile's tests (analysis.profile): their error rates and power hold by simulation,
and each reading can come out either way."""
import math

import numpy as np
import pytest

from experiments.analysis.stats import profile

D_KS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def test_one_sided_p_matches_the_direction():
    up = np.array([0.10, 0.12, 0.08, 0.11, 0.09])
    assert profile.one_sided_p(up, 0.0, "greater") < 0.001
    assert profile.one_sided_p(up, 0.0, "less") > 0.999
    assert math.isnan(profile.one_sided_p([0.1, 0.2], 0.0))  # too few seeds


def test_step_down_stops_at_the_first_d_k_not_rejected():
    rng = np.random.default_rng(0)
    # ahead at the three largest d_k, nothing at the fourth, ahead again below it
    means = np.array([0.2, 0.2, 0.0, 0.2, 0.2, 0.2])
    diffs = means + 0.01 * rng.standard_normal((8, means.size))
    rejected = profile.step_down(diffs)
    assert rejected == [False, False, False, True, True, True]  # the two lowest are never tested
    assert profile.from_which([2, 4, 8, 16, 32, 64], rejected) == 16
    assert profile.from_which([2, 4], [False, False]) is None


def test_step_down_keeps_the_family_wise_error():
    rng = np.random.default_rng(1)
    sims, n = 4000, 8
    diffs = rng.standard_normal((sims, n, len(D_KS)))  # Δ = 0 at every d_k: any rejection is an error
    errors = sum(any(profile.step_down(d)) for d in diffs)
    # alpha = 0.05; 3 binomial sds above it would be 0.0602
    assert errors / sims < 0.06


def test_tost_holds_its_level_at_the_margin():
    rng = np.random.default_rng(2)
    sims, n, margin = 4000, 8, 0.05
    diffs = margin + 0.04 * rng.standard_normal((sims, n))  # true Δ exactly at the margin
    wrong = sum(profile.equivalent(d, margin) == "yes" for d in diffs)
    assert wrong / sims < 0.06


@pytest.mark.parametrize("true_diff", [0.0, 0.02])
def test_tost_power_matches_simulation(true_diff):
    rng = np.random.default_rng(3)
    sims, n, sd, margin = 4000, 10, 0.04, 0.05
    diffs = true_diff + sd * rng.standard_normal((sims, n))
    simulated = np.mean([profile.equivalent(d, margin) == "yes" for d in diffs])
    assert profile.tost_power(sd, n, margin, true_diff) == pytest.approx(simulated, abs=0.03)


def test_one_sided_power_matches_simulation():
    rng = np.random.default_rng(4)
    sims, n, sd, effect = 4000, 8, 0.05, 0.04
    diffs = effect + sd * rng.standard_normal((sims, n))
    simulated = np.mean([profile.one_sided_p(d) < profile.ALPHA for d in diffs])
    assert profile.one_sided_power(sd, n, effect) == pytest.approx(simulated, abs=0.03)


def test_crossover_finds_a_known_crossing_and_covers_it():
    rng = np.random.default_rng(5)
    x = np.log2(D_KS)
    truth = 0.04 * (x - 3)  # crosses 0 at d_k = 8
    covered, found = 0, []
    for _ in range(400):
        diffs = truth + 0.03 * rng.standard_normal((8, x.size))
        c = profile.crossover(D_KS, diffs)
        found.append(c.d_star)
        covered += (c.lo is None or c.lo <= 8) and (c.hi is None or 8 <= c.hi)
    assert np.median(found) == pytest.approx(8, rel=0.1)
    assert covered / 400 >= 0.9  # pointwise 95% inverted: at least the level near the crossing


def test_crossover_reads_no_crossing_and_open_bounds():
    rising = np.tile(np.linspace(0.1, 0.5, len(D_KS)), (5, 1))
    assert profile.crossover(D_KS, rising).d_star is None  # above 0 everywhere: nothing crosses
    rng = np.random.default_rng(6)
    flat = 0.001 * np.arange(len(D_KS)) - 0.004 + 0.05 * rng.standard_normal((8, len(D_KS)))
    c = profile.crossover(D_KS, flat)
    if c.d_star is not None:  # a flat, noisy profile: the interval spans the sweep
        assert c.lo is None or c.hi is None


@pytest.mark.parametrize("shape,alike_small,ahead_large", [
    ("claimed", True, True),   # alike at small d_k, ahead at large d_k
    ("none", True, False),     # no difference anywhere
    ("behind", False, False),  # behind everywhere, by twice the margin
])
def test_each_reading_can_come_out_either_way(shape, alike_small, ahead_large):
    """On plausible profiles (paired sd 0.03 AUC, 8 seeds, margin 0.05) the readings follow the
    truth: the design can say yes and no."""
    rng = np.random.default_rng(7)
    x = np.log2(D_KS)
    truth = {"claimed": np.clip(0.05 * (x - 5), 0, None), "none": 0 * x,
             "behind": 0 * x - 0.1}[shape]
    hits_alike, hits_ahead = [], []
    for _ in range(200):
        diffs = truth + 0.03 * rng.standard_normal((8, x.size))
        hits_alike.append(profile.equivalent(diffs[:, 2], 0.05) == "yes")  # d_k = 8
        hits_ahead.append(profile.step_down(diffs)[-1])  # the largest d_k
    assert (np.mean(hits_alike) > 0.5) == alike_small
    assert (np.mean(hits_ahead) > 0.5) == ahead_large
