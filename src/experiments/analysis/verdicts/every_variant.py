"""Every variant a (task, optimizer) trained, first-class: its quality per d_k at its own chosen
learning rate (lr.select: the best seed-mean validation AUC), with 95% intervals over seeds,
and its paired Δ accuracy AUC against the reference variant (conf/analysis.yaml:
reference_variant); on a text task (tables.text), its validation and test bits per character
beside the baselines of the plays its runs name. Reported, never judged: sub-claim 4's verdict
reads its own pairs.

Numbers only; render/every_variant.py writes them as words. Seeds pair across variants (same
data stream, same init key), so Δ is taken seed by seed (stats.paired_diff_ci); steps to
threshold are censored at the budget (stats.survival): the t-interval of min(T, τ) over seeds,
τ the shortest budget, is the interval of the Kaplan-Meier restricted mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.stats.intervals import NAN_INTERVAL, Interval, mean_ci, paired_diff_ci
from experiments.analysis.stats.survival import kaplan_meier, restricted
from experiments.analysis.tables import diverged
from experiments.analysis.tables import load
from experiments.analysis.tables import text
from experiments.analysis.verdicts import quality_profile as qp

REFERENCE = "scaled"  # conf/analysis.yaml: reference_variant


@dataclass(frozen=True)
class Steps:
    """Steps to threshold of one (variant, d_k) over its completed seeds."""
    restricted_mean: Interval  # mean of min(T, tau) with its t-interval; NaN without runs
    reached: int  # seeds that reached the threshold
    n: int  # seeds with a budget
    median: float  # Kaplan-Meier median; NaN where half the seeds never reached it


@dataclass(frozen=True)
class VariantRow:
    """One variant at one d_k, at its chosen learning rate."""
    variant: str
    d_k: int
    lr: float
    edge: str  # lr.select.edge_flag: the chosen rate at an end of its grid
    seeds: int  # completed seeds behind the intervals
    diverged: int
    learned: bool  # seed-mean AUC at or above the learned bar of quality_profile.learned
    auc: Interval
    test_accuracy: Interval
    steps: Steps
    delta: Interval  # paired Δ AUC, this variant − the reference; NaN for the reference or unpaired
    val_bpc: Interval = NAN_INTERVAL  # bits per character at the end of training (text tasks), else NaN
    test_bpc: Interval = NAN_INTERVAL


@dataclass(frozen=True)
class ConditionVariants:
    """Every variant of one (task, optimizer), against `reference`."""
    task: str
    optimizer: str
    reference: str
    rows: list[VariantRow]
    never_run: dict[str, list[int]] = field(default_factory=dict)  # variant -> d_ks of the axis it lacks
    # a text task's yardsticks (tables.text): None for the retrieval tasks
    baselines: text.Baselines | text.NoBaselines | None = None

    @property
    def has_reference(self) -> bool:
        return any(r.variant == self.reference for r in self.rows)


def reference_of(res: load.Results) -> str:
    return str((getattr(res, "declared", None) or {}).get("reference_variant", REFERENCE))


def _steps(done: pd.DataFrame, variant: str, d_k: int, seeds) -> Steps:
    steps = load.cell_values(done, "steps_to_threshold", variant, d_k, seeds)
    budget = load.cell_values(done, "steps", variant, d_k, seeds)
    ran = np.isfinite(budget)
    km = kaplan_meier(steps[ran], budget[ran])
    if km is None:
        return Steps(NAN_INTERVAL, 0, 0, math.nan)
    return Steps(mean_ci(restricted(steps[ran], budget[ran], km.tau)), km.reached, km.n, km.median)


def _bits(done: pd.DataFrame, variant: str, d_k: int, seeds) -> dict:
    """Validation and test bits per character of a text task's (variant, d_k) over its seeds."""
    return {name: mean_ci(load.cell_values(done, column, variant, d_k, seeds))
            for name, column in (("val_bpc", "final_val_bpc"), ("test_bpc", "test_bpc")) if column in done}


def _row(best: pd.DataFrame, done: pd.DataFrame, variant: str, d_k: int, seeds, reference_auc,
         bits: bool = False) -> dict:
    """The numbers of one (variant, d_k) at its chosen rate (`best`: the runs judged there); with
    `bits`, its bits per character too."""
    cell = best[(best["attention"] == variant) & (best["d_k"] == d_k)]
    auc = load.cell_values(done, "accuracy_auc", variant, d_k, seeds)
    return dict(variant=variant, d_k=d_k, lr=float(cell["lr"].iloc[0]), edge=cell["edge"].iloc[0],
                seeds=int(np.isfinite(auc).sum()), auc=mean_ci(auc),
                test_accuracy=mean_ci(load.cell_values(done, "test_accuracy", variant, d_k, seeds)),
                steps=_steps(done, variant, d_k, seeds),
                delta=NAN_INTERVAL if reference_auc is None else paired_diff_ci(auc, reference_auc),
                **(_bits(done, variant, d_k, seeds) if bits else {}))


def condition(every: pd.DataFrame, history=None, reference: str = REFERENCE,
              fraction: "qp.LearnedRule | float" = qp.LEARNED_FRACTION) -> ConditionVariants:
    """The rows of one condition's summary rows (every lr), one per (variant, d_k) it ran."""
    best = lr_select.at_best(every, history)
    done, broken = diverged.completed(best), diverged.counts(best)
    seeds = sorted(best["seed"].unique())
    d_ks = sorted(int(d) for d in best["d_k"].unique())
    did, _ = qp.learned(best, d_ks, qp.as_rule(fraction).fraction)
    # NaN where the reference was never run: no pair, so no Δ
    ref = {d: load.cell_values(done, "accuracy_auc", reference, d, seeds) for d in d_ks}
    task, optimizer = load.conditions(every)[0]
    bits = text.is_text(task)
    rows, never = [], {}
    for v in load.variant_order(best["attention"].unique()):
        ran = sorted(int(d) for d in best.loc[best["attention"] == v, "d_k"].unique())
        never[v] = [d for d in d_ks if d not in ran]
        rows += [VariantRow(**_row(best, done, v, d, seeds, None if v == reference else ref[d], bits),
                            diverged=broken.get((v, d), 0), learned=did[v][d_ks.index(d)]) for d in ran]
    return ConditionVariants(task, optimizer, reference, rows, {v: ds for v, ds in never.items() if ds},
                             text.baselines_of(every) if bits else None)
