"""What is static about a configuration's model: the ModelSpec (a jit cache key), read from a config."""
from __future__ import annotations

from typing import NamedTuple

from omegaconf import DictConfig, OmegaConf

import attention
from experiments.tasks import TASKS
from experiments.training.memory import model_width


# attention keys that are not the program's: the name, and the lanes' multipliers (Lane.c)
LANE_OPTIONS = ("name", "c_grid")


class ModelSpec(NamedTuple):
    """Everything static about the model (hashable: a jit cache key)."""
    attention: str
    attention_options: tuple  # ((key, value), ...) of the variant's knobs
    d_k: int
    d_model: int
    d_v: int
    n_layers: int
    n_heads: int
    init: str
    token_shift: bool
    vocab: int
    n_classes: int
    d_in: int
    dtype: str = "float32"
    reassociate: bool = False  # model.reassociate: see bilinear_rows
    positions: int = 0  # learned position embeddings (model.positions): the window length; 0 none
    mlp: int = 0  # model.mlp: the hidden width of each layer's MLP; 0 none
    qk_init_gain: float = 1.0  # model.qk_init_gain: a factor on W_q's and W_k's init

    @property
    def options(self) -> dict:
        return dict(self.attention_options)



def model_spec(cfg: DictConfig, task_cfg) -> ModelSpec:
    task = TASKS[cfg.task.name]
    options = {k: v for k, v in OmegaConf.to_container(cfg.attention).items() if k not in LANE_OPTIONS}
    if "c" in options and "c_grid" in cfg.attention:  # the lanes' c is data (Lane.c): 1 in the program
        options["c"] = 1.0
    return ModelSpec(
        attention=cfg.attention.name, attention_options=tuple(sorted(options.items())),
        d_k=cfg.d_k, d_model=model_width(cfg.model.get("width", "fixed"), cfg.model.d_model, cfg.d_k,
                                         cfg.model.n_heads), d_v=cfg.model.d_v,
        n_layers=cfg.model.n_layers, n_heads=cfg.model.n_heads, init=cfg.model.init,
        token_shift=cfg.model.token_shift, vocab=task.input_vocab(task_cfg),
        n_classes=task.n_classes(task_cfg), d_in=task.d_in(task_cfg), dtype=cfg.model.dtype,
        reassociate=bool(cfg.model.get("reassociate", False))
        and attention.get_variant(cfg.attention.name).reassociable,
        positions=task.seq_len(task_cfg) if cfg.model.get("positions", False) else 0,
        mlp=int(cfg.model.get("mlp", 0)), qk_init_gain=float(cfg.model.get("qk_init_gain", 1.0)))


def task_object(task_dict: dict):
    """The task's config dataclass (what the task functions expect)."""
    return TASKS[task_dict["name"]].config_cls(**task_dict)
