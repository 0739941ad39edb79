"""Whether the runs a table pools into one cell may be pooled.

A cell of the analysis is (task, optimizer, attention, d_k); its runs are read
as seeds of one configuration (and, with a learning-rate grid, as its rates).
Runs that differ in any other key of their identity (train.steps, a task size,
an init) measure something else, and pooling them would count, say, 300- and
100-step seeds as n = 2 of one cell.
"""
from __future__ import annotations

import pandas as pd

from experiments.store.results import LATER_KEYS, NOT_IDENTITY, NOT_IDENTITY_KEYS

CELL = ["task", "optimizer", "attention", "d_k"]
# config columns that differ between the runs of one cell by design: its seeds and learning rates
POOLED = ("seed", "optimizer.lr")
LATER_DEFAULTS = {".".join(k): v for k, v in LATER_KEYS.items()}


def identity_columns(columns) -> list[str]:
    """The flattened config columns (`group.key`) that are part of a run's identity."""
    scheduling = {".".join(k) for k in NOT_IDENTITY_KEYS}
    return [c for c in columns if "." in c and c.split(".")[0] not in NOT_IDENTITY
            and not any(c == k or c.startswith(k + ".") for k in scheduling) and c not in POOLED]


def mixed_cell(summary: pd.DataFrame | None) -> str | None:
    """None when every cell's runs agree on their identity but seed and lr; else a line
    naming the first cell, the key and its values."""
    if summary is None or not set(CELL) <= set(summary.columns):
        return None
    for column in identity_columns(summary.columns):
        given = summary[column]
        if column in LATER_DEFAULTS:  # runs recorded before the key existed had its default
            given = given.where(given.notna(), LATER_DEFAULTS[column])
        # a run without the key (recorded before it existed) is compared on the others only
        values = given.map(_text, na_action="ignore")
        cells = values.groupby([summary[c] for c in CELL])
        counts = cells.nunique()
        if (counts > 1).any():
            cell = counts[counts > 1].index[0]
            seen = sorted(cells.get_group(cell).dropna().unique())
            return (f"the runs of {cell[2]} d_k={cell[3]} {cell[0]}/{cell[1]} differ in {column} "
                    f"({', '.join(seen)}) and would be pooled as seeds of one cell; collect each "
                    f"{column} into its own results_dir, or re-run them at one value")
    return None


def _text(value) -> str:
    """A value as the user wrote it: 300, not the 300.0 of a column that also holds NaN."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
