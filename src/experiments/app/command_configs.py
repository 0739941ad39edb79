"""Typed configs of the commands collect, confirm and replay (conf/<command>.yaml):
dataclasses only. app.config.register_schemas registers them with the others, so
that a typo or a wrong type fails at composition, naming the key."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from experiments.training.prune import PruneRule


@dataclass
class CollectConfig:
    results_dir: str = "results"
    # tabled runs that have no run folder here: true keeps them, false drops them,
    # unset refuses when there are any
    keep_tabled: Optional[bool] = None


@dataclass
class ConfirmConfig:
    results_dir: str = "results"
    # a conf/cell/ name: its task and optimizer select the runs confirmed (not `cell`: that
    # key is the train command's config group, and Hydra would load the cell's file here)
    for_cell: str = ""
    n_seeds: int = 8  # confirmation seeds per (variant, d_k)
    seed_from: int = 8  # the first confirmation seed; seeds below it are the selection's
    # train overrides every confirmation job takes (e.g. runtime.threads=1)
    train: list[str] = field(default_factory=list)


@dataclass
class ReplayConfig:
    results_dir: str = "results"
    tuning_cell: str = "adam_mqar"  # the cell the rule's options were chosen on; the others are held out
    primary_optimizer: Optional[str] = None  # None: the folder's analysis.yaml, else adam
    primary_task: Optional[str] = None
    prune: PruneRule = field(default_factory=PruneRule)
