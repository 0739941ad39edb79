"""The verdict of sub-claim 5 (cost): additive slower and larger than scaled (docs/CLAIM.md)."""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables.cost import cost_pairs
from experiments.analysis.verdicts.rules import FAILS, HOLDS, UNSURE, Answer
from experiments.analysis.verdicts.section import Section, no_data

COST_FACTOR = 1.5  # "much faster / more space-efficient" means at least this ratio


def cost_rule(time_ratio: float, add_fastest: float, scaled_slowest: float, memory_ratio: float) -> Answer:
    """One d_k at the largest n: YES if additive is slower by COST_FACTOR beyond the repeats'
    spread and needs COST_FACTOR times the memory, NO if either ratio is at most 1."""
    if time_ratio <= 1 or memory_ratio <= 1:
        return Answer.NO
    if time_ratio >= COST_FACTOR and add_fastest > scaled_slowest and memory_ratio >= COST_FACTOR:
        return Answer.YES
    return Answer.UNCLEAR


def cost(res: load.Results) -> Section:
    title, claim = "5. Cost", ("Dot-product is much faster and more space-efficient in practice than "
                               "additive attention, which materialises an [n_q, n_k, d_hidden] tensor.")
    rule = (f"At the largest n where both are measured, per d_k (forward+backward when measured): a d_k "
            f"agrees if additive/scaled time ratio ≥ {COST_FACTOR} with additive's fastest repeat slower "
            f"than scaled's slowest, and memory ratio (XLA's compiled temp bytes) ≥ {COST_FACTOR}; it "
            "disagrees if either ratio ≤ 1. Holds if every d_k agrees, does not hold if every d_k "
            "disagrees, inconclusive otherwise. Power: timings are repeats of one benchmark, not seeds; "
            "the spread of the repeats (fastest against slowest) stands in for it.")
    brief = (f"At the largest n, additive takes at least {COST_FACTOR}× scaled's time and memory at every "
             "d_k measured.")
    if res.cost is None:
        return no_data("cost", title, claim, ["cost"], rule, "no cost.parquet", brief)
    c = res.cost
    mode = "forward_backward" if (c["mode"] == "forward_backward").any() else c["mode"].iloc[0]
    add, sca = cost_pairs(c, "additive"), c[c["impl"] == "scaled"]
    ref = cost_pairs(c, "reference")
    key = ["mode", "n", "d_k"]
    both = add.merge(sca[key + ["time_min_s", "time_max_s"]], on=key, suffixes=("", "_scaled"))
    both = both.merge(ref[key + ["time_ratio"]], on=key, how="left", suffixes=("", "_reference"))
    both = both[both["mode"] == mode].sort_values(["d_k", "n"])
    if both.empty:
        return no_data("cost", title, claim, ["cost"], rule, "no additive and scaled pair measured", brief)
    rows, parts, notes, key_numbers = [], [], [], []
    for d, g in both.groupby("d_k"):
        top = g[g["n"] == g["n"].max()].iloc[0]
        parts.append(cost_rule(top["time_ratio"], top["time_min_s"], top["time_max_s_scaled"],
                               top["memory_ratio"]))
        notes.append(f"d_k={int(d)}, n={int(top['n'])}: time ×{top['time_ratio']:.2f} (additive's fastest "
                     f"repeat / scaled's slowest ×{top['time_min_s'] / top['time_max_s_scaled']:.2f}), "
                     f"memory ×{top['memory_ratio']:.2f}: {parts[-1].value}")
        key_numbers.append(f"d_k={int(d)}: ×{top['time_ratio']:.1f} / ×{top['memory_ratio']:.1f}")
        rows += [{"mode": mode, "d_k": int(r["d_k"]), "n": int(r["n"]),
                  "time additive/scaled": f"{r['time_ratio']:.2f}",
                  "temp memory additive/scaled": f"{r['memory_ratio']:.2f}",
                  "predicted memory ratio": f"{r.get('predicted_memory_ratio', math.nan):.2f}",
                  "time reference/scaled": f"{r['time_ratio_reference']:.2f}"} for _, r in g.iterrows()]
    verdict = (HOLDS if all(p is Answer.YES for p in parts) else FAILS if all(p is Answer.NO for p in parts)
               else UNSURE)
    skipped = c[c["impl"] == "additive"]
    skipped = skipped[skipped["skipped"].fillna(False).astype(bool)] if "skipped" in skipped else skipped.iloc[:0]
    if len(skipped):
        notes.append(f"additive skipped in {len(skipped)} settings (e.g. {skipped['note'].astype(str).iloc[0]})")
    conds = (f"cost benchmark: impl {', '.join(sorted(c['impl'].unique()))}; modes {', '.join(sorted(c['mode'].unique()))}; "
             f"n {', '.join(str(int(n)) for n in sorted(c['n'].unique()))}; d_k "
             f"{', '.join(str(int(d)) for d in sorted(c['d_k'].unique()))}; batch "
             f"{', '.join(str(int(b)) for b in sorted(c['batch'].unique())) if 'batch' in c else '?'}")
    return Section("cost", title, claim, ["cost"], rule, verdict, "; ".join(notes), conds,
                   [(f"Ratios over scaled ({mode})", pd.DataFrame(rows))],
                   headline="additive/scaled time / memory at the largest n, " + ", ".join(key_numbers),
                   rule_brief=brief)
