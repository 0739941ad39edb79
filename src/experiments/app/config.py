"""Typed schemas of the training configuration, and the one place where schemas are
registered in Hydra's ConfigStore (register_schemas): training's, every variant's and
task's, the instruments' (which declare theirs: instruments.cost, .probe) and the commands'
(app.command_configs).

Each conf/<group>/<option>.yaml starts from the schema of its option
(`defaults: [schema_<option>]`), so that a typo or a wrong type fails at
composition, naming the key. Range checks that a type cannot express live in
`validate`, which raises ValueError("<key>: <what is allowed>, got <value>").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

import attention
from attention.checks import check
from experiments.app import ranges
from experiments.app.command_configs import (BenchConfig, CollectConfig, ConfirmConfig, InitGainConfig,
                                             ReplayConfig, TemperatureConfig)
from experiments.app.errors import CONF_DIR
from experiments.instruments.cost import CostConfig
from experiments.instruments.probe import ProbeConfig
from experiments.store.wandb_mirror import LoggerConfig, validate_logger
from experiments.tasks import TASKS
from experiments.tasks.common import SEED_MAX, check_seed
from experiments.training import memory
from experiments.training.inits import INITS
from experiments.training.prune import PruneRule

# --- attention: one schema per variant, derived from its init and score functions

ATTENTION_SCHEMAS = {name: attention.option_schema(attention.VARIANTS[name])
                     for name in attention.variant_names()}


# --- optimizers ------------------------------------------------------------------

@dataclass
class AdamConfig:
    name: str = "adam"
    lr: float = 1e-3
    # learning rates trained side by side as lanes of one program, each lane its
    # own run (with optimizer.lr set to its rate); when set it replaces lr
    lr_grid: Optional[list[float]] = None
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8


@dataclass
class AdamWConfig(AdamConfig):
    name: str = "adamw"
    weight_decay: float = 1e-4


@dataclass
class SGDConfig:
    name: str = "sgd"
    lr: float = 0.1
    lr_grid: Optional[list[float]] = None  # as in AdamConfig
    momentum: float = 0.9
    nesterov: bool = False


OPTIMIZER_SCHEMAS = {"adam": AdamConfig, "adamw": AdamWConfig, "sgd": SGDConfig}


# --- model and training ----------------------------------------------------------

@dataclass
class ModelConfig:
    d_model: int = 64  # ignored when width is proportional
    width: str = "fixed"  # fixed: d_model as set | proportional: d_model = d_k * n_heads (muP's setting)
    d_v: int = 64
    n_layers: int = 1
    n_heads: int = 1
    init: str = "lecun_normal"  # projection init: lecun_normal | xavier | torch_default
    # a factor on W_q's and W_k's init (every variant): moves the logits' spread at init, sigma_0,
    # by qk_init_gain^2 at a fixed d_k (the Britz control of experiment=init_gain)
    qk_init_gain: float = 1.0
    token_shift: bool = True  # add the previous token's embedding (see model.py)
    positions: bool = False  # add a learned embedding of each window position (see model.py)
    mlp: int = 0  # hidden width of an MLP after each attention layer (a transformer block); 0: none
    dtype: str = "float32"
    # compute the last layer's query rows without forming keys and values:
    # variants whose score is bilinear (training.reassociate.bilinear_rows) or has a
    # factored form (factored_rows); same function, other rounding; ignored by the others
    reassociate: bool = False


@dataclass
class TrainConfig:
    steps: int = 1000
    batch_size: int = 64
    eval_every: int = 50
    threshold: float = 0.9
    n_val: int = 512
    n_test: int = 2048
    schedule: str = "constant"  # constant | cosine
    warmup_steps: int = 0
    clip_norm: Optional[float] = None  # global-norm clipping; None = off
    divergence_loss: float = 1e4  # a finite loss above this also counts as diverged
    n_seeds: int = 1  # train seeds seed .. seed+n_seeds-1 as one vmapped program
    # stop a group once every lane has reached `threshold` on validation (or has
    # diverged); `steps` is then the budget
    stop_at_threshold: bool = False
    # stop the lanes of rates that can no longer be the best (training.prune)
    prune: PruneRule = field(default_factory=PruneRule)


@dataclass
class RuntimeConfig:
    """How a job uses this machine; never changes the numbers."""
    compile_cache: bool = True  # JAX's persistent compilation cache
    compile_cache_dir: Optional[str] = None  # None: $JAX_COMPILATION_CACHE_DIR, else ~/.cache/attention-scaling/jax
    threads: Optional[int] = None  # XLA/BLAS threads per job; None: cores / parallel jobs
    shard_seeds: bool = True  # spread the lanes of a group over one CPU device per thread
    # lanes vmapped at once per device, the blocks run one after another;
    # None: 1 on a CPU (memory-bound: each lane at its single-lane speed), all elsewhere
    lane_block: Optional[int] = None


@dataclass
class Config:
    attention: Any = MISSING
    task: Any = MISSING
    optimizer: Any = MISSING
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    d_k: int = 64
    seed: int = 0
    results_dir: str = "results"
    overwrite: bool = False
    experiment: str = "default"  # name of the sweep; the W&B group
    progress: bool = True
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)


def register_schemas() -> None:
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=Config)
    # Outside the config groups, so that `--help` does not offer a schema as
    # an option of its group; each conf/<group>/<name>.yaml pulls in its own
    # with `- /schema_<group>_<name>@_here_`.
    for name, node in ATTENTION_SCHEMAS.items():
        _store_option(cs, "attention", name, node)
    for name, node in OPTIMIZER_SCHEMAS.items():
        cs.store(name=f"schema_optimizer_{name}", node=node)
    for name, task in TASKS.items():
        _store_option(cs, "task", name, task.config_cls)
    cs.store(name="schema_logger", node=LoggerConfig)
    for name, node in (("cost", CostConfig), ("probe", ProbeConfig), ("bench", BenchConfig),
                       ("collect", CollectConfig), ("confirm", ConfirmConfig), ("replay", ReplayConfig),
                       ("temperature", TemperatureConfig), ("init_gain", InitGainConfig)):
        cs.store(name=f"{name}_schema", node=node)


def _store_option(cs: ConfigStore, group: str, name: str, node: type) -> None:
    """A variant's or task's schema; where conf/<group>/<name>.yaml is absent, also the option
    itself, at the defaults its module declares (docs/EXTENDING.md: the yaml is optional)."""
    cs.store(name=f"schema_{group}_{name}", node=node)
    if not (Path(CONF_DIR) / group / f"{name}.yaml").exists():
        cs.store(group=group, name=name, node=node)


register_schemas()


# --- range checks ----------------------------------------------------------------

def _positive(key: str, value) -> None:
    """A finite number > 0 (nan and inf fail: a nan learning rate trains nothing)."""
    check(math.isfinite(value) and value > 0, key, "must be a finite number > 0", value)


def validate(cfg: DictConfig) -> None:
    """Range checks on a composed training config; raises ValueError naming the key."""
    _validate_top(cfg)
    _validate_optimizer(cfg.optimizer)
    _validate_model(cfg.model)
    _validate_train(cfg.train)
    check_seed("seed", cfg.seed, last=cfg.train.n_seeds - 1)
    ranges.validate_runtime(cfg.get("runtime"))
    ranges.validate_launcher(cfg)
    ranges.validate_lr(cfg)
    ranges.validate_c_grid(cfg)
    check(cfg.task.name in TASKS, "task", f"must be one of {', '.join(TASKS)}", cfg.task.name)
    TASKS[cfg.task.name].validate(cfg.task)
    validate_logger(cfg.logger)
    # last: the estimate needs every size above to be in range
    memory.check_fits(cfg)


def _validate_top(cfg: DictConfig) -> None:
    """Known keys, the variant and its options, d_k, results_dir."""
    known = set(Config.__dataclass_fields__) | {"hydra"}
    unknown = sorted(set(cfg.keys()) - known)
    check(not unknown, unknown[0] if unknown else "", f"unknown key; allowed: {', '.join(sorted(known - {'hydra'}))}",
           cfg[unknown[0]] if unknown else None)
    check(cfg.attention.name in attention.VARIANTS, "attention",
           f"must be one of {', '.join(sorted(attention.VARIANTS))}", cfg.attention.name)
    check(cfg.d_k >= 1, "d_k", "must be >= 1", cfg.d_k)
    check(bool(cfg.results_dir), "results_dir", "must be a non-empty path", cfg.results_dir)
    variant = attention.get_variant(cfg.attention.name)
    if variant.check is not None:
        variant.check({k: v for k, v in cfg.attention.items() if k != "name"})


def _validate_optimizer(o) -> None:
    check(o.name in OPTIMIZER_SCHEMAS, "optimizer", f"must be one of {', '.join(OPTIMIZER_SCHEMAS)}", o.name)
    _positive("optimizer.lr", o.lr)
    if o.get("lr_grid") is not None:
        check(len(o.lr_grid) >= 1, "optimizer.lr_grid", "must be a non-empty list of rates or null",
               list(o.lr_grid))
        for lr in o.lr_grid:
            check(isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0, "optimizer.lr_grid",
                   "must hold finite numbers > 0", list(o.lr_grid))
        check(len(set(o.lr_grid)) == len(o.lr_grid), "optimizer.lr_grid",
               "must not repeat a rate (each lane is its own run)", list(o.lr_grid))
    if o.name == "sgd":
        check(0 <= o.momentum < 1, "optimizer.momentum", "must be in [0, 1)", o.momentum)
    else:
        check(0 <= o.b1 < 1, "optimizer.b1", "must be in [0, 1)", o.b1)
        check(0 <= o.b2 < 1, "optimizer.b2", "must be in [0, 1)", o.b2)
        _positive("optimizer.eps", o.eps)
    if o.name == "adamw":
        check(math.isfinite(o.weight_decay) and o.weight_decay >= 0, "optimizer.weight_decay",
               "must be a finite number >= 0", o.weight_decay)


def _validate_model(m) -> None:
    for key in ("d_model", "d_v", "n_layers", "n_heads"):
        check(m[key] >= 1, f"model.{key}", "must be >= 1", m[key])
    check(m.get("mlp", 0) >= 0, "model.mlp", "must be >= 0 (0: no MLP)", m.get("mlp", 0))
    check(m.init in INITS, "model.init", f"must be one of {', '.join(INITS)}", m.init)
    _positive("model.qk_init_gain", m.get("qk_init_gain", 1.0))
    check(m.width in memory.WIDTHS, "model.width", f"must be one of {', '.join(memory.WIDTHS)}", m.width)
    check(m.dtype in ("float32", "bfloat16"), "model.dtype", "must be float32 or bfloat16", m.dtype)


def _validate_train(t) -> None:
    check(1 <= t.steps <= ranges.STEPS_MAX, "train.steps", f"must be in [1, {ranges.STEPS_MAX}]", t.steps)
    check(t.batch_size >= 1, "train.batch_size", "must be >= 1", t.batch_size)
    check(t.eval_every >= 1, "train.eval_every", "must be >= 1", t.eval_every)
    check(t.steps <= t.eval_every * ranges.EVALS_MAX, "train.eval_every",
           f"must be >= train.steps / {ranges.EVALS_MAX} (at most {ranges.EVALS_MAX} evaluations a run)",
           t.eval_every)
    check(0 < t.threshold <= 1, "train.threshold", "must be in (0, 1]", t.threshold)
    check(t.n_val >= 1, "train.n_val", "must be >= 1", t.n_val)
    check(t.n_test >= 1, "train.n_test", "must be >= 1", t.n_test)
    check(t.schedule in ("constant", "cosine"), "train.schedule", "must be constant or cosine", t.schedule)
    check(0 <= t.warmup_steps < t.steps, "train.warmup_steps", "must be in [0, train.steps)", t.warmup_steps)
    if t.clip_norm is not None:
        check(math.isfinite(t.clip_norm) and t.clip_norm > 0, "train.clip_norm",
               "must be a finite number > 0 or null", t.clip_norm)
    check(t.divergence_loss > 0, "train.divergence_loss", "must be > 0", t.divergence_loss)
    check(t.n_seeds >= 1, "train.n_seeds", "must be >= 1", t.n_seeds)
    check(t.n_seeds <= SEED_MAX, "train.n_seeds", f"must be <= {SEED_MAX}", t.n_seeds)
    validate_prune(t.prune, "train.prune")


def validate_prune(p, key: str) -> None:
    """Range checks on a PruneRule config (train.prune, or the replay's prune)."""
    check(0 <= p.min_frac <= 1, f"{key}.min_frac", "must be in [0, 1]", p.min_frac)
    check(math.isfinite(p.slack) and p.slack >= 0, f"{key}.slack", "must be a finite number >= 0", p.slack)
    check(p.window >= 1, f"{key}.window", "must be >= 1", p.window)
    check(p.keep_below >= 0, f"{key}.keep_below", "must be >= 0", p.keep_below)
    check(p.spare_seeds >= 0, f"{key}.spare_seeds", "must be >= 0", p.spare_seeds)
