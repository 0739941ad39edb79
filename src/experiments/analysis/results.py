"""The results folder as every reader of the analysis sees it: its tables
(tables.load), with the history cut to each cell's best learning rate (lr.select)
where a cell was trained at several."""

from __future__ import annotations

import os
from pathlib import Path

from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import load


def runs_at_best_lr(summary, history) -> set:
    """The run ids the verdicts read: all of them, or where some cell has an lr grid,
    the runs of each cell at its best lr on validation."""
    if not lr_select.has_grid(summary):
        return set(history["run_id"])
    return set(lr_select.at_best(summary, history)["run_id"])


def load_results(root: str | os.PathLike, primary_optimizer: str = "adam",
                 primary_task: str | None = None, confirm_seeds_from: int | None = None) -> load.Results:
    """load.load_results with the learning-rate policy applied (see runs_at_best_lr), seeds from
    confirm_seeds_from on read as confirmation seeds (lr.select)."""
    return load.load_results(root, primary_optimizer, primary_task, keep_runs=runs_at_best_lr,
                             confirm_seeds_from=confirm_seeds_from)


def from_tables(root: Path, tables: dict, primary_optimizer: str = "adam",
                primary_task: str | None = None, confirm_seeds_from: int | None = None) -> load.Results:
    """load.from_tables (tables already in memory) with the same learning-rate policy."""
    return load.from_tables(root, tables, primary_optimizer, primary_task, keep_runs=runs_at_best_lr,
                            confirm_seeds_from=confirm_seeds_from)
