"""Steps to a threshold, counted from the recorded validation curve.

A run's summary counts `steps_to_threshold` at the train.threshold it trained with; a task's
threshold declared in conf/analysis.yaml (tasks.<task>.threshold) is counted again here from
its history, the first evaluation at or above it, so that the analysis reads the declared
one whatever the runs trained with. A run whose curve never reaches it has none (censored at
its budget by the readers, as before)."""
from __future__ import annotations

import pandas as pd


def first_step_at(history: pd.DataFrame, threshold: float) -> pd.Series:
    """run_id -> the first evaluated step whose validation accuracy is >= threshold."""
    hit = history[history["accuracy"] >= threshold]
    return hit.groupby("run_id")["step"].min()


def restated(summary: pd.DataFrame, history: pd.DataFrame, task: str, threshold: float) -> pd.DataFrame:
    """`summary` with the runs of `task` counted at `threshold` (steps_to_threshold, threshold)."""
    rows = summary["task"] == task
    if not rows.any():
        return summary
    first = first_step_at(history[history["task"] == task], threshold)
    out = summary.copy()
    out.loc[rows, "steps_to_threshold"] = out.loc[rows, "run_id"].map(first).astype(float)
    out.loc[rows, "threshold"] = threshold
    return out
