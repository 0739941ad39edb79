"""Read the results folder (and nothing else) and cut it into analysis tables.

Every table is optional: a missing or empty parquet file loads as None, and
the figures and sections that need it skip themselves with a note.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

VARIANTS = ("scaled", "unscaled", "additive", "mup", "qk_norm", "cosine", "ssmax")
EXTRA_VARIANTS = ("mup", "qk_norm", "cosine", "ssmax")
RUN_KEYS = ["attention", "d_k", "seed"]


@dataclass(frozen=True)
class Results:
    root: Path
    summary: pd.DataFrame | None
    history: pd.DataFrame | None
    probe: pd.DataFrame | None
    cost: pd.DataFrame | None


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


class ResultsFileError(ValueError):
    """A table of the results folder that cannot be read; the message names the file."""


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
    return df


def _reason(e: Exception) -> str:
    """pyarrow's complaint, without the path it repeats: 'Parquet magic bytes not found in footer'."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = re.sub(r"^Could not open Parquet input source '.*?': ", "", text)
    return text.split(". ")[0].rstrip(".")


def load_results(root: str | os.PathLike) -> Results:
    """Every table of the results folder (None where absent or empty).

    Raises ResultsFileError naming the file when one cannot be read."""
    root = Path(root)
    tables = {name: _read(root / f"{name}.parquet") for name in TABLES}
    summary, history = tables["summary"], tables["history"]
    if summary is not None and "status" in summary:
        # A failed run measured nothing; a diverged one did, and stays.
        failed = set(summary.loc[summary["status"] == "failed", "run_id"])
        summary = summary[summary["status"] != "failed"]
        if history is not None and failed:
            history = history[~history["run_id"].isin(failed)]
    return Results(root, summary, history, tables["probe"], tables["cost"])


def variant_order(names) -> list[str]:
    """Known variants in their fixed order, then any others alphabetically."""
    names = set(names)
    return [v for v in VARIANTS if v in names] + sorted(names - set(VARIANTS))


def conditions(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(task, optimizer) pairs, most runs first."""
    counts = df.groupby(["task", "optimizer"]).size().sort_values(ascending=False, kind="stable")
    return [(str(t), str(o)) for t, o in counts.index]


def primary_condition(history: pd.DataFrame) -> tuple[str, str]:
    """The (task, optimizer) with the most runs: where d_k-sweep figures are drawn."""
    return conditions(history.drop_duplicates("run_id"))[0]


def at_condition(df: pd.DataFrame, cond: tuple[str, str]) -> pd.DataFrame:
    return df[(df["task"] == cond[0]) & (df["optimizer"] == cond[1])]


def init_rows(history: pd.DataFrame) -> pd.DataFrame:
    """First logged step of every run (step 0: the initialisation)."""
    first = history.groupby("run_id")["step"].transform("min")
    return history[history["step"] == first]


def end_rows(history: pd.DataFrame) -> pd.DataFrame:
    """Last logged step of every run (end of training)."""
    last = history.groupby("run_id")["step"].transform("max")
    return history[history["step"] == last]


def probe_rows(probe: pd.DataFrame) -> pd.DataFrame:
    """The probe setting of the claim's premise: iid inputs, fan-in (LeCun) init."""
    df = probe
    if "input_model" in df and (df["input_model"] == "iid").any():
        df = df[df["input_model"] == "iid"]
    if "init" in df and df["init"].nunique() > 1:
        pick = "lecun_normal" if (df["init"] == "lecun_normal").any() else df["init"].mode().iloc[0]
        df = df[df["init"] == pick]
    if "n_keys" in df and df["n_keys"].nunique() > 1:  # entropy depends on n: one n_keys only
        counts = df["n_keys"].value_counts()
        df = df[df["n_keys"] == max(k for k, c in counts.items() if c == counts.max())]
    return df


def per_seed(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """One value per (attention, d_k, seed): runs sharing a seed are averaged."""
    if column not in df:
        return pd.DataFrame(columns=RUN_KEYS + [column])
    return df.groupby(RUN_KEYS, as_index=False)[column].mean()


def seed_groups(df: pd.DataFrame, column: str, variant: str) -> dict[float, list[float]]:
    """{d_k: per-seed values} of one variant: the input of the slope bootstrap."""
    sub = per_seed(df[df["attention"] == variant], column)
    return {float(d): g[column].dropna().tolist() for d, g in sub.groupby("d_k")}


# --- atomic writes ---------------------------------------------------------------

def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
