"""The two-stage confirmation's arithmetic (verdicts.top_up): seeds needed against hand checks, an
undecided clause sized and a decided one not, the cap, the answers at their looks. SYNTHETIC
profiles (not data): each column's seeds standardised to an exact mean and sd."""
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import NAN_INTERVAL
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import top_up
from experiments.analysis.verdicts.rules import Answer, Part

D_KS = [4, 8, 16, 64]
RULE = qp.AlikeRule((4, 8), 1.0)
MARGIN = 0.05


def exact(mean: float, sd: float, n: int = 8, seed: int = 0) -> np.ndarray:
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def _cell(at_4=(-0.034, 0.029), at_8=(0.0, 0.01), n=8) -> qp.CellProfile:
    """additive − unscaled: at_4 and at_8 as (mean, sd) at d_k 4 and 8, clearly ahead above;
    scaled − unscaled clearly ahead at the largest d_k: only the alike clause can be unclear."""
    add = np.stack([exact(*at_4, n, 1), exact(*at_8, n, 2), exact(0.2, 0.02, n, 3), exact(0.2, 0.02, n, 4)], axis=1)
    fix = np.stack([exact(0.0, 0.02, n, s) for s in (5, 6, 7)] + [exact(0.3, 0.02, n, 8)], axis=1)
    return qp.CellProfile("sim", D_KS, [True] * 4, None, {qp.CLAIM_PAIR: add, qp.FIX_PAIR: fix}, n)


def _ups(p, design=top_up.TwoStage()):
    parts = vq.profile_parts(p, MARGIN, RULE)[0]
    return parts, top_up.top_ups(parts, p, MARGIN, design)


def test_seeds_needed_match_hand_checks():
    # the figure: TOST at ±0.05, Δ = −0.034 and the paired sd of assoc_recall/Adam at
    # d_k 4 (0.0288, its 10 confirmation seeds), each one-sided test at 0.05: about 22 seeds
    assert top_up.seeds_needed(top_up.Test.ALIKE, 0.0288, -0.0341, MARGIN, 0.05, 0.8) == 22
    # G*Power's one-sample t, one-tailed, effect size 0.5, α 0.05, power 0.8: n = 27
    assert top_up.seeds_needed(top_up.Test.AHEAD, 1.0, 0.5, MARGIN, 0.05, 0.8) == 27
    assert top_up.seeds_needed(top_up.Test.BEHIND, 1.0, -0.5, MARGIN, 0.05, 0.8) == 27
    # the second look's smaller α asks for more seeds; a Δ outside the test's alternative for none
    assert top_up.seeds_needed(top_up.Test.ALIKE, 0.0288, -0.0341, MARGIN, 0.025, 0.8) > 22
    assert top_up.seeds_needed(top_up.Test.AHEAD, 1.0, -0.5, MARGIN, 0.05, 0.8) is None
    assert top_up.seeds_needed(top_up.Test.ALIKE, 0.02, 0.06, MARGIN, 0.05, 0.8) is None
    # |Δ| > margin: the one-sided test against the nearer margin, as for an effect of |Δ| − margin
    assert top_up.seeds_needed(top_up.Test.APART, 1.0, -0.55, MARGIN, 0.05, 0.8) == 27


def test_an_undecided_clause_gets_seeds_and_a_decided_one_none():
    parts, ups = _ups(_cell())
    assert [p.answer for p in parts] == [Answer.YES, Answer.UNCLEAR, Answer.YES]
    assert {(u.clause, u.d_k) for u in ups} == {(parts[1].label, 4), (parts[1].label, 8)}
    at_4 = next(u for u in ups if u.d_k == 4)
    needed = top_up.seeds_needed(top_up.Test.ALIKE, 0.029, -0.034, MARGIN, 0.025, 0.8)
    assert (at_4.test, at_4.needed, at_4.seeds, at_4.capped) == (top_up.Test.ALIKE, needed, 24, True)
    assert at_4.power < 0.8 and at_4.power_if_equal > 0.99
    # d_k 8 passed TOST and its test at the second α needs no more than the 8 seeds it has
    assert top_up.seeds_per_run(ups) == {("additive", 4): 24, ("unscaled", 4): 24}
    # the cap is the design's: raised above what is needed, the seeds needed are given
    wide = top_up.top_ups(parts, _cell(), MARGIN, top_up.TwoStage(max_seeds=100))
    assert top_up.seeds_per_run(wide) == {("additive", 4): needed, ("unscaled", 4): needed}
    parts, ups = _ups(_cell(at_4=(0.0, 0.01)))  # alike at 4 too: every clause decided
    assert all(p.answer is not Answer.UNCLEAR for p in parts) and ups == []


def test_a_target_out_of_reach_gets_no_seeds_and_says_why():
    parts, ups = _ups(_cell(at_4=(-0.04, 0.3)))  # so wide a spread that 400 seeds are too few
    [at_4] = [u for u in ups if u.d_k == 4]
    assert (at_4.needed, at_4.seeds, at_4.unreached) == (None, 8, top_up.Unreached.PAST_SEARCH)
    assert ("additive", 4) not in top_up.seeds_per_run(ups)


def test_an_ahead_clause_is_sized_on_its_soonest_test():
    p = _cell()
    p.diffs[qp.CLAIM_PAIR][:, -1] = exact(0.03, 0.05, 8, 9)  # ahead at 64 but not yet significant
    parts, ups = _ups(p)
    assert parts[0].answer is Answer.UNCLEAR
    [ahead] = [u for u in ups if u.clause == parts[0].label]
    want = top_up.seeds_needed(top_up.Test.AHEAD, 0.05, 0.03, MARGIN, 0.025, 0.8)
    alike = top_up.seeds_needed(top_up.Test.ALIKE, 0.05, 0.03, MARGIN, 0.025, 0.8)
    assert (ahead.d_k, ahead.test, ahead.needed) == (64, top_up.Test.AHEAD, min(want, alike)) and want < alike


def _part(label, answer):
    return Part(label, None, answer, NAN_INTERVAL, 8, 0.0)


def test_a_clause_keeps_the_answer_of_the_look_that_decided_it():
    first = [_part("a", Answer.YES), _part("b", Answer.UNCLEAR), _part("c", Answer.NO), _part("d", Answer.UNCLEAR)]
    second = [_part("a", Answer.NO), _part("b", Answer.YES), _part("c", Answer.YES), _part("d", Answer.UNCLEAR)]
    looked = top_up.two_looks(first, second)
    assert [(x.part.answer, x.look) for x in looked] == [(Answer.YES, 1), (Answer.YES, 2), (Answer.NO, 1),
                                                         (Answer.UNCLEAR, 2)]


@pytest.mark.parametrize("field, value", [("first_seeds", 2), ("alphas", [0.025]), ("alphas", [0.5, 0.01]),
                                          ("power", 1.0), ("max_seeds", 7)])
def test_a_design_out_of_range_names_its_field(field, value):
    with pytest.raises(ValueError, match=rf"^two_stage\.{field}: must be"):
        top_up.check_design(top_up.TwoStage(**{field: value}))
    top_up.check_design(top_up.TwoStage())


def test_each_look_tests_at_its_own_alpha():
    """TOST's p at d_k 4 between 0.025 and 0.05: alike at a look of α 0.05, not at 0.025."""
    p = _cell(at_4=(-0.028, 0.03))
    assert 0.025 < profile.tost_p(p.diffs[qp.CLAIM_PAIR][:, 0], MARGIN) < 0.05
    assert vq.profile_parts(p, MARGIN, RULE, 0.05)[0][1].answer is Answer.YES
    assert vq.profile_parts(p, MARGIN, RULE, 0.025)[0][1].answer is Answer.UNCLEAR


def _summary(at_4: np.ndarray) -> pd.DataFrame:
    """A cell's runs: 4 selection seeds, confirmation seeds 8.. (one per entry of at_4, additive −
    unscaled at d_k 4 seed by seed); additive and scaled clearly ahead at d_k 64, alike at 8."""
    rows, seeds = [], list(range(4)) + [8 + i for i in range(at_4.size)]
    for k, seed in enumerate(seeds):
        gap = {4: at_4[k - 4] if k >= 4 else 0.0, 8: 0.002 * (-1) ** seed, 64: 0.2 + 0.01 * (-1) ** seed}
        for d_k in (4, 8, 64):
            for variant, auc in (("unscaled", 0.6), ("additive", 0.6 + gap[d_k]),
                                 ("scaled", 0.9 + (0.01 * (-1) ** seed if d_k == 64 else 0.0))):
                rows.append(dict(attention=variant, d_k=d_k, seed=seed, accuracy_auc=auc, lr=1e-3))
    return pd.DataFrame(rows).assign(run_id=lambda d: [f"r{i}" for i in range(len(d))], task="assoc_recall",
                                     optimizer="adam", status="completed", final_val_accuracy=0.9)


def test_a_two_stage_cell_judges_each_clause_at_the_look_that_decided_it():
    """Stage 1 (seeds 8-15) leaves alike at d_k 4 unclear at α 0.025 (TOST p in (0.025, 0.05));
    stage 2 (seeds 16-31, the same Δ and sd) decides it at the second look; the clauses decided at
    the first look keep it. One look at 0.05 on the stage-1 seeds alone reads alike already."""
    gaps = np.concatenate([exact(-0.028, 0.03, 8, 1), exact(-0.028, 0.03, 16, 2)])
    every = load.with_phase(_summary(gaps), 8)
    stage = top_up.Stage(top_up.TwoStage(), tuple(range(8, 16)))
    cell = vq._cell(every, None, 0.25, MARGIN, RULE, "sim", stage)
    assert [p.answer for p in cell.parts] == [Answer.YES] * 3 and cell.looks == (1, 2, 1)
    assert cell.parts[1].n == 24
    first = top_up.first_look_rows(every, stage.stage_one)
    assert sorted(first["seed"].unique()) == list(range(4)) + list(range(8, 16))
    one = vq._cell(load.with_phase(_summary(gaps[:8]), 8), None, 0.25, MARGIN, RULE, "sim")
    assert one.parts[1].answer is Answer.YES and one.looks == ()


def test_the_analysis_reads_the_two_stage_cells_from_confirm_json():
    """confirm.json's record (stage 2's top-ups written as as_record writes them) read back as Stages."""
    [up] = [u for u in _ups(_cell())[1] if u.d_k == 4]
    record = {"cells": [], top_up.RECORD: {"adam_mqar": {"task": "mqar", "optimizer": "adam",
                                                         "stage_1_seeds": [8, 9, 10],
                                                         "top_ups": [top_up.as_record(up)]}}}
    design = top_up.TwoStage(first_seeds=3, alphas=[0.01, 0.04], max_seeds=6)
    stages = top_up.stages_of(json.loads(json.dumps(record)), design)
    assert stages == {("mqar", "adam"): top_up.Stage(design, (8, 9, 10), (up,))}
    assert top_up.stages_of({"cells": []}, design) == {}
    assert top_up.declared_stages(SimpleNamespace(declared={top_up.RECORD: stages})) == stages
    assert top_up.declared_stages(SimpleNamespace(declared={})) == {}


def test_the_report_names_the_look_of_each_clause():
    from experiments.analysis.render import quality as render_quality

    gaps = np.concatenate([exact(-0.028, 0.03, 8, 1), exact(-0.028, 0.03, 16, 2)])
    cell = vq._cell(load.with_phase(_summary(gaps), 8), None, 0.25, MARGIN, RULE, "sim",
                    top_up.Stage(top_up.TwoStage(), tuple(range(8, 16))))
    note = render_quality.looks_note(cell)
    for part, look in zip(cell.parts, cell.looks):
        assert f"{part.label} at {render_quality.LOOKS[look]}, n = {part.n}" in note


def test_the_report_gives_each_top_up_its_seeds_and_powers():
    from experiments.analysis.render import quality as render_quality

    _, ups = _ups(_cell(at_4=(-0.04, 0.3)))  # d_k 4 out of reach, d_k 8 sized (TOST)
    sized, lost = sorted(ups, key=lambda u: u.unreached is not None)
    sized_words, lost_words = render_quality.top_up_words(sized), render_quality.top_up_words(lost)
    assert f"{sized.seeds} seeds" in sized_words and f"{sized.power:.2f}" in sized_words
    assert f"{sized.power_if_equal:.2f}" in sized_words and lost.unreached.value in lost_words
