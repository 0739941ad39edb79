"""Shared pieces of the synthetic tasks: the batch contract, the task spec,
key streams, and small samplers.

Batch = dict(tokens=int32[B,T], vectors=float32[B,T,d_in],
             targets=int32[B,T], loss_mask=float32[B,T])
Targets are 0 wherever loss_mask is 0, so every target is a valid class.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp

from attention.checks import check as _check
from attention.checks import is_int

Batch = dict[str, jax.Array]

# Token 0 is the null/filler token in every token task; keys never use it so a
# filler can never be mistaken for a key.
NULL_TOKEN = 0

# Split ids for stream_key. The data streams are first folded with DATA_TAG so
# that they never coincide with other uses of the same seed (parameter init,
# dropout), which would typically fold in small integers like 0, 1, 2.
SPLITS = {"train": 0, "val": 1, "test": 2}
DATA_TAG = 0x7A5C
# A seed is int32 wherever seeds are traced (a vmapped lane axis of seeds), so
# every command takes seeds in [0, SEED_MAX].
SEED_MAX = 2**31 - 1


@dataclass(frozen=True)
class TaskSpec:
    """Everything the harness needs to know about one task."""

    name: str
    config_cls: type
    make_batch: Callable[[Any, jax.Array, int], Batch]
    input_vocab: Callable[[Any], int]
    n_classes: Callable[[Any], int]
    seq_len: Callable[[Any], int]
    d_in: Callable[[Any], int]
    validate: Callable[[Any], None]
    # loss positions per example (at most): the rows the model's last layer computes; part of
    # the compiled programs' shapes, so it is declared, not read off a batch
    n_queries: Callable[[Any], int]
    # a task whose splits hold different data (charlm: other plays) draws from the split's own;
    # None: the split is only the key stream (stream_key), the same generator for every split
    split_batch: Callable[[Any, jax.Array, int, str], Batch] | None = None
    # the task's own yardsticks beyond chance (charlm: bits per character of the guesses that ignore
    # context), recorded in every run's summary so that the analysis never rebuilds them
    yardsticks: Callable[[Any], dict[str, float]] | None = None
    # the number of keys a query attends over (task.n_keys, the one name of that axis in every
    # task, and the summary column `n_keys`); n_keys_alias: the task's own key it stands for
    # (assoc_recall's n_pairs), left out of a run's identity where the two agree
    n_keys: Callable[[Any], int] | None = None
    n_keys_alias: str | None = None


# the functions a task module defines under TaskSpec's own names (module_spec reads them)
MODULE_FUNCTIONS = ("input_vocab", "n_classes", "seq_len", "d_in", "validate", "n_queries")


def module_spec(name: str, config_cls: type, namespace: dict[str, Any], **optional: Any) -> TaskSpec:
    """The spec of a task module that defines make_batch and MODULE_FUNCTIONS under those names
    (`namespace`: its globals()); `optional`: TaskSpec's optional fields. make_batch is compiled
    once per config (jit_per_config)."""
    return TaskSpec(name=name, config_cls=config_cls, make_batch=jit_per_config(namespace["make_batch"]),
                    **{f: namespace[f] for f in MODULE_FUNCTIONS}, **optional)


def pairs_axis() -> dict[str, Any]:
    """A key-value task's n_keys: its number of pairs (task.n_keys where set, else task.n_pairs)."""
    return {"n_keys": lambda cfg: pairs_of(cfg)[0], "n_keys_alias": "n_pairs"}


def recorded_yardsticks(spec: TaskSpec, cfg: Any) -> dict[str, float]:
    """What a run's summary records of its task, beside its scores: `chance_accuracy` (1 / the
    number of classes: a diverged run counts at it) and the spec's own yardsticks. The results
    folder then holds all the analysis needs, even where the task's inputs (a corpus) are gone."""
    return {"chance_accuracy": 1.0 / spec.n_classes(cfg), **(spec.yardsticks(cfg) if spec.yardsticks else {}),
            **({"n_keys": int(spec.n_keys(cfg))} if spec.n_keys else {})}


def pairs_of(cfg: Any) -> tuple[int, str]:
    """A recall task's number of key-value pairs and the key that set it: task.n_keys where
    set (the axis' name in every task), else the task's own task.n_pairs."""
    n = getattr(cfg, "n_keys", None)
    return (cfg.n_pairs, "n_pairs") if n is None else (n, "n_keys")


def check(ok: bool, field: str, allowed: str, value: Any) -> None:
    """A task's range check (`attention.checks.check` under `task.<field>`)."""
    _check(ok, f"task.{field}", allowed, value)


def check_int(cfg: Any, field: str, lo: int) -> None:
    value = getattr(cfg, field)
    check(is_int(value) and value >= lo, field, f"must be an integer >= {lo}", value)


def check_seed(key: str, seed, last: int = 0) -> None:
    """A seed that every random stream takes; `last` more seeds follow it."""
    _check(0 <= seed <= SEED_MAX - last, key, f"must be in [0, {SEED_MAX - last}]"
          + (f" (seeds {key} .. {key}+{last} must fit in [0, {SEED_MAX}])" if last else ""), seed)


def jit_per_config(make_batch: Callable[..., Batch]) -> Callable[..., Batch]:
    """Compile make_batch once per (config, batch_size, any further static
    arguments, such as a split), rng the only traced argument.

    Called eagerly, a batch maker would compile each of its ops separately for
    every new shape (seconds per config); one cached jit is faster and gives
    the same bits on every call. Inside an outer jit it simply inlines.
    Non-dataclass configs (e.g. a raw DictConfig) run uncompiled."""

    @functools.lru_cache(maxsize=None)
    def compiled(cfg_type: type, values: tuple, batch_size: int, static: tuple):
        cfg = cfg_type(*values)
        return jax.jit(lambda rng: make_batch(cfg, rng, batch_size, *static))

    @functools.wraps(make_batch)
    def wrapper(cfg: Any, rng: jax.Array, batch_size: int, *static) -> Batch:
        if not dataclasses.is_dataclass(cfg):
            return make_batch(cfg, rng, batch_size, *static)
        # a list field (charlm's plays) is a tuple in the cache key: hashable, same values
        values = tuple(_hashable(getattr(cfg, f.name)) for f in dataclasses.fields(cfg))
        return compiled(type(cfg), values, int(batch_size), static)(rng)

    return wrapper


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def draw_batch(spec: TaskSpec, cfg: Any, rng: jax.Array, batch_size: int, split: str) -> Batch:
    """A batch of `split`: from the split's own data where the task has it."""
    if spec.split_batch is None:
        return spec.make_batch(cfg, rng, batch_size)
    return spec.split_batch(cfg, rng, batch_size, split)


# --- vocabulary layout of the token tasks -----------------------------------


def key_range(vocab_size: int) -> tuple[int, int]:
    """Keys come from the lower half, without the null token: [1, V//2)."""
    return 1, vocab_size // 2


def value_range(vocab_size: int) -> tuple[int, int]:
    """Values come from the upper half: [V//2, V). Targets are value - V//2."""
    return vocab_size // 2, vocab_size


# --- samplers ---------------------------------------------------------------


def sample_distinct(rng: jax.Array, log_weights: jax.Array, batch: int, k: int) -> jax.Array:
    """k distinct indices per row, drawn one after another without replacement
    with probability proportional to exp(log_weights) (Gumbel top-k; it has
    the same law as sequential np.random.choice(replace=False, p=...)).
    Returns int32[batch, k]; uniform when log_weights is constant."""
    n = log_weights.shape[0]
    gumbel = jax.random.gumbel(rng, (batch, n), dtype=jnp.float32)
    _, idx = jax.lax.top_k(log_weights[None, :] + gumbel, k)  # (B, k), in draw order
    return idx.astype(jnp.int32)


def token_batch(tokens: jax.Array, targets: jax.Array, loss_mask: jax.Array) -> Batch:
    """Assemble a batch for a token task (d_in = 0: vectors is [B, T, 0])."""
    b, t = tokens.shape
    return dict(
        tokens=tokens.astype(jnp.int32),
        vectors=jnp.zeros((b, t, 0), jnp.float32),
        targets=(targets * (loss_mask > 0)).astype(jnp.int32),
        loss_mask=loss_mask.astype(jnp.float32),
    )


# --- key streams ------------------------------------------------------------


def stream_key(seed: int, split: str) -> jax.Array:
    """The root key of one split's stream; train, val and test never share keys.
    Works with a traced seed (vmap over seeds)."""
    _check(split in SPLITS, "split", f"must be one of {sorted(SPLITS)}", split)
    data = jax.random.fold_in(jax.random.PRNGKey(seed), DATA_TAG)
    return jax.random.fold_in(data, SPLITS[split])


def fixed_set(spec: TaskSpec, cfg: Any, seed: int, split: str, n_examples: int) -> Batch:
    """One batch of n_examples from a split's stream: the fixed val/test set."""
    return draw_batch(spec, cfg, stream_key(seed, split), n_examples, split)


def train_batch(spec: TaskSpec, cfg: Any, seed: int, step: int | jax.Array, batch_size: int) -> Batch:
    """The training batch of one step: fold_in(step) on the train stream, so a
    step's batch does not depend on how many batches came before it."""
    rng = jax.random.fold_in(stream_key(seed, "train"), step)
    return draw_batch(spec, cfg, rng, batch_size, "train")
