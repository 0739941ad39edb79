"""What every verdict section shares: the Section record, where its rows come from, table helpers.

Every verdict is computed from a table built from the results folder; the
rule that decides it is stated in the Section it returns, each clause of it
with its interval, its answer and its power (rules.Part). The sections
themselves live in at_init (1-3b), quality (4), cost (5) and
verdicts_mup (6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import POWER_NOTE, UNMEASURED, Part, Verdict
from experiments.analysis.stats.intervals import METHOD, MIN_SEEDS, count, fmt_ci, mean_ci, per_seed_slopes

INTERVALS = f"{METHOD}; {POWER_NOTE}"


@dataclass
class Section:
    key: str
    title: str
    claim: str
    figures: list[str]
    rule: str
    verdict: Verdict
    reason: str
    conditions: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # sub-verdicts and caveats, one line each
    headline: str = ""  # the key number, a few words: what the first screen shows beside the verdict
    rule_brief: str = ""  # the rule in one sentence; the full rule is `rule` and docs/CLAIM.md
    answer: list[str] = field(default_factory=list)  # "The answer" in plain words, one line per cell
    variants: list = field(default_factory=list)  # every_variant.ConditionVariants, one per cell (quality)
    seeds: int = 0  # Verdict.FEW: the fewest seeds a clause had
    parts: list[Part] = field(default_factory=list)  # the judged clauses
    cells: list = field(default_factory=list)  # quality.Cell, one per (task, optimizer) (quality)


def no_data(key: str, title: str, claim: str, figures: list[str], rule: str, what: str,
            rule_brief: str = "") -> Section:
    return Section(key, title, claim, figures, rule, UNMEASURED, f"no data: {what}", "not measured",
                   headline="not measured", rule_brief=rule_brief)


def estimates(parts, names: list[str] | None = None, digits: int = 2) -> str:
    """'unscaled slope 1.00, scaled slope -0.00': the mean of each clause's interval, by label
    (or by `names`, one per clause), for a section's headline."""
    names = names or [p.label for p in parts]
    return ", ".join(f"{name} {round(p.ci[0], digits) + 0.0:.{digits}f}" if p.n and math.isfinite(p.ci[0]) else f"{name} n/a"
                     for name, p in zip(names, parts))


def num(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}g}"


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


def slope_text(values, digits: int = 2) -> str:
    return fmt_ci(mean_ci(values) if count(values) else (math.nan,) * 3, digits)


def _config_text(value) -> str:
    """An integer read back as float (its column has NaN where another task lacks it): 64, not 64.0."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def describe_runs(summary: pd.DataFrame | None, cond, run_ids=None) -> str:
    """Task, optimizer, steps, seeds and constant config columns of the runs behind a section."""
    if summary is None:
        return f"task {cond[0]}, optimizer {cond[1]} (no summary.parquet for details)"
    s = load.at_condition(summary, cond)
    if run_ids is not None:
        s = s[s["run_id"].isin(run_ids)]
    seeds = sorted(int(x) for x in s["seed"].unique())
    steps = ", ".join(str(int(x)) for x in sorted(s["steps"].dropna().unique())) if "steps" in s else "?"
    n_div = len(diverged.diverged(s))
    runs = f"{len(s)} runs" + (f", of which {n_div} diverged (left out after init)" if n_div else "")
    parts = [f"task `{cond[0]}`", f"optimizer `{cond[1]}`", f"{steps} steps",
             f"{len(seeds)} seeds ({', '.join(map(str, seeds))})", runs]
    if "experiment" in s:
        parts.append("experiment " + ", ".join(f"`{e}`" for e in sorted(s["experiment"].astype(str).unique())))
    return "; ".join(parts + constant_config(s, summary))


def constant_config(s: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """"`model.n_heads`=1", ...: the config columns that shape the numbers and have one value over
    the runs s (the whole summary read, for how its columns were stored)."""
    # logger.* and the variants' own knobs do not shape the numbers; task.name and optimizer.name
    # are the condition itself, named first
    shaping = ("task.", "train.", "model.", "optimizer.")
    # model.width=proportional overrides the configured d_model (training.memory.model_width)
    proportional = "model.width" in s and bool((s["model.width"] == "proportional").all())
    parts = []
    for col in sorted(c for c in s.columns if c.startswith(shaping) and c not in ("task.name", "optimizer.name")):
        upcast = bool(summary[col].isna().any())  # another condition lacks it: ints read back as floats
        vals = sorted({_config_text(v) if upcast else str(v) for v in s[col].dropna()})
        if len(vals) == 1:
            parts.append(f"`{col}`=" + ("d_k × n_heads" if proportional and col == "model.d_model" else vals[0]))
    return parts


def init_source(res: load.Results):
    """(label, rows, conditions) at init: the probe when it has enough seeds for an interval
    (or there is no history), else step 0 of the history's primary condition."""
    p = load.probe_rows(res.probe) if res.probe is not None else None
    n_probe = p["seed"].nunique() if p is not None and "seed" in p else 1
    if p is not None and (n_probe >= MIN_SEEDS or res.history is None):
        desc = ", ".join(f"{c} {', '.join(str(v) for v in sorted(p[c].astype(str).unique()))}"
                         for c in ("input_model", "init", "n_keys", "n_rows") if c in p)
        return "probe", p, f"init-time probe: {desc}; {n_probe} seed(s)"
    if res.history is not None:
        rows = load.init_rows(load.at_condition(res.history, res.primary))
        return "history step 0", rows, "step 0 of training: " + describe_runs(res.summary, res.primary)
    return None, None, None


def end_source(res: load.Results):
    """End-of-training rows of the primary condition, diverged runs left out."""
    if res.history is None:
        return None, None
    trained = diverged.without_diverged(load.at_condition(res.history, res.primary), res.summary)
    return load.end_rows(trained), res.primary
