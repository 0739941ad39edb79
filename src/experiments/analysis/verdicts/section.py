"""What every verdict section shares: the Section record, where its rows come from, table helpers.

Every verdict is computed from a table built from the results folder, by the
clauses its Section carries (rules.Part: each with its interval, its answer and
its power). A Section holds values only: the runs behind it (its sources),
its tables as numbers, its own reading (`detail`); render/ writes the words.
The sections themselves live in at_init (1-3b), quality (4), cost (5) and
mup (6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import UNMEASURED, Part, Verdict
from experiments.analysis.stats.intervals import MIN_SEEDS, NAN_INTERVAL, Interval, count, mean_ci, per_seed_slopes


class Lacks(Enum):
    """What a section could not find, where it judged nothing."""
    INIT_ROWS = "probe or history"
    ENTROPY = "entropy"
    JACOBIAN = "Jacobian norms or saturated share"
    GRADIENT_PROBE = "probe with gradient norms"
    COST_TABLE = "cost table"
    COST_PAIR = "additive and scaled pair"
    HISTORY = "history"
    SUMMARY = "summary"


@dataclass(frozen=True)
class Table:
    """One table of a section: `kind` names it (render/ writes its caption and headers); `rows`
    hold numbers, Intervals and names, or `frame` is a table a lower room wrote; `at` holds
    what its caption and headers name (the d_k, the source, the mode)."""
    kind: str
    rows: tuple[dict, ...] = ()
    at: dict = field(default_factory=dict)
    frame: pd.DataFrame | None = None


@dataclass(frozen=True)
class Runs:
    """The training runs behind a section in one (task, optimizer); `described` False where no
    summary.parquet says more than the condition."""
    task: str
    optimizer: str
    steps: tuple[int, ...] | None = None  # None: no steps column
    seeds: tuple[int, ...] = ()
    n_runs: int = 0
    n_diverged: int = 0
    experiments: tuple[str, ...] | None = None
    config: tuple[tuple[str, str], ...] = ()  # (column, value) shaping the numbers, one value over the runs
    described: bool = True


@dataclass(frozen=True)
class Probe:
    """The init-time probe: its (column, values) and seeds."""
    columns: tuple[tuple[str, tuple[str, ...]], ...]
    n_seeds: int


@dataclass(frozen=True)
class StepZero:
    """Step 0 of training of the primary condition's runs."""
    runs: Runs


@dataclass(frozen=True)
class GradientProbe:
    """The probe's gradients: its input models (None: the column is absent), w.r.t. what, seeds."""
    input_models: tuple[str, ...] | None
    wrt: str
    n_seeds: int


@dataclass(frozen=True)
class CostBench:
    """The cost benchmark's impls, modes, n, d_k and batches (None: no batch column)."""
    impls: tuple[str, ...]
    modes: tuple[str, ...]
    ns: tuple[int, ...]
    d_ks: tuple[int, ...]
    batches: tuple[int, ...] | None


@dataclass
class Section:
    key: str
    number: str  # '3a'
    name: str  # 'Small gradients: the softmax Jacobian'
    figures: list[str]
    verdict: Verdict
    sources: tuple = ()  # what was measured: Runs, Probe, StepZero, GradientProbe, CostBench
    tables: list[Table] = field(default_factory=list)
    seeds: int = 0  # Verdict.FEW: the fewest seeds a clause had
    parts: list[Part] = field(default_factory=list)  # the judged clauses
    cells: list = field(default_factory=list)  # quality.Cell, one per (task, optimizer) (quality)
    variants: list = field(default_factory=list)  # every_variant.ConditionVariants, one per cell (quality)
    lacks: Lacks | None = None  # nothing judged: what was missing
    detail: object = None  # the section's own reading beyond its clauses (gradients, cost, extra, quality)

    @property
    def title(self) -> str:
        return f"{self.number}. {self.name}"


def no_data(key: str, number: str, name: str, figures: list[str], lacks: Lacks) -> Section:
    return Section(key, number, name, figures, UNMEASURED, lacks=lacks)


def mean_at(df: pd.DataFrame | None, column: str, variant: str, d_k) -> float:
    if df is None or column not in df:
        return math.nan
    sub = df[(df["attention"] == variant) & (df["d_k"] == d_k)]
    return float(sub[column].mean()) if len(sub) else math.nan


def seed_slopes(df: pd.DataFrame | None, column: str, variant: str, log_y: bool = True) -> np.ndarray:
    """Per-seed slopes of column against d_k: log-log, or per doubling of d_k when not log_y."""
    if df is None or column not in df or not (df["attention"] == variant).any():
        return np.array([])
    d_ks, _, y = load.seed_matrix(df, column, variant)
    if log_y:
        return per_seed_slopes(d_ks, y)
    return per_seed_slopes(np.log2(d_ks), y, log_x=False, log_y=False)


def all_slopes(df: pd.DataFrame | None, column: str, log_y: bool = True) -> dict[str, np.ndarray]:
    """{variant: per-seed slopes} in the fixed variant order."""
    if df is None or column not in df:
        return {}
    return {v: seed_slopes(df, column, v, log_y) for v in load.variant_order(df["attention"].unique())}


def slope_ci(values) -> Interval:
    return mean_ci(values) if count(values) else NAN_INTERVAL


def _config_text(value) -> str:
    """An integer read back as float (its column has NaN where another task lacks it): 64, not 64.0."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def runs_of(summary: pd.DataFrame | None, cond, run_ids=None) -> Runs:
    """Task, optimizer, steps, seeds and constant config columns of the runs behind a section."""
    if summary is None:
        return Runs(cond[0], cond[1], described=False)
    s = load.at_condition(summary, cond)
    if run_ids is not None:
        s = s[s["run_id"].isin(run_ids)]
    steps = tuple(int(x) for x in sorted(s["steps"].dropna().unique())) if "steps" in s else None
    experiments = tuple(sorted(s["experiment"].astype(str).unique())) if "experiment" in s else None
    return Runs(cond[0], cond[1], steps, tuple(sorted(int(x) for x in s["seed"].unique())), len(s),
                len(diverged.diverged(s)), experiments, constant_config(s, summary))


def constant_config(s: pd.DataFrame, summary: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """(column, value) of the config columns that shape the numbers and have one value over the
    runs s (the whole summary read, for how its columns were stored)."""
    # logger.* and the variants' own knobs do not shape the numbers; task.name and optimizer.name
    # are the condition itself, named first
    shaping = ("task.", "train.", "model.", "optimizer.")
    # model.width=proportional overrides the configured d_model (training.memory.model_width)
    proportional = "model.width" in s and bool((s["model.width"] == "proportional").all())
    out = []
    for col in sorted(c for c in s.columns if c.startswith(shaping) and c not in ("task.name", "optimizer.name")):
        upcast = bool(summary[col].isna().any())  # another condition lacks it: ints read back as floats
        vals = sorted({_config_text(v) if upcast else str(v) for v in s[col].dropna()})
        if len(vals) == 1:
            out.append((col, "d_k × n_heads" if proportional and col == "model.d_model" else vals[0]))
    return tuple(out)


def init_source(res: load.Results):
    """(rows, source) at init: the probe when it has enough seeds for an interval (or there is no
    history), else step 0 of the history's primary condition."""
    p = load.probe_rows(res.probe) if res.probe is not None else None
    n_probe = p["seed"].nunique() if p is not None and "seed" in p else 1
    if p is not None and (n_probe >= MIN_SEEDS or res.history is None):
        columns = tuple((c, tuple(sorted(p[c].astype(str).unique())))
                        for c in ("input_model", "init", "n_keys", "n_rows") if c in p)
        return p, Probe(columns, int(n_probe))
    if res.history is not None:
        rows = load.init_rows(load.at_condition(res.history, res.primary))
        return rows, StepZero(runs_of(res.summary, res.primary))
    return None, None


def end_source(res: load.Results):
    """End-of-training rows of the primary condition, diverged runs left out."""
    if res.history is None:
        return None, None
    trained = diverged.without_diverged(load.at_condition(res.history, res.primary), res.summary)
    return load.end_rows(trained), res.primary
