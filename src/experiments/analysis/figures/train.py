"""Figures 5-8: quality per task and optimizer, steps-to-threshold survival, learning curves, cost."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import diverged
from experiments.analysis.figures import style
from experiments.analysis.figures.style import Skip
from experiments.analysis.tables.cost import cost_pairs
from experiments.analysis.stats.survival import kaplan_meier

QUALITY_PANELS = [
    ("test_accuracy", "test accuracy (fraction correct)"),
    ("steps_to_threshold", "restricted mean steps to threshold\n(never → budget; survival: steps_survival)"),
    ("accuracy_auc", "accuracy AUC (mean val. acc. over training)"),
]


def censored_steps(summary: pd.DataFrame) -> pd.Series:
    """min(steps_to_threshold, budget) per run, 'never reached' counted as the run's budget (its
    total steps): averaged over seeds this is the restricted mean of survival.kaplan_meier."""
    return summary["steps_to_threshold"].astype(float).fillna(summary["steps"].astype(float))


def quality(res):
    """Seed means with intervals over the completed runs at each cell's best lr (lr_select);
    diverged runs marked, per cell."""
    if res.summary is None:
        raise Skip("no summary.parquet")
    best = lr_select.at_best(res.summary, res.history)  # each (variant, d_k) at its best lr
    s = best.assign(steps_to_threshold=censored_steps(best),
                    reached=best["steps_to_threshold"].notna())
    conds = load.conditions(s)
    fig, axes = style.new_figure(len(conds), len(QUALITY_PANELS), width=4.6, height=3.1)
    order = {v: i for i, v in enumerate(load.variant_order(s["attention"].unique()))}
    s = s.sort_values("attention", key=lambda c: c.map(order), kind="stable")
    for r, cond in enumerate(conds):
        sub = load.at_condition(s, cond)
        done = diverged.completed(sub)
        for c, (column, ylabel) in enumerate(QUALITY_PANELS):
            ax = axes[r][c]
            if column == "steps_to_threshold" and not done["reached"].any():
                # every mean would sit at the budget: a flat line that reads as a measurement
                thresholds = "/".join(f"{t:g}" for t in sorted(sub["threshold"].unique()))
                style.nothing_to_show(ax, f"no run reached {thresholds}")
                ax.set_xlim(sub["d_k"].min() / 1.15, sub["d_k"].max() * 1.15)  # as the other panels
            else:
                style.mean_band(ax, load.per_seed(done, column).sort_values(
                    "attention", key=lambda a: a.map(order), kind="stable"), column)
            style.mark_diverged(ax, diverged.counts(sub))
            style.dk_axis(ax, sub["d_k"])
            ax.set_ylabel(ylabel)
            ax.set_title(f"{cond[0]}, {cond[1]}")
    style.legend(axes[0][-1], diverged=len(diverged.diverged(s)))  # every row drawn: all their variants
    return [("quality", fig)]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _column_width(d_ks) -> float:
    """Inches per d_k column: narrow, but a condition run at one or two d_k (a task of one's
    own) still gets a figure wide enough for its title and legend."""
    return max(2.2, 5.0 / len(d_ks))


def _curves_panel(ax, runs: pd.DataFrame, variant: str, broken: set) -> None:
    """One (variant, d_k)'s seeds thin, the mean of its completed runs thick, × where one diverged."""
    for rid, run in runs.groupby("run_id"):
        run = run.sort_values("step")
        ax.plot(run["step"], run["accuracy"], color=style.colour(variant), lw=0.6, alpha=0.45)
        if rid in broken:  # where it stopped: an x on its last finite accuracy
            last = run.dropna(subset=["accuracy"]).tail(1)
            ax.plot(last["step"], last["accuracy"], color=style.colour(variant), **style.DIVERGED_MARK)
    done = runs[~runs["run_id"].isin(broken)]
    if len(done):
        mean = done.groupby("step")["accuracy"].mean()
        ax.plot(mean.index, mean.to_numpy(), color=style.colour(variant), lw=1.6)
    n_div = runs.loc[runs["run_id"].isin(broken), "run_id"].nunique()
    if n_div:
        ax.text(0.97, 0.05, f"{n_div} diverged", transform=ax.transAxes, ha="right", fontsize=7,
                color=style.colour(variant))
    ax.set_yticks([0, 0.5, 1])
    ax.label_outer()  # tick labels on the outer panels only


def learning_curves(res):
    if res.history is None:
        raise Skip("no history.parquet")
    out = []
    broken = set(diverged.diverged(res.summary)["run_id"])
    best = None if res.summary is None else set(lr_select.at_best(res.summary, res.history)["run_id"])
    for cond in load.conditions(res.history.drop_duplicates("run_id")):
        hist = load.at_condition(res.history, cond)
        if best is not None:  # the runs at each cell's best lr (all of them where there is one lr)
            hist = hist[hist["run_id"].isin(best)]
        variants = load.variant_order(hist["attention"].unique())
        d_ks = sorted(hist["d_k"].unique())
        fig, axes = style.new_figure(len(variants), len(d_ks), width=_column_width(d_ks), height=1.6,
                                     sharex=True, sharey=True)
        for r, v in enumerate(variants):
            for c, d in enumerate(d_ks):
                ax = axes[r][c]
                _curves_panel(ax, hist[(hist["attention"] == v) & (hist["d_k"] == d)], v, broken)
                if r == 0:
                    ax.set_title(f"d_k = {int(d)}")
                if c == 0:
                    ax.set_ylabel(f"{style.label(v)}\nval. accuracy")
                if r == len(variants) - 1:
                    ax.set_xlabel("training step")
        style.suptitle(fig, f"Learning curves — {cond[0]}, {cond[1]} (thin: seeds, thick: mean of "
                       "the completed runs, ×: where a run diverged)")
        out.append((f"learning_curves_{slug(cond[0])}_{slug(cond[1])}", fig))
    return out


def steps_survival(res):
    """Kaplan-Meier curve per (variant, d_k) of 'not yet at threshold' over the completed seeds at
    each cell's best lr; a curve that stays at 1 is a cell where no seed reached the threshold."""
    if res.summary is None or "steps_to_threshold" not in res.summary:
        raise Skip("no summary.parquet with steps_to_threshold")
    out = []
    best = lr_select.at_best(res.summary, res.history)
    for cond in load.conditions(res.summary):
        s = diverged.completed(load.at_condition(best, cond))
        variants = load.variant_order(s["attention"].unique())
        d_ks = sorted(s["d_k"].unique())
        fig, axes = style.new_figure(1, len(d_ks), width=_column_width(d_ks), height=2.0, sharey=True)
        for ax, d in zip(axes[0], d_ks):
            for v in variants:
                cell = s[(s["attention"] == v) & (s["d_k"] == d)]
                km = kaplan_meier(cell["steps_to_threshold"].astype(float), cell["steps"].astype(float))
                if km is None:
                    continue
                xs = np.concatenate([[0.0], km.times, [km.tau]])
                ys = np.concatenate([[1.0], km.surv, [km.surv[-1]]])
                ax.step(xs, ys, where="post", color=style.colour(v), lw=1.2,
                        label=f"{style.label(v)}")
            ax.set_title(f"d_k = {int(d)}")
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel("training step")
            ax.label_outer()
        axes[0][0].set_ylabel("share of seeds not yet\nat threshold (Kaplan-Meier)")
        style.legend(axes[0][-1])
        style.suptitle(fig, f"Steps to threshold — {cond[0]}, {cond[1]} (at each variant's best "
                       "lr; censored at the budget)")
        out.append((f"steps_survival_{slug(cond[0])}_{slug(cond[1])}", fig))
    return out


def cost(res):
    if res.cost is None:
        raise Skip("no cost.parquet")
    panels = [("additive", "time_ratio", "time ratio additive / scaled"),
              ("additive", "memory_ratio", "peak-memory ratio additive / scaled"),
              ("reference", "time_ratio", "time ratio reference / scaled")]
    fig, axes = style.new_figure(1, len(panels), width=4.4, height=3.4)
    d_ks = sorted(res.cost["d_k"].unique())
    shades = dict(zip(d_ks, np.linspace(0.35, 0.95, len(d_ks))))
    for ax, (impl, column, ylabel) in zip(axes[0], panels):
        df = cost_pairs(res.cost, impl)
        for (mode, d), g in df.groupby(["mode", "d_k"]):
            g = g.sort_values("n")
            ax.plot(g["n"], g[column], marker="o", ms=3, lw=1.3,
                    ls="-" if mode == "forward_backward" else ":",
                    color=style.plt.cm.Greens(shades[d]) if impl == "additive" else style.plt.cm.Greys(shades[d]),
                    label=f"d_k={int(d)}, {mode.replace('_', '+')}")
        ax.axhline(1.0, color="k", lw=0.8, alpha=0.6)
        ax.set_xscale("log", base=2)
        ns = sorted(res.cost["n"].unique())
        ax.set_xticks(ns, [str(int(n)) for n in ns])
        ax.minorticks_off()
        style.log_scale(ax)
        ax.set_xlabel("n (queries = keys)")
        ax.set_ylabel(f"{ylabel} (×)")
        ax.set_title(ylabel + ("" if len(df) else " — not measured"))
        style.legend(ax, own=True)
    return [("cost", fig)]
