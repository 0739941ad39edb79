"""The controls' reading (verdicts.controls): where unscaled_init sits between unscaled and scaled,
Fieller's interval of that fraction, and additive_wide read by section 4's own clauses."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from experiments.analysis.tables import load
from experiments.analysis.verdicts import controls as vc
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.render import controls as rc

D_KS, SEEDS = [4, 8, 64, 256, 1024], 8
GAP = {4: 0.0, 8: 0.0, 64: 0.1, 256: 0.2, 1024: 0.3}  # scaled − unscaled: none at small d_k


def summary(place: float, wide: bool = True, init: bool = True, rng: int = 0) -> pd.DataFrame:
    """SYNTHETIC one-lr summary: unscaled_init sits `place` of the way from unscaled to scaled;
    additive_wide is ahead of unscaled by 0.1 at every d_k it ran (d_k <= 64)."""
    rng = np.random.default_rng(rng)
    rows = []
    for d in D_KS:
        for s in range(SEEDS):
            base = 0.6 + rng.normal(0, 0.02)
            aucs = {"unscaled": base, "scaled": base + GAP[d], "additive": base + 0.05 * np.log2(d / 8)}
            aucs.update({"unscaled_init": base + place * GAP[d]} if init else {})
            aucs.update({"additive_wide": base + 0.1} if wide and d <= 64 else {})
            for v, auc in aucs.items():
                auc = auc + rng.normal(0, 0.005)
                rows.append(dict(run_id=f"{v}-{d}-{s}", attention=v, d_k=d, seed=s, task="assoc_recall",
                                 optimizer="adam", lr=1e-3, status="completed", accuracy_auc=auc,
                                 test_accuracy=auc, final_val_accuracy=auc, steps_to_threshold=np.nan,
                                 steps=1000, threshold=0.9))
    return pd.DataFrame(rows)


def reading(s: pd.DataFrame) -> vc.CellControls:
    (cell,) = vc.controls(load.Results(None, s, None, None, None)).cells
    return cell


def test_fieller_is_the_set_of_ratios_the_paired_t_interval_does_not_reject():
    rng = np.random.default_rng(1)
    b = 0.2 + rng.normal(0, 0.03, 8)
    a = 0.7 * b + rng.normal(0, 0.02, 8)
    est, lo, hi = vc.fieller(a, b)
    assert est == pytest.approx(a.mean() / b.mean())
    t = sps.t.ppf(0.975, 7)
    grid = np.linspace(0, 2, 20001)
    kept = [r for r in grid if abs((a - r * b).mean()) <= t * (a - r * b).std(ddof=1) / np.sqrt(8)]
    assert lo == pytest.approx(min(kept), abs=2e-4) and hi == pytest.approx(max(kept), abs=2e-4)


def test_fieller_is_undefined_where_the_denominator_is_not_nonzero():
    b = [0.1, -0.1, 0.12, -0.11, 0.09, -0.1, 0.1, -0.1]  # mean 0: no gap, every ratio fits
    assert vc.fieller([0.05, 0.0, 0.06, -0.05, 0.04, -0.05, 0.05, -0.05], b) is None
    assert vc.fieller([0.1, 0.2], [0.3, 0.4]) is None  # too few pairs


@pytest.mark.parametrize("place, cause", [(0.9, vc.Cause.START), (0.1, vc.Cause.TRAINING),
                                          (0.5, vc.Cause.BETWEEN)])
def test_where_unscaled_init_sits_names_the_cause(place, cause):
    init = reading(summary(place)).init
    assert init.lacks is None and [r.d_k for r in init.rows] == D_KS
    by_d = {r.d_k: r for r in init.rows}
    assert by_d[4].fraction is None and by_d[4].cause is vc.Cause.NO_GAP  # no gap to explain
    for d in (256, 1024):
        est, lo, hi = by_d[d].fraction
        assert est == pytest.approx(place, abs=0.1) and lo < est < hi
        assert by_d[d].vs_unscaled[0] == pytest.approx(place * GAP[d], abs=0.02)
        assert by_d[d].vs_scaled[0] == pytest.approx((place - 1) * GAP[d], abs=0.02)
    assert init.cause() is cause


def test_a_cell_without_the_control_reads_not_measured():
    cell = reading(summary(0.9, wide=False, init=False))
    assert cell.init.lacks is vc.Lack.NOT_RUN and cell.init.cause() is None
    assert cell.wide.lacks is vc.Lack.NOT_RUN
    assert vc.controls(load.Results(None, None, None, None, None)).lacks is vc.Lack.SUMMARY
    assert "not measured" in rc.init_sentence(cell) and rc.wide_rows(cell)[0]["d_k run"].startswith("not measured")


def test_additive_wide_is_read_by_section_4s_clauses_with_its_own_differences():
    s = summary(0.9)
    wide = reading(s).wide
    assert wide.never_run == (256, 1024) and wide.wide.d_ks == (4, 8, 64)
    p = qp.cell_profile(s)
    d_ks, diffs = p.entered(qp.WIDE_PAIR)
    d_ks, diffs = d_ks[:3], diffs[:, :3]
    assert wide.wide.crossover == quality_rules.crossover_of(d_ks, diffs)
    assert wide.wide.ahead.answer is quality_rules.ahead_part(d_ks, diffs, 64, qp.ALIKE_MARGIN).answer
    assert wide.wide.ahead.ci[0] == pytest.approx(diffs[:, -1].mean())
    assert wide.wide.smallest[0] == pytest.approx(diffs[:, 0].mean())  # at d_k = 4, its smallest
    assert wide.wide.ahead.at_d_k == 64 and wide.tied.ahead.at_d_k == 1024  # the tied one as section 4 reads it
    assert 4 < wide.tied.crossover.d_star < 64  # additive − unscaled crosses 0 near d_k = 8
    assert wide.wide.crossover.d_star is None  # ahead by 0.1 everywhere: no crossing


def test_the_words_hold_a_row_per_d_k_and_a_row_per_additive_form():
    cell = reading(summary(0.9))
    assert list(rc.init_table(cell)["d_k"]) == D_KS
    assert [r["additive"] for r in rc.wide_rows(cell)] == ["d_hidden 64", "tied, d_hidden = d_k"]


def test_the_answer_reads_the_cause_from_the_same_controls_the_section_shows():
    """The quality section's cell carries the controls' reading (one reading, two places): equal to
    the controls section's, and its cause is the one the answer's cell states."""
    from experiments.analysis.verdicts import quality
    res = load.Results(None, summary(place=0.9), None, None, None)
    (cell,) = quality.quality(res).cells
    assert cell.controls == reading(res.summary)
    assert vc.of_cells(res, [cell]).cells == (cell.controls,)
    assert cell.controls.init.cause() is vc.Cause.START
