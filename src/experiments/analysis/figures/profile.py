"""The d_k profile figure: one panel per (task, optimizer), the paired Δ AUC of each pair of
variants against d_k with its 95% interval, the cell's declared alike margin as a band (its task's
own where conf/analysis.yaml declares one), and the
crossover d* of additive − unscaled with its interval. The numbers are the quality section's
(verdicts.quality_profile, verdicts.quality_rules)."""

from __future__ import annotations

import math

import numpy as np

from experiments.analysis.figures import style
from experiments.analysis.figures.style import Skip
from experiments.analysis.stats.intervals import mean_ci
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules


def profile(res):
    if res.summary is None:
        raise Skip("no summary.parquet")
    fraction = qp.declared(res)[1]
    conds = load.conditions(res.summary)
    margins = {cond: qp.margin_of(res, cond[0]) for cond in conds}
    shared = len(set(margins.values())) == 1  # else each panel names its own
    cols = min(2, len(conds))
    rows = math.ceil(len(conds) / cols)
    fig, axes = style.new_figure(rows, cols, width=5.0, height=3.4)
    for i, cond in enumerate(conds):
        ax = axes[i // cols][i % cols]
        p = qp.cell_profile(load.at_condition(res.summary, cond), res.history, fraction)
        _panel(ax, p, margins[cond])
        ax.set_title(f"{cond[0]}, {cond[1]}" + ("" if shared else f" (margin ±{margins[cond]:g})"))
    for i in range(len(conds), rows * cols):
        axes[i // cols][i % cols].set_visible(False)
    style.legend(axes[0][cols - 1])
    band = f"margin ±{margins[conds[0]]:g}" if shared else "margin of each cell"
    style.suptitle(fig, f"Paired Δ accuracy AUC at each variant's best lr, 95% interval; grey band: alike "
                        f"{band}; dotted: d* of additive − unscaled with its interval")
    return [("profile", fig)]


def _panel(ax, p: qp.CellProfile, margin: float) -> None:
    d = np.asarray(p.d_ks, dtype=float)
    ax.axhspan(-margin, margin, color="0.85", lw=0)
    ax.axhline(0, color="0.4", lw=0.8)
    for pair, diff in p.diffs.items():
        cols = p.columns(pair)
        ci = np.array([mean_ci(diff[:, j]) for j in cols], dtype=float).reshape(-1, 3)
        ok = np.isfinite(ci[:, 0])
        if not ok.any():
            continue
        x = d[cols][ok]
        c = style.colour(pair[0])
        ax.plot(x, ci[ok, 0], color=c, marker="o", ms=3, lw=1.4, label=qp.pair_name(pair))
        band = ok & np.isfinite(ci[:, 1])
        ax.fill_between(d[cols][band], ci[band, 1], ci[band, 2], color=c, alpha=0.18, lw=0)
    for dk in p.unmeasured():
        ax.axvspan(dk / 1.3, dk * 1.3, color="0.6", alpha=0.25, lw=0)
        ax.text(dk, 0.97, "not measured", transform=ax.get_xaxis_transform(), ha="center", va="top",
                rotation=90, fontsize=7, color="0.3")
    if qp.CLAIM_PAIR in p.diffs:
        cross = quality_rules.crossover_of(*p.entered(qp.CLAIM_PAIR))
        if cross.d_star is not None:
            c = style.colour(qp.CLAIM_PAIR[0])
            ax.axvline(cross.d_star, color=c, ls=":", lw=1.2)
            lo = cross.lo if cross.lo is not None else d[0]
            hi = cross.hi if cross.hi is not None else d[-1]
            ax.axvspan(lo, hi, color=c, alpha=0.08, lw=0)
            ax.text(cross.d_star, 0.02, f" d* = {cross.text()}", transform=ax.get_xaxis_transform(),
                    fontsize=7, color=c, va="bottom")
    style.dk_axis(ax, p.d_ks)
    ax.set_ylabel("Δ accuracy AUC")
