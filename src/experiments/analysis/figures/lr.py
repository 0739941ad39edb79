"""Figures 10-12: accuracy against learning rate (the muP-transfer view), the optimal lr against
d_k with its fitted slope, and LR sensitivity (Wortsman et al. 2023). Drawn only where a cell
was trained at more than one lr (lr_select.NO_GRID otherwise)."""

from __future__ import annotations

import numpy as np

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.figures import style
from experiments.analysis.figures.train import slug
from experiments.analysis.stats.intervals import fmt_ci, mean_ci
from experiments.analysis.figures.style import Skip

METRICS = [("val_auc", "val. accuracy AUC"), ("val_final", "final val. accuracy")]


def _grid_conditions(res):
    """[(condition, scored rows)] of the conditions with an lr grid; Skip when there are none."""
    if res.summary is None:
        raise Skip("no summary.parquet")
    conds = [c for c in load.conditions(res.summary) if lr_select.has_grid(load.at_condition(res.summary, c))]
    if not conds:
        raise Skip(lr_select.NO_GRID)
    return [(c, lr_select.scored(load.at_condition(res.summary, c), res.history)) for c in conds]


def _dk_colours(d_ks) -> dict:
    d_ks = sorted(d_ks)
    return {d: style.plt.cm.viridis(x) for d, x in zip(d_ks, np.linspace(0.05, 0.9, len(d_ks)))}


def lr_accuracy(res):
    """Per condition: one panel per variant (columns) and metric (rows), one curve per d_k of the
    seed mean against lr (diverged runs at chance); a star on each curve's best lr (by val AUC)."""
    out = []
    for cond, sc in _grid_conditions(res):
        means, best = lr_select.lr_means(sc), lr_select.best_lrs(sc)
        variants = load.variant_order(sc["attention"].unique())
        colours = _dk_colours(sc["d_k"].unique())
        fig, axes = style.new_figure(len(METRICS), len(variants), width=2.6, height=2.2, sharey="row")
        for c, v in enumerate(variants):
            for r, (column, ylabel) in enumerate(METRICS):
                ax = axes[r][c]
                for d, g in means[means["attention"] == v].groupby("d_k"):
                    g = g.sort_values("lr")
                    ax.plot(g["lr"], g[column], marker="o", ms=2.5, lw=1.2, color=colours[d],
                            label=f"d_k={int(d)}")
                    top = best[(best["attention"] == v) & (best["d_k"] == d)]["best_lr"]
                    at = g[g["lr"].isin(top)]
                    ax.plot(at["lr"], at[column], marker="*", ms=8, ls="none", color=colours[d])
                style.log_scale(ax, "x")
                ax.set_ylabel(ylabel if c == 0 else "")
                ax.set_title(style.label(v) if r == 0 else "")
                if r == len(METRICS) - 1:
                    ax.set_xlabel("learning rate")
        style.legend(axes[0][-1])
        style.suptitle(fig, f"Accuracy vs lr — {cond[0]}, {cond[1]} (seed means, diverged at chance; ★ best lr)")
        out.append((f"lr_accuracy_{slug(cond[0])}_{slug(cond[1])}", fig))
    return out


def _panels(conds):
    """One panel per condition, the figure tall enough for the legend below each (a line per variant)."""
    lines = max(sc["attention"].nunique() for _, sc in conds)
    return style.new_figure(1, len(conds), width=4.4, height=3.0 + 0.17 * lines)


def _dk_panel(ax, cond, sc, ylabel: str) -> None:
    """A d_k axis, the condition as title, the variants in a legend below the panel."""
    style.dk_axis(ax, sc["d_k"])
    ax.set_ylabel(ylabel)
    ax.set_title(f"{cond[0]}, {cond[1]}")
    style.legend(ax, own=True)


def optimal_lr(res):
    """One panel per condition: the per-seed best lr (geometric mean over seeds) against d_k per
    variant, the fitted slope (log2 lr per doubling of d_k, 95% t-interval over seeds) in the legend,
    and beside it, for a variant judged from its base width (lr_views.judged_from), the slope there.
    The muP signature: the optimum drifts under the standard parametrisation, stays put under muP."""
    conds = _grid_conditions(res)
    fig, axes = _panels(conds)
    for ax, (cond, sc) in zip(axes[0], conds):
        slopes, start = lr_views.drift_slopes(sc), lr_views.judged_from(sc)
        judged = lr_views.drift_slopes(sc, start)
        for v in load.variant_order(sc["attention"].unique()):
            narrowed = f"; d_k ≥ {start[v]}: {fmt_ci(mean_ci(judged[v]), 2)}" if v in start else ""
            d_ks, _, lrs = lr_views.best_lr_matrix(sc, v)
            logs = np.log2(lrs)  # NaN where a seed has no best lr (a tie, or it learned nothing)
            seen = np.isfinite(logs).sum(axis=0)
            centre = np.where(seen > 0, np.nansum(logs, axis=0) / np.maximum(seen, 1), np.nan)
            ok = np.isfinite(centre)
            ax.plot(d_ks[ok], 2 ** centre[ok], marker="o", ms=3, lw=1.0, color=style.colour(v),
                    label=f"{style.label(v)}: slope {fmt_ci(mean_ci(slopes[v]), 2)}{narrowed}")
            slope = mean_ci(slopes[v])[0] if slopes[v].size else np.nan
            if ok.sum() >= 2 and np.isfinite(slope):
                x = np.log2(d_ks[ok])
                fit = centre[ok].mean() + slope * (x - x.mean())
                ax.plot(d_ks[ok], 2 ** fit, ls="--", lw=0.9, color=style.colour(v))
        grid = sorted(sc["lr"].dropna().unique())
        style.log_scale(ax)
        ax.set_yticks(grid, [style.short(x) for x in grid])
        ax.minorticks_off()
        _dk_panel(ax, cond, sc, "best learning rate (val. AUC, per seed)")
    style.suptitle(fig, "Optimal lr vs d_k (dashed: fitted slope)")
    return [("optimal_lr", fig)]


def lr_sensitivity(res):
    """One panel per condition: LR sensitivity per variant against d_k, seed mean with its interval."""
    conds = _grid_conditions(res)
    fig, axes = _panels(conds)
    for ax, (cond, sc) in zip(axes[0], conds):
        sens = lr_select.seed_sensitivity(sc).dropna(subset=["sensitivity"])  # narrowed grids: none
        order = {v: i for i, v in enumerate(load.variant_order(sens["attention"].unique()))}
        style.mean_band(ax, sens.sort_values("attention", key=lambda a: a.map(order), kind="stable"),
                        "sensitivity")
        _dk_panel(ax, cond, sc, "mean over the common grid of best − achieved\nval. AUC (diverged at chance)")
    style.suptitle(fig, "LR sensitivity (Wortsman et al. 2023)")
    return [("lr_sensitivity", fig)]
