"""Verdicts for quality (sub-claim 4) and cost (sub-claim 5), and the list of all sections."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from . import load, status, verdicts_attn, verdicts_mup
from .figures_train import cost_pairs
from .rules import FAILS, HOLDS, UNSURE, Part, judge, verdict_of
from .stats import fmt_ci, mean_ci
from .survival import kaplan_meier, restricted_diff
from .verdicts import INTERVALS, Section, describe_runs, no_data

MARGIN_AUC = 0.02  # accuracy-AUC difference (fraction) counted as "alike"
COST_FACTOR = 1.5  # "much faster / more space-efficient" means at least this ratio

# Britz et al. 2017, Table 6: newstest2013 BLEU, mean ± sd (mul: unscaled multiplicative).
BRITZ = pd.DataFrame({
    "dim": [128, 256, 512, 1024],
    "mul (unscaled)": ["22.03 ± 0.08", "22.33 ± 0.28", "21.78 ± 0.05", "18.22 ± 0.03"],
    "add": ["22.23 ± 0.11", "22.33 ± 0.04", "22.47 ± 0.27", "22.10 ± 0.18"],
    "Δ add − mul (BLEU)": ["+0.20", "+0.00", "+0.69", "+3.88"],
})


def quality_rule(diff_small, diff_large, d_small, d_large) -> list[Part]:
    """Per-seed Δ AUC = additive − unscaled: alike at the smallest d_k, additive ahead at the largest.
    'Ahead' fails outright when the interval lies wholly below +MARGIN_AUC (no meaningful win)."""
    beats = judge(f"Δ AUC at d_k={d_large}", f"above 0 (no if wholly below +{MARGIN_AUC})", diff_large,
                  "above", 0.0, digits=3)
    if beats.answer == "unclear" and beats.ci[2] < MARGIN_AUC:
        beats = replace(beats, answer="no")
    alike = judge(f"Δ AUC at d_k={d_small}", f"within ±{MARGIN_AUC}", diff_small, "within",
                  -MARGIN_AUC, MARGIN_AUC, digits=3)
    return [beats, alike]


def overall(cells: list[str]) -> str:
    """Holds if every condition holds, does not hold if every one does not, else inconclusive."""
    if cells and all(c == HOLDS for c in cells):
        return HOLDS
    if cells and all(c == FAILS for c in cells):
        return FAILS
    if cells and all(c.startswith(f"{UNSURE} (too few") for c in cells):
        return cells[0]
    return UNSURE


PAIR = ("additive", "unscaled")


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


def _quality_cell(every: pd.DataFrame):
    """Rows per d_k and the clauses of one (task, optimizer), on the completed runs; the diverged
    ones are counted in their own column (their values are NaN here, so their pairs drop out)."""
    s, broken = status.completed(every), status.counts(every)
    d_ks = sorted(set(every.loc[every["attention"] == "additive", "d_k"])
                  & set(every.loc[every["attention"] == "unscaled", "d_k"]))
    seeds = sorted(every["seed"].unique())
    rows, diffs = [], {}
    for d in d_ks:
        add, uns = (load.cell_values(s, "accuracy_auc", v, d, seeds) for v in ("additive", "unscaled"))
        diffs[d] = add - uns
        rows.append({"d_k": int(d), "AUC additive": _mean(add), "AUC unscaled": _mean(uns),
                     "AUC scaled": _mean(load.cell_values(s, "accuracy_auc", "scaled", d, seeds)),
                     "Δ AUC add − unscaled": fmt_ci(mean_ci(diffs[d]), 3),
                     "test acc add / unscaled": " / ".join(
                         _mean(load.cell_values(s, "test_accuracy", v, d, seeds)) for v in ("additive", "unscaled")),
                     **_steps_columns(s, d, seeds),
                     "diverged add / unscaled / scaled": " / ".join(
                         str(broken.get((v, int(d)), 0)) for v in ("additive", "unscaled", "scaled"))})
    if not d_ks:
        return rows, [], None, None
    return rows, quality_rule(diffs[d_ks[0]], diffs[d_ks[-1]], d_ks[0], d_ks[-1]), d_ks[0], d_ks[-1]


def quality(res: load.Results) -> Section:
    title, claim = "4. Quality", ("For small d_k additive and dot-product perform alike; for large d_k "
                                  "additive beats unscaled dot-product.")
    rule = (f"Per task and optimizer, on accuracy AUC (mean validation accuracy over training: sharper than "
            f"final accuracy) of the runs that completed (diverged runs are counted, not averaged), "
            f"Δ = additive − unscaled seed by seed; {INTERVALS}. A condition holds if at the largest d_k "
            f"the interval of Δ lies above 0 (additive beats unscaled) and at the smallest d_k within "
            f"±{MARGIN_AUC} (alike); it does not hold if at the largest d_k the interval lies below "
            f"+{MARGIN_AUC} (no meaningful win) or at the smallest d_k wholly outside ±{MARGIN_AUC}. "
            "Overall: holds if every condition holds, does not hold if every condition does not, "
            "inconclusive otherwise. Steps to threshold are censored at the budget: Kaplan-Meier over "
            "seeds, restricted mean (area under the survival curve up to the budget) with the seeds that "
            "reached the threshold, and no Δ where neither variant reached it.")
    if res.summary is None:
        return no_data("quality", title, claim, ["quality"], rule, "no summary.parquet")
    s = res.summary
    rows, cells, notes = [], [], []
    for cond in load.conditions(s):
        cell_rows, parts, d_lo, d_hi = _quality_cell(load.at_condition(s, cond))
        cell = verdict_of(parts)
        cells.append(cell)
        rows += [{"task": cond[0], "optimizer": cond[1], **r} for r in cell_rows]
        n_div = len(status.diverged(load.at_condition(s, cond)))
        notes.append(f"{cond[0]}/{cond[1]}: {cell} (" + "; ".join(p.text() for p in parts)
                     + (f"; {n_div} diverged runs left out" if n_div else "") + ")")
    conds = "; ".join(describe_runs(res.summary, c) for c in load.conditions(s))
    return Section("quality", title, claim, ["quality", "steps_survival", "learning_curves"], rule,
                   overall(cells), "; ".join(notes), conds,
                   [("Measured: additive vs unscaled (and scaled) per d_k", pd.DataFrame(rows)),
                    ("Britz et al. 2017, Table 6 (newstest2013 BLEU, mean ± sd)", BRITZ)])


def cost_rule(time_ratio: float, add_fastest: float, scaled_slowest: float, memory_ratio: float) -> str:
    """One d_k at the largest n: 'yes' if additive is slower by COST_FACTOR beyond the repeats'
    spread and needs COST_FACTOR times the memory, 'no' if either ratio is at most 1."""
    if time_ratio <= 1 or memory_ratio <= 1:
        return "no"
    if time_ratio >= COST_FACTOR and add_fastest > scaled_slowest and memory_ratio >= COST_FACTOR:
        return "yes"
    return "unclear"


def cost(res: load.Results) -> Section:
    title, claim = "5. Cost", ("Dot-product is much faster and more space-efficient in practice than "
                               "additive attention, which materialises an [n_q, n_k, d_hidden] tensor.")
    rule = (f"At the largest n where both are measured, per d_k (forward+backward when measured): a d_k "
            f"agrees if additive/scaled time ratio ≥ {COST_FACTOR} with additive's fastest repeat slower "
            f"than scaled's slowest, and memory ratio (XLA's compiled temp bytes) ≥ {COST_FACTOR}; it "
            "disagrees if either ratio ≤ 1. Holds if every d_k agrees, does not hold if every d_k "
            "disagrees, inconclusive otherwise. Power: timings are repeats of one benchmark, not seeds; "
            "the spread of the repeats (fastest against slowest) stands in for it.")
    if res.cost is None:
        return no_data("cost", title, claim, ["cost"], rule, "no cost.parquet")
    c = res.cost
    mode = "forward_backward" if (c["mode"] == "forward_backward").any() else c["mode"].iloc[0]
    add, sca = cost_pairs(c, "additive"), c[c["impl"] == "scaled"]
    ref = cost_pairs(c, "reference")
    key = ["mode", "n", "d_k"]
    both = add.merge(sca[key + ["time_min_s", "time_max_s"]], on=key, suffixes=("", "_scaled"))
    both = both.merge(ref[key + ["time_ratio"]], on=key, how="left", suffixes=("", "_reference"))
    both = both[both["mode"] == mode].sort_values(["d_k", "n"])
    if both.empty:
        return no_data("cost", title, claim, ["cost"], rule, "no additive and scaled pair measured")
    rows, parts, notes = [], [], []
    for d, g in both.groupby("d_k"):
        top = g[g["n"] == g["n"].max()].iloc[0]
        parts.append(cost_rule(top["time_ratio"], top["time_min_s"], top["time_max_s_scaled"],
                               top["memory_ratio"]))
        notes.append(f"d_k={int(d)}, n={int(top['n'])}: time ×{top['time_ratio']:.2f} (additive's fastest "
                     f"repeat / scaled's slowest ×{top['time_min_s'] / top['time_max_s_scaled']:.2f}), "
                     f"memory ×{top['memory_ratio']:.2f}: {parts[-1]}")
        rows += [{"mode": mode, "d_k": int(r["d_k"]), "n": int(r["n"]),
                  "time additive/scaled": f"{r['time_ratio']:.2f}",
                  "temp memory additive/scaled": f"{r['memory_ratio']:.2f}",
                  "predicted memory ratio": f"{r.get('predicted_memory_ratio', math.nan):.2f}",
                  "time reference/scaled": f"{r['time_ratio_reference']:.2f}"} for _, r in g.iterrows()]
    verdict = HOLDS if all(p == "yes" for p in parts) else FAILS if all(p == "no" for p in parts) else UNSURE
    skipped = c[c["impl"] == "additive"]
    skipped = skipped[skipped["skipped"].fillna(False).astype(bool)] if "skipped" in skipped else skipped.iloc[:0]
    if len(skipped):
        notes.append(f"additive skipped in {len(skipped)} settings (e.g. {skipped['note'].astype(str).iloc[0]})")
    conds = (f"cost benchmark: impl {', '.join(sorted(c['impl'].unique()))}; modes {', '.join(sorted(c['mode'].unique()))}; "
             f"n {', '.join(str(int(n)) for n in sorted(c['n'].unique()))}; d_k "
             f"{', '.join(str(int(d)) for d in sorted(c['d_k'].unique()))}; batch "
             f"{', '.join(str(int(b)) for b in sorted(c['batch'].unique())) if 'batch' in c else '?'}")
    return Section("cost", title, claim, ["cost"], rule, verdict, "; ".join(notes), conds,
                   [(f"Ratios over scaled ({mode})", pd.DataFrame(rows))])


def all_sections(res: load.Results) -> list[Section]:
    return [verdicts_attn.variance(res), verdicts_attn.saturation(res), verdicts_attn.jacobian(res),
            verdicts_attn.gradients(res), quality(res), cost(res), verdicts_mup.extra(res)]
