"""The two-stage confirmation (conf/analysis.yaml: two_stage): which of sub-claim 4's clauses
the first look left undecided, how many seeds each needs for the declared power at the second
look, and each clause's answer at its look. Pure functions of the stage-1 readings.

The design is declared before the data: stage 1 is the first `first_seeds` confirmation seeds;
each test at look k runs at alphas[k] (Bonferroni: the family-wise error of the two looks is at
most their sum). After the first look, a clause still 'unclear' gets seeds for `power` at its
observed Δ and paired sd, at the second look's α, capped at `max_seeds` per (variant, d_k),
stage 1 included. A clause decided at the first look keeps its answer; one undecided there is
judged at the second on all its seeds (two_looks).

A clause is sized on the test that decides it soonest, whichever answer that test gives: an
ahead clause (a, b) at the largest d_k entered reaches 'yes' by the one-sided t-test of Δ > 0,
'no' by that of Δ < 0 or by TOST within ±margin (quality_rules._not_ahead); the alike clause
reaches, at each declared d_k, 'yes' by TOST and 'no' by the one-sided test of |Δ| > margin (the
interval wholly outside). Only the tests whose alternative holds the observed Δ are sized; at
each judged d_k of an undecided alike clause, also those TOST already passed at the first look,
since the second look tests them again at its own α.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.stats import profile, robust
from experiments.analysis.stats.intervals import MIN_SEEDS
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts.rules import Answer, Part


@dataclass
class TwoStage:
    """The declared design (conf/analysis.yaml's two_stage; its schema in app.analysis_cli)."""
    first_seeds: int = 8  # stage 1: the first this many confirmation seeds
    alphas: list[float] = field(default_factory=lambda: [0.025, 0.025])  # each look's tests
    power: float = 0.8  # at the observed Δ and paired sd, at the second look's α
    max_seeds: int = 24  # per (variant, d_k), stage 1 included


class Test(Enum):
    """A test that can decide a clause, by its alternative."""
    AHEAD = "Δ > 0"  # one-sided t: an ahead clause's 'yes'
    BEHIND = "Δ < 0"  # one-sided t: an ahead clause's 'no'
    ALIKE = "|Δ| < margin"  # TOST: the alike clause's 'yes', an ahead clause's 'no'
    APART = "|Δ| > margin"  # one-sided t against the nearer margin: the alike clause's 'no'


class Unreached(Enum):
    """Why no seed count reaches the power."""
    NO_SIDE = "the observed Δ lies in no deciding test's alternative"
    PAST_SEARCH = f"more than {robust.MOST_SEEDS} seeds"


AHEAD_TESTS = (Test.AHEAD, Test.BEHIND, Test.ALIKE)
ALIKE_TESTS = (Test.ALIKE, Test.APART)


def effect(test: Test, delta: float, margin: float) -> float:
    """How far the observed Δ lies inside the test's alternative (<= 0: outside it)."""
    return {Test.AHEAD: delta, Test.BEHIND: -delta, Test.ALIKE: margin - abs(delta),
            Test.APART: abs(delta) - margin}[test]


def power(test: Test, sd: float, n: int, delta: float, margin: float, alpha: float) -> float:
    """The test's power at n paired seeds when the true Δ and sd are the observed ones."""
    if test is Test.ALIKE:
        return profile.tost_power(sd, n, margin, delta, alpha)
    return profile.one_sided_power(sd, n, effect(test, delta, margin), alpha)


def seeds_needed(test: Test, sd: float, delta: float, margin: float, alpha: float, target: float) -> int | None:
    """The fewest paired seeds for `target` power; None past robust.MOST_SEEDS or outside the
    test's alternative."""
    if test is Test.ALIKE:
        return robust.tost_seeds(sd, margin, delta, target, alpha)
    return robust.one_sided_seeds(sd, effect(test, delta, margin), target, alpha)


@dataclass(frozen=True)
class TopUp:
    """One undecided clause's test of `pair` at `d_k`: the first look's n, Δ and paired sd, the
    test sized (None: none reachable, `unreached` says why), the seeds it needs for the power and
    the seeds it gets (capped; never fewer than n), and the power at those seeds (at Δ observed;
    TOST also if truly equal)."""
    clause: str
    pair: tuple[str, str]
    d_k: int
    n: int
    delta: float
    sd: float
    test: Test | None
    needed: int | None
    seeds: int
    power: float
    power_if_equal: float | None = None
    unreached: Unreached | None = None

    @property
    def capped(self) -> bool:
        return self.needed is not None and self.needed > self.seeds


def size(clause: str, pair, d_k: int, x, tests, margin: float, design: TwoStage) -> TopUp:
    """The TopUp of one clause's comparison x (per-seed Δ at d_k): the soonest of `tests`."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n, delta, sd = x.size, float(x.mean()), qp.sd_of(x)
    alpha = design.alphas[1]
    needs = {t: seeds_needed(t, sd, delta, margin, alpha, design.power) for t in tests}
    reachable = {t: k for t, k in needs.items() if k is not None}
    if not reachable:
        toward = [t for t in tests if effect(t, delta, margin) > 0]
        why = Unreached.PAST_SEARCH if toward else Unreached.NO_SIDE
        test = toward[0] if toward else None
        at = power(test, sd, n, delta, margin, alpha) if test else math.nan
        return TopUp(clause, tuple(pair), int(d_k), n, delta, sd, test, None, n, at, unreached=why)
    test = min(reachable, key=lambda t: (reachable[t], tests.index(t)))
    seeds = int(min(max(reachable[test], n), design.max_seeds))
    if_equal = profile.tost_power(sd, seeds, margin, 0.0, alpha) if test is Test.ALIKE else None
    return TopUp(clause, tuple(pair), int(d_k), n, delta, sd, test, reachable[test], seeds,
                 power(test, sd, seeds, delta, margin, alpha), if_equal)


def clause_top_ups(part: Part, p: qp.CellProfile, margin: float, design: TwoStage) -> list[TopUp]:
    """The TopUps of one clause read at the first look: none where it was decided (or had too few
    seeds to be judged); its comparisons otherwise (see the module docstring)."""
    if part.answer is not Answer.UNCLEAR:
        return []
    question = part.question
    pair = qp.FIX_PAIR if isinstance(question, quality_rules.AheadAt) else qp.CLAIM_PAIR
    if pair not in p.diffs:
        return []
    d_ks, diffs = p.entered(pair)
    if isinstance(question, quality_rules.Equivalent):
        return [size(part.label, pair, d, diffs[:, d_ks.index(d)], ALIKE_TESTS, margin, design)
                for d in question.judged]
    if not d_ks:
        return []
    # 'yes' needs the largest swept d_k to have entered (quality_rules._ahead_at_largest)
    tests = AHEAD_TESTS if d_ks[-1] == question.d_k else AHEAD_TESTS[1:]
    return [size(part.label, pair, d_ks[-1], diffs[:, -1], tests, margin, design)]


def top_ups(parts: list[Part], p: qp.CellProfile, margin: float, design: TwoStage) -> list[TopUp]:
    """Every undecided clause's TopUps, in the clauses' order."""
    return [t for part in parts for t in clause_top_ups(part, p, margin, design)]


def seeds_per_run(ups: list[TopUp]) -> dict[tuple[str, int], int]:
    """{(variant, d_k): the seeds it trains in all}: the most any TopUp gives a comparison it is
    in (both variants of a pair: the seeds pair), where that is more than the first look had."""
    out: dict[tuple[str, int], int] = {}
    for t in ups:
        if t.seeds > t.n:
            for variant in t.pair:
                out[(variant, t.d_k)] = max(out.get((variant, t.d_k), 0), t.seeds)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class Looked:
    """A clause as judged: at the first look (on the stage-1 seeds, at alphas[0]) where it decided
    there, else at the second (on all its seeds, at alphas[1])."""
    part: Part
    look: int


def two_looks(first: list[Part], second: list[Part]) -> list[Looked]:
    """Each clause's answer at its look (clauses matched by label, in the first look's order).
    A clause the second look lacks keeps its first reading, at look 1."""
    later = {p.label: p for p in second}
    decided = (Answer.YES, Answer.NO)
    return [Looked(p, 1) if p.answer in decided or p.label not in later else Looked(later[p.label], 2)
            for p in first]


RECORD = "two_stage"  # confirm.json's key: per cell, its condition, stage-1 seeds and top-ups


@dataclass(frozen=True)
class Stage:
    """A cell whose stage 2 ran, as the analysis reads it: the declared design, its stage-1 seeds,
    and the top-ups stage 2 recorded (confirm.json)."""
    design: TwoStage
    stage_one: tuple[int, ...]
    top_ups: tuple[TopUp, ...] = ()


def stage_one_only(chosen: pd.DataFrame, stages: dict[tuple[str, str], Stage]) -> pd.DataFrame:
    """The runs less the top-up seeds of each two-stage (task, optimizer) in `stages`: what the
    choice's optimism reads, the fresh seeds every (variant, d_k) of a cell shares (stage 1)."""
    keep = pd.Series(True, index=chosen.index)
    fresh = lr_select.confirming(chosen)
    for (task, optimizer), stage in stages.items():
        mine = (chosen["task"] == task) & (chosen["optimizer"] == optimizer) & fresh
        keep &= ~(mine & ~chosen["seed"].isin(stage.stage_one))
    return chosen[keep]


def as_record(u: TopUp) -> dict:
    """A TopUp as confirm.json keeps it (from_record reads it back)."""
    row = dataclasses.asdict(u)
    row.update(pair=list(u.pair), test=u.test.value if u.test else None,
               unreached=u.unreached.value if u.unreached else None, capped=u.capped)
    return row


def from_record(row: dict) -> TopUp:
    fields = {name: row[name] for name in TopUp.__dataclass_fields__}
    fields.update(pair=tuple(row["pair"]), test=Test(row["test"]) if row["test"] else None,
                  unreached=Unreached(row["unreached"]) if row["unreached"] else None)
    return TopUp(**fields)


def stages_of(record: dict, design: TwoStage) -> dict[tuple[str, str], Stage]:
    """{(task, optimizer): its Stage} of the cells whose stage 2 ran (confirm.json's record): the
    cells judged in two looks. Empty where none ran (a one-look confirmation)."""
    return {(c["task"], c["optimizer"]): Stage(design, tuple(int(s) for s in c["stage_1_seeds"]),
                                               tuple(from_record(u) for u in c.get("top_ups", [])))
            for c in (record.get(RECORD) or {}).values()}


def declared_stages(res) -> dict[tuple[str, str], Stage]:
    """The two-stage cells as app.analysis_cli.load_configured declares them (stages_of); {} without."""
    return (getattr(res, "declared", None) or {}).get(RECORD) or {}


def first_look_rows(every: pd.DataFrame, stage_one) -> pd.DataFrame:
    """A cell's runs as its first look saw them: the selection's and the stage-1 seeds'."""
    fresh = every["phase"].eq("confirmation") if "phase" in every else pd.Series(False, index=every.index)
    return every[~fresh | every["seed"].isin(list(stage_one))]


def check_design(design: TwoStage) -> None:
    """One line naming the field where the design is out of range (ValueError)."""
    rules = (("first_seeds", design.first_seeds >= MIN_SEEDS, f"a whole number >= {MIN_SEEDS}"),
             ("alphas", len(design.alphas) == 2 and all(0 < a < 0.5 for a in design.alphas),
              "two levels in (0, 0.5), the first look's and the second's"),
             ("power", 0 < design.power < 1, "a number in (0, 1)"),
             ("max_seeds", design.max_seeds >= design.first_seeds, "a whole number >= first_seeds"))
    for name, ok, allowed in rules:
        if not ok:
            raise ValueError(f"two_stage.{name}: must be {allowed}, got {getattr(design, name)!r}")
