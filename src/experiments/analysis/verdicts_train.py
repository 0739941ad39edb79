"""Verdicts for quality (sub-claim 4) and cost (sub-claim 5), and the list of all sections."""

from __future__ import annotations

import math

import pandas as pd

from . import load, status, verdicts
from .figures_train import censored_steps, cost_pairs
from .stats import above, bootstrap_diff_ci, fmt_ci, within
from .verdicts import BOOT, FAILS, HOLDS, UNSURE, Section, combine, describe_runs, no_data

MARGIN_AUC = 0.02  # accuracy-AUC difference (fraction) counted as "alike"
COST_FACTOR = 1.5  # "much faster / more space-efficient" means at least this ratio

# Britz et al. 2017, Table 6: newstest2013 BLEU, mean ± sd (mul: unscaled multiplicative).
BRITZ = pd.DataFrame({
    "dim": [128, 256, 512, 1024],
    "mul (unscaled)": ["22.03 ± 0.08", "22.33 ± 0.28", "21.78 ± 0.05", "18.22 ± 0.03"],
    "add": ["22.23 ± 0.11", "22.33 ± 0.04", "22.47 ± 0.27", "22.10 ± 0.18"],
    "Δ add − mul (BLEU)": ["+0.20", "+0.00", "+0.69", "+3.88"],
})


def _runs(s: pd.DataFrame, variant: str, d_k, column: str) -> list[float]:
    return s[(s["attention"] == variant) & (s["d_k"] == d_k)][column].astype(float).tolist()


def _mean(xs: list[float]) -> str:
    return f"{sum(xs) / len(xs):.3f}" if xs else "n/a"


def _quality_cell(every: pd.DataFrame):
    """Rows per d_k and the two three-way tests of one (task, optimizer), on the
    completed runs; the diverged ones are counted in their own column."""
    s, broken = status.completed(every), status.counts(every)
    d_ks = sorted(set(every.loc[every["attention"] == "additive", "d_k"])
                  & set(every.loc[every["attention"] == "unscaled", "d_k"]))
    rows, diffs = [], {}
    for d in d_ks:
        add, uns = _runs(s, "additive", d, "accuracy_auc"), _runs(s, "unscaled", d, "accuracy_auc")
        diffs[d] = bootstrap_diff_ci(add, uns)
        sa, su = _runs(s, "additive", d, "steps_cens"), _runs(s, "unscaled", d, "steps_cens")
        reached = lambda v: f"{int(s[(s['attention'] == v) & (s['d_k'] == d)]['steps_to_threshold'].notna().sum())}/{len(sa if v == 'additive' else su)}"  # noqa: E731
        rows.append({"d_k": int(d), "AUC additive": _mean(add), "AUC unscaled": _mean(uns),
                     "AUC scaled": _mean(_runs(s, "scaled", d, "accuracy_auc")),
                     "Δ AUC add − unscaled": fmt_ci(diffs[d], 3),
                     "test acc add / unscaled": f"{_mean(_runs(s, 'additive', d, 'test_accuracy'))} / "
                                                f"{_mean(_runs(s, 'unscaled', d, 'test_accuracy'))}",
                     "steps to threshold add / unscaled (reached)":
                         f"{_mean(sa)} ({reached('additive')}) / {_mean(su)} ({reached('unscaled')})",
                     "Δ steps add − unscaled": fmt_ci(bootstrap_diff_ci(sa, su), 0),
                     "diverged add / unscaled / scaled": " / ".join(
                         str(broken.get((v, int(d)), 0)) for v in ("additive", "unscaled", "scaled"))})
    if not d_ks:
        return rows, "unclear", "unclear", None, None
    big, small = diffs[d_ks[-1]], diffs[d_ks[0]]
    beats = above(big, 0.0)
    if beats != "yes" and math.isfinite(big[2]) and big[2] < MARGIN_AUC:
        beats = "no"  # confident the advantage is below the margin
    alike = within(small, -MARGIN_AUC, MARGIN_AUC)
    return rows, beats, alike, d_ks[0], d_ks[-1]


def quality(res: load.Results) -> Section:
    title, claim = "4. Quality", ("For small d_k additive and dot-product perform alike; for large d_k "
                                  "additive beats unscaled dot-product.")
    rule = (f"Per task and optimizer, on accuracy AUC (mean validation accuracy over training: sharper than "
            f"final accuracy) of the runs that completed (diverged runs are counted, not averaged), "
            f"Δ = additive − unscaled, {BOOT}. A condition holds if at the largest d_k the "
            f"CI of Δ lies above 0 (additive beats unscaled) and at the smallest d_k it lies within "
            f"±{MARGIN_AUC} (alike); it does not hold if at the largest d_k the CI lies below +{MARGIN_AUC} "
            f"(no meaningful win) or at the smallest d_k wholly outside ±{MARGIN_AUC}. Overall: holds if "
            "every condition holds, does not hold if every condition does not, inconclusive otherwise.")
    if res.summary is None:
        return no_data("quality", title, claim, ["quality"], rule, "no summary.parquet")
    s = res.summary.assign(steps_cens=censored_steps(res.summary))
    rows, cells, notes = [], [], []
    for cond in load.conditions(s):
        cell_rows, beats, alike, d_lo, d_hi = _quality_cell(load.at_condition(s, cond))
        cell = combine([beats, alike])
        cells.append(cell)
        rows += [{"task": cond[0], "optimizer": cond[1], **r} for r in cell_rows]
        n_div = len(status.diverged(load.at_condition(s, cond)))
        notes.append(f"{cond[0]}/{cond[1]}: {cell} (additive beats unscaled at d_k={d_hi}: {beats}; "
                     f"alike at d_k={d_lo}: {alike}"
                     + (f"; {n_div} diverged runs left out" if n_div else "") + ")")
    verdict = HOLDS if cells and all(c == HOLDS for c in cells) else (
        FAILS if cells and all(c == FAILS for c in cells) else UNSURE)
    conds = "; ".join(describe_runs(res.summary, c) for c in load.conditions(s))
    return Section("quality", title, claim, ["quality", "learning_curves"], rule, verdict, "; ".join(notes),
                   conds, [("Measured: additive vs unscaled (and scaled) per d_k", pd.DataFrame(rows)),
                           ("Britz et al. 2017, Table 6 (newstest2013 BLEU, mean ± sd)", BRITZ)])


def cost(res: load.Results) -> Section:
    title, claim = "5. Cost", ("Dot-product is much faster and more space-efficient in practice than "
                               "additive attention, which materialises an [n_q, n_k, d_hidden] tensor.")
    rule = (f"At the largest n where both are measured, per d_k (forward+backward when measured): a d_k "
            f"agrees if additive/scaled time ratio ≥ {COST_FACTOR} with additive's fastest repeat slower "
            f"than scaled's slowest, and memory ratio (XLA's compiled temp bytes) ≥ {COST_FACTOR}; it "
            "disagrees if either ratio "
            "≤ 1. Holds if every d_k agrees, does not hold if every d_k disagrees, inconclusive otherwise. "
            "(Timings are repeats of one benchmark, not seeds.)")
    if res.cost is None:
        return no_data("cost", title, claim, ["cost"], rule, "no cost.parquet")
    c = res.cost
    mode = "forward_backward" if (c["mode"] == "forward_backward").any() else c["mode"].iloc[0]
    add, sca = cost_pairs(c, "additive"), c[c["impl"] == "scaled"]
    ref = cost_pairs(c, "reference")
    key = ["mode", "n", "d_k"]
    both = add.merge(sca[key + ["time_max_s"]], on=key, suffixes=("", "_scaled"))
    both = both.merge(ref[key + ["time_ratio"]], on=key, how="left", suffixes=("", "_reference"))
    both = both[both["mode"] == mode].sort_values(["d_k", "n"])
    if both.empty:
        return no_data("cost", title, claim, ["cost"], rule, "no additive and scaled pair measured")
    rows, parts, notes = [], [], []
    for d, g in both.groupby("d_k"):
        top = g[g["n"] == g["n"].max()].iloc[0]
        agree = (top["time_ratio"] >= COST_FACTOR and top["time_min_s"] > top["time_max_s_scaled"]
                 and top["memory_ratio"] >= COST_FACTOR)
        disagree = top["time_ratio"] <= 1 or top["memory_ratio"] <= 1
        parts.append("yes" if agree else "no" if disagree else "unclear")
        notes.append(f"d_k={int(d)}, n={int(top['n'])}: time ×{top['time_ratio']:.2f}, "
                     f"memory ×{top['memory_ratio']:.2f}")
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
    return [verdicts.variance(res), verdicts.saturation(res), verdicts.gradients(res),
            quality(res), cost(res), verdicts.extra(res)]
