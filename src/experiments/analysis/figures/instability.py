"""Figure 13: the largest attention logit through training, per variant and d_k.

Wortsman et al. (2023) trace small-model instabilities to attention logits that
grow through training; the history records, at each evaluation, the largest
|logit| over the validation set's query rows (`logit_absmax`). One figure per
(task, optimizer), a panel per variant, a line per d_k: the median over the
completed seeds at each (variant, d_k)'s chosen rate."""
from __future__ import annotations

import numpy as np

from experiments.analysis.figures import style
from experiments.analysis.figures.style import Skip
from experiments.analysis.figures.train import slug
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import diverged, load

COLUMN = "logit_absmax"


def _chosen_history(res):
    """History rows of the completed runs at each (variant, d_k)'s chosen rate."""
    if res.history is None or COLUMN not in res.history:
        raise Skip(f"no history.parquet with {COLUMN}")
    if res.summary is None:
        return res.history
    best = lr_select.at_best(res.summary, res.history)
    keep = set(diverged.completed(best)["run_id"])
    return res.history[res.history["run_id"].isin(keep)]


def _panel(ax, hist, d_ks, shade) -> None:
    for d in d_ks:
        runs = hist[hist["d_k"] == d]
        if runs.empty:
            continue
        median = runs.groupby("step")[COLUMN].median()
        ax.plot(median.index, median.to_numpy(), color=style.plt.cm.viridis(shade[d]), lw=1.3,
                label=f"d_k = {int(d)}")


def largest_logit(res):
    hist = _chosen_history(res)
    out = []
    for cond in load.conditions(hist.drop_duplicates("run_id")):
        sub = load.at_condition(hist, cond)
        variants = load.variant_order(sub["attention"].unique())
        d_ks = sorted(sub["d_k"].unique())
        shade = dict(zip(d_ks, np.linspace(0.0, 0.9, len(d_ks))))
        fig, axes = style.new_figure(1, len(variants), width=3.0, height=2.8, sharey=True)
        for ax, v in zip(axes[0], variants):
            _panel(ax, sub[sub["attention"] == v], d_ks, shade)
            style.log_scale(ax)
            ax.set_title(style.label(v))
            ax.set_xlabel("training step")
        axes[0][0].set_ylabel("largest |attention logit|\n(validation rows; median over seeds)")
        style.legend(axes[0][-1])
        style.suptitle(fig, f"Largest attention logit through training — {cond[0]}, {cond[1]} "
                       "(each variant and d_k at its chosen rate)")
        out.append((f"largest_logit_{slug(cond[0])}_{slug(cond[1])}", fig))
    return out
