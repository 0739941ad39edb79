"""Sub-claim 4's t-tests with a robust test beside each, and d*'s interval both ways: data
read from a cell's d_k profile, never deciding a clause (the t-tests decide; these say how far
the decision leans on the t-test's normal law, on the seeds' count, and on d*'s local interval).

Every t-test a clause runs on the paired seed differences (the step-down's one-sided tests
from the largest d_k down to the first not rejected; the ahead test at the largest d_k; the
TOST at each declared alike d_k, and at the largest where "alike there" could answer 'no')
becomes one Check: its t p-value, the sign-flip permutation p-value of the same question
(stats.robust), and its power at the observed Δ and paired sd beside TOST's power at Δ = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from experiments.analysis.stats import crossing, profile, robust
from experiments.analysis.stats.intervals import count
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts.rules import Answer, Part

ALPHA = profile.ALPHA


class Kind(Enum):
    """The question a Check's two tests ask."""
    AHEAD = "Δ > null"  # one-sided (the step-down's and the ahead-at-largest test)
    TOST = "|Δ| < margin"  # two one-sided tests; p is the larger


@dataclass(frozen=True)
class Check:
    """One t-test of `clause` at `d_k`, the sign-flip test beside it, and its power: at the
    observed mean Δ and paired sd (`power`), if truly equal (TOST: `power_if_equal`), and the seeds
    each would need for 80% (None: the observed Δ lies on the null's side, or past MOST_SEEDS)."""
    clause: str
    d_k: int
    kind: Kind
    null: float  # the one-sided test's null, or TOST's margin
    n: int
    delta: float
    t_p: float
    flip_p: float
    power: float
    seeds_80: int | None
    power_if_equal: float | None = None
    seeds_80_if_equal: int | None = None

    @property
    def exact(self) -> bool:
        return robust.is_exact(self.n)

    @property
    def disagree(self) -> bool:
        """The t-test and the sign-flip test decide differently at ALPHA."""
        return bool(self.t_p < ALPHA) != bool(self.flip_p < ALPHA)


def ahead_check(clause: str, d_k: int, x, null: float) -> Check:
    x = np.asarray(x, dtype=float)
    power, seeds = robust.one_sided_powers(x, null)
    return Check(clause, int(d_k), Kind.AHEAD, null, int(count(x)), float(np.nanmean(x)),
                 profile.one_sided_p(x, null), robust.sign_flip_p(x, null), power, seeds)


def tost_check(clause: str, d_k: int, x, margin: float) -> Check:
    x = np.asarray(x, dtype=float)
    if_equal, power, seeds_if_equal, seeds = robust.tost_powers(x, margin)
    return Check(clause, int(d_k), Kind.TOST, margin, int(count(x)), float(np.nanmean(x)),
                 profile.tost_p(x, margin), robust.sign_flip_tost_p(x, margin), power, seeds, if_equal,
                 seeds_if_equal)


def step_down_checks(clause: str, d_ks, diffs, null: float) -> list[Check]:
    """The step-down's tests, largest d_k first, down to the first the t-test did not reject."""
    out = []
    for j in range(len(d_ks) - 1, -1, -1):
        if count(diffs[:, j]) < 3:
            break
        out.append(ahead_check(clause, d_ks[j], diffs[:, j], null))
        if not out[-1].t_p < ALPHA:
            break
    return out


def _ahead_checks(part: Part, d_ks, diffs, null: float, margin: float) -> list[Check]:
    """A step-down clause's tests: its step-down (null `null`), the ahead test at the largest d_k
    (null 0) where the step-down's null differs, and TOST there where the answer is not 'yes'."""
    if not d_ks:
        return []
    out = step_down_checks(part.label, d_ks, diffs, null)
    if null != 0.0:
        out.insert(0, ahead_check(part.label, d_ks[-1], diffs[:, -1], 0.0))
    if part.answer is not Answer.YES:
        out.append(tost_check(part.label, d_ks[-1], diffs[:, -1], margin))
    return out


def clause_checks(parts: list[Part], p: qp.CellProfile, margin: float) -> dict[str, tuple[Check, ...]]:
    """{clause label: its Checks} for sub-claim 4's judged clauses (profile_parts' order)."""
    out = {}
    for part in parts:
        pair = qp.FIX_PAIR if isinstance(part.question, quality_rules.AheadAt) else qp.CLAIM_PAIR
        if part.n == 0 or pair not in p.diffs:
            continue
        d_ks, diffs = p.entered(pair)
        if isinstance(part.question, quality_rules.Equivalent):
            out[part.label] = tuple(tost_check(part.label, d, diffs[:, d_ks.index(d)], margin)
                                    for d in part.question.judged)
        else:
            out[part.label] = tuple(_ahead_checks(part, d_ks, diffs, margin if pair == qp.FIX_PAIR else 0.0,
                                                  margin))
    return out


@dataclass(frozen=True)
class CrossingBothWays:
    """d* beside its local interval (profile.Crossover): every stretch of d_k where the pointwise
    interval contains 0, and the bootstrap over seeds (None: too few whole seeds)."""
    zero_set: tuple[crossing.Stretch, ...]
    boot: crossing.BootCrossing | None


def crossing_both_ways(p: qp.CellProfile) -> CrossingBothWays | None:
    """additive − unscaled's d* both ways; None without additive runs or with fewer than two d_k."""
    if qp.CLAIM_PAIR not in p.diffs:
        return None
    d_ks, diffs = p.entered(qp.CLAIM_PAIR)
    if len(d_ks) < 2:
        return None
    return CrossingBothWays(crossing.zero_set(d_ks, diffs), crossing.bootstrap(d_ks, diffs))
