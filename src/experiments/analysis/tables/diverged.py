"""Diverged runs: kept out of every mean, interval and verdict, and shown beside them.

results.load_results keeps a diverged run (what it measured before the loss or a
gradient went non-finite is real) and drops a failed one. Its metrics describe
a shorter, broken training (no test accuracy, an AUC over fewer steps, a last
row of NaN), so averaging them with completed runs would be wrong, and leaving
them out silently would hide the instability. So: statistics at init use every
run; statistics after training, quality metrics and verdicts use the completed
runs; every table, figure and the dashboard says how many runs diverged, where
(variant, d_k, condition) and at which step.
"""

from __future__ import annotations

import pandas as pd

DIVERGED = "diverged"
RUN_COLUMNS = ["run_id", "attention", "d_k", "seed", "task", "optimizer", "diverged_at_step"]


def diverged(summary: pd.DataFrame | None) -> pd.DataFrame:
    """The summary rows of the diverged runs (none when there is no status column)."""
    if summary is None or "status" not in summary:
        return pd.DataFrame(columns=RUN_COLUMNS)
    return summary[summary["status"] == DIVERGED]


def completed(summary: pd.DataFrame | None) -> pd.DataFrame | None:
    """The summary without its diverged runs."""
    if summary is None:
        return None
    return summary.drop(diverged(summary).index)


def without_diverged(history: pd.DataFrame, summary: pd.DataFrame | None) -> pd.DataFrame:
    """History rows of the runs that did not diverge (for statistics after training)."""
    return history[~history["run_id"].isin(set(diverged(summary)["run_id"]))]


def counts(summary: pd.DataFrame | None) -> dict[tuple[str, int], int]:
    """{(attention, d_k): number of diverged runs} (only cells with at least one)."""
    df = diverged(summary)
    if df.empty:
        return {}
    return {(str(a), int(d)): int(n) for (a, d), n in df.groupby(["attention", "d_k"]).size().items()}


def left_out(n: int) -> str:
    """' (3 diverged runs left out)', or '' when none diverged."""
    return f" ({n} diverged run{'s' if n != 1 else ''} left out)" if n else ""


def table(summary: pd.DataFrame | None) -> pd.DataFrame:
    """One row per diverged run, in a fixed order, with the step it diverged at."""
    df = diverged(summary)
    cols = [c for c in RUN_COLUMNS if c in df.columns]
    out = df[cols].sort_values([c for c in ("task", "optimizer", "attention", "d_k", "seed") if c in cols])
    if "diverged_at_step" in out:
        out = out.assign(diverged_at_step=out["diverged_at_step"].astype("Int64"))
    return out.reset_index(drop=True)


PRUNED = "pruned"  # stopped by train.prune: its rate could no longer be the best


def pruned(summary: pd.DataFrame | None) -> pd.Series:
    """Per row: the run was pruned (False everywhere when there is no status column)."""
    if summary is None or "status" not in summary:
        return pd.Series(False, index=None if summary is None else summary.index, dtype=bool)
    return summary["status"] == PRUNED
