"""How much memory a training configuration needs, estimated before anything is allocated.

    shapes = Shapes.from_config(cfg)        # a composed train config
    estimate(shapes).total_bytes            # bytes, all lanes of the job together
    available_bytes()                       # what this machine has free now

Arithmetic on the config (nothing is traced or allocated): the pre-flight compares the two and
stops a configuration that cannot fit with one line, instead of letting XLA
fail (or the machine swap) minutes into a sweep.

What is counted, in float32 (4 bytes; a conservative count for bfloat16):
  state        params + optimizer state, and the gradients and updates of a step
  train step   the activations of one step (`step.train_step`) that the
               backward pass keeps or makes, per layer: the attention rows
               B x H x n_q x T (logits, weights, their gradients, softmax
               temporaries); for the additive variant the B x H x n_q x T x
               d_hidden tanh tensor (tanh and its gradient); the
               projections and residual stream; the head's B x n_q x classes
  evaluation   the rows of every evaluation chunk (`step.evaluate` keeps the
               logits and weights of the whole validation set for the row
               statistics) plus the forward pass of one chunk of EVAL_CHUNK
               examples (additive: its tanh tensor)
n_q is the number of rows computed: T for the inner layers, the loss
positions for the last (see model.py). Seeds are one vmapped program, so
everything is multiplied by the lanes of the job (train.n_seeds x the rates
of optimizer.lr_grid). The peak is the state plus the
larger of the train step and the evaluation (they run one after the other).
tests/test_bad_input.py checks the estimate against XLA's own memory analysis.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import NamedTuple

EVAL_CHUNK = 128  # = experiments.training.group.EVAL_CHUNK (not imported: group pulls in optax and jax)
FLOAT_BYTES = 4
LIMIT_ENV = "ATTN_MEMORY_LIMIT_GB"  # overrides the machine's available memory (tests, shared nodes)

WIDTHS = ("fixed", "proportional")


def model_width(width: str, d_model: int, d_k: int, n_heads: int) -> int:
    """The model's d_model: as configured (`fixed`), or d_k * n_heads (`proportional`: the
    width grows with the head dimension, the setting of muP's prediction about 1/d_k).
    Here, jax-free, because both the memory estimate and the model's spec need it."""
    if width not in WIDTHS:
        raise ValueError(f"model.width: must be one of {', '.join(WIDTHS)}, got {width!r}")
    return d_k * n_heads if width == "proportional" else d_model


# Buffers of the size of one layer's attention rows B x H x n_q x T (logits and
# weights kept for the backward pass, their gradients) and of the additive
# tanh tensor, as counted by reading step.py and attention/; calibrated so that
# the estimate is a little above XLA's memory analysis (1.1x to 2x on the CPU).
TRAIN_ROW_BUFFERS = 4
EVAL_ROW_BUFFERS = 6        # every chunk's logits and weights, stacked copies, row_summary's temporaries
ADDITIVE_TRAIN_BUFFERS = 2  # tanh and its gradient (the pre-activation is fused)
ADDITIVE_EVAL_BUFFERS = 1   # the tanh of one chunk


def _variant_param_count(att, d_k: int) -> int:
    """Parameters per head of the variant's own init, from its shapes alone (nothing runs)."""
    import jax
    import jax.numpy as jnp

    import attention

    options = {k: v for k, v in att.items() if k != "name"}
    shapes = jax.eval_shape(lambda rng: attention.init_params(att.name, rng, d_k, **options),
                            jax.ShapeDtypeStruct((2,), jnp.uint32))
    return sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(shapes))


class Shapes(NamedTuple):
    """Every size the estimate needs (see model.py for where each appears)."""
    batch: int          # train.batch_size
    seq_len: int        # T
    n_queries: int      # rows of the last layer: loss positions per example
    vocab: int
    n_classes: int
    d_in: int
    d_model: int
    d_k: int
    d_v: int
    n_layers: int
    n_heads: int
    d_hidden: int       # additive only (0 otherwise)
    variant_params: int  # the variant's own parameters per head
    token_shift: bool
    opt_slots: int      # optimizer state, in copies of the params
    n_val: int
    n_lanes: int        # train.n_seeds x len(optimizer.lr_grid): runs trained as one program

    @classmethod
    def from_config(cls, cfg) -> "Shapes":
        """From a composed (and range-checked) train config."""
        from experiments.tasks import TASKS

        task = TASKS[cfg.task.name]
        att, m, t, o = cfg.attention, cfg.model, cfg.train, cfg.optimizer
        d_hidden = (att.get("d_hidden") or cfg.d_k) if "d_hidden" in att else 0  # the additive forms
        variant_params = _variant_param_count(att, cfg.d_k)
        if o.name in ("adam", "adamw"):
            slots = 2
        else:
            slots = 1 if o.get("momentum") else 0
        return cls(batch=t.batch_size, seq_len=task.seq_len(cfg.task),
                   n_queries=task.n_queries(cfg.task), vocab=task.input_vocab(cfg.task),
                   n_classes=task.n_classes(cfg.task), d_in=task.d_in(cfg.task),
                   d_model=model_width(m.get("width", "fixed"), m.d_model, cfg.d_k, m.n_heads),
                   d_k=cfg.d_k, d_v=m.d_v, n_layers=m.n_layers,
                   n_heads=m.n_heads, d_hidden=d_hidden, variant_params=variant_params,
                   token_shift=bool(m.token_shift), opt_slots=slots, n_val=t.n_val,
                   n_lanes=t.get("n_seeds", 1) * len(o.get("lr_grid") or [o.lr])
                   * len(cfg.attention.get("c_grid") or [1]))


@dataclass(frozen=True)
class Estimate:
    """Bytes, all lanes together."""
    params: int
    state: int
    train_step: int
    evaluation: int

    @property
    def total_bytes(self) -> int:
        return self.state + max(self.train_step, self.evaluation)


def n_params(s: Shapes) -> int:
    dm, h = s.d_model, s.n_heads
    embed = s.vocab * dm * (2 if s.token_shift else 1) + s.d_in * dm
    layer = 2 * dm + 2 * dm * h * s.d_k + 2 * dm * h * s.d_v + h * s.variant_params
    return embed + s.n_layers * layer + 2 * dm + dm * s.n_classes


def _forward_layer(s: Shapes, batch: int, n_q: int) -> int:
    """Elements of one layer's forward activations, attention rows excluded."""
    h, t = s.n_heads, s.seq_len
    per_key = 3 * s.d_model + h * (s.d_k + s.d_v) + (h * s.d_hidden if s.d_hidden else 0)
    per_query = 2 * s.d_model + h * (s.d_k + s.d_v) + (h * s.d_hidden if s.d_hidden else 0)
    return batch * (t * per_key + n_q * per_query)


def _rows(s: Shapes, batch: int, n_q: int) -> int:
    """Elements of one layer's attention rows B x H x n_q x T."""
    return batch * s.n_heads * n_q * s.seq_len


def _row_counts(s: Shapes) -> list[int]:
    """n_q of each layer: every position for the inner layers, the loss positions for the last."""
    return [s.seq_len] * (s.n_layers - 1) + [s.n_queries]


def _embed(s: Shapes, batch: int) -> int:
    return batch * s.seq_len * (s.d_model * 3 + s.d_in + 4)


def train_step_elements(s: Shapes) -> int:
    b = s.batch
    total = 2 * _embed(s, b) + 3 * b * s.n_queries * s.n_classes
    for n_q in _row_counts(s):
        total += _forward_layer(s, b, n_q) * 3 // 2  # activations, gradients (partly in place)
        total += TRAIN_ROW_BUFFERS * _rows(s, b, n_q)
        if s.d_hidden:
            total += ADDITIVE_TRAIN_BUFFERS * _rows(s, b, n_q) * s.d_hidden
    return total


def evaluation_elements(s: Shapes) -> int:
    chunk = min(EVAL_CHUNK, s.n_val)
    n_chunks = math.ceil(s.n_val / chunk)
    val_set = n_chunks * chunk * s.seq_len * (3 + s.d_in)
    total = val_set + _embed(s, chunk) + 2 * chunk * s.n_queries * s.n_classes
    for n_q in _row_counts(s):
        total += _forward_layer(s, chunk, n_q) + 2 * _rows(s, chunk, n_q)
        if s.d_hidden:
            total += ADDITIVE_EVAL_BUFFERS * _rows(s, chunk, n_q) * s.d_hidden
        # the statistics see the rows of every layer at the loss positions only
        total += EVAL_ROW_BUFFERS * _rows(s, n_chunks * chunk, s.n_queries)
    return total


def estimate(s: Shapes) -> Estimate:
    p = n_params(s)
    state = p * (1 + s.opt_slots + 2)  # params, optimizer slots, gradients, updates
    lanes = s.n_lanes * FLOAT_BYTES
    return Estimate(params=p * lanes, state=state * lanes,
                    train_step=train_step_elements(s) * lanes,
                    evaluation=evaluation_elements(s) * lanes)


# --- the machine ----------------------------------------------------------------------

def available_bytes() -> tuple[int | None, str]:
    """(bytes this machine can give a run now, where the number comes from).

    ATTN_MEMORY_LIMIT_GB wins; else MemAvailable of /proc/meminfo (Linux);
    else free pages from os.sysconf; (None, ...) when nothing is known.
    This is host memory: on a GPU, set ATTN_MEMORY_LIMIT_GB to the device's.
    """
    limit = os.environ.get(LIMIT_ENV)
    if limit:
        try:
            gb = float(limit)
        except ValueError:
            gb = math.nan
        if not (math.isfinite(gb) and gb > 0):
            raise ValueError(f"{LIMIT_ENV}: must be a finite number of GB > 0 (or unset), "
                             f"got {limit!r}") from None
        return int(gb * 1e9), LIMIT_ENV
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable"
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free pages"
    except (ValueError, OSError, AttributeError):
        return None, "unknown"


def budget(cfg) -> tuple[int | None, int, str]:
    """(bytes available to one job or None, jobs running at once, the phrase saying so).

    The launcher of a multirun decides: SLURM tasks get hydra.launcher.mem_gb
    each; joblib and submitit_local run several jobs at once on this machine.
    (The pre-flight sets hydra.mode to MULTIRUN for -m; a single run ignores
    the launcher.)"""
    from omegaconf import OmegaConf

    multirun = "MULTIRUN" in str(OmegaConf.select(cfg, "hydra.mode", default=None))
    launcher = str(OmegaConf.select(cfg, "hydra.launcher._target_", default="") or "").lower() \
        if multirun else ""
    if "slurm" in launcher and OmegaConf.select(cfg, "hydra.launcher.mem_gb", default=None):
        mem = int(cfg.hydra.launcher.mem_gb * 1e9)
        return mem, 1, f"a SLURM task gets {_gb(mem)} (hydra.launcher.mem_gb)"
    parallel = 1
    if "joblib" in launcher:
        n_jobs = OmegaConf.select(cfg, "hydra.launcher.n_jobs", default=1) or 1
        parallel = (os.cpu_count() or 1) if n_jobs < 0 else n_jobs
    elif "submitit" in launcher:
        parallel = OmegaConf.select(cfg, "hydra.sweeper.max_batch_size", default=1) or 1
    have, source = available_bytes()
    if have is None:
        return None, 1, "unknown"
    where = f"{LIMIT_ENV} allows {_gb(have)}" if source == LIMIT_ENV else \
        f"this machine has {_gb(have)} available"
    return have, max(1, int(parallel)), where


def check_fits(cfg) -> None:
    """Raise ValueError naming the key to lower when the estimate exceeds what is available."""
    s = Shapes.from_config(cfg)
    est = estimate(s)
    have, parallel, where = budget(cfg)
    need = est.total_bytes * parallel
    if have is None or need <= have:
        return
    jobs = f" ({parallel} jobs at once)" if parallel > 1 else ""
    grid = cfg.optimizer.get("lr_grid")
    one_lane = estimate(s._replace(n_lanes=1)).total_bytes * parallel
    if s.n_lanes > 1 and one_lane <= have:  # the lanes are what does not fit
        key = "optimizer.lr_grid" if grid else "train.n_seeds"
        lanes = f"{len(grid)} rates x {cfg.train.n_seeds} seeds" if grid else \
            f"{cfg.train.n_seeds} seeds"
        raise ValueError(f"{key}: {lanes} = {s.n_lanes} lanes need about {_gb(need)} "
                         f"(estimated){jobs}, {where}; lower optimizer.lr_grid or train.n_seeds "
                         f"(one lane needs {_gb(one_lane)}), or split the grid over jobs")
    key = "train.batch_size" if est.train_step >= est.evaluation else "train.n_val"
    raise ValueError(f"{key}: this configuration needs about {_gb(need)} (estimated){jobs}, "
                     f"{where}; lower {key}, d_k or task sizes")


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
