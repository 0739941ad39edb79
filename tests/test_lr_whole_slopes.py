"""lr.whole: the optimum refined off the grid, its slope over d_k, the bootstrap over whole seeds,
which seeds are whole, and muP judged from its base width (lr.views), on SYNTHETIC curves."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.lr import whole

GRID = np.log2([1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1])
D_KS = [2, 4, 8, 16, 64, 128, 256]


def test_the_vertex_of_a_parabola_is_found_between_grid_points():
    x = np.array([0.0, 1.0, 2.0])
    assert whole.vertex(x, -(x - 1.3) ** 2) == pytest.approx(1.3)
    uneven = np.array([0.0, 1.6, 3.3])
    assert whole.vertex(uneven, -(uneven - 2.0) ** 2) == pytest.approx(2.0)
    assert whole.vertex(x, np.array([0.5, 0.5, 0.5])) == 1.0  # a flat top: the middle


def _cube(peaks, n_seeds=3, width=2.0, jitter=0.0, rng=None):
    """SYNTHETIC: AUC [seeds, d_ks, rates], a parabola in log2 lr peaking at `peaks` [d_ks]."""
    rng = rng or np.random.default_rng(1)
    shift = jitter * rng.standard_normal((n_seeds, 1, 1))
    return 0.9 - ((GRID[None, None, :] - np.asarray(peaks)[None, :, None] - shift) / width) ** 2 * 0.1


def _curves(auc):
    return whole.Curves(auc, np.log2(np.asarray(D_KS[:auc.shape[1]], float)), GRID,
                        np.full(auc.shape[1], 0.01), tuple(range(auc.shape[0])))


def test_a_drift_smaller_than_a_grid_step_is_seen():
    truth = -0.15  # log2 lr per doubling: 0.9 log2 units over the sweep, half a grid step
    peaks = GRID[3] + truth * np.log2(D_KS)
    opt = whole.optima(_cube(peaks), GRID, np.full(len(D_KS), 0.01))
    assert whole.slope(np.log2(D_KS), opt) == pytest.approx(truth, abs=1e-9)
    grid_only = GRID[np.argmin(np.abs(GRID[None] - peaks[:, None]), axis=1)]  # the argmax on the grid
    assert abs(whole.slope(np.log2(D_KS), grid_only) - truth) > 0.05


def test_an_optimum_past_the_grid_stays_at_its_end():
    peaks = np.array([GRID[-1] + 3.0, GRID[0] - 3.0])
    opt = whole.optima(_cube(peaks)[:, :2], GRID, np.full(2, 0.01))
    assert opt.tolist() == [GRID[-1], GRID[0]]


def test_the_bootstrap_interval_covers_the_seed_spread_and_is_seeded():
    peaks = GRID[3] - 0.5 * np.log2(D_KS) / 3
    auc = _cube(peaks, n_seeds=6) + np.random.default_rng(2).normal(0, 0.004, (6, len(D_KS), GRID.size))
    d = whole.drift(_curves(auc))
    est, lo, hi = d.ci
    assert d.n_seeds == 6 and lo < est < hi and lo < -0.5 / 3 < hi and hi - lo < 0.2
    assert whole.drift(_curves(auc)) == d  # the same tables, the same interval
    two = whole.drift(_curves(auc[:2]))  # below MIN_SEEDS: the estimate, no interval
    assert two.n_seeds == 2 and math.isnan(two.ci[1]) and math.isfinite(two.ci[0])
    assert math.isfinite(whole.drift(_curves(auc[:3])).ci[1])


def _summary(pruned_seeds=(1, 2), multiplier=None, variant="mup"):
    """SYNTHETIC summary: 3 seeds x d_k x rates; the loser rate 0.1 pruned for `pruned_seeds`."""
    rows = []
    for seed in range(3):
        for j, d in enumerate(D_KS):
            for lr, x in zip(np.exp2(GRID), GRID):
                pruned = lr == 1e-1 and seed in pruned_seeds
                auc = 0.9 - ((x - GRID[3] - (GRID[4] - GRID[3]) * (d < 64)) / 2) ** 2 * 0.1 + 0.001 * seed
                rows.append(dict(task="assoc_recall", optimizer="adam", attention=variant, d_k=d, seed=seed, lr=lr,
                                 status="pruned" if pruned else "completed", accuracy_auc=auc - 0.1 * pruned,
                                 accuracy_auc_bound=auc if pruned else np.nan, final_val_accuracy=auc,
                                 **({} if multiplier is None else {"attention.multiplier": multiplier})))
    return pd.DataFrame(rows)


def test_whole_seeds_are_those_never_pruned_and_bounds_enter_the_rest():
    sc = lr_select.scored(_summary())
    assert whole.whole_seeds(sc, "mup") == [0]
    assert whole.whole_seeds(lr_select.scored(_summary(pruned_seeds=(0, 1, 2))), "mup") == []
    full, bound = whole.drifts(sc, "mup")
    assert full.n_seeds == 1 and bound.n_seeds == 3
    assert sc.loc[sc["status"] == "pruned", "val_auc"].eq(sc.loc[sc["status"] == "pruned", "accuracy_auc_bound"]).all()


def test_mup_is_judged_from_its_base_width():
    mup8 = lr_select.scored(_summary(multiplier=8.0))
    assert lr_views.base_width(mup8, "mup") == 64 and lr_views.judged_from(mup8) == {"mup": 64}
    assert lr_views.judged_from(lr_select.scored(_summary(multiplier=1.0))) == {}  # base width 1: every d_k
    assert lr_views.judged_from(lr_select.scored(_summary())) == {}  # no multiplier recorded: muP's default 1
    assert lr_views.judged_from(lr_select.scored(_summary(multiplier=8.0, variant="scaled"))) == {}
    # the optimum sits a grid step higher below d_k = 64 only: over every d_k a slope, from 64 on none
    full, narrowed = lr_views.drift_slopes(mup8)["mup"], lr_views.drift_slopes(mup8, {"mup": 64})["mup"]
    assert (full < -0.1).all()
    assert np.allclose(narrowed, 0)
    rows = lr_views.drift_table(_summary(multiplier=8.0))
    assert rows["d_k"].tolist() == ["all", "≥ 64 (judged)"]
    assert (rows["refined, whole curves [bootstrap]"].str.contains("1 seeds")).all()


def test_clause_c_judges_mup_from_its_base_width_and_the_report_shows_both():
    from experiments.analysis.render import mup as render_mup
    from experiments.analysis.render.section_words import frame
    from experiments.analysis.tables.load import Results
    from experiments.analysis.verdicts import mup as verdicts_mup
    from experiments.analysis.verdicts import quality as vq
    from experiments.analysis.verdicts.rules import FAILS, HOLDS

    moved = _summary(multiplier=8.0)  # its optimum a grid step higher below d_k = 64 only
    verdict, parts, _ = vq.lr_view(moved)
    assert verdict is HOLDS and parts["mup"].label.endswith("over d_k ≥ 64")
    verdict, parts, _ = vq.lr_view(_summary(multiplier=1.0))  # base width 1: judged over every d_k
    assert verdict is FAILS and parts["mup"].label.endswith("best lr")
    [table] = verdicts_mup.lr_tables(Results(root=None, summary=moved, history=None, probe=None, cost=None))
    [row] = table.rows
    assert (row["base_width"], row["from_d_k"]) == (64.0, 64) and row["judged"][0] == 0 and row["all"][0] < -0.1
    assert row["whole"].n_seeds == 1 and row["bound"].n_seeds == 3
    assert len(frame(table, render_mup.LR_COLUMNS)) == 1
