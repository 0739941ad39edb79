"""The quick look: what a folder with too few seeds for a verdict can still show.

Below MIN_SEEDS seeds per cell there is no interval, so every training verdict
reads "too few seeds". The numbers are still there: the seed-mean test
accuracy and accuracy AUC per variant × d_k (each cell at its best lr where
it has a grid, diverged runs left out), and Δ scaled − unscaled per d_k.
Means only: no interval, no verdict.
"""

from __future__ import annotations

import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.stats.intervals import MIN_SEEDS
from experiments.analysis.tables import diverged
from experiments.analysis.tables import load

METRICS = (("test_accuracy", "mean test accuracy"), ("accuracy_auc", "mean accuracy AUC"))
DELTA = "Δ scaled − unscaled"
CELL = ["task", "optimizer", "attention", "d_k"]


def seeds_per_cell(summary: pd.DataFrame | None) -> int:
    """The most seeds any (task, optimizer, variant, d_k) cell has among its completed runs."""
    done = diverged.completed(summary)
    if done is None or done.empty or not set(CELL + ["seed"]) <= set(done.columns):
        return 0
    return int(done.groupby(CELL)["seed"].nunique().max())


def wanted(res: load.Results) -> bool:
    """True for a folder whose training runs have too few seeds for any interval."""
    return 0 < seeds_per_cell(res.summary) < MIN_SEEDS


def heading(res: load.Results) -> str:
    n = seeds_per_cell(res.summary)
    return (f"{n} seed{'s' if n != 1 else ''} per cell: too few for a verdict (an interval needs "
            f"{MIN_SEEDS}). Seed means below, no intervals; run more seeds (train.seeds) for the verdicts.")


def tables(res: load.Results) -> list[tuple[str, list[tuple[str, pd.DataFrame]]]]:
    """Per (task, optimizer): its name and (caption, table) per metric, one row per d_k, one column
    per variant (the seed mean), and Δ scaled − unscaled where both were run."""
    if res.summary is None:
        return []
    out = []
    for cond in load.conditions(res.summary):
        every = load.at_condition(res.summary, cond)
        runs = lr_select.at_best(every, res.history) if lr_select.has_grid(every) else every
        runs = diverged.completed(runs)
        if runs is None or runs.empty:
            continue
        order, metrics = load.variant_order(runs["attention"].unique()), []
        for column, words in METRICS:
            if column not in runs:
                continue
            means = runs.pivot_table(index="d_k", columns="attention", values=column, aggfunc="mean")
            table = means[[v for v in order if v in means.columns]].map(lambda x: _fmt(x, "{:.3f}"))
            if {"scaled", "unscaled"} <= set(means.columns):
                table[DELTA] = (means["scaled"] - means["unscaled"]).map(lambda x: _fmt(x, "{:+.3f}"))
            table = table.reset_index()
            table.columns.name = None
            metrics.append((f"{cond[0]}, {cond[1]}: {words}", table))
        out.append((f"{cond[0]}, {cond[1]}", metrics))
    return out


def _fmt(x: float, spec: str) -> str:
    return "—" if pd.isna(x) else spec.format(x)
