"""Coverage of the seed intervals (experiments.analysis.stats), simulated against a known truth.

Thousands of samples are drawn at once and pushed through the public
functions (they take one sample per row). Wherever a function returns an
interval, its coverage must lie within ±3 points of the stated level, for a
normal and for skewed seed spreads (skewness up to 1), at n = 3, 5, 8, 20;
below stats.MIN_SEEDS it must return no interval. Exponential spread
(skewness 2) is printed and not asserted: the t-interval undercovers there at
small n (stats' docstring), as any interval must without an assumption.
Run with `pytest -s tests/test_coverage.py` for the table.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments.analysis.stats import intervals as stats

REPS = 20_000  # Monte Carlo SE of a 95% coverage: 0.15 points
NS = (3, 5, 8, 20)
TOLERANCE = 0.03
D_KS = np.array([8, 16, 32, 64, 128, 256, 512, 1024], dtype=float)


def _spreads():
    """name -> (draw(rng, shape), true mean, asserted?)."""
    return {
        "normal": (lambda r, s: r.standard_normal(s), 0.0, True),
        "gamma(4), skew 1": (lambda r, s: r.gamma(4.0, 0.5, s), 2.0, True),
        "lognormal σ=0.25, skew 0.8": (lambda r, s: r.lognormal(0.0, 0.25, s), np.exp(0.25 ** 2 / 2), True),
        "exponential, skew 2 (not asserted)": (lambda r, s: r.exponential(1.0, s), 1.0, False),
    }


def _mean(r, draw, n, level):
    x = draw(r, (REPS, n))
    return stats.mean_ci(x, level)


def _paired(r, draw, n, level):
    # a large seed effect shared by both arms: only a paired interval has the right width;
    # b's own noise is small, so the differences keep the spread's skew
    seed = 10.0 * r.standard_normal((REPS, n))
    a = seed + draw(r, (REPS, n))
    b = seed + 0.3 + 0.1 * r.standard_normal((REPS, n))
    return stats.paired_diff_ci(a, b, level)


def _slope(r, draw, n, level):
    # each seed's curve has its own slope (true slope + a draw) and offset, plus point noise
    slope = 0.5 + draw(r, (REPS, n, 1))
    y = np.exp(slope * np.log(D_KS) + r.standard_normal((REPS, n, 1))
               + 0.05 * r.standard_normal((REPS, n, D_KS.size)))
    return stats.slope_ci(D_KS, y, level=level)


FUNCTIONS = {"mean_ci": (_mean, 0.0), "paired_diff_ci": (_paired, -0.3), "slope_ci": (_slope, 0.5)}


def coverage(fn: str, spread: str, n: int, level: float = stats.LEVEL, seed: int = 0):
    """(coverage, share of samples given an interval)."""
    draw_fn, shift = FUNCTIONS[fn]
    draw, truth, _ = _spreads()[spread]
    r = np.random.default_rng([seed, n, len(spread), len(fn)])
    _, lo, hi = draw_fn(r, draw, n, level)
    given = np.isfinite(lo) & np.isfinite(hi)
    truth = truth + shift
    hit = (lo <= truth) & (truth <= hi)
    return (float(hit[given].mean()) if given.any() else float("nan")), float(given.mean())


@pytest.fixture(scope="module")
def table():
    out = {(fn, sp, n): coverage(fn, sp, n) for fn in FUNCTIONS for sp in _spreads() for n in NS}
    width = max(len(sp) for sp in _spreads()) + 16
    lines = [f"coverage of the {stats.LEVEL:.0%} intervals ({REPS} samples each)",
             f"{'function, spread':<{width}}" + "".join(f"{'n=' + str(n):>8}" for n in NS)]
    for fn in FUNCTIONS:
        for sp in _spreads():
            lines.append(f"{fn + ', ' + sp:<{width}}" + "".join(f"{out[fn, sp, n][0]:>8.3f}" for n in NS))
    print("\n" + "\n".join(lines))
    return out


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_coverage_within_three_points_wherever_an_interval_is_given(table, fn):
    for spread, (_, _, asserted) in _spreads().items():
        for n in NS:
            cov, given = table[fn, spread, n]
            assert given == 1.0, (fn, spread, n, given)  # n >= MIN_SEEDS: always an interval
            if asserted:
                assert abs(cov - stats.LEVEL) <= TOLERANCE, (fn, spread, n, cov)


@pytest.mark.parametrize("level", [0.8, 0.9])
def test_coverage_follows_the_level_asked_for(level):
    for fn in FUNCTIONS:
        cov, given = coverage(fn, "normal", 5, level)
        assert given == 1.0 and abs(cov - level) <= TOLERANCE, (fn, level, cov)


def test_no_interval_below_min_seeds():
    r = np.random.default_rng(1)
    for fn, (draw_fn, _) in FUNCTIONS.items():
        est, lo, hi = draw_fn(r, _spreads()["normal"][0], stats.MIN_SEEDS - 1, stats.LEVEL)
        assert np.isfinite(est).all() and np.isnan(lo).all() and np.isnan(hi).all(), fn
