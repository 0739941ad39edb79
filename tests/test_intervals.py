"""experiments.analysis.stats and .survival against hand-computed values, and
steps_to_threshold against a hand-computed history (including the >= edge)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments.analysis.stats import intervals as stats
from experiments.analysis.stats import survival
from experiments.training.loop import RunResult, summarize

T975_2, T80_2 = 4.302652729911275, 1.0606601717798212  # Student t quantiles, 2 degrees of freedom


def test_mean_ci_is_the_t_interval():
    est, lo, hi = stats.mean_ci([1.0, 2.0, 3.0])  # mean 2, sd 1, n 3
    half = T975_2 / math.sqrt(3)
    assert (est, lo, hi) == pytest.approx((2.0, 2.0 - half, 2.0 + half), rel=1e-9)
    ref = sps.ttest_1samp([1.0, 2.0, 3.0], 0.0).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert stats.mean_ci([1.0, 2.0, 3.0]) == (est, lo, hi)  # deterministic
    assert stats.mean_ci([1.0, 2.0, 3.0], level=0.5)[2] < hi  # the level is used


def test_mean_ci_drops_nan_and_refuses_below_min_seeds():
    assert stats.mean_ci([1.0, np.nan, 2.0, 3.0]) == stats.mean_ci([1.0, 2.0, 3.0])
    est, lo, hi = stats.mean_ci([1.0, 2.0])
    assert est == 1.5 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(x) for x in stats.mean_ci([]))
    assert stats.mean_ci([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.5)  # no spread: a point


def test_bad_level_is_one_line():
    with pytest.raises(ValueError, match=r"^level: must lie strictly between 0 and 1, got 95$"):
        stats.mean_ci([1.0, 2.0, 3.0], level=95)


def test_paired_diff_ci_differences_seed_by_seed():
    seed = np.array([10.0, 20.0, 30.0, 40.0])
    a, b = seed + np.array([1.0, 1.1, 0.9, 1.0]), seed
    est, lo, hi = stats.paired_diff_ci(a, b)
    assert est == pytest.approx(1.0) and 0.7 < lo < 1.0 < hi < 1.3  # the seed effect cancels
    assert stats.paired_diff_ci(a, b) == stats.mean_ci(a - b)
    with_gap = stats.paired_diff_ci(np.append(a, np.nan), np.append(b, 5.0))  # a broken pair drops out
    assert with_gap == (est, lo, hi)
    with pytest.raises(ValueError, match="same shape"):
        stats.paired_diff_ci([1.0, 2.0, 3.0], [1.0, 2.0])


def test_detectable_effect():
    sd, n = 1.0, 3
    assert stats.detectable([1.0, 2.0, 3.0]) == pytest.approx((T975_2 + T80_2) * sd / math.sqrt(n))
    assert math.isnan(stats.detectable([1.0, 2.0]))
    # at that true shift from a threshold (0 here, sd 1) the interval clears it ~80% of the time
    x = np.random.default_rng(0).standard_normal((40_000, 5))
    shift = (sps.t.ppf(0.975, 4) + sps.t.ppf(0.8, 4)) / math.sqrt(5)
    _, lo, _ = stats.mean_ci(x + shift)
    assert abs((lo > 0).mean() - 0.8) < 0.04


def test_per_seed_slopes_and_slope_ci():
    d = np.array([8.0, 16.0, 32.0, 64.0])
    y = np.stack([d * 2.0, d ** 1.2, d ** 0.8 * 5])  # three seeds, slopes 1, 1.2, 0.8
    np.testing.assert_allclose(stats.per_seed_slopes(d, y), [1.0, 1.2, 0.8], atol=1e-12)
    est, lo, hi = stats.slope_ci(d, y)
    assert (est, lo, hi) == pytest.approx(stats.mean_ci([1.0, 1.2, 0.8]), rel=1e-12)
    y[0, 1] = np.nan  # a missing point leaves that seed's fit to the rest
    y[1, :3] = np.nan  # one point left: no slope
    s = stats.per_seed_slopes(d, y)
    assert s[0] == pytest.approx(1.0) and math.isnan(s[1])
    per_doubling = stats.per_seed_slopes(np.log2(d), np.log2(d)[None] * 0.1, log_x=False, log_y=False)
    assert per_doubling[0] == pytest.approx(0.1)
    assert math.isnan(stats.per_seed_slopes(d, -np.ones((1, 4)))[0])  # no log of a negative
    with pytest.raises(ValueError, match="points per seed"):
        stats.per_seed_slopes(d, np.ones((2, 3)))


def test_three_way_tests():
    assert stats.within((1.0, 0.9, 1.1), 0.85, 1.15) == "yes"
    assert stats.within((0.0, -0.1, 0.1), 0.85, 1.15) == "no"
    assert stats.within((0.9, 0.5, 1.3), 0.85, 1.15) == "unclear"
    assert stats.above((0.5, 0.2, 0.8), 0.15) == "yes" and stats.above((0.0, -0.1, 0.1), 0.15) == "no"
    assert stats.above((0.15, 0.1, 0.2), 0.15) == "unclear"
    assert stats.below((-0.5, -0.8, -0.2), -0.1) == "yes" and stats.below((0.0, -0.05, 0.1), -0.1) == "no"
    assert stats.within((1.0, math.nan, math.nan), 0, 2) == "unclear"


# --- censored steps to threshold ---------------------------------------------------------

def test_kaplan_meier_by_hand():
    km = survival.kaplan_meier([100.0, np.nan, 200.0], [500.0, 500.0, 500.0])
    assert km.reached_text == "2/3" and km.tau == 500
    np.testing.assert_allclose(km.times, [100, 200, 500])
    np.testing.assert_allclose(km.surv, [2 / 3, 1 / 3, 1 / 3])
    assert km.restricted_mean == pytest.approx(100 + 100 * 2 / 3 + 300 / 3)  # = mean of min(T, 500)
    assert km.median == 200
    assert survival.kaplan_meier([], []) is None


def test_reaching_at_the_last_step_is_not_never_reaching():
    at_last = survival.kaplan_meier([500.0], [500.0])
    never = survival.kaplan_meier([np.nan], [500.0])
    assert at_last.reached_text == "1/1" and never.reached_text == "0/1"
    assert at_last.surv[-1] == 0 and never.surv[-1] == 1
    assert at_last.median == 500 and math.isnan(never.median)


def test_restricted_difference():
    nan3 = [np.nan] * 3
    assert survival.restricted_diff(nan3, [500] * 3, nan3, [500] * 3) is None  # both censored: no Δ
    est, lo, hi = survival.restricted_diff([100.0, 150.0, np.nan], [500] * 3, nan3, [500] * 3)
    assert est == pytest.approx((100 + 150 + 500) / 3 - 500)
    assert (est, lo, hi) == stats.paired_diff_ci([100.0, 150.0, 500.0], [500.0] * 3)
    # different budgets: both are restricted to the shorter one
    est, *_ = survival.restricted_diff([300.0, 300.0, 300.0], [1000] * 3, nan3, [250] * 3)
    assert est == 0.0


# --- steps_to_threshold of a run ------------------------------------------------------

def _run(accuracies, eval_every=25):
    return RunResult(rows=[{"step": i * eval_every, "accuracy": a} for i, a in enumerate(accuracies)])


@pytest.mark.parametrize("accuracies, threshold, expected", [
    ([0.1, 0.5, 0.9, 0.95], 0.9, 50),  # exactly at the threshold counts (>=)
    ([0.1, 0.5, 0.8999, 0.95], 0.9, 75),  # just below does not
    ([0.1, 0.95, 0.5, 0.97], 0.9, 25),  # the first evaluation at or above it, not the last
    ([0.92, 0.95], 0.9, 0),  # already there at init
    ([0.1, 0.5, 0.8], 0.9, None),  # never: censored, not the budget
])
def test_steps_to_threshold_by_hand(accuracies, threshold, expected):
    summary = summarize(_run(accuracies), threshold)
    assert summary["steps_to_threshold"] == expected
    assert summary["final_val_accuracy"] == accuracies[-1]
    assert summary["accuracy_auc"] == pytest.approx(np.mean(accuracies))
