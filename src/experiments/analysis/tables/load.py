"""Read the results folder (and nothing else) and cut it into analysis tables.

Every table is optional: a missing or empty parquet file loads as None, and
the figures and sections that need it skip themselves with a note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

import attention

from .consistency import unlike_runs

VARIANTS = tuple(attention.variant_names())  # the paper's three first, then the registry's others
EXTRA_VARIANTS = tuple(v for v in VARIANTS if v not in attention.registry.PAPER_VARIANTS)
RUN_KEYS = ["attention", "d_k", "seed"]


@dataclass(frozen=True)
class Results:
    root: Path
    summary: pd.DataFrame | None
    history: pd.DataFrame | None
    probe: pd.DataFrame | None
    cost: pd.DataFrame | None
    primary: tuple[str, str] | None = None  # (task, optimizer) of the d_k-sweep figures and sections
    # every run's history; `history` keeps, where a cell has an lr grid, only the runs at
    # the cell's best lr, so that the d_k-sweep sections never average over learning rates
    history_all: pd.DataFrame | None = None
    # sub-claim 6's width setting (model.width=proportional) where the folder also holds
    # fixed-width runs: kept apart, so that its widths never enter the other sections' cells
    width_summary: pd.DataFrame | None = None
    width_history: pd.DataFrame | None = None
    declared: dict = field(default_factory=dict)  # margins from conf/analysis.yaml (verdicts.quality_profile)

    def for_width(self) -> "Results":
        """The results sub-claim 6 reads: the width setting's runs where the folder keeps them
        apart (their own condition), else these."""
        if self.width_history is None:
            return self
        conds = conditions(self.width_history)
        cond = self.primary if self.primary in conds else conds[0]
        return replace(self, summary=self.width_summary, history=self.width_history,
                       history_all=self.width_history, primary=cond, width_summary=None, width_history=None)


from .files import (RUN_COLUMNS, TABLES, ConditionError, ResultsFileError,  # noqa: F401 - re-exported
                    _read)


def read_tables(root: str | os.PathLike) -> dict:
    """{name: frame or None} for each of TABLES: None where the file is absent or empty.
    Raises ResultsFileError naming the file when one cannot be read."""
    return {name: _read(Path(root) / f"{name}.parquet") for name in TABLES}


def assemble(root: Path, tables: dict, primary_optimizer: str = "adam",
             primary_task: str | None = None, keep_runs: Callable | None = None,
             confirm_seeds_from: int | None = None) -> Results:
    """The tables (read_tables) cut into Results, with the primary condition
    (conf/analysis.yaml: primary_optimizer, primary_task). The one loader,
    analysis.results.load_results, calls it with its learning-rate policy.

    `keep_runs(summary, history) -> run ids`, when given, selects the history the
    verdicts read (`history_all` keeps every run). `confirm_seeds_from` marks the
    summary's `phase` (with_phase).

    Raises ResultsFileError when runs that should agree do not, ConditionError
    when the history has no runs under the named primary condition."""
    summary, history = with_phase(tables["summary"], confirm_seeds_from), tables["history"]
    if summary is not None and "status" in summary:
        # A failed run measured nothing; a diverged one did, and stays.
        failed = set(summary.loc[summary["status"] == "failed", "run_id"])
        summary = summary[summary["status"] != "failed"]
        if history is not None and failed:
            history = history[~history["run_id"].isin(failed)]
    probe = with_grad_aliases(tables["probe"])
    summary, history, width_summary, width_history = split_width(summary, history)
    for runs in (summary, width_summary):
        mixed = unlike_runs(runs)
        if mixed:
            raise ResultsFileError(f"{root / 'summary.parquet'}: {mixed}")
    history_all = history
    if history is not None and keep_runs is not None:
        history = history[history["run_id"].isin(set(keep_runs(summary, history)))]
    primary = None if history is None else primary_condition(history, primary_optimizer, primary_task, root)
    return Results(root, summary, history, probe, tables["cost"], primary, history_all,
                   width_summary, width_history)


SELECTION, CONFIRMATION = "selection", "confirmation"


def with_phase(summary: pd.DataFrame | None, confirm_seeds_from: int | None) -> pd.DataFrame | None:
    """The summary with `phase`: "confirmation" for seeds >= confirm_seeds_from (declared in
    conf/analysis.yaml: they never choose a rate, and where a cell has them they alone are
    judged, analysis.lr.select), "selection" for the others; every run where it is None."""
    if summary is None:
        return None
    fresh = summary["seed"] >= confirm_seeds_from if confirm_seeds_from is not None else False
    return summary.assign(phase=np.where(fresh, CONFIRMATION, SELECTION))


def split_width(summary: pd.DataFrame | None, history: pd.DataFrame | None):
    """(summary, history, width_summary, width_history): a folder that holds both fixed-width
    runs and width-proportional ones (sub-claim 6's setting, experiment=mup_width) keeps the
    latter apart; a folder of one kind keeps everything in the main tables."""
    if summary is None or "model.width" not in summary:
        return summary, history, None, None
    proportional = summary["model.width"].astype(object).eq("proportional")
    if not proportional.any() or proportional.all():
        return summary, history, None, None
    ids = set(summary.loc[proportional, "run_id"])
    if history is None:
        return summary[~proportional], None, summary[proportional], None
    in_width = history["run_id"].isin(ids)
    width_history = history[in_width]
    return (summary[~proportional], history[~in_width], summary[proportional],
            None if width_history.empty else width_history)


def variant_order(names) -> list[str]:
    """Known variants in their fixed order, then any others alphabetically."""
    names = set(names)
    return [v for v in VARIANTS if v in names] + sorted(names - set(VARIANTS))


def conditions(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(task, optimizer) pairs, most runs first."""
    counts = df.groupby(["task", "optimizer"]).size().sort_values(ascending=False, kind="stable")
    return [(str(t), str(o)) for t, o in counts.index]


def primary_condition(history: pd.DataFrame, optimizer: str, task: str | None,
                      root: Path) -> tuple[str, str]:
    """The (task, optimizer) named by the analysis config, where the d_k-sweep figures and the
    end-of-training sections are read. Named, never picked by run counts: a tie-break would let
    the data decide which condition a verdict is about. task None: the one task run with
    `optimizer`; ConditionError if there are none or several (naming both places to name it:
    the command line, and the results folder's own analysis.yaml, app.analysis_cli)."""
    runs = history.drop_duplicates("run_id")
    pairs = set(zip(runs["task"].astype(str), runs["optimizer"].astype(str)))
    return check_primary(pairs, optimizer, task, root)


def check_primary(pairs: set[tuple[str, str]], optimizer: str, task: str | None, root: Path,
                  where: str = "history.parquet") -> tuple[str, str]:
    """primary_condition over the (task, optimizer) pairs that `where` holds."""
    optimizers = sorted({o for _, o in pairs})
    if optimizer not in optimizers:
        raise ConditionError(f"primary_optimizer: {optimizer!r} has no runs in {where} "
                             f"(optimizers there: {', '.join(optimizers)}); pass primary_optimizer=<one of them>")
    tasks = sorted({t for t, o in pairs if o == optimizer})
    if task is None and len(tasks) > 1:
        raise ConditionError(f"primary_task: {where} has tasks {', '.join(tasks)} under optimizer "
                             f"{optimizer}; name one: primary_task={tasks[0]} on the command line (of "
                             f"plot, report, dashboard or scripts/regenerate.sh), or the line "
                             f"'primary_task: {tasks[0]}' in {root / 'analysis.yaml'}")
    if task is not None and task not in tasks:
        raise ConditionError(f"primary_task: {task!r} has no runs with optimizer {optimizer} in "
                             f"{where} (tasks there: {', '.join(tasks)})")
    return (task or tasks[0], optimizer)


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


def per_seed(df: pd.DataFrame, column: str, mask=None) -> pd.DataFrame:
    """One value per (attention, d_k, seed): runs sharing a seed are averaged. `mask`, when given,
    picks the rows first; only the four columns are copied (a summary has a hundred)."""
    if column not in df:
        return pd.DataFrame(columns=RUN_KEYS + [column])
    df = df.loc[slice(None) if mask is None else mask, RUN_KEYS + [column]]
    return df.groupby(RUN_KEYS, as_index=False)[column].mean()


def seed_matrix(df: pd.DataFrame, column: str, variant: str, d_ks=None, seeds=None):
    """(d_ks [m], seeds [s], values [s, m]) of one variant: each seed's curve against d_k,
    NaN where a seed lacks a d_k. Pass the d_ks and seeds of another variant to pair them."""
    sub = per_seed(df, column, df["attention"] == variant)
    wide = sub.pivot_table(index="seed", columns="d_k", values=column, aggfunc="mean", dropna=False)
    d_ks = np.array(sorted(sub["d_k"].unique()) if d_ks is None else d_ks, dtype=float)
    seeds = np.array(sorted(sub["seed"].unique()) if seeds is None else seeds)
    wide = wide.reindex(index=seeds, columns=d_ks)
    return d_ks, seeds, wide.to_numpy(dtype=float)


def paired_seeds(df: pd.DataFrame, column: str, a: str, b: str):
    """(d_ks, values of a [s, m], values of b [s, m]) on the d_ks and seeds both variants have."""
    d_a, s_a, _ = seed_matrix(df, column, a)
    d_b, s_b, _ = seed_matrix(df, column, b)
    d_ks, seeds = np.intersect1d(d_a, d_b), np.intersect1d(s_a, s_b)
    return d_ks, seed_matrix(df, column, a, d_ks, seeds)[2], seed_matrix(df, column, b, d_ks, seeds)[2]


def cell_values(df: pd.DataFrame, column: str, variant: str, d_k, seeds) -> np.ndarray:
    """Per-seed values of one (variant, d_k) in the order of `seeds`, NaN where missing."""
    if column not in df:
        return np.full(len(seeds), np.nan)
    cell = df.loc[(df["attention"] == variant) & (df["d_k"] == d_k), ["seed", column]]
    return cell.groupby("seed")[column].mean().reindex(seeds).to_numpy(dtype=float)


# --- probe gradient columns ---------------------------------------------------------

GRAD_WRT = {"iid": "q,k", "model": "W_q,W_k", "task": "W_q,W_k"}  # what grad_norm_q/k differentiate


def with_grad_aliases(probe: pd.DataFrame | None) -> pd.DataFrame | None:
    """The probe with `grad_wrt` (what its gradient columns are taken with respect to: q and k
    themselves under iid input) and, for tables written before the per-row columns existed,
    `grad_qk_row_rms` aliased to hypot(grad_norm_q, grad_norm_k): the per-row RMS, exactly for
    q and in expectation for k (experiments.probe). No alias exists for the per-row median."""
    if probe is None:
        return None
    out = probe
    if "grad_wrt" not in out and "input_model" in out:
        out = out.assign(grad_wrt=out["input_model"].map(GRAD_WRT))
    if "grad_qk_row_rms" not in out and {"grad_norm_q", "grad_norm_k"} <= set(out):
        out = out.assign(grad_qk_row_rms=np.hypot(out["grad_norm_q"], out["grad_norm_k"]))
    return out


# --- atomic writes ---------------------------------------------------------------
