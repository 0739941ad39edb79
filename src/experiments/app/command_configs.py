"""Typed configs of the commands bench, collect, confirm, replay, temperature and init_gain (conf/<command>.yaml):
dataclasses only. app.config.register_schemas registers them with the others, so
that a typo or a wrong type fails at composition, naming the key."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from experiments.training.prune import PruneRule


@dataclass
class BenchConfig:
    results_dir: str = "results"
    train: list[str] = field(default_factory=lambda: ["experiment=claim_quick"])  # base overrides
    d_k: int = 64  # for the step and seed comparisons
    n_seeds: int = 4
    vmap_repeats: int = 5  # alternating (sequential, vmapped) pairs behind vmap_seed_speedup
    peak_d_k: int = 1024
    matmul_sizes: list[int] = field(default_factory=lambda: [1024, 2048])
    min_time_s: float = 1.0  # least time spent on each timing (best call kept)
    lane_counts: list[int] = field(default_factory=lambda: [1, 4, 16, 32])
    lane_rounds: int = 3  # every lane count timed in turn, this many times (medians kept)
    heavy: list[str] = field(default_factory=lambda: ["attention=additive", "d_k=1024",
                                                      "train.eval_every=5"])
    claim_quick: bool = True  # run the quick sweep (figures 4 and 6)
    claim_quick_warm: bool = True  # and once more with the cache it filled
    claim_quick_overrides: list[str] = field(default_factory=list)  # on the sweep only (a smaller grid)


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
    # 1: train n_seeds seeds; 2: the two-stage top-up (conf/analysis.yaml's two_stage), the
    # extra seeds each undecided clause needs after the first first_seeds (app.top_up_job)
    stage: int = 1
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


@dataclass
class TemperatureConfig:
    """The temperature study's reading, declared before its data (conf/temperature.yaml)."""
    results_dir: str = "results/temperature"
    confirm_seed_from: int = 100
    confirm_n_seeds: int = 4
    fit_half_width: int = 2
    n_boot: int = 2000
    boot_seed: int = 0
    level: float = 0.95
    margin: float = 0.02
    alpha: float = 0.05
    learned_over_chance: float = 10.0
    # published multipliers to read against c* (name, c of the paper's 1/sqrt(d_k), d_k, qk_rms)
    published_points: List[Dict[str, Any]] = field(default_factory=list)
    # the plan's pilot: seconds per lane-step at the pilot's sequence length (the projection of each cell)
    pilot_s_per_lane_step: float = 0.0016
    pilot_seq_len: int = 129
    # a task with its own pilot: {task: {s_per_lane_step, seq_len}} (every other task reads the two above)
    pilot_by_task: Dict[str, Dict[str, Any]] = field(default_factory=dict)


@dataclass
class InitGainConfig:
    """The Britz control's reading, declared before its fresh seeds' data (conf/init_gain.yaml)."""
    results_dir: str = "results/init_gain_runs"
    out_dir: str = "results/init_gain"
    preset: str = "init_gain"  # the experiment= preset that trains results_dir's runs (the README names it)
    confirm_seed_from: int = 4
    confirm_n_seeds: int = 4
    train: List[str] = field(default_factory=list)  # key=value overrides of every confirmation job
    collapse_variant: str = "unscaled"
    comparator: str = "additive"
    reference_gain: float = 1.0
    grid_points: int = 9
    margin: float = 0.05
    alpha: float = 0.05
    n_boot: int = 2000
    boot_seed: int = 0
    level: float = 0.95
    britz_low: int = 256
    britz_high: int = 512
