"""The d_k profile of one (task, optimizer): paired AUC differences of the variants, at each
variant's best learning rate, at every d_k where the comparison measures attention.

A d_k enters only where scaled learned there: its seed-mean AUC covered at least
`learned_fraction` of the way from chance to scaled's best AUC in that cell. Below
that the task, not the attention, decides (vector_retrieval's plateau at chance), and
the d_k reads "not measured", and says why: scaled did not learn there, or was never run
there (another variant's runs put the d_k on the axis). A pair's d_k enters where, besides, one of its two
variants cleared the same bar: a gap between two models at chance says nothing about
either, however tight the seeds make it. A cell without scaled runs has no gate.

Shared by the quality section (the table and clauses), the profile figure and the
answer, so that a number read in one of them is the number read in the others. Where a
cell has confirmation seeds: which seeds chose the rates and which were judged (phases),
and what choosing cost (lr.select.optimism).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import Interval, mean_ci
from experiments.analysis.tables import diverged
from experiments.analysis.tables import load
from experiments.analysis.verdicts.learned import (COMPARATOR_GATES, GATE, LEARNED_FRACTION, Gate,  # noqa: F401
                                                   LearnedRule, as_rule, learned)
from experiments.analysis.verdicts.rules import Answer

ALIKE_MARGIN = 0.05  # AUC: "alike" within ±this, declared before the data (conf/analysis.yaml)
# The small d_k at which "alike" is judged, and the share of them (of those swept and entered)
# at which TOST must hold: declared, never a cutoff estimated from the data (conf/analysis.yaml).
ALIKE_D_KS = (4, 8)
ALIKE_SHARE = 1.0
# (a, b): Δ = a − b, seed by seed; the first is sub-claim 4's pair, the second its fix. The
# last sets additive's hidden width apart (d_hidden 64, not d_k): reported, never judged.
PAIRS = (("additive", "unscaled"), ("scaled", "unscaled"), ("qk_norm", "scaled"), ("mup", "scaled"),
         ("additive_wide", "unscaled"))
CLAIM_PAIR, FIX_PAIR, WIDE_PAIR = PAIRS[0], PAIRS[1], PAIRS[4]


class Out(Enum):
    """Why a d_k did not enter."""
    NOT_LEARNED = "scaled did not learn"
    NEVER_RUN = "scaled never run"


NOT_LEARNED, NEVER_RUN = Out.NOT_LEARNED, Out.NEVER_RUN


def declared(res: load.Results) -> tuple[float, LearnedRule]:
    """(alike margin, the learned rule) as conf/analysis.yaml declares them, else the defaults."""
    given = getattr(res, "declared", None) or {}
    return (float(given.get("alike_margin", ALIKE_MARGIN)),
            LearnedRule(float(given.get("learned_fraction", LEARNED_FRACTION)),
                        str(given.get("comparator_learned", COMPARATOR_GATES[0]))))


def margin_of(res: load.Results, task: str) -> float:
    """The alike margin of a (task, optimizer) cell: the task's own where conf/analysis.yaml
    declares one (tasks.<task>.alike_margin), else the global one."""
    own = ((getattr(res, "declared", None) or {}).get("tasks") or {}).get(task) or {}
    return float(own["alike_margin"]) if own.get("alike_margin") is not None else declared(res)[0]


@dataclass(frozen=True)
class AlikeRule:
    """Where (a)'s "alike" is judged: TOST at each declared d_k that was swept and entered, 'yes'
    when it holds at `share` of them or more."""
    d_ks: tuple[int, ...] = ALIKE_D_KS
    share: float = ALIKE_SHARE


def alike_rule_of(res: load.Results, task: str) -> AlikeRule:
    """The alike rule of a (task, optimizer) cell: the task's own d_ks and share where
    conf/analysis.yaml declares them (tasks.<task>.alike_d_ks, .alike_share), else the global ones."""
    given = getattr(res, "declared", None) or {}
    own = (given.get("tasks") or {}).get(task) or {}
    pick = lambda key, default: own.get(key) if own.get(key) is not None else given.get(key, default)  # noqa: E731
    return AlikeRule(tuple(int(d) for d in pick("alike_d_ks", ALIKE_D_KS)), float(pick("alike_share", ALIKE_SHARE)))


def pair_name(pair: tuple[str, str]) -> str:
    return f"{pair[0]} − {pair[1]}"


@dataclass(frozen=True)
class CellProfile:
    """One (task, optimizer): the swept d_ks, which entered, and per pair the per-seed Δ
    [seeds, d_ks] (NaN where a pair is missing or the d_k did not enter)."""
    name: str
    d_ks: list[int]
    measured: list[bool]
    gate: Gate | None  # how `measured` was decided (None: no scaled runs, every d_k enters)
    diffs: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    n_seeds: int = 0
    pair_gate: dict[tuple[str, str], list[bool]] = field(default_factory=dict)  # measured, and one learned
    unrun: list[int] = field(default_factory=list)  # d_ks with no scaled run at all (never run, not unlearned)

    def columns(self, pair=None) -> list[int]:
        """Indices of the d_ks that entered (for `pair`: where one of its variants learned too)."""
        gate = self.pair_gate.get(pair, self.measured)
        return [j for j, m in enumerate(gate) if m]

    def entered(self, pair) -> tuple[list[int], np.ndarray]:
        """(d_ks, Δ [seeds, those d_ks]) of a pair over the d_ks that entered."""
        cols = self.columns(pair)
        return [self.d_ks[j] for j in cols], self.diffs[pair][:, cols]

    def unmeasured(self) -> list[int]:
        return [d for d, m in zip(self.d_ks, self.measured) if not m]

    def why_unmeasured(self) -> dict[Out, list[int]]:
        """{NOT_LEARNED: d_ks, NEVER_RUN: d_ks} of the d_ks that did not enter, empty lists left out."""
        out = {NOT_LEARNED: [d for d in self.unmeasured() if d not in self.unrun],
               NEVER_RUN: [d for d in self.unmeasured() if d in self.unrun]}
        return {why: d_ks for why, d_ks in out.items() if d_ks}


def _auc_matrix(completed: pd.DataFrame, variant: str, d_ks, seeds) -> np.ndarray:
    return np.stack([load.cell_values(completed, "accuracy_auc", variant, d, seeds) for d in d_ks], axis=1)


def cell_profile(every: pd.DataFrame, history=None, fraction: "LearnedRule | float" = LEARNED_FRACTION,
                 name: str = "") -> CellProfile:
    """The profile of one condition's summary rows (every lr); see the module docstring."""
    rule = as_rule(fraction)
    best = lr_select.at_best(every, history)
    completed = diverged.completed(best)
    seeds = sorted(best["seed"].unique())  # the judged: confirmation seeds where a cell has them
    d_ks = sorted(int(d) for d in best["d_k"].unique())
    did, gate = learned(best, d_ks, rule.fraction)
    cmp = did if rule.comparator == "auc" else learned(best, d_ks, rule.fraction, "val_final")[0]
    measured = did.get(GATE, [True] * len(d_ks))
    diffs, pair_gate = {}, {}
    for a, b in PAIRS:
        if a in did and b in did:
            diffs[(a, b)] = _auc_matrix(completed, a, d_ks, seeds) - _auc_matrix(completed, b, d_ks, seeds)
            pair_gate[(a, b)] = [m and (x or y) for m, x, y in zip(measured, cmp[a], cmp[b])]
    ran = set(best.loc[best["attention"] == GATE, "d_k"].astype(int))
    unrun = [d for d in d_ks if d not in ran] if GATE in did else []
    return CellProfile(name, d_ks, measured, gate, diffs, len(seeds), pair_gate, unrun)


def sd_of(x) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1)) if x.size > 1 else math.nan


def _step_downs(p: CellProfile, margin: float) -> dict[tuple, dict[int, bool]]:
    """{(pair, null): {d_k: rejected}}: the step-downs that the clauses and the answer read."""
    out = {}
    for pair, null in ((CLAIM_PAIR, 0.0), (FIX_PAIR, 0.0), (FIX_PAIR, margin)):
        if pair in p.diffs:
            d_ks, diffs = p.entered(pair)
            out[(pair, null)] = dict(zip(d_ks, profile.step_down(diffs, null)))
    return out


class Mark(Enum):
    """What the answer reads at a d_k, beside the interval (one-sided tests: a marked cell's
    two-sided interval may still reach the null)."""
    ALIKE = "alike"  # TOST within ±margin
    AHEAD = "ahead"  # the step-down, null 0
    AHEAD_BY_MARGIN = "ahead by margin"  # scaled − unscaled: the step-down, null margin


def _marks(pair, d: int, x: np.ndarray, downs: dict, margin: float) -> tuple[Mark, ...]:
    alike = (Mark.ALIKE,) if Answer(profile.equivalent(x, margin)) is Answer.YES else ()
    if pair == CLAIM_PAIR:
        return alike + ((Mark.AHEAD,) if downs[(pair, 0.0)].get(d) else ())
    if pair == FIX_PAIR:
        return ((Mark.AHEAD_BY_MARGIN,) if downs[(pair, margin)].get(d) else
                (Mark.AHEAD,) if downs[(pair, 0.0)].get(d) else ())
    return alike if pair == WIDE_PAIR else ()


@dataclass(frozen=True)
class PairAt:
    """One pair at one d_k: its Δ interval (None: no seed measured it), whether neither variant
    learned there, the marks, and TOST's power at the paired sd (sub-claim 4's pair)."""
    ci: Interval | None
    neither_learned: bool = False
    marks: tuple[Mark, ...] = ()
    tost_power: float | None = None


@dataclass(frozen=True)
class ProfileRow:
    """One d_k of the profile: whether it entered (else why not), and each pair there."""
    d_k: int
    entered: bool
    out: Out | None
    pairs: dict[tuple[str, str], PairAt]


def _pair_at(p: CellProfile, pair, j: int, d: int, downs: dict, margin: float) -> PairAt:
    x = p.diffs[pair][:, j]
    ci = mean_ci(x) if np.isfinite(x).any() else None
    if not p.measured[j]:
        return PairAt(ci)
    if j not in p.columns(pair):
        return PairAt(ci, neither_learned=True)
    power = (profile.tost_power(sd_of(x), int(np.isfinite(x).sum()), margin) if pair == CLAIM_PAIR else None)
    return PairAt(ci, marks=_marks(pair, d, x, downs, margin), tost_power=power)


def profile_rows(p: CellProfile, margin: float) -> list[ProfileRow]:
    """One row per d_k: each pair's Δ with what the clauses and the answer read there (the marks),
    TOST's power at the paired sd; a d_k that did not enter says why."""
    downs = _step_downs(p, margin)
    why = {d: reason for reason, d_ks in p.why_unmeasured().items() for d in d_ks}
    return [ProfileRow(d, p.measured[j], why.get(d), {pair: _pair_at(p, pair, j, d, downs, margin)
                                                        for pair in p.diffs})
            for j, d in enumerate(p.d_ks)]


@dataclass(frozen=True)
class Phases:
    """One condition's seeds: those that chose the rates, those judged fresh (confirmation
    seeds), and in how many of its (variant, d_k) cells the fresh seeds were judged."""
    name: str
    chose: tuple[int, ...]
    judged: tuple[int, ...]
    n_fresh: int
    n_cells: int


def phases(s: pd.DataFrame, chosen: pd.DataFrame) -> list[Phases]:
    """Per condition of the summary `s`, where some cell has confirmation seeds: which seeds chose
    the rates and which were judged (`chosen`: the runs at the chosen rates, lr_select.at_chosen)."""
    judged = lr_select.judged(chosen)
    if not lr_select.confirming(judged).any():
        return []
    out = []
    for cond in load.conditions(s):
        runs = load.at_condition(judged, cond)
        fresh = lr_select.confirming(runs)
        chose = sorted(lr_select.selecting(load.at_condition(s, cond))["seed"].unique())
        per_cell = fresh.groupby([runs["attention"], runs["d_k"]]).any()
        out.append(Phases(lr_views.label(cond), tuple(int(x) for x in chose),
                          tuple(int(x) for x in sorted(runs.loc[fresh, "seed"].unique())),
                          int(per_cell.sum()), len(per_cell)))
    return out
