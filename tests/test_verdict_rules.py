"""Every clause of every verdict rule, driven each way by per-seed data near its threshold:
just inside (HOLDS), just outside (FAILS), straddling (UNSURE), and with too few seeds (FEW,
with the fewest seeds a clause had). The rules are pure functions (at_init, quality_rules, cost,
mup); the folder-level wiring is in test_analysis."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts import rules
from experiments.analysis.stats import intervals as stats
from experiments.analysis.verdicts import at_init as va
from experiments.analysis.verdicts import mup as vm
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import cost as vt
from experiments.analysis.render.clauses import part_text
from experiments.analysis.verdicts.rules import FAILS, FEW, HOLDS, UNSEEN, UNSURE, Answer, Band, Method, Side

SD = 0.002  # seed spread of "tight" data: the 95% t half-width at n = 3 is 2.48 SD ≈ 0.005
NEAR = 0.012  # how far inside/outside a threshold "near" data sit (> the half-width)


def tight(center: float, n: int = 3) -> np.ndarray:
    """n per-seed values with mean `center` and sd SD."""
    z = np.linspace(-1.0, 1.0, n)
    return center + SD * z / z.std(ddof=1)


def wide(center: float, sd: float = 0.05, n: int = 3) -> np.ndarray:
    """Mean `center` and sd `sd` (the default: an interval of about ±0.12 at n = 3)."""
    return center + (tight(0.0, n) / SD) * sd


def _drive(rule, base: dict, key: str, value) -> rules.Verdict:
    args = {k: dict(v) for k, v in base.items()}
    group, name = key.split(".")
    args[group][name] = value
    return rule(**args)


def _clauses(kind: str, lo: float, hi: float | None = None):
    """(value, expected verdict) near a clause's threshold(s)."""
    if kind == "within":
        return [(tight(lo + NEAR), HOLDS), (tight(hi - NEAR), HOLDS), (tight(lo - NEAR), FAILS),
                (tight(hi + NEAR), FAILS), (tight(lo), UNSURE), (tight(hi), UNSURE)]
    inside = NEAR if kind == "above" else -NEAR
    return [(tight(lo + inside), HOLDS), (tight(lo - inside), FAILS), (tight(lo), UNSURE)]


def _mup(end: dict) -> rules.Verdict:
    parts = vm.mup_rule(end)
    return vm.mup_verdict(parts, vm.blind_spots("proportional", "d_k × n_heads", 0.1, parts))


T, E = va.TOL_SLOPE, va.TOL_ENTROPY
ATTN_RULES = {  # rule(**groups) -> verdict; base data hold; each clause: (group.key, kind, bounds)
    "variance": (lambda slopes: rules.verdict_of(va.variance_rule(slopes)),
                 {"slopes": {"unscaled": tight(1.0), "scaled": tight(0.0)}},
                 [("slopes.unscaled", "within", (1 - T, 1 + T)), ("slopes.scaled", "within", (-T, T))]),
    "saturation": (lambda per_doubling: rules.verdict_of(va.saturation_rule(per_doubling)),
                   {"per_doubling": {"unscaled": tight(-0.06), "scaled": tight(0.0)}},
                   [("per_doubling.unscaled", "below", (-E,)), ("per_doubling.scaled", "within", (-E, E))]),
    "jacobian": (lambda jac, share: rules.verdict_of(va.jacobian_rule(jac, share)),
                 {"jac": {"unscaled": tight(-1.0), "scaled": tight(0.0)},
                  "share": {"unscaled": tight(0.1), "scaled": tight(0.0)}},
                 [("jac.unscaled", "below", (-T,)), ("jac.scaled", "within", (-T, T)),
                  ("share.unscaled", "above", (va.TOL_SHARE,)),
                  ("share.scaled", "within", (-va.TOL_SHARE, va.TOL_SHARE))]),
    "gradients": (lambda ratio: va.gradient_verdict(va.gradient_rule(ratio)),
                  {"ratio": {"median": tight(-0.9), "RMS": tight(-0.5)}},
                  [("ratio.median", "below", (-T,)), ("ratio.RMS", "below", (-T,))]),
    "mup": (_mup, {"end": {"scaled": tight(0.5), "mup": tight(0.0)}},
            [("end.scaled", "above", (T,)), ("end.mup", "within", (-T, T))]),
}


def _cases():
    for name, (_, _, clauses) in ATTN_RULES.items():
        for key, kind, bounds in clauses:
            for value, expected in _clauses(kind, *bounds):
                yield pytest.param(name, key, value, expected, id=f"{key}-{expected}-{value.mean():.3f}")


def test_base_data_hold():
    for name, (rule, base, _) in ATTN_RULES.items():
        assert rule(**base) == HOLDS, name


@pytest.mark.parametrize("name, key, value, expected", list(_cases()))
def test_each_clause_near_its_threshold(name, key, value, expected):
    rule, base, _ = ATTN_RULES[name]
    if name == "gradients" and expected == FAILS:
        expected = UNSURE  # one aggregate failing while the other holds: they disagree
    assert _drive(rule, base, key, value) == expected


@pytest.mark.parametrize("name", list(ATTN_RULES))
def test_each_clause_with_too_few_seeds(name):
    rule, base, clauses = ATTN_RULES[name]
    for key, _, _ in clauses:
        group, k = key.split(".")
        got = _drive(rule, base, key, base[group][k][:stats.MIN_SEEDS - 1])
        if name == "gradients":  # the other aggregate holds: they do not agree
            assert got is UNSURE
        else:
            assert got is FEW, (name, key, got)


def test_too_few_seeds_names_the_fewest():
    parts = va.variance_rule({"unscaled": tight(1.0)[:2], "scaled": tight(0.0)})
    assert rules.verdict_of(parts) is FEW and rules.fewest(parts) == 2
    assert rules.fewest(va.variance_rule({"unscaled": tight(1.0), "scaled": tight(0.0)})) == 0


def test_gradient_aggregates_agreeing_and_not():
    both_fail = {"median": tight(0.3), "RMS": tight(0.3)}
    assert va.gradient_verdict(va.gradient_rule(both_fail)) == FAILS
    assert va.gradient_verdict(va.gradient_rule({"median": tight(-0.9)})) == UNSURE  # RMS not measured


# --- 6: can the setting show it ----------------------------------------------------------

def test_mup_not_observed_where_the_setting_cannot_show_it():
    parts = vm.mup_rule({"scaled": tight(0.5), "mup": tight(0.0)})
    assert vm.blind_spots("proportional", "d_k", 0.49, parts) == []
    for blind, why in ((vm.blind_spots("fixed", "64", 0.1, parts), vm.BlindSpot(vm.Blind.FIXED_WIDTH, d_models="64")),
                       (vm.blind_spots("proportional", "d_k", 0.51, parts), vm.BlindSpot(vm.Blind.SATURATED, share=0.51))):
        assert blind == [why] and vm.mup_verdict(parts, blind) == UNSEEN  # width fixed; attention saturated
    noisy = vm.mup_rule({"scaled": wide(0.5, sd=0.2), "mup": tight(0.0)})  # detects only shifts > 0.15
    blind = vm.blind_spots("proportional", "d_k", 0.1, noisy)
    assert blind == [vm.BlindSpot(vm.Blind.NO_POWER, weak=(noisy[0],))] and vm.mup_verdict(noisy, blind) == UNSEEN
    decided = vm.mup_rule({"scaled": wide(1.0, sd=0.2), "mup": tight(0.0)})  # wide, yet clearly above
    assert decided[0].answer is Answer.YES and decided[0].detectable > T
    assert vm.blind_spots("proportional", "d_k", 0.1, decided) == []  # power enough for its answer


# --- 4: quality (the clauses of quality_rules on the d_k profile; the section: test_lr_study) ----

D_KS = [8, 64, 1024]
MARGIN = 0.05


def _profile(small, large, n=8):
    """Δ per seed at d_k 8 / 64 / 1024: `small` at 8, `large` at 64 and 1024."""
    return np.stack([tight(small, n), tight(large, n), tight(large, n)], axis=1)


def _quality_parts(small, large, n=8) -> list[rules.Part]:
    diffs = _profile(small, large, n)
    return [qr.ahead_part(D_KS, diffs, 1024, MARGIN), qr.alike_part(D_KS, diffs, MARGIN, (8,), 1.0),
            qr.fix_part(D_KS, diffs, MARGIN, 1024)]


def _quality(small, large, n=8) -> rules.Verdict:
    return rules.verdict_of(_quality_parts(small, large, n))


@pytest.mark.parametrize("large, expected", [
    (NEAR + 0.02, HOLDS),  # ahead at the largest d_k, alike at the smallest
    (-0.1, FAILS),  # behind at the largest d_k
    (0.0, FAILS),  # alike at the largest d_k (TOST): not ahead
])
def test_quality_additive_ahead_at_large_d_k(large, expected):
    assert _quality(0.0, large) == expected


def test_quality_neither_ahead_nor_alike_at_large_d_k():
    diffs = np.stack([tight(0.0, 8), wide(0.02, n=8), wide(0.02, n=8)], axis=1)  # seeds spread across 0
    assert qr.ahead_part(D_KS, diffs, 1024, MARGIN).answer is Answer.UNCLEAR


@pytest.mark.parametrize("small, expected", [
    (-0.2, FAILS),  # at the declared small d_k, and wholly outside ±margin: not alike
    (-MARGIN + NEAR, HOLDS),  # inside the margin
    (-MARGIN, UNSURE),  # on it
])
def test_quality_alike_at_the_declared_d_k(small, expected):
    assert _quality(small, 0.2) == expected


def test_alike_is_judged_at_the_declared_d_ks_alone():
    diffs = _profile(-0.2, 0.0)  # far behind at 8, alike at 64 and 1024
    part = qr.alike_part(D_KS, diffs, MARGIN, (8, 64), 1.0)
    assert part.answer is Answer.NO and part.test is Method.TOST and part.at_d_k == 8 and part.d_ks == (64,)
    assert part.question == qr.Equivalent(MARGIN, (8, 64), 1.0, (8, 64))
    assert [d for d, _ in part.power] == [8, 64] and all(0 <= x <= 1 for _, x in part.power)
    assert qr.alike_part(D_KS, diffs, MARGIN, (8, 64), 0.5).answer is Answer.YES  # one of two suffices
    assert qr.alike_part(D_KS, diffs, MARGIN, (64, 1024), 1.0).answer is Answer.YES  # d_k 8 not declared
    unswept = qr.alike_part(D_KS, diffs, MARGIN, (4, 64), 1.0)  # 4 was not swept: judged at 64 alone
    assert unswept.answer is Answer.YES and unswept.question.judged == (64,)
    nothing = qr.alike_part(D_KS, diffs, MARGIN, (2, 4), 1.0)
    assert (nothing.n, nothing.missing) == (0, qr.Missing.NONE_DECLARED)


@pytest.mark.parametrize("reads, share, expected", [
    ("yy", 1.0, Answer.YES), ("y?", 1.0, Answer.UNCLEAR), ("yn", 1.0, Answer.NO), ("yn", 0.5, Answer.YES),
    ("?n", 0.5, Answer.UNCLEAR), ("nn", 0.5, Answer.NO), ("ff", 1.0, Answer.FEW), ("yyn", 2 / 3, Answer.YES),
])
def test_alike_share_rule(reads, share, expected):
    code = {"y": Answer.YES, "n": Answer.NO, "?": Answer.UNCLEAR, "f": Answer.FEW}
    assert qr.share_answer([code[c] for c in reads], share) is expected


def test_a_largest_d_k_not_measured_cannot_hold():
    diffs = _profile(0.0, 0.2)[:, :2]  # d_k 1024 did not enter
    assert qr.ahead_part(D_KS[:2], diffs, 1024, MARGIN).answer is Answer.UNCLEAR
    assert qr.fix_part(D_KS[:2], diffs, MARGIN, 1024).at_d_k == 64  # 1024 not measured
    nothing = qr.ahead_part([], diffs[:, :0], 1024, MARGIN)
    assert (nothing.n, nothing.missing, nothing.question) == (0, qr.Missing.NONE_ENTERED, qr.AheadOver(1024))


def test_quality_fix_from_which_d_k():
    diffs = np.stack([tight(0.01, 8), tight(0.1, 8), tight(0.3, 8)], axis=1)
    assert qr.fix_from(D_KS, diffs, MARGIN) == 64  # 0.01 is ahead of 0 but not of the margin
    fix = qr.fix_part(D_KS, diffs, MARGIN, 1024)
    assert fix.answer is Answer.YES and fix.test is Method.STEP_DOWN and fix.d_ks == (64, 1024)
    ahead = qr.ahead_part(D_KS, diffs, 1024, MARGIN)
    assert ahead.d_ks == (8, 64, 1024) and ahead.at_d_k == 1024  # ahead of 0 from d_k = 8 on
    assert qr.fix_part(D_KS, -diffs, MARGIN, 1024).answer is Answer.NO


def test_lr_slope_judged_on_a_flat_prediction_only():
    assert qr.lr_slope_part("mup", tight(0.0), 0.1, 0.0).answer is Answer.YES
    assert qr.lr_slope_part("mup", tight(-0.5), 0.1, 0.0).answer is Answer.NO
    assert qr.lr_slope_part("mup", wide(0.0, sd=0.2), 0.1, 0.0).answer is Answer.UNCLEAR
    scaled = qr.lr_slope_part("scaled", tight(-0.3), 0.1, -0.5)
    assert scaled.answer is Answer.REPORTED and scaled.question == qr.LrSlope(0.1, -0.5)
    assert qr.lr_slope_part("mup", tight(0.0, 2), 0.1, 0.0).answer is Answer.FEW


def test_quality_with_too_few_seeds_and_overall():
    parts = _quality_parts(0.0, 0.2, n=2)
    assert rules.verdict_of(parts) is FEW and rules.fewest(parts) == 2
    assert vq.overall([(HOLDS, 0)] * 2) == (HOLDS, 0) and vq.overall([(FAILS, 0)] * 2) == (FAILS, 0)
    assert vq.overall([(HOLDS, 0), (FAILS, 0)]) == (UNSURE, 0) and vq.overall([]) == (UNSURE, 0)
    assert vq.overall([(FEW, 2), (FEW, 3)]) == (FEW, 2)  # the first condition's count


# --- 5: cost ---------------------------------------------------------------------------------

@pytest.mark.parametrize("time_ratio, fastest, slowest, memory, expected", [
    (1.51, 2.0, 1.0, 1.51, Answer.YES),
    (1.51, 2.0, 1.0, 1.49, Answer.UNCLEAR),  # memory ratio short of the factor
    (1.51, 2.0, 1.0, 1.00, Answer.NO),  # no memory saved at all
    (1.49, 2.0, 1.0, 1.51, Answer.UNCLEAR),  # time ratio short of the factor
    (1.00, 2.0, 1.0, 9.00, Answer.NO),  # not slower
    (1.51, 1.0, 1.0, 1.51, Answer.UNCLEAR),  # additive's fastest repeat not beyond scaled's slowest
])
def test_cost_rule_near_its_thresholds(time_ratio, fastest, slowest, memory, expected):
    assert vt.cost_rule(time_ratio, fastest, slowest, memory) is expected


# --- a clause's reading: interval, answer and power, and the line written from them ----------

def test_every_clause_states_its_power():
    band = Band(Side.WITHIN, 0.85, 1.15)
    part = rules.judge("unscaled slope", tight(1.0), band)
    expected = (stats.mean_ci(tight(1.0)), stats.detectable(tight(1.0)))
    assert (part.ci, part.detectable, part.question, part.answer, part.n) == (*expected, band, Answer.YES, 3)
    line = part_text(part)
    assert stats.fmt_ci(part.ci) in line and f"{part.detectable:.2g}" in line and "within 1 ± 0.15: yes" in line
    nothing = rules.judge("x", [], Band(Side.ABOVE, 0))
    assert (nothing.n, nothing.answer) == (0, Answer.FEW) and part_text(nothing) == "x: not measured"
