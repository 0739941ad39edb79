"""Sub-claim 4 (quality), judged per (task, optimizer) at each variant's best learning rate.

The lr of every (variant, d_k) is chosen on validation (lr_select); the
clauses are in quality_rules; the lr views (optimal lr, its drift, LR
sensitivity) in lr_views. Seeds pair across variants (same data stream, same
init key) whichever lr each variant is at.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.tables import diverged as status
from experiments.analysis.verdicts.rules import FAILS, HOLDS, UNSURE, Part, judge, verdict_of
from experiments.analysis.stats.intervals import fmt_ci, mean_ci
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
FIGURES = ["quality", "steps_survival", "learning_curves", "lr_accuracy", "optimal_lr", "lr_sensitivity"]
RULE = (
    "Per task and optimizer, each variant at its own best learning rate per d_k: the lr whose seed-mean "
    "validation accuracy AUC is highest (test accuracy never used; a diverged run counts at chance, "
    "1/n_classes from the task config, else the accuracy at the first evaluation; a best lr at an end of "
    "its grid is flagged edge: low/high). At that lr, on the completed runs (diverged ones are counted, "
    f"not averaged), seed by seed; {INTERVALS}. "
    "(a) Crossover, Δ = additive − unscaled AUC: the per-seed slope of Δ against log2 d_k lies above 0, "
    "Δ at the largest d_k lies above 0, and Δ at the smallest d_k lies within ±margin, the margin "
    f"{quality_rules.ALIKE_FRACTION} × the pooled between-seed sd of the two variants' AUC there (at least "
    f"{quality_rules.MARGIN_FLOOR}): alike = the variants differ by less than reseeding one of them "
    "does; the power of that clause (probability the interval fits inside ±margin if the true Δ "
    "is 0, at the measured sd of Δ) is stated. A clause answers no when its interval lies wholly on the "
    "wrong side (for alike: wholly outside ±margin). (b) The fix: scaled − unscaled AUC at the largest "
    "d_k lies above 0 (left out where scaled was not run). A (task, optimizer) holds if every clause of "
    "(a) and (b) holds, does not hold if any does not, inconclusive otherwise (a condition without additive "
    "runs, or where neither additive nor unscaled took a seed past "
    f"{lr_select.LEARNED_OVER_CHANCE:g} x chance: (a) not measured, so at best inconclusive). (c) The lr view, its own "
    "verdict: per seed, the best lr of each variant (argmax of that seed's val AUC over the grid; none "
    f"on a tie, nor where no rate took it past {lr_select.LEARNED_OVER_CHANCE:g} x chance: it learned nothing); the per-seed slope of log2(best lr) against log2 d_k; holds if unscaled's interval "
    "excludes 0 (its optimum drifts) and does not lie within ±band, does not hold if it lies within "
    "±band (the optimum moves by less than half a grid step over the d_k sweep), scaled's slope reported beside it. Overall: holds if "
    "every (task, optimizer) holds, does not hold if every one does not, inconclusive otherwise; each "
    "is named. Steps to threshold (at the best lr) are censored at the budget: Kaplan-Meier over seeds, "
    "restricted mean with the seeds that reached the threshold, no Δ where neither variant reached it. "
    "Caveat: the AUC judged is the one the lr was chosen on, so each variant's best is optimistic by a "
    "winner's curse of about the same size for variants on the same grid.")
RULE_BRIEF = ("Per task and optimizer, each variant at its best learning rate: additive and unscaled alike at "
              "the smallest d_k, additive ahead of unscaled at the largest, and scaled ahead of unscaled there.")


def headline(rows: list[dict], primary) -> str:
    """The AUC of scaled, unscaled and additive at the largest d_k of the primary condition."""
    at = [r for r in rows if (r["task"], r["optimizer"]) == tuple(primary or ())] or rows
    if not at:
        return "not measured"
    r = max(at, key=lambda r: r["d_k"])
    return (f"accuracy AUC at d_k={r['d_k']} ({r['task']}, {r['optimizer']}): scaled {r['AUC scaled']}, "
            f"unscaled {r['AUC unscaled']}, additive {r['AUC additive']}")


def overall(cells: list[str]) -> str:
    """Holds if every condition holds, does not hold if every one does not, else inconclusive."""
    if cells and all(c == HOLDS for c in cells):
        return HOLDS
    if cells and all(c == FAILS for c in cells):
        return FAILS
    if cells and all(c.startswith(f"{UNSURE} (too few") for c in cells):
        return cells[0]
    return UNSURE


def tally(named: dict[str, str]) -> str:
    """'holds on 2 of 3: a/x, b/y; does not hold on c/z' — every condition named under its verdict."""
    groups: dict[str, list[str]] = {}
    for name, verdict in named.items():
        groups.setdefault(verdict, []).append(name)
    order = sorted(groups, key=lambda v: (v != HOLDS, v != FAILS, v))
    return "; ".join(f"{v} on {len(groups[v])} of {len(named)}: {', '.join(groups[v])}" for v in order)


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


def _learned(best: pd.DataFrame, variant: str) -> bool:
    """Some seed of `variant`, at its best lr, past LEARNED_OVER_CHANCE x chance validation AUC."""
    rows = best[best["attention"] == variant]
    return bool(lr_select.past_chance(rows["val_auc"], rows["chance"]).any())


def quality_cell(every: pd.DataFrame, history=None):
    """(rows per d_k, clauses (a)+(b), notes) of one (task, optimizer) at each variant's best lr."""
    best = lr_select.at_best(every, history)
    s, broken = status.completed(best), status.counts(best)
    def d_ks_of(variant):
        return set(best.loc[best["attention"] == variant, "d_k"])

    # without additive runs the rows (and clause (b)) are scaled against unscaled; (a) is not measured;
    # nor is it where neither of its variants learned anything: a gap between two runs at chance
    # says nothing about the claim, however tight the seeds make its interval
    has_pair = bool(d_ks_of("additive") & d_ks_of("unscaled"))
    unmeasured = "no additive runs in this condition"
    if has_pair and not (_learned(best, "additive") or _learned(best, "unscaled")):
        has_pair, unmeasured = False, (
            f"neither additive nor unscaled took a seed past {lr_select.LEARNED_OVER_CHANCE:g} x chance "
            "validation AUC at its best lr, at any d_k")
    d_ks = sorted(d_ks_of("unscaled") & d_ks_of("additive" if has_pair else "scaled"))
    seeds = sorted(every["seed"].unique())
    rows, auc = [], {}
    for d in d_ks:
        auc[d] = {v: load.cell_values(s, "accuracy_auc", v, d, seeds) for v in (*PAIR, "scaled")}
        rows.append({"d_k": int(d), "best lr add / unscaled / scaled": _lrs(best, d),
                     "AUC additive": _mean(auc[d]["additive"]), "AUC unscaled": _mean(auc[d]["unscaled"]),
                     "AUC scaled": _mean(auc[d]["scaled"]),
                     "Δ AUC add − unscaled": fmt_ci(mean_ci(auc[d]["additive"] - auc[d]["unscaled"]), 3),
                     "test acc add / unscaled": " / ".join(
                         _mean(load.cell_values(s, "test_accuracy", v, d, seeds)) for v in PAIR),
                     **_steps_columns(s, d, seeds),
                     "diverged add / unscaled / scaled": " / ".join(
                         str(broken.get((v, int(d)), 0)) for v in (*PAIR, "scaled"))})
    if not d_ks:
        return rows, [], []
    lo, hi = auc[d_ks[0]], auc[d_ks[-1]]
    if not has_pair:
        crossover = judge("(a) crossover, additive − unscaled", "above 0", [], "above", 0.0)
        return rows, [crossover, quality_rules.fix_rule(hi["scaled"] - hi["unscaled"], d_ks[-1])], [
            f"(a) not measured: {unmeasured}"]
    delta = np.stack([auc[d]["additive"] - auc[d]["unscaled"] for d in d_ks], axis=1)  # (seeds, d_ks)
    parts = quality_rules.crossover_rule(d_ks, delta, lo["additive"], lo["unscaled"])
    margin = quality_rules.alike_margin(lo["additive"], lo["unscaled"])
    small = delta[:, 0][np.isfinite(delta[:, 0])]
    power = quality_rules.equivalence_power(float(np.std(small, ddof=1)) if small.size > 1 else math.nan,
                                            small.size, margin)
    notes = [f"alike margin ±{margin:.3f} at d_k={int(d_ks[0])}; power to call it alike if truly equal: "
             + (f"{power:.0%}" if math.isfinite(power) else "n/a")]
    if np.isfinite(hi["scaled"]).any():
        parts.append(quality_rules.fix_rule(hi["scaled"] - hi["unscaled"], d_ks[-1]))
    edges = best[best["edge"] != ""].drop_duplicates(["attention", "d_k"])
    if len(edges):
        notes.append("best lr at a grid edge: " + ", ".join(
            f"{r.attention} d_k={int(r.d_k)} ({r.edge})" for r in edges.itertuples()))
    return rows, parts, notes


def lr_view(every: pd.DataFrame, history=None) -> tuple[str, list[Part], str]:
    """(verdict, [unscaled's drift clause], text with scaled's slope beside it) of (c)."""
    if not lr_select.has_grid(every):
        return lr_select.NO_GRID, [], lr_select.NO_GRID
    sc = lr_select.scored(every, history)
    slopes, band = lr_views.drift_slopes(sc), lr_views.drift_band(sc)
    parts = [quality_rules.drift_part("unscaled: slope of log2 best lr per doubling of d_k",
                                      slopes.get("unscaled", np.array([])), band)]
    scaled = quality_rules.drift_part("scaled: slope", slopes.get("scaled", np.array([])), band)
    return (verdict_of(parts), parts,
            f"{parts[0].text()}; {scaled.text()}, {quality_rules.includes_zero(scaled)}")


def quality(res: load.Results) -> Section:
    title, claim = "4. Quality", ("For small d_k additive and dot-product perform alike; for large d_k "
                                  "additive beats unscaled dot-product.")
    if res.summary is None:
        return no_data("quality", title, claim, FIGURES, RULE, "no summary.parquet", RULE_BRIEF)
    s = res.summary
    rows, cells, views, lines, notes = [], {}, {}, [], []
    for cond in load.conditions(s):
        every, name = load.at_condition(s, cond), lr_views.label(cond)
        cell_rows, parts, cell_notes = quality_cell(every, res.history)
        cells[name] = verdict_of(parts)
        rows += [{"task": cond[0], "optimizer": cond[1], **r} for r in cell_rows]
        n_div = len(status.diverged(lr_select.at_best(every, res.history)))
        lines.append(f"{name}: {cells[name]} (" + "; ".join(p.text() for p in parts)
                     + (f"; {n_div} diverged runs left out" if n_div else "") + ")")
        notes += [f"{name}: {n}" for n in cell_notes]
        view, _, text = lr_view(every, res.history)
        if view != lr_select.NO_GRID:
            views[name] = view
            notes.append(f"{name}, lr view (c): {view} ({text})")
    lr_words = tally(views) if views else lr_select.NO_GRID
    reason = f"(a)+(b) {tally(cells)}. (c) lr view: {lr_words}. " + "; ".join(lines)
    tables = [("Measured at each variant's best lr: additive vs unscaled (and scaled) per d_k",
               pd.DataFrame(rows))]
    if lr_select.has_grid(s):
        tables += [("Optimal lr (chosen on validation AUC) per variant × d_k × task",
                    lr_views.optimal_lr_table(s, res.history)),
                   ("Drift of the per-seed optimal lr with d_k", lr_views.drift_table(s, res.history)),
                   ("LR sensitivity (Wortsman et al. 2023): mean of best − achieved val AUC over the "
                    "condition's common grid (the rates most cells ran; a widened cell counts only those, "
                    "a narrowed one gets none), diverged runs at chance",
                    lr_views.sensitivity_table(s, res.history))]
    else:
        notes.append(f"lr views: {lr_select.NO_GRID}")
    conds = "; ".join(describe_runs(s, c) for c in load.conditions(s))
    return Section("quality", title, claim, FIGURES, RULE, overall(list(cells.values())), reason, conds,
                   tables + [("Britz et al. 2017, Table 6 (newstest2013 BLEU, mean ± sd)", BRITZ)], notes,
                   headline=headline(rows, res.primary), rule_brief=RULE_BRIEF)
