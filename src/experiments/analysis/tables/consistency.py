"""Whether the runs a table holds may be read together.

A cell of the analysis is (task, optimizer, attention, d_k); its runs are read
as seeds of one configuration (and, with a learning-rate grid, as its rates).
Runs that differ in any other key of their identity (train.steps, a task size,
an init) measure something else, and pooling them would count, say, 300- and
100-step seeds as n = 2 of one cell.

A condition is (task, optimizer): the report and the figures set its variants
and d_ks side by side, so they too must agree on every identity key but the
variant's own options (`attention.*`); a 300-step variant beside 1,000-step
ones would reach its "steps to threshold" within a budget the others never had.
"""
from __future__ import annotations

import pandas as pd

from experiments.store.results import LATER_KEYS, NOT_IDENTITY, NOT_IDENTITY_KEYS, _reassociable

CELL = ["task", "optimizer", "attention", "d_k"]
CONDITION = ["task", "optimizer"]
OWN = "attention."  # a variant's own options: compared within its cells, not across variants
# config columns that differ between the runs of one cell by design: its seeds and learning rates
POOLED = ("seed", "optimizer.lr")
LATER_DEFAULTS = {".".join(k): v for k, v in LATER_KEYS.items()}
# config keys whose value each run's summary also records (app.train_job), under its own name
SUMMARY_RECORDS = {"train.steps": "steps", "train.batch_size": "batch_size"}
REASSOCIATE = "model.reassociate"  # in the identity only of variants it can change (store.results)


def identity_columns(columns) -> list[str]:
    """The flattened config columns (`group.key`) that are part of a run's identity."""
    scheduling = {".".join(k) for k in NOT_IDENTITY_KEYS}
    return [c for c in columns if "." in c and c.split(".")[0] not in NOT_IDENTITY
            and not any(c == k or c.startswith(k + ".") for k in scheduling) and c not in POOLED]


def unlike_runs(summary: pd.DataFrame | None) -> str | None:
    """None when the runs may be read together; else one line naming the first key that
    differs where it may not (within a cell, then across a condition's variants), its
    values, whose they are, and the fix."""
    if summary is None or not set(CELL) <= set(summary.columns):
        return None
    summary = with_recorded(summary)
    for column in identity_columns(summary.columns):
        mixed = _differ(summary, column, CELL)
        if mixed:
            cell, seen = mixed
            return (f"the runs of {cell[2]} d_k={cell[3]} {cell[0]}/{cell[1]} differ in {column} "
                    f"({', '.join(seen)}) and would be pooled as seeds of one cell; collect each "
                    f"{column} into its own results_dir, or re-run them at one value")
    for column in identity_columns(summary.columns):
        mixed = None if column.startswith(OWN) else _differ(summary, column, CONDITION)
        if mixed:
            (task, optimizer), seen = mixed
            return (f"the runs of {task}/{optimizer} differ in {column} ({'; '.join(seen)}) and "
                    f"would be compared side by side as one condition; re-run them at one value, "
                    f"or collect each {column} into its own results_dir")
    return None


def with_recorded(summary: pd.DataFrame) -> pd.DataFrame:
    """The config columns that each run's summary records too (the budget, the batch) filled from
    the summary where the config's are missing: a run is compared on what it did, config or not."""
    filled = {config: summary[config].fillna(summary[own]) if config in summary else summary[own]
              for config, own in SUMMARY_RECORDS.items() if own in summary}
    return summary.assign(**filled) if filled else summary


def _differ(summary: pd.DataFrame, column: str, by: list[str]) -> tuple[tuple, list[str]] | None:
    """(first group of `by` whose runs hold several values of `column`, those values);
    across a condition each value names the variants that hold it."""
    values = _given(summary, column)
    groups = values.groupby([summary[c] for c in by])
    counts = groups.nunique()
    if not (counts > 1).any():
        return None
    group = counts[counts > 1].index[0]
    held = groups.get_group(group).dropna()
    if by == CELL:
        return group, sorted(held.unique())
    holders = summary.loc[held.index, "attention"].astype(str).groupby(held)
    return group, [f"{value} in {', '.join(sorted(names.unique()))}" for value, names in holders]


def _given(summary: pd.DataFrame, column: str) -> pd.Series:
    """Each run's value of `column` as text, NaN where it is not part of the run's identity:
    a run recorded before the key existed had its default; one without the key is compared
    on the others only."""
    given = summary[column]
    if column in LATER_DEFAULTS:
        given = given.where(given.notna(), LATER_DEFAULTS[column])
    if column == REASSOCIATE:
        given = given.where(summary["attention"].map(_reassociable).astype(bool))
    return given.map(_text, na_action="ignore")


def _text(value) -> str:
    """A value as the user wrote it: 300, not the 300.0 of a column that also holds NaN."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
