"""The analysis commands' config schema (conf/analysis.yaml: plot, report, dashboard), registered
with Hydra's ConfigStore as analysis_schema so that a typo or a wrong type fails at composition;
app.analysis_cli composes and checks it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore

from experiments.analysis.verdicts.every_variant import REFERENCE
from experiments.analysis.verdicts.quality_profile import ALIKE_D_KS, ALIKE_MARGIN, ALIKE_SHARE, LEARNED_FRACTION
from experiments.analysis.verdicts.top_up import TwoStage


@dataclass
class TaskDeclaration:
    """What a task's clauses read, where it differs from the retrieval tasks' defaults."""
    # the validation metric whose AUC over training every clause and rate choice reads; only
    # accuracy is recorded per evaluation for every task, so it is the one a task may declare
    primary_metric: str = "accuracy"
    alike_margin: Optional[float] = None  # None: the global alike_margin
    alike_d_ks: Optional[list[int]] = None  # None: the global alike_d_ks
    alike_share: Optional[float] = None  # None: the global alike_share
    threshold: Optional[float] = None  # "steps to", counted from the runs' curves (tables.steps_to)


PRIMARY_METRICS = ("accuracy",)


@dataclass
class AnalysisConfig:
    results_dir: str = "results"
    # The condition the d_k-sweep figures and the end-of-training sections read, named here
    # rather than picked from the data (a tie-break on run counts would let them decide).
    primary_optimizer: str = "adam"
    primary_task: Optional[str] = None  # None: the one task run with primary_optimizer
    # Sub-claim 4's margins, declared before the data (never derived from it): "alike" is
    # |Δ AUC| < alike_margin by TOST; a d_k enters where scaled covered learned_fraction of
    # the way from chance to its best AUC in that (task, optimizer).
    alike_margin: float = ALIKE_MARGIN
    # "alike" is judged at these small d_k (those a cell swept and entered), holding where TOST
    # does at alike_share of them or more
    alike_d_ks: list[int] = field(default_factory=lambda: list(ALIKE_D_KS))
    alike_share: float = ALIKE_SHARE
    learned_fraction: float = LEARNED_FRACTION
    # did a pair's variant learn at a d_k: "final_accuracy" (its final validation accuracy covered
    # learned_fraction of the way from chance to scaled's best) or "auc" (scaled's AUC bar, as before)
    comparator_learned: str = "final_accuracy"
    # Seeds from this one on are confirmation seeds (experiments.confirm): they never choose
    # a rate, and where a cell has them they alone are judged. None: every seed selects.
    confirm_seeds_from: Optional[int] = 8
    # the two-stage confirmation's declared design (verdicts.top_up.TwoStage)
    two_stage: TwoStage = field(default_factory=TwoStage)
    # The variant every other is compared with, seed by seed, in the report's "Every variant"
    # tables (accuracy AUC); the claim's own pairs (sub-claim 4) do not change with it.
    reference_variant: str = REFERENCE
    # per task, declared before its data: {task name: TaskDeclaration}
    tasks: dict[str, TaskDeclaration] = field(default_factory=dict)


ConfigStore.instance().store(name="analysis_schema", node=AnalysisConfig)
