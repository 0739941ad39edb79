"""Sub-claim 4 (quality), judged per (task, optimizer) at each variant's best learning rate.

The lr of every (variant, d_k) is chosen on validation (lr_select); the
clauses are in quality_rules; the lr views (optimal lr, its drift, LR
sensitivity) in lr_views. Seeds pair across variants (same data stream, same
init key) whichever lr each variant is at. Each condition's reading is a Cell;
render/answer.py writes the answer's sentences from it, render/quality.py the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.lr.theory import predicted_lr_slope
from experiments.analysis.stats import profile
from experiments.analysis.verdicts import controls as controls_reading
from experiments.analysis.verdicts import every_variant
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts import robust
from experiments.analysis.verdicts import sensitivity as margin_sensitivity
from experiments.analysis.verdicts import top_up
from experiments.analysis.verdicts import transfer
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import FAILS, FEW, HOLDS, UNMEASURED, UNSURE, Part, Verdict, fewest, verdict_of
from experiments.analysis.stats.survival import kaplan_meier, restricted_diff
from experiments.analysis.verdicts.section import Lacks, Section, Table, no_data, runs_of

PAIR = ("additive", "unscaled")
NAME = "Quality"
FIGURES = ["profile", "margin_sensitivity", "quality", "steps_survival", "learning_curves", "lr_accuracy",
           "optimal_lr", "lr_sensitivity"]


@dataclass(frozen=True)
class Cell:
    """One (task, optimizer) read on its d_k profile: the verdict of (a)+(b) and its clauses, the
    crossover d*, the first d_k of the fix (b), and the lr view (c): its verdict (None without an
    lr grid), one slope clause per variant, and the grid (its step in log2 lr, the band judged)."""
    name: str
    verdict: Verdict
    parts: list[Part]
    dk_profile: qp.CellProfile
    crossover: profile.Crossover | None
    fix_from: int | None
    margin: float
    lr_verdict: Verdict | None = None
    lr_parts: dict[str, Part] = field(default_factory=dict)
    diverged: int = 0  # runs left out at the chosen rates
    lr_grid: tuple[float, float] | None = None  # (grid step in log2 lr, band per doubling)
    alike: qp.AlikeRule = qp.AlikeRule()
    checks: dict[str, tuple[robust.Check, ...]] = field(default_factory=dict)  # per clause label
    crossing: robust.CrossingBothWays | None = None  # d*'s interval beyond the local one
    sensitivity: margin_sensitivity.Sensitivity | None = None  # the verdict by margin
    looks: tuple[int, ...] = ()  # per clause, the look that judged it (two-stage cells; else empty)
    stage: top_up.Stage | None = None  # a two-stage cell's design, stage-1 seeds and top-ups
    controls: controls_reading.CellControls | None = None  # why unscaled falls behind (verdicts.controls)

    @property
    def seeds(self) -> int:
        """Verdict.FEW: the fewest seeds a clause had."""
        return fewest(self.parts)

    @property
    def lr_seeds(self) -> int:
        """The lr view's Verdict.FEW: mup's seeds (the clause it judges)."""
        return fewest([self.lr_parts["mup"]]) if "mup" in self.lr_parts else 0


@dataclass(frozen=True)
class Edge:
    """A best lr at an end of its grid."""
    task: str
    optimizer: str
    variant: str
    d_k: int
    edge: str  # lr.select.edge_flag: the low or the high end


@dataclass(frozen=True)
class QualityReading:
    """Sub-claim 4 beyond its cells: the primary condition, the global declared margin (a cell's own,
    where its task declares one, is Cell.margin), the best rates at
    a grid edge, which seeds chose and which were judged, and whether any cell has an lr grid."""
    primary: tuple[str, str] | None
    margin: float
    edges: tuple[Edge, ...]
    phases: tuple[qp.Phases, ...]
    has_grid: bool
    side_by_side: transfer.Transfer | None = None  # the synthetic cells beside the text cell


def overall(cells: list[tuple[Verdict, int]]) -> tuple[Verdict, int]:
    """(verdict, fewest seeds) over the conditions' (verdict, fewest seeds): holds if every
    condition holds, does not hold if every one does not, not measured if none was, too few
    seeds (the first condition's) if every one had too few, else inconclusive."""
    for same in (HOLDS, FAILS, UNMEASURED):
        if cells and all(v is same for v, _ in cells):
            return same, 0
    if cells and all(v is FEW for v, _ in cells):
        return cells[0]
    return UNSURE, 0


def steps_to_threshold(s: pd.DataFrame, d, seeds) -> dict:
    """Kaplan-Meier of steps to threshold, additive vs unscaled, and their paired Δ (None where
    neither reached it). A cell's runs are those with a budget (completed); NaN steps = never reached."""
    steps = {v: load.cell_values(s, "steps_to_threshold", v, d, seeds) for v in PAIR}
    budget = {v: load.cell_values(s, "steps", v, d, seeds) for v in PAIR}
    km = {v: kaplan_meier(steps[v][np.isfinite(budget[v])], budget[v][np.isfinite(budget[v])])
          for v in PAIR}
    both = np.isfinite(budget["additive"]) & np.isfinite(budget["unscaled"])  # seeds that pair
    return {"km": km, "steps_delta": restricted_diff(*(x[v][both] for v in PAIR for x in (steps, budget)))}


def _mean(xs: np.ndarray) -> float:
    xs = xs[np.isfinite(xs)]
    return float(xs.mean()) if xs.size else float("nan")


def _lrs(best: pd.DataFrame, d) -> dict:
    """{variant: (its best lr, its edge flag) or None} of additive, unscaled and scaled at d_k."""
    out = {}
    for v in (*PAIR, "scaled"):
        cell = best[(best["attention"] == v) & (best["d_k"] == d)]
        out[v] = None if cell.empty else (float(cell["lr"].iloc[0]), cell["edge"].iloc[0])
    return out


def quality_cell(every: pd.DataFrame, history=None) -> list[dict]:
    """Rows per d_k of one (task, optimizer) at each variant's best lr: rates, AUCs, steps, diverged."""
    best = lr_select.at_best(every, history)
    s, broken = diverged.completed(best), diverged.counts(best)
    d_ks = sorted(set(best.loc[best["attention"].isin([*PAIR, "scaled"]), "d_k"]))
    seeds = sorted(best["seed"].unique())
    three = (*PAIR, "scaled")
    return [{"d_k": int(d), "lrs": _lrs(best, d),
             "auc": {v: _mean(load.cell_values(s, "accuracy_auc", v, d, seeds)) for v in three},
             "test_accuracy": {v: _mean(load.cell_values(s, "test_accuracy", v, d, seeds)) for v in PAIR},
             **steps_to_threshold(s, d, seeds), "diverged": {v: broken.get((v, int(d)), 0) for v in three}}
            for d in d_ks]


def profile_parts(p: qp.CellProfile, margin: float, alike: qp.AlikeRule = qp.AlikeRule(),
                  alpha: float = profile.ALPHA) -> tuple[list[Part], profile.Crossover | None, int | None]:
    """(the judged clauses (a) ahead, (a) alike (at the declared d_ks), (b), the crossover d*, the
    fix's "from which d_k"); each clause's tests at `alpha` (a look's: verdicts.top_up)."""
    largest = p.d_ks[-1] if p.d_ks else 0
    if qp.CLAIM_PAIR in p.diffs:
        d_ks, diffs = p.entered(qp.CLAIM_PAIR)
        cross = quality_rules.crossover_of(d_ks, diffs)
        parts = [quality_rules.ahead_part(d_ks, diffs, largest, margin, alpha=alpha),
                 quality_rules.alike_part(d_ks, diffs, margin, alike.d_ks, alike.share, alpha=alpha)]
    else:
        cross, parts = None, [quality_rules.not_measured("(a) additive against unscaled", None,
                                                         quality_rules.Missing.NO_ADDITIVE)]
    fix_from = None
    if qp.FIX_PAIR in p.diffs:
        d_ks, diffs = p.entered(qp.FIX_PAIR)
        parts.append(quality_rules.fix_part(d_ks, diffs, margin, largest, alpha=alpha))
        fix_from = quality_rules.fix_from(d_ks, diffs, margin, alpha)
    return parts, cross, fix_from


def lr_view(every: pd.DataFrame, history=None) -> tuple[Verdict | None, dict[str, Part], tuple[float, float] | None]:
    """(verdict, {variant: its slope clause}, (grid step in log2 lr, band)) of (c): slopes beside
    their predictions, judged on mup's flat optimum; UNMEASURED without mup runs, None (and no
    grid) without an lr grid."""
    if not lr_select.has_grid(every):
        return None, {}, None
    sc = lr_select.scored(every, history)
    # band: over the whole sweep, also where a variant is judged on fewer d_ks (judged_from): the
    # tolerance for "flat" is declared once, not widened by the narrower range
    start = lr_views.judged_from(sc)
    slopes, band = lr_views.drift_slopes(sc, start), lr_views.drift_band(sc)
    optimizer = load.conditions(every)[0][1]
    parts = {v: quality_rules.lr_slope_part(v, x, band, predicted_lr_slope(v, optimizer)
                                            if v in load.VARIANTS else None, start.get(v)) for v, x in slopes.items()}
    verdict = verdict_of([parts["mup"]]) if "mup" in parts else UNMEASURED
    return verdict, parts, (lr_views.grid_step(sc), band)


def first_look(every: pd.DataFrame, history, p: qp.CellProfile, fraction: float,
               stage: top_up.Stage) -> qp.CellProfile:
    """A two-stage cell's profile on its selection and stage-1 seeds: what the first look read."""
    return qp.cell_profile(top_up.first_look_rows(every, stage.stage_one), history, fraction, p.name)


def two_look_parts(first: qp.CellProfile, p: qp.CellProfile, margin: float, alike: qp.AlikeRule,
                   stage: top_up.Stage) -> tuple[list[Part], tuple[int, ...]]:
    """(the clauses of a two-stage cell, the look that judged each): on `first` (its selection and
    stage-1 seeds) at the first look's alpha, on all its seeds (`p`) at the second's; each clause at
    the look that decided it (top_up.two_looks)."""
    alphas = stage.design.alphas
    looked = top_up.two_looks(profile_parts(first, margin, alike, alphas[0])[0],
                              profile_parts(p, margin, alike, alphas[1])[0])
    return [x.part for x in looked], tuple(x.look for x in looked)


def _cell(every: pd.DataFrame, history, fraction: float, margin: float, alike: qp.AlikeRule, name: str,
          stage: top_up.Stage | None = None) -> Cell:
    p = qp.cell_profile(every, history, fraction, name)
    parts, cross, fix_from = profile_parts(p, margin, alike)
    looks = ()
    # the verdict by margin reads the clauses as the verdict does: at each look's alpha
    parts_at, ends = (lambda m: profile_parts(p, m, alike)[0]), margin_sensitivity.candidate_ends(p)
    if stage is not None:  # a two-stage confirmation: each clause at its look
        first = first_look(every, history, p, fraction, stage)
        parts, looks = two_look_parts(first, p, margin, alike, stage)
        parts_at = lambda m: two_look_parts(first, p, m, alike, stage)[0]  # noqa: E731
        ends = np.union1d(margin_sensitivity.candidate_ends(first, stage.design.alphas[0]),
                          margin_sensitivity.candidate_ends(p, stage.design.alphas[1]))
    view, lr_parts, grid = lr_view(every, history)
    best = lr_select.at_best(every, history)
    n_div = len(diverged.diverged(best))
    by_margin = margin_sensitivity.sensitivity(p, margin, parts_at, ends)
    return Cell(name, verdict_of(parts), parts, p, cross, fix_from, margin, view, lr_parts, n_div, grid, alike,
                robust.clause_checks(parts, p, margin), robust.crossing_both_ways(p), by_margin, looks, stage,
                controls_reading.controls_of(p, best, margin, alike, name))


def _tables(s: pd.DataFrame, history, cells: list[Cell]) -> list[Table]:
    """The profile (each row at its cell's margin) and the measured rows per condition, the
    optimism of the selection seeds, the lr views (where a cell has a grid), and Britz et al.'s
    published numbers."""
    conds = load.conditions(s)
    profile_rows = tuple({"task": c[0], "optimizer": c[1], "margin": cell.margin, "row": r}
                         for c, cell in zip(conds, cells) for r in qp.profile_rows(cell.dk_profile, cell.margin))
    rows = tuple({"task": c[0], "optimizer": c[1], **r} for c in conds
                 for r in quality_cell(load.at_condition(s, c), history))
    margins = {c: cell.margin for c, cell in zip(conds, cells)}
    tables = [Table("profile", profile_rows, {"margins": margins}), Table("quality", rows),
              *robust_tables(cells)]
    stages = {c: cell.stage for c, cell in zip(conds, cells) if cell.stage is not None}
    gain = lr_select.optimism(top_up.stage_one_only(lr_select.at_chosen(s, history), stages))
    if len(gain):
        tables.append(Table("optimism", frame=gain))
    if lr_select.has_grid(s):
        tables += [Table("optimal_lr", frame=lr_views.optimal_lr_table(s, history)),
                   Table("drift", frame=lr_views.drift_table(s, history)),
                   Table("sensitivity", frame=lr_views.sensitivity_table(s, history))]
    return tables + [Table("britz")]


def robust_tables(cells: list[Cell]) -> list[Table]:
    """The verdict by margin, every t-test with the sign-flip test beside it, and d*'s interval
    both ways: one table each, left out where no cell has rows."""
    tables = [Table("margin_sensitivity", tuple({"cell": c.sensitivity} for c in cells if c.sensitivity)),
              Table("robust_tests", tuple({"cell": c.name, "check": k} for c in cells
                                          for checks in c.checks.values() for k in checks)),
              Table("crossing", tuple({"cell": c.name, "d*": c.crossover, "both ways": c.crossing}
                                      for c in cells if c.crossover is not None and c.crossover.d_star))]
    return [t for t in tables if t.rows]


def bits_table(c: every_variant.ConditionVariants) -> Table:
    """A text condition's validation bits per character per d_k, each variant at its chosen rate,
    with the baselines of its plays (tables.text)."""
    d_ks = sorted({r.d_k for r in c.rows})
    rows = tuple({"d_k": d, "bits": {r.variant: r.val_bpc for r in c.rows if r.d_k == d}} for d in d_ks)
    return Table("bits", rows, {"task": c.task, "optimizer": c.optimizer, "baselines": c.baselines})


def _edges(s: pd.DataFrame, history) -> tuple[Edge, ...]:
    best = lr_select.best_lrs(lr_select.scored(s, history))
    return tuple(Edge(r.task, r.optimizer, r.attention, int(r.d_k), r.edge)
                 for r in best[best["edge"] != ""].itertuples())


def quality(res: load.Results) -> Section:
    if res.summary is None:
        return no_data("quality", "4", NAME, FIGURES, Lacks.SUMMARY)
    s = res.summary
    margin, fraction = qp.declared(res)
    reference = every_variant.reference_of(res)
    cells, variants = [], []
    stages = top_up.declared_stages(res)
    for cond in load.conditions(s):
        every = load.at_condition(s, cond)
        cells.append(_cell(every, res.history, fraction, qp.margin_of(res, cond[0]), qp.alike_rule_of(res, cond[0]),
                           lr_views.label(cond), stages.get(cond)))
        variants.append(every_variant.condition(every, res.history, reference, fraction))
    sides = [transfer.side_of(c, *cond) for c, cond in zip(cells, load.conditions(s))]
    detail = QualityReading(res.primary, margin, _edges(s, res.history),
                            tuple(qp.phases(s, lr_select.at_chosen(s, res.history))), lr_select.has_grid(s),
                            transfer.transfer(sides))
    verdict, seeds = overall([(c.verdict, c.seeds) for c in cells])
    bits = [bits_table(c) for c in variants if c.baselines is not None]
    tables = _tables(s, res.history, cells)
    return Section("quality", "4", NAME, FIGURES, verdict, tuple(runs_of(s, c) for c in load.conditions(s)),
                   tables[:2] + bits + tables[2:], seeds, [p for c in cells for p in c.parts], cells,
                   variants, detail=detail)
