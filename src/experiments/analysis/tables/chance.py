"""A run's chance accuracy: what a model that guesses scores, the floor a diverged run is held at.

Training records it in each run's summary (`chance_accuracy`, tasks.common.recorded_yardsticks),
so a folder is read on its own. Runs recorded before that have it rebuilt from their task config
(the summary's `task.*` columns), else read off the history at init (the mean accuracy at the
first evaluation, the value at init of Wortsman et al. 2023).
"""
from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd

from experiments.analysis.tables.consistency import CELL, LATER_DEFAULTS


def task_config(row: pd.Series):
    """(the task's spec, its config object) rebuilt from the row's `task.*` columns; None where it
    cannot be (an unknown task, a field the summary lacks whose default may not be what ran)."""
    from experiments.tasks import TASKS  # the task layer knows its classes; imported only when asked

    spec = TASKS.get(str(row.get("task")))
    if spec is None:
        return None
    kwargs = {}
    for f in dataclasses.fields(spec.config_cls):
        value = row.get(f"task.{f.name}")
        if value is None or (isinstance(value, float) and math.isnan(value)):
            key = f"task.{f.name}"
            if key in LATER_DEFAULTS:  # recorded before the key existed: its default ran (None too)
                kwargs[f.name] = LATER_DEFAULTS[key]
                continue
            value = None
        if value is None:
            if f.name != "name":
                return None
            continue
        kwargs[f.name] = _config_value(value)
    try:
        return spec, spec.config_cls(**kwargs)
    except (TypeError, ValueError, OSError):
        return None


def _task_chance(row: pd.Series) -> float:
    """1 / n_classes from the task config in the row's `task.*` columns; NaN if it cannot be built."""
    built = task_config(row)
    if built is None:
        return math.nan
    spec, cfg = built
    try:
        return 1.0 / spec.n_classes(cfg)
    except (TypeError, ValueError, ZeroDivisionError, OSError):  # OSError: a task input now gone
        return math.nan


def _config_value(value):
    """A config value as the run had it, from its table cell: lists are JSON text there
    (store.collect.flatten), whole numbers may have become floats beside NaN."""
    if isinstance(value, str) and value.startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def chance(summary: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.Series:
    """Chance accuracy per run: the summary's recorded `chance_accuracy`, else from the task config
    in its `task.*` columns (runs recorded before it), else the mean accuracy at the first
    evaluation of that run's (task, optimizer, variant, d_k) in the history, else NaN."""
    recorded = summary["chance_accuracy"].astype(float) if "chance_accuracy" in summary else None
    task_cols = [c for c in summary.columns if c.startswith("task.")]
    if recorded is not None and recorded.notna().all():
        out = recorded
    elif task_cols:
        # map(str), not astype(str): pandas' string dtype keeps NaN (a field another task lacks)
        text = summary[["task", *task_cols]].map(str)
        keys = text["task"].str.cat(text[task_cols], sep="|")  # column-wise: a row-wise join is slow
        firsts = summary.groupby(keys, sort=False).head(1)
        by_key = {keys[i]: _task_chance(firsts.loc[i]) for i in firsts.index}
        out = keys.map(by_key).astype(float)
        out = out if recorded is None else recorded.fillna(out)
    else:
        out = pd.Series(math.nan, index=summary.index, dtype=float)
    if out.isna().any() and history is not None and "accuracy" in history:
        first = history[history["step"] == history.groupby("run_id")["step"].transform("min")]
        at_init = first.groupby(CELL)["accuracy"].mean()
        fill = summary.join(at_init.rename("_init"), on=CELL)["_init"]
        out = out.fillna(fill)
    return out
