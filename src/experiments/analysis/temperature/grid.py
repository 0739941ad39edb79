"""The study's runs as tables: each run's cell (task, n_keys, d_k), multiplier c and phase; each
multiplier's rate chosen on the selection seeds (the highest seed-mean validation AUC among the
rates not pruned, as analysis.lr.select chooses); the AUC of every seed at that rate."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.analysis.lr import select

CELL = ["task", "n_keys", "d_k"]
GRID_VARIANT, LEARNED = "temperature", "learned_temperature"


def runs_of(summary: pd.DataFrame, confirm_seed_from: int) -> pd.DataFrame:
    """Every ended run of the study with `c` (the multiplier; NaN for the learned temperature),
    `val_auc`, `val_final` (a diverged run at chance), `chance` and `phase`."""
    sc = select.scored(summary[summary["attention"].isin([GRID_VARIANT, LEARNED])])
    c = sc["attention.c"] if "attention.c" in sc else pd.Series(np.nan, index=sc.index)
    return sc.assign(c=c.astype(float), n_keys=sc["n_keys"].astype(int),
                     phase=np.where(sc["seed"] >= confirm_seed_from, "confirmation", "selection"))


def chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, c) of the grid's selection runs: lr, its seed-mean val_auc and val_final, the
    seeds, whether the rate sits at an end of the rate grid."""
    sel = runs[(runs["attention"] == GRID_VARIANT) & (runs["phase"] == "selection")]
    means = (sel.assign(pruned=sel["status"].eq("pruned"))
             .groupby(CELL + ["c", "lr"])
             .agg(val_auc=("val_auc", "mean"), val_final=("val_final", "mean"), n_seeds=("seed", "nunique"),
                  pruned=("pruned", "any"), chance=("chance", "first"))
             .reset_index())
    rows = []
    for key, at in means.groupby(CELL + ["c"]):
        grid = sorted(at["lr"])
        live = at[~at["pruned"]]
        pick = (live if len(live) else at).sort_values(["val_auc", "lr"], ascending=[False, True]).iloc[0]
        rows.append({**dict(zip(CELL + ["c"], key)), "lr": pick["lr"], "val_auc": pick["val_auc"],
                     "val_final": pick["val_final"], "n_seeds": int(pick["n_seeds"]), "chance": pick["chance"],
                     "lr_edge": select.edge_flag(pick["lr"], grid)})
    return pd.DataFrame(rows)


def seed_matrix(runs: pd.DataFrame, chosen: pd.DataFrame, cell: tuple, phase: str = "selection",
                metric: str = "val_auc") -> tuple[np.ndarray, np.ndarray]:
    """(log2 c ascending, metric [grid, seeds]) of one cell at each c's chosen rate; NaN where a
    seed lacks a run."""
    mine = chosen[(chosen[CELL] == pd.Series(cell, index=CELL)).all(axis=1)].sort_values("c")
    at = runs.merge(mine[CELL + ["c", "lr"]], on=CELL + ["c", "lr"])
    at = at[(at["attention"] == GRID_VARIANT) & (at["phase"] == phase)]
    table = at.pivot_table(index="c", columns="seed", values=metric, aggfunc="first").reindex(mine["c"])
    return np.log2(mine["c"].to_numpy(float)), table.to_numpy(float)


def nearest_grid_row(chosen: pd.DataFrame, cell: tuple, c: float) -> pd.Series:
    """The chosen-rate row of the grid multiplier nearest c in log2 (a tie: the lower c)."""
    mine = chosen[(chosen[CELL] == pd.Series(cell, index=CELL)).all(axis=1)]
    gap = (np.log2(mine["c"].astype(float)) - math.log2(c)).abs()
    return mine.loc[gap.sort_values(kind="stable").index[0]]


def nearest_grid_rate(chosen: pd.DataFrame, cell: tuple, c: float) -> float:
    """The rate the confirmation trains c at: the one chosen at its nearest grid multiplier."""
    return float(nearest_grid_row(chosen, cell, c)["lr"])


def rate_edge(chosen: pd.DataFrame, cell: tuple, c: float) -> str:
    """Whether the rate the confirmation trains c at sits at an end of the rate grid ('edge: low' /
    'edge: high' / ''): a better rate may lie beyond it."""
    return str(nearest_grid_row(chosen, cell, c)["lr_edge"] or "")
