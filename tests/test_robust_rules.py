"""Sub-claim 4's rules without knife-edges (verdicts.sensitivity, verdicts.robust, the declared alike
d_ks): the verdict by margin and its exact flip points, the sign-flip test beside every t-test, and
a small simulation on plausible profiles showing each new rule can come out each way. SYNTHETIC
profiles (not data)."""
import numpy as np
import pytest

from experiments.analysis.figures import margin as figures_margin
from experiments.analysis.figures import style
from experiments.analysis.render import quality_robust
from experiments.analysis.stats.intervals import mean_ci
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts import robust
from experiments.analysis.verdicts import sensitivity as vs
from experiments.analysis.verdicts.rules import FAILS, HOLDS, UNSURE, Answer, verdict_of

D_KS = [2, 4, 8, 16, 64, 256, 1024]
X = np.log2(D_KS)
RULE = qp.AlikeRule((4, 8), 1.0)


def _cell(small, sd=0.03, seeds=8, seed=0) -> qp.CellProfile:
    """additive − unscaled: `small` at d_k <= 8, +0.2 above; scaled − unscaled: +0.3 from 16 on."""
    rng = np.random.default_rng(seed)
    add = np.where(X <= 3, small, 0.2) + sd * rng.standard_normal((seeds, X.size))
    fix = np.where(X >= 4, 0.3, 0.0) + sd * rng.standard_normal((seeds, X.size))
    return qp.CellProfile("sim", D_KS, [True] * X.size, None, {qp.CLAIM_PAIR: add, qp.FIX_PAIR: fix}, seeds)


def _sensitivity(p, margin=0.05):
    return vs.sensitivity(p, margin, lambda m: vq.profile_parts(p, m, RULE)[0])


def test_the_flip_point_is_where_an_interval_end_crosses_the_margin():
    p = _cell(-0.03)
    s = _sensitivity(p)
    _, lo4, hi4 = mean_ci(p.diffs[qp.CLAIM_PAIR][:, 1], 0.9)
    _, lo8, hi8 = mean_ci(p.diffs[qp.CLAIM_PAIR][:, 2], 0.9)
    needed = max(-lo4, hi4, -lo8, hi8)  # alike at both declared d_k once the margin passes both ends
    assert s.verdicts[s.margins.index(0.05)] is verdict_of(vq.profile_parts(p, 0.05, RULE)[0])
    if needed > 0.05:
        assert s.above.margin == pytest.approx(needed, abs=1e-9) and s.above.verdict is HOLDS
    else:
        assert s.below.margin == pytest.approx(needed, abs=1e-9) and s.below.verdict is not HOLDS
    lows = [lo for lo, _, _ in s.segments]
    assert lows == sorted(lows) and s.segments[0][0] == vs.SPAN[0] and s.segments[-1][1] == vs.SPAN[1]
    for lo, hi, verdict in s.segments:  # each stretch reads the verdict the clauses give inside it
        assert verdict is verdict_of(vq.profile_parts(p, (lo + hi) / 2, RULE)[0])


def test_a_verdict_that_no_margin_moves_has_no_flip():
    p = _cell(-0.03)
    p.diffs[qp.FIX_PAIR][:] = -0.3 + 0.01 * np.random.default_rng(1).standard_normal(p.diffs[qp.FIX_PAIR].shape)
    s = _sensitivity(p)  # scaled far behind at the largest d_k: does not hold whatever the margin
    assert set(s.verdicts) == {FAILS} and s.below is None and s.above is None


def test_every_t_test_has_its_sign_flip_test_beside_it():
    p = _cell(-0.01)
    parts, _, _ = vq.profile_parts(p, 0.05, RULE)
    checks = robust.clause_checks(parts, p, 0.05)
    alike = checks["(a) additive and unscaled alike"]
    assert [k.d_k for k in alike] == [4, 8] and all(k.kind is robust.Kind.TOST for k in alike)
    ahead = checks["(a) additive ahead of unscaled"]
    assert [k.d_k for k in ahead] == [1024, 256, 64, 16, 8]  # the step-down, down to the first not rejected
    assert ahead[-1].t_p >= 0.05 and all(k.t_p < 0.05 for k in ahead[:-1])
    fix = checks["(b) scaled ahead of unscaled"]
    assert (fix[0].null, fix[1].null) == (0.0, 0.05)  # the answer's test, then the step-down's
    for k in (*alike, *ahead, *fix):
        assert 0 <= k.flip_p <= 1 and k.exact and k.disagree == ((k.t_p < 0.05) != (k.flip_p < 0.05))
    assert quality_robust.disagreements(checks) == "" or "disagree" in quality_robust.disagreements(checks)
    assert len(quality_robust.checks_frame([{"cell": "sim", "check": k} for k in alike])) == 2


@pytest.mark.parametrize("truth, sd", [(0.0, 0.02), (0.08, 0.03), (-0.08, 0.04)])
def test_simulation_each_alike_answer_is_reachable(truth, sd):
    """8 seeds, paired sd 0.02-0.04: at Δ = 0 'yes' dominates, at ±0.08 'no'; 'unclear' in between."""
    answers = [qr.alike_part(D_KS, _cell(truth, sd, seed=s).diffs[qp.CLAIM_PAIR], 0.05, RULE.d_ks,
                             RULE.share).answer for s in range(30)]
    share = {a: answers.count(a) / len(answers) for a in Answer}
    assert (share[Answer.YES] >= 0.8) if truth == 0 else (share[Answer.NO] >= 0.6 and share[Answer.YES] == 0)


def test_simulation_reaches_unclear_and_all_three_verdicts():
    found = {qr.alike_part(D_KS, _cell(truth, 0.04, seed=s).diffs[qp.CLAIM_PAIR], 0.05, RULE.d_ks,
                           RULE.share).answer for truth in (0.0, -0.04, -0.08) for s in range(10)}
    assert {Answer.YES, Answer.NO, Answer.UNCLEAR} <= found
    verdicts = {verdict_of(vq.profile_parts(_cell(t, 0.03, seed=s), 0.05, RULE)[0])
                for t in (0.0, -0.045, -0.1) for s in range(6)}
    assert {HOLDS, FAILS, UNSURE} <= verdicts


def _summary() -> "load.pd.DataFrame":
    rows, rng = [], np.random.default_rng(0)
    for d, small in zip(D_KS, np.where(X <= 3, -0.01, 0.2)):
        for s in range(8):
            base = 0.6 + rng.normal(0, 0.02)
            for v, auc in (("unscaled", base), ("additive", base + small), ("scaled", base + (0.3 if d >= 16 else 0))):
                rows.append(dict(run_id=f"{v}-{d}-{s}", attention=v, d_k=d, seed=s, task="assoc_recall",
                                 optimizer="adam", lr=1e-3, status="completed", accuracy_auc=auc + rng.normal(0, 0.01),
                                 test_accuracy=auc, final_val_accuracy=auc, steps_to_threshold=np.nan, steps=1000,
                                 threshold=0.9))
    return load.pd.DataFrame(rows)


def test_the_section_carries_the_readings_and_the_figure_draws_them():
    res = load.Results(None, _summary(), None, None, None, declared={"alike_d_ks": [4, 8], "alike_share": 1.0})
    section = vq.quality(res)
    (cell,) = section.cells
    assert cell.alike == RULE and cell.sensitivity.declared == qp.ALIKE_MARGIN and cell.checks
    assert cell.crossing is not None and cell.crossing.boot is not None
    kinds = {t.kind for t in section.tables}
    assert {"margin_sensitivity", "robust_tests", "crossing"} <= kinds
    ((name, fig),) = figures_margin.margin_sensitivity(res)
    assert name == "margin_sensitivity" and len(fig.axes[0].collections) == len(cell.sensitivity.segments)
    style.close(fig)
