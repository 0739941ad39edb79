"""The results folder's parquet files, read and checked: each table's required columns, whole
numbers where the readers index, one row per key. A file that fails names itself and the
command that rebuilds it (ResultsFileError)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd


# the table each file holds, the columns its readers rely on, the command that writes it;
# a table without one of them is refused at load, naming the file and what it lacks
RUN_COLUMNS = ("run_id", "attention", "d_k", "seed", "task", "optimizer")
TABLES = {
    "summary": ((*RUN_COLUMNS, "status", "steps", "threshold", "steps_to_threshold", "test_accuracy",
                 "final_val_accuracy", "accuracy_auc"), "experiments.collect"),
    "history": ((*RUN_COLUMNS, "step", "accuracy"), "experiments.collect"),
    "probe": (("attention", "d_k", "seed", "input_model", "init", "n_keys"), "experiments.probe"),
    "cost": (("impl", "mode", "n", "d_k"), "experiments.cost"),
}


# whole numbers the readers index and group by (with their least value): a NaN, a
# string or a fraction there cannot be a d_k or a step
WHOLE_COLUMNS = {"d_k": 1, "seed": 0, "step": 0, "n": 1, "n_keys": 1}
# of them, those a run recorded before the column existed leaves empty (the summary's n_keys)
MAY_BE_EMPTY = {"n_keys"}
# what identifies a row: a run listed twice would count as two seeds
ROW_KEYS = {"summary": ["run_id"], "history": ["run_id", "step"]}


class ResultsFileError(ValueError):
    """A table of the results folder that cannot be read; the message names the file."""


class ConditionError(ResultsFileError):
    """The primary condition named in the analysis config has no runs in the history."""


def _read(path: Path) -> pd.DataFrame | None:
    """The table in `path`; None if absent or empty; ResultsFileError if unreadable."""
    if not path.exists():
        return None
    columns, writer = TABLES[path.stem]
    rebuild = f"rebuild it with {writer}"
    if not path.is_file():
        raise ResultsFileError(f"{path}: not a file; remove it or {rebuild}")
    try:
        df = pd.read_parquet(path)
    except Exception as e:  # pyarrow reports a truncated or foreign file in several types
        raise ResultsFileError(f"{path}: not a readable parquet file ({_reason(e)}); {rebuild}") from None
    if not len(df):
        return None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ResultsFileError(f"{path}: not a {path.stem} table (missing column"
                               f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}); {rebuild}")
    for column, least in WHOLE_COLUMNS.items():
        if column in df.columns:
            numeric = pd.api.types.is_numeric_dtype(df[column]) and not pd.api.types.is_bool_dtype(df[column])
            values = pd.to_numeric(df[column], errors="coerce").astype(float) if numeric else None
            bad = (~(np.isfinite(values) & (values == values.round()) & (values >= least)) if numeric
                   else pd.Series(True, index=df.index))
            if column in MAY_BE_EMPTY:
                bad &= df[column].notna()
            if bad.any():
                raise ResultsFileError(f"{path}: column {column} must hold whole numbers >= {least}; "
                                       f"{int(bad.sum())} of {len(df)} rows hold {str(df[column][bad].iloc[0])!r}"
                                       f"{'' if numeric else f' ({df[column].dtype} column)'}; {rebuild}")
    keys = ROW_KEYS.get(path.stem)
    if keys and df.duplicated(keys).any():
        first = df[df.duplicated(keys)].iloc[0]
        raise ResultsFileError(f"{path}: {', '.join(f'{k} {first[k]!r}' for k in keys)} appears more than "
                               f"once (a run counted twice); {rebuild}")
    return df


def _reason(e: Exception) -> str:
    """pyarrow's complaint, without the path it repeats: 'Parquet magic bytes not found in footer'."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = re.sub(r"^Could not open Parquet input source '.*?': ", "", text)
    return text.split(". ")[0].rstrip(".")
