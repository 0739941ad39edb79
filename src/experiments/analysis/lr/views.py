"""The lr views of a condition: per-seed optimal lr against d_k, its drift, LR sensitivity.

Built on lr_select (the choice) and stats (the intervals), shared by the
quality section and the lr figures, so that a number in a table and the same
number in a figure come from one function.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr.theory import predicted_lr_slope
from experiments.analysis.stats.intervals import fmt_ci, mean_ci, per_seed_slopes


def label(cond: tuple[str, str]) -> str:
    return f"{cond[0]}/{cond[1]}"


def best_lr_matrix(sc: pd.DataFrame, variant: str):
    """(d_ks [m], seeds [s], best lr [s, m]) of one variant in one condition (from lr_select.scored)."""
    per = lr_select.seed_best_lr(sc[sc["attention"] == variant])
    wide = per.pivot_table(index="seed", columns="d_k", values="best_lr", aggfunc="first", dropna=False)
    wide = wide.reindex(index=sorted(lr_select.selecting(sc)["seed"].unique()))
    return wide.columns.to_numpy(dtype=float), wide.index.to_numpy(), wide.to_numpy(dtype=float)


def drift_slopes(sc: pd.DataFrame) -> dict[str, np.ndarray]:
    """{variant: per-seed slope of log2(best lr) against log2 d_k} in one condition."""
    out = {}
    for v in load.variant_order(sc["attention"].unique()):
        d_ks, _, lrs = best_lr_matrix(sc, v)
        out[v] = per_seed_slopes(d_ks, lrs) if d_ks.size >= 2 else np.array([])
    return out


def drift_band(sc: pd.DataFrame) -> float:
    return lr_select.drift_band(sc["lr"].dropna().unique(), sc["d_k"].unique())


def grid_step(sc: pd.DataFrame) -> float:
    """The rate grid's resolution: the median spacing of its rates in log2 units."""
    grid = np.log2(sorted(x for x in set(sc["lr"].dropna()) if x > 0))
    return float(np.median(np.diff(grid))) if grid.size > 1 else float("nan")


def predicted_text(variant: str, optimizer: str = "adam") -> str:
    slope = predicted_lr_slope(variant, optimizer) if variant in load.VARIANTS else None
    return "none" if slope is None else f"{slope:+.1f}"


def _conditions(summary: pd.DataFrame, history) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    return [(c, lr_select.scored(load.at_condition(summary, c), history)) for c in load.conditions(summary)]


def optimal_lr_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """Variant × d_k rows, one column per condition: the best lr (edge flagged) and its val AUC."""
    cols = {}
    for cond, sc in _conditions(summary, history):
        best = lr_select.best_lrs(sc)
        cols[label(cond)] = {(r.attention, int(r.d_k)): f"{lr_select.lr_text(r.best_lr, r.edge)}; AUC "
                             f"{r.best_val_auc:.3f}" for r in best.itertuples()}
    return _wide(summary, cols)


def sensitivity_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """Variant × d_k rows, one column per condition: LR sensitivity, mean [95% CI] over seeds."""
    cols = {}
    for cond, sc in _conditions(summary, history):
        sens = lr_select.seed_sensitivity(sc)
        cols[label(cond)] = {(a, int(d)): g["grid_note"].iloc[0] if g["grid_note"].iloc[0]
                             else fmt_ci(mean_ci(g["sensitivity"].to_numpy()), 3)
                             for (a, d), g in sens.groupby(["attention", "d_k"])}
    return _wide(summary, cols)


def drift_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """One row per (condition, variant): slope of log2(best lr) per doubling of d_k [95% CI]."""
    rows = []
    for cond, sc in _conditions(summary, history):
        for v, slopes in drift_slopes(sc).items():
            rows.append({"condition": label(cond), "variant": v,
                         "slope of log2 best lr per doubling of d_k": fmt_ci(mean_ci(slopes), 2)
                         if slopes.size else "n/a", "predicted (Adam step, lr.theory)": predicted_text(v, cond[1]),
                         "grid step (log2)": f"{grid_step(sc):.2f}", "seeds": int(np.isfinite(slopes).sum())})
    return pd.DataFrame(rows)


def _wide(summary: pd.DataFrame, cols: dict[str, dict]) -> pd.DataFrame:
    keys = sorted({k for c in cols.values() for k in c},
                  key=lambda k: (load.variant_order(summary["attention"].unique()).index(k[0]), k[1]))
    return pd.DataFrame([{"variant": a, "d_k": d, **{c: vals.get((a, d), "—") for c, vals in cols.items()}}
                         for a, d in keys])
