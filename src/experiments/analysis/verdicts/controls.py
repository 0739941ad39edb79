"""The controls that say why, as data (render/controls.py writes the words): where unscaled_init
sits between unscaled and scaled, and additive at a fixed hidden width beside Britz's tied additive.

unscaled_init (src/attention/unscaled_init.py) is unscaled's score with W_q's init shrunk by
1/sqrt(d_k): scaled's logits at init, unscaled's logit step through W_q under Adam. Per cell and
d_k, each variant at its own chosen rate and on the judged seeds (confirmation seeds where a cell
has them: lr.select.at_best, paired seed by seed as quality_profile pairs), it reads
Δ = unscaled_init − unscaled and unscaled_init − scaled, and the fraction of the way from unscaled
to scaled, f = mean(unscaled_init − unscaled) / mean(scaled − unscaled): 0 at unscaled, 1 at
scaled. f's interval is Fieller's (the ratios ρ at which the t-interval of the per-seed
(unscaled_init − unscaled) − ρ (scaled − unscaled) holds 0), bounded exactly where scaled −
unscaled is itself nonzero at the same level: with no gap to explain, f is not defined.
The cause at a d_k: START (the saturated start was the harm) where f's interval lies above 1/2,
TRAINING (what training does to the logits: Adam's W_q step growing like d_k · lr) where below,
BETWEEN where it holds 1/2, NO_GAP where f is undefined. What the control cannot separate (W_k's
share, and what a rate choice absorbs) is in the variant's docstring and the section's words.

additive_wide (d_hidden 64 at every d_k) is read by the clause functions of quality_rules with
its own paired differences against unscaled in place of additive's: its crossover d*, "alike" on
the cell's declared d_ks, "ahead" at its largest measured d_k; the tied additive's beside it.
A cell with no runs of a control reads "not measured" (Lack).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd
from scipy import stats as sps

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import LEVEL, MIN_SEEDS, NAN_INTERVAL, Interval, mean_ci, paired_diff_ci
from experiments.analysis.tables import diverged, load
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts.rules import Part

INIT_CONTROL = "unscaled_init"
WIDE, TIED = qp.WIDE_PAIR, qp.CLAIM_PAIR  # (additive_wide, unscaled), (additive, unscaled)
HALFWAY = 0.5  # f above this (interval wholly): nearer scaled than unscaled


class Lack(Enum):
    """Why a control reads "not measured"."""
    SUMMARY = "no summary.parquet"
    NOT_RUN = "no runs of the control in this cell"
    NEIGHBOURS = "no runs of its neighbours (unscaled and scaled) in this cell"


class Cause(Enum):
    """What unscaled_init's place between unscaled and scaled says at one d_k."""
    START = "the saturated start"  # f's interval above 1/2: near scaled
    TRAINING = "training's logit step"  # below 1/2: near unscaled
    BETWEEN = "between"  # holds 1/2
    NO_GAP = "no gap"  # scaled − unscaled not nonzero: nothing to explain, f undefined


@dataclass(frozen=True)
class InitAt:
    """unscaled_init at one d_k: its paired Δ against unscaled and scaled, the gap scaled −
    unscaled, the fraction f with Fieller's interval (None where undefined) and the cause."""
    d_k: int
    vs_unscaled: Interval
    vs_scaled: Interval
    gap: Interval
    fraction: Interval | None
    cause: Cause


@dataclass(frozen=True)
class InitControl:
    """unscaled_init in one cell: one row per d_k that entered and where it ran; the d_ks of the
    cell's axis it never ran at; `lacks` where it has no reading at all."""
    rows: tuple[InitAt, ...] = ()
    never_run: tuple[int, ...] = ()
    lacks: Lack | None = None

    def causes(self) -> dict[Cause, tuple[int, ...]]:
        """{cause: its d_ks}, in the order of Cause, empty ones left out."""
        out = {c: tuple(r.d_k for r in self.rows if r.cause is c) for c in Cause}
        return {c: d_ks for c, d_ks in out.items() if d_ks}

    def cause(self) -> Cause | None:
        """The cell's cause: the one every d_k with a gap reads, BETWEEN where they differ,
        NO_GAP where no d_k had one; None where nothing was measured."""
        if self.lacks or not self.rows:
            return None
        found = {r.cause for r in self.rows if r.cause is not Cause.NO_GAP}
        return found.pop() if len(found) == 1 else Cause.BETWEEN if found else Cause.NO_GAP


@dataclass(frozen=True)
class PairReading:
    """One additive form against unscaled, read by quality_rules' clauses over the d_ks it entered."""
    d_ks: tuple[int, ...]
    crossover: profile.Crossover
    ahead: Part
    alike: Part
    smallest: Interval  # Δ at the smallest d_k it entered (where the tied form is a d_k-unit scorer)


@dataclass(frozen=True)
class WideControl:
    """additive_wide beside the tied additive in one cell (None: that form has no runs)."""
    wide: PairReading | None
    tied: PairReading | None
    never_run: tuple[int, ...] = ()
    lacks: Lack | None = None


@dataclass(frozen=True)
class CellControls:
    name: str
    init: InitControl
    wide: WideControl


@dataclass(frozen=True)
class Controls:
    """Every cell's controls; `lacks` where there is no summary at all."""
    cells: tuple[CellControls, ...] = ()
    lacks: Lack | None = None


def fieller(a, b, level: float = LEVEL) -> Interval | None:
    """mean(a) / mean(b) of paired per-seed values with Fieller's interval: the ρ where the
    t-interval of a − ρ b holds 0. None where that set is unbounded (b's mean not nonzero at
    `level`) or fewer than MIN_SEEDS pairs."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b, n = a[keep], b[keep], int(keep.sum())
    if n < MIN_SEEDS:
        return None
    cov = np.cov(a, b, ddof=1) / n  # of the two means
    t2 = sps.t.ppf(0.5 + level / 2, n - 1) ** 2
    ma, mb = a.mean(), b.mean()
    quad, half, const = mb * mb - t2 * cov[1, 1], ma * mb - t2 * cov[0, 1], ma * ma - t2 * cov[0, 0]
    if quad <= 0:
        return None
    root = math.sqrt(max(half * half - quad * const, 0.0))
    return float(ma / mb), float((half - root) / quad), float((half + root) / quad)


def cause_of(fraction: Interval | None) -> Cause:
    if fraction is None:
        return Cause.NO_GAP
    _, lo, hi = fraction
    return Cause.START if lo > HALFWAY else Cause.TRAINING if hi < HALFWAY else Cause.BETWEEN


def _init_at(auc: dict, d: int) -> InitAt:
    init, unscaled, scaled = (auc[v] for v in (INIT_CONTROL, "unscaled", "scaled"))
    fraction = fieller(init - unscaled, scaled - unscaled)
    return InitAt(d, paired_diff_ci(init, unscaled), paired_diff_ci(init, scaled),
                  paired_diff_ci(scaled, unscaled), fraction, cause_of(fraction))


def init_control(best: pd.DataFrame, p: qp.CellProfile) -> InitControl:
    """unscaled_init's rows at the d_ks of the cell that entered (`p`: scaled learned there), from
    the runs judged at each variant's chosen rate (`best`, lr.select.at_best)."""
    ran = {v: set(best.loc[best["attention"] == v, "d_k"].astype(int)) for v in (INIT_CONTROL, "unscaled", "scaled")}
    if not ran[INIT_CONTROL]:
        return InitControl(lacks=Lack.NOT_RUN)
    if not (ran["unscaled"] and ran["scaled"]):
        return InitControl(lacks=Lack.NEIGHBOURS)
    done, seeds = diverged.completed(best), sorted(best["seed"].unique())
    rows = []
    for d, entered in zip(p.d_ks, p.measured):
        if entered and all(d in r for r in ran.values()):
            rows.append(_init_at({v: load.cell_values(done, "accuracy_auc", v, d, seeds) for v in ran}, d))
    return InitControl(tuple(rows), tuple(d for d in p.d_ks if d not in ran[INIT_CONTROL]))


def pair_reading(p: qp.CellProfile, pair, margin: float, rule: qp.AlikeRule, largest: int | None = None,
                 ) -> PairReading | None:
    """quality_rules' crossover, "ahead" (at `largest`, by default the pair's own largest d_k that
    entered) and "alike" (on the declared d_ks) of a pair's paired differences; None without runs."""
    if pair not in p.diffs:
        return None
    d_ks, diffs = p.entered(pair)
    ran = [j for j in range(len(d_ks)) if np.isfinite(diffs[:, j]).any()]
    d_ks, diffs = [d_ks[j] for j in ran], diffs[:, ran]
    label = qp.pair_name(pair)
    top = largest if largest is not None else (d_ks[-1] if d_ks else 0)
    return PairReading(tuple(int(d) for d in d_ks), quality_rules.crossover_of(d_ks, diffs),
                       quality_rules.ahead_part(d_ks, diffs, top, margin, f"{label}: ahead"),
                       quality_rules.alike_part(d_ks, diffs, margin, rule.d_ks, rule.share, f"{label}: alike"),
                       mean_ci(diffs[:, 0]) if d_ks else NAN_INTERVAL)


def wide_control(best: pd.DataFrame, p: qp.CellProfile, margin: float, rule: qp.AlikeRule) -> WideControl:
    """additive_wide's reading beside the tied additive's (the latter at the cell's largest d_k, as
    section 4 reads it)."""
    ran = set(best.loc[best["attention"] == WIDE[0], "d_k"].astype(int))
    if not ran:
        return WideControl(None, None, lacks=Lack.NOT_RUN)
    tied = pair_reading(p, TIED, margin, rule, p.d_ks[-1] if p.d_ks else None)
    return WideControl(pair_reading(p, WIDE, margin, rule), tied, tuple(d for d in p.d_ks if d not in ran))


def cell_controls(every: pd.DataFrame, history, fraction: float, margin: float, rule: qp.AlikeRule,
                  name: str) -> CellControls:
    """Both controls of one (task, optimizer)'s summary rows (every lr)."""
    p = qp.cell_profile(every, history, fraction, name)
    return controls_of(p, lr_select.at_best(every, history), margin, rule, name)


def controls_of(p: qp.CellProfile, best: pd.DataFrame, margin: float, rule: qp.AlikeRule,
                name: str) -> CellControls:
    """Both controls of a cell already read on its profile, from its runs at their chosen rates."""
    return CellControls(name, init_control(best, p), wide_control(best, p, margin, rule))


def controls(res: load.Results) -> Controls:
    if res.summary is None:
        return Controls(lacks=Lack.SUMMARY)
    _, fraction = qp.declared(res)
    return Controls(tuple(cell_controls(load.at_condition(res.summary, c), res.history, fraction,
                                        qp.margin_of(res, c[0]), qp.alike_rule_of(res, c[0]),
                                        lr_views.label(c))
                          for c in load.conditions(res.summary)))


def of_cells(res: load.Results, cells) -> Controls:
    """The controls the quality section's cells (verdicts.quality.Cell) already read."""
    return Controls(lacks=Lack.SUMMARY) if res.summary is None else Controls(tuple(c.controls for c in cells))
