"""The mechanism against the outcome: per run, the lowest normalised attention entropy and the
largest attention logit through training (history: `entropy_norm`, `logit_absmax`, every
evaluation, step 0 included) against its accuracy AUC (summary), per variant (colour) and d_k
(marker size). One figure: a row per (task, optimizer), the two measures in two columns; each
run at its (variant, d_k)'s chosen rate, on the judged seeds, diverged runs left out.

If saturation drives the fall, the runs whose rows collapse (entropy near 0) or whose logits
grow large sit low in AUC, whatever their variant; a variant that falls without either points
elsewhere."""
from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.figures import style
from experiments.analysis.figures.style import Skip
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import diverged, load

MEASURES = (("entropy_norm", "min", "lowest normalised attention entropy\nthrough training"),
            ("logit_absmax", "max", "largest |attention logit|\nthrough training"))


def per_run(history: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per completed run at its chosen rate: task, optimizer, attention, d_k, seed, the
    lowest entropy_norm and the largest logit_absmax over its history, and its accuracy AUC."""
    runs = diverged.completed(lr_select.at_best(summary, history))
    hist = history[history["run_id"].isin(set(runs["run_id"]))]
    extremes = hist.groupby("run_id").agg(**{column: (column, how) for column, how, _ in MEASURES})
    keys = ["run_id", "task", "optimizer", "attention", "d_k", "seed", "accuracy_auc"]
    return runs[keys].merge(extremes, left_on="run_id", right_index=True)


def _size(d_k) -> np.ndarray:
    return 6.0 + 5.0 * np.log2(np.asarray(d_k, dtype=float))


def _panel(ax, rows: pd.DataFrame, column: str) -> None:
    for v in load.variant_order(rows["attention"].unique()):
        sub = rows[rows["attention"] == v]
        ax.scatter(sub[column], sub["accuracy_auc"], s=_size(sub["d_k"]), color=style.colour(v),
                   alpha=0.6, linewidths=0, label=style.label(v),
                   rasterized=True)  # thousands of points: an image inside the SVG, not a path each


def mechanism(res):
    need = [c for c, _, _ in MEASURES]
    if res.history is None or any(c not in res.history for c in need):
        raise Skip(f"no history.parquet with {' and '.join(need)}")
    if res.summary is None:
        raise Skip("no summary.parquet (the accuracy AUC)")
    rows = per_run(res.history, res.summary)
    if rows.empty:
        raise Skip("no completed run at a chosen rate")
    conds = load.conditions(rows)
    fig, axes = style.new_figure(len(conds), 2, width=3.6, height=2.7, sharey="row")
    for (ax_entropy, ax_logit), cond in zip(axes, conds):
        sub = load.at_condition(rows, cond)
        for ax, (column, _, words) in zip((ax_entropy, ax_logit), MEASURES):
            _panel(ax, sub, column)
            ax.set_xlabel(words)
        style.log_scale(ax_logit, "x")
        ax_entropy.set_ylabel(f"{cond[0]}, {cond[1]}\naccuracy AUC")
    d_ks = sorted(int(d) for d in rows["d_k"].unique())
    for d in (d_ks[0], d_ks[len(d_ks) // 2], d_ks[-1]):
        axes[-1][1].scatter([], [], s=_size(d), color="0.5", label=f"d_k = {d}")  # after every variant
    style.legend(axes[0][1])
    style.suptitle(fig, "The mechanism against the outcome: each run's lowest entropy and largest logit "
                   "through training against its accuracy AUC (chosen rate, judged seeds)")
    return [("mechanism", fig)]
