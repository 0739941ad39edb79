"""The control's runs as points (variant, d_k, gain): labelled so that the reference's rule
(app.confirm_job.chosen_rates, on analysis.lr.select) chooses each point's rate, and the fresh
seeds' AUC and sigma_0 at it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.lr import select

GAIN = "model.qk_init_gain"
POINT = ["variant", "d_k", "gain"]


def labelled(summary: pd.DataFrame) -> pd.DataFrame:
    """The runs with `variant` and `gain`, and `attention` naming both, so that the reference's
    rule (which chooses per task, optimizer, attention and d_k) chooses per point."""
    gain = summary[GAIN].astype(float) if GAIN in summary else pd.Series(1.0, index=summary.index)
    return summary.assign(variant=summary["attention"], gain=gain,
                          attention=summary["attention"] + "@" + gain.map("{:.6g}".format))


def fresh(summary: pd.DataFrame, history: pd.DataFrame | None, confirm_seed_from: int) -> pd.DataFrame:
    """The fresh seeds' runs (seed >= confirm_seed_from) with val_auc (a diverged run at chance),
    val_final, chance and sigma0 (logit std at step 0; NaN without a history)."""
    runs = select.scored(labelled(summary[summary["seed"] >= confirm_seed_from]))
    if history is None or runs.empty:
        return runs.assign(sigma0=np.nan)
    first = history[history["step"] == 0].groupby("run_id")["logit_std"].first().rename("sigma0")
    return runs.merge(first, left_on="run_id", right_index=True, how="left")


def point_table(fresh_runs: pd.DataFrame) -> pd.DataFrame:
    """Per point: the fresh seeds' mean AUC, final accuracy and sigma_0, the seeds, the rate."""
    return (fresh_runs.groupby(POINT)
            .agg(lr=("lr", "first"), auc=("val_auc", "mean"), final=("val_final", "mean"),
                 sigma0=("sigma0", "mean"), n_seeds=("seed", "nunique"), chance=("chance", "first"))
            .reset_index())


def seed_matrix(fresh_runs: pd.DataFrame, variant: str, d_k: int, seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(gains ascending, AUC [gain, seed]) of one variant at one d_k; NaN where a seed lacks a run."""
    at = fresh_runs[(fresh_runs["variant"] == variant) & (fresh_runs["d_k"] == d_k)]
    table = at.pivot_table(index="gain", columns="seed", values="val_auc", aggfunc="first").reindex(columns=seeds)
    return table.index.to_numpy(float), table.to_numpy(float)
