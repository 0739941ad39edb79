"""The results folder as every reader of the analysis sees it: its tables
(tables.load), with the history cut by a learning-rate policy (lr.select): by
default each cell at its best learning rate where a cell was trained at several.

`load_results` is the one loader of the analysis; the commands, the verdicts and
the tests all read a folder through it."""

from __future__ import annotations

import os
from pathlib import Path

from attention.checks import check
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import load

# lr= of load_results: the runs `history` keeps (`history_all` always keeps every run)
LR_POLICIES = ("best", "all")


def runs_at_best_lr(summary, history) -> set:
    """The run ids the verdicts read: all of them, or where some cell has an lr grid,
    the runs of each cell at its best lr on validation."""
    if not lr_select.has_grid(summary):
        return set(history["run_id"])
    return set(lr_select.at_best(summary, history)["run_id"])


def load_results(root: str | os.PathLike, primary_optimizer: str = "adam",
                 primary_task: str | None = None, confirm_seeds_from: int | None = None,
                 *, lr: str = "best", tables: dict | None = None) -> load.Results:
    """Every table of the folder (load.read_tables; or `tables`, already in memory) as
    load.Results under the primary condition. `lr`: "best" keeps in `history` each cell's
    runs at its best rate (runs_at_best_lr), "all" every rate. Seeds from
    confirm_seeds_from on read as confirmation seeds (lr.select)."""
    check(lr in LR_POLICIES, "lr", f"must be one of {', '.join(LR_POLICIES)}", lr)
    tables = load.read_tables(root) if tables is None else tables
    return load.assemble(Path(root), tables, primary_optimizer, primary_task,
                         keep_runs=runs_at_best_lr if lr == "best" else None,
                         confirm_seeds_from=confirm_seeds_from)
