"""Sub-claim 4 (quality), judged per (task, optimizer) at each variant's best learning rate.

The lr of every (variant, d_k) is chosen on validation (lr_select); the
clauses are in quality_rules; the lr views (optimal lr, its drift, LR
sensitivity) in lr_views. Seeds pair across variants (same data stream, same
init key) whichever lr each variant is at. Each condition's reading is a Cell;
render/answer.py writes the answer's sentences from it, render/quality.py the rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.lr.theory import predicted_lr_slope
from experiments.analysis.stats import profile
from experiments.analysis.verdicts import every_variant
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import FAILS, FEW, HOLDS, UNMEASURED, UNSURE, Part, Verdict, fewest, verdict_of, words
from experiments.analysis.stats.intervals import fmt_ci
from experiments.analysis.stats.survival import kaplan_meier, restricted_diff
from experiments.analysis.verdicts.section import INTERVALS, Section, describe_runs, no_data

# Britz et al. 2017, Table 6: newstest2013 BLEU, mean ± sd (mul: unscaled multiplicative).
BRITZ = pd.DataFrame({
    "dim": [128, 256, 512, 1024],
    "mul (unscaled)": ["22.03 ± 0.08", "22.33 ± 0.28", "21.78 ± 0.05", "18.22 ± 0.03"],
    "add": ["22.23 ± 0.11", "22.33 ± 0.04", "22.47 ± 0.27", "22.10 ± 0.18"],
    "Δ add − mul (BLEU)": ["+0.20", "+0.00", "+0.69", "+3.88"],
})
PAIR = ("additive", "unscaled")
FIGURES = ["profile", "quality", "steps_survival", "learning_curves", "lr_accuracy", "optimal_lr", "lr_sensitivity"]


def headline(rows: list[dict], primary) -> str:
    """The AUC of scaled, unscaled and additive at the largest d_k of the primary condition."""
    at = [r for r in rows if (r["task"], r["optimizer"]) == tuple(primary or ())] or rows
    if not at:
        return "not measured"
    r = max(at, key=lambda r: r["d_k"])
    return (f"accuracy AUC at d_k={r['d_k']} ({r['task']}, {r['optimizer']}): scaled {r['AUC scaled']}, "
            f"unscaled {r['AUC unscaled']}, additive {r['AUC additive']}")


@dataclass(frozen=True)
class Cell:
    """One (task, optimizer) read on its d_k profile: the verdict of (a)+(b) and its clauses, the
    crossover d*, the first d_k of the fix (b), and the lr view (c): its verdict (None without an
    lr grid) and one slope clause per variant."""
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

    @property
    def seeds(self) -> int:
        """Verdict.FEW: the fewest seeds a clause had."""
        return fewest(self.parts)


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


def lr_words(verdict: Verdict, lr_parts: dict[str, Part]) -> str:
    """The lr view's verdict in words: 'not measured (no mup runs)' where no mup runs."""
    mup = [lr_parts["mup"]] if "mup" in lr_parts else []
    return words(verdict, fewest(mup)) + ("" if mup else " (no mup runs)")


def tally(named: dict[str, tuple[Verdict, str]]) -> str:
    """'holds on 2 of 3: a/x, b/y; does not hold on c/z' — every condition named under its verdict
    (named: {condition: (verdict, its words)})."""
    groups: dict[tuple[Verdict, str], list[str]] = {}
    for name, verdict in named.items():
        groups.setdefault(verdict, []).append(name)
    order = sorted(groups, key=lambda v: (v[0] is not HOLDS, v[0] is not FAILS, v[1]))
    return "; ".join(f"{v[1]} on {len(groups[v])} of {len(named)}: {', '.join(groups[v])}" for v in order)


def _steps_columns(s: pd.DataFrame, d, seeds) -> dict:
    """Kaplan-Meier summary of steps to threshold, additive vs unscaled, and their paired Δ.
    A cell's runs are those with a budget (completed); NaN steps = never reached."""
    steps = {v: load.cell_values(s, "steps_to_threshold", v, d, seeds) for v in PAIR}
    budget = {v: load.cell_values(s, "steps", v, d, seeds) for v in PAIR}
    km = {v: kaplan_meier(steps[v][np.isfinite(budget[v])], budget[v][np.isfinite(budget[v])])
          for v in PAIR}
    mean = {v: "n/a" if k is None else f"{k.restricted_mean:.0f} ({k.reached_text})" for v, k in km.items()}
    med = {v: "n/a" if k is None else ("never" if math.isnan(k.median) else f"{k.median:.0f}")
           for v, k in km.items()}
    both = np.isfinite(budget["additive"]) & np.isfinite(budget["unscaled"])  # seeds that pair
    delta = restricted_diff(*(x[v][both] for v in PAIR for x in (steps, budget)))
    return {"restricted mean steps to threshold add / unscaled (reached)": " / ".join(mean.values()),
            "KM median steps add / unscaled": " / ".join(med.values()),
            "Δ restricted steps add − unscaled": "— (neither reached)" if delta is None else fmt_ci(delta, 0)}


def _mean(xs: np.ndarray) -> str:
    xs = xs[np.isfinite(xs)]
    return f"{xs.mean():.3f}" if xs.size else "n/a"


def _lrs(best: pd.DataFrame, d) -> str:
    """'1e-03 / 3e-03 (edge: high) / 1e-03': the best lr of additive / unscaled / scaled at d_k."""
    out = []
    for v in (*PAIR, "scaled"):
        cell = best[(best["attention"] == v) & (best["d_k"] == d)]
        out.append("—" if cell.empty else lr_select.lr_text(float(cell["lr"].iloc[0]), cell["edge"].iloc[0]))
    return " / ".join(out)


def quality_cell(every: pd.DataFrame, history=None) -> list[dict]:
    """Rows per d_k of one (task, optimizer) at each variant's best lr: rates, AUCs, steps, diverged."""
    best = lr_select.at_best(every, history)
    s, broken = diverged.completed(best), diverged.counts(best)
    d_ks = sorted(set(best.loc[best["attention"].isin([*PAIR, "scaled"]), "d_k"]))
    seeds = sorted(best["seed"].unique())
    rows = []
    for d in d_ks:
        auc = {v: load.cell_values(s, "accuracy_auc", v, d, seeds) for v in (*PAIR, "scaled")}
        rows.append({"d_k": int(d), "best lr add / unscaled / scaled": _lrs(best, d),
                     **{f"AUC {v}": _mean(auc[v]) for v in (*PAIR, "scaled")},
                     "test acc add / unscaled": " / ".join(
                         _mean(load.cell_values(s, "test_accuracy", v, d, seeds)) for v in PAIR),
                     **_steps_columns(s, d, seeds),
                     "diverged add / unscaled / scaled": " / ".join(
                         str(broken.get((v, int(d)), 0)) for v in (*PAIR, "scaled"))})
    return rows


def profile_parts(p: qp.CellProfile, margin: float) -> tuple[list[Part], profile.Crossover | None, int | None]:
    """(the judged clauses (a) ahead, (a) alike, (b), the crossover d*, the fix's "from which d_k")."""
    largest = p.d_ks[-1] if p.d_ks else 0
    if qp.CLAIM_PAIR in p.diffs:
        d_ks, diffs = p.entered(qp.CLAIM_PAIR)
        cross = quality_rules.crossover_of(d_ks, diffs)
        parts = [quality_rules.ahead_part(d_ks, diffs, largest, margin),
                 quality_rules.alike_part(d_ks, diffs, margin, cross)]
    else:
        cross, parts = None, [quality_rules.not_measured("(a) additive against unscaled", "the profile",
                                                         "no additive runs in this condition")]
    fix_from = None
    if qp.FIX_PAIR in p.diffs:
        d_ks, diffs = p.entered(qp.FIX_PAIR)
        parts.append(quality_rules.fix_part(d_ks, diffs, margin, largest))
        fix_from = quality_rules.fix_from(d_ks, diffs, margin)
    return parts, cross, fix_from


def lr_view(every: pd.DataFrame, history=None) -> tuple[Verdict | None, dict[str, Part], str]:
    """(verdict, {variant: its slope clause}, text) of (c): slopes beside their predictions,
    judged on mup's flat optimum; UNMEASURED without mup runs, None without an lr grid."""
    if not lr_select.has_grid(every):
        return None, {}, lr_select.NO_GRID
    sc = lr_select.scored(every, history)
    slopes, band = lr_views.drift_slopes(sc), lr_views.drift_band(sc)
    optimizer = load.conditions(every)[0][1]
    parts = {v: quality_rules.lr_slope_part(v, x, band, predicted_lr_slope(v, optimizer)
                                            if v in load.VARIANTS else None) for v, x in slopes.items()}
    verdict = verdict_of([parts["mup"]]) if "mup" in parts else UNMEASURED
    grid = (f"grid step {lr_views.grid_step(sc):.2f} in log2 lr, i.e. ±{band:.2f} per doubling over the "
            "sweep is half a step")
    return verdict, parts, "; ".join(p.text() for p in parts.values()) + f"; {grid}"


def quality(res: load.Results) -> Section:
    title, claim = "4. Quality", ("For small d_k additive and dot-product perform alike; for large d_k "
                                  "additive beats unscaled dot-product.")
    if res.summary is None:
        return no_data("quality", title, claim, FIGURES, "", "no summary.parquet")
    s = res.summary
    margin, fraction = qp.declared(res)
    profile_rows, rows, cells, views, lines, notes, variants = [], [], [], {}, [], [], []
    for cond in load.conditions(s):
        every, name = load.at_condition(s, cond), lr_views.label(cond)
        p = qp.cell_profile(every, res.history, fraction, name)
        parts, cross, fix_from = profile_parts(p, margin)
        view, lr_parts, text = lr_view(every, res.history)
        n_div = len(diverged.diverged(lr_select.at_best(every, res.history)))
        cell = Cell(name, verdict_of(parts), parts, p, cross, fix_from, margin, view, lr_parts, n_div)
        cells.append(cell)
        rows += [{"task": cond[0], "optimizer": cond[1], **r} for r in quality_cell(every, res.history)]
        profile_rows += [{"task": cond[0], "optimizer": cond[1], **r} for r in qp.profile_rows(p, margin)]
        crossing = f"(a) crossover d* = {cross.text()}; " if cross is not None else ""
        lines.append(f"{name}: {words(cell.verdict, cell.seeds)} ({crossing}" + "; ".join(p.text() for p in parts)
                     + "".join(f"; not measured at {quality_rules.d_k_list(d_ks)} ({why})"
                               for why, d_ks in p.why_unmeasured().items())
                     + (f"; {n_div} diverged runs left out" if n_div else "") + ")")
        notes.append(f"{name}: d_k entered where {p.gate}")
        if view is not None:
            views[name] = (view, lr_words(view, lr_parts))
            notes.append(f"{name}, lr view (c): {views[name][1]} ({text})")
        variants.append(every_variant.condition(every, res.history, every_variant.reference_of(res), fraction))
    chosen = lr_select.at_chosen(s, res.history)
    notes += _edges(s, res.history) + qp.phases(s, chosen)
    view_words = tally(views) if views else lr_select.NO_GRID
    judged = {c.name: (c.verdict, words(c.verdict, c.seeds)) for c in cells}
    reason = f"(a)+(b) {tally(judged)}. (c) lr view: {view_words}. " + "; ".join(lines)
    tables = [(profile_caption(margin), _ordered(pd.DataFrame(profile_rows))),
              ("Measured at each variant's best lr: additive vs unscaled (and scaled) per d_k", pd.DataFrame(rows))]
    gain = lr_select.optimism(chosen)
    if len(gain):
        tables.append(("Optimism of the selection seeds: seed-mean val AUC at the chosen rate on the seeds "
                       "that chose it, on the fresh confirmation seeds, and the difference (> 0: the choice "
                       "flattered the rate)", qp.optimism_table(gain)))
    if lr_select.has_grid(s):
        tables += [("Optimal lr (chosen on validation AUC) per variant × d_k × task",
                    lr_views.optimal_lr_table(s, res.history)),
                   ("Drift of the per-seed optimal lr with d_k, beside the Adam-step prediction",
                    lr_views.drift_table(s, res.history)),
                   ("LR sensitivity (Wortsman et al. 2023): mean of best − achieved val AUC over the "
                    "condition's common grid (the rates most cells ran; a widened cell counts only those, "
                    "a narrowed one gets none), diverged runs at chance",
                    lr_views.sensitivity_table(s, res.history))]
    else:
        notes.append(f"lr views: {lr_select.NO_GRID}")
    conds = "; ".join(describe_runs(s, c) for c in load.conditions(s))
    verdict, seeds = overall([(c.verdict, c.seeds) for c in cells])
    return Section("quality", title, claim, FIGURES, "", verdict, reason, conds,
                   tables + [("Britz et al. 2017, Table 6 (newstest2013 BLEU, mean ± sd)", BRITZ)], notes,
                   headline=headline(rows, res.primary), variants=variants, seeds=seeds,
                   parts=[p for c in cells for p in c.parts], cells=cells)


def profile_caption(margin: float) -> str:
    """The profile table's legend: the interval shown, and the one-sided tests behind its marks."""
    alpha = quality_rules.ALPHA
    return (f"The d_k profile: paired Δ AUC at each variant's best lr [two-sided 95% t-interval over seeds]. "
            f"The marks are one-sided tests, not the interval, so a marked Δ's interval may reach 0: "
            f"ahead = the step-down from the largest d_k (one-sided t-tests at {alpha:g}, family-wise "
            f"{alpha:g}, null 0), the test behind the answer's \"from d_k = … on\"; ahead by > {margin:g} = the "
            f"same step-down with null {margin:g} (scaled − unscaled); alike = TOST within ±{margin:g} (two "
            f"one-sided tests at {alpha:g}); TOST power = probability of 'alike' if truly equal, at the paired sd")


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The profile table's columns in reading order; a cell that lacks one reads —."""
    first = ["task", "optimizer", "d_k", "scaled learned"]
    pairs = [qp.pair_name(pr) for pr in qp.PAIRS if qp.pair_name(pr) in df]
    rest = [c for c in df.columns if c not in first + pairs]
    return df[first + pairs[:1] + rest + pairs[1:]].fillna("—") if len(df) else df


def _edges(s: pd.DataFrame, history) -> list[str]:
    best = lr_select.best_lrs(lr_select.scored(s, history))
    edges = best[best["edge"] != ""]
    return [("best lr at a grid edge: " + ", ".join(f"{r.task}/{r.optimizer} {r.attention} d_k={int(r.d_k)} "
                                                   f"({r.edge})" for r in edges.itertuples()))] if len(edges) else []
