"""Single-query associative recall: the paper's "library" in one task.

n_pairs distinct keys, each followed by its value, then one query (one of the
keys). The model must output that key's value at the query position.
Keys come from [1, V//2) and values from [V//2, V) (token 0 is never used);
values are drawn independently and may repeat. The class is value - V//2.

Worked example, vocab_size=16, n_pairs=3 (keys in 1..7, values in 8..15):

    position   0  1  2  3  4  5  6
    tokens     3 12  5  9  1 12  5      <- pairs (3,12) (5,9) (1,12), query 5
    targets    0  0  0  0  0  0  1      <- value 9, class 9 - 8 = 1
    loss_mask  0  0  0  0  0  0  1

One causal layer with token shift solves it: at the value position t = 3 the
shifted embedding holds key 5; the query at t = 6 carries token 5 and attends
there, reading value 9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp

from .common import (
    Batch,
    check,
    check_int,
    key_range,
    module_spec,
    pairs_axis,
    pairs_of,
    sample_distinct,
    token_batch,
    value_range,
)


@dataclass
class AssocRecallConfig:
    name: str = "assoc_recall"
    # 31 key tokens and 32 value tokens: each key appears often enough in
    # ~1000 steps of training for its embedding to be learnt, and with 16
    # pairs chance accuracy is 1/32 -- cheap on CPU, far from trivial.
    vocab_size: int = 64
    n_pairs: int = 16
    # the cross-task name of the axis (TaskSpec.n_keys): where set, the number of pairs
    n_keys: Optional[int] = None


def validate(cfg: AssocRecallConfig) -> None:
    check(cfg.name == "assoc_recall", "name", "must be 'assoc_recall'", cfg.name)
    check_int(cfg, "vocab_size", 4)
    n, field = pairs_of(cfg)
    check_int(cfg, field, 1)
    lo, hi = key_range(cfg.vocab_size)
    check(n <= hi - lo, field, f"must be <= vocab_size//2 - 1 = {hi - lo} (distinct keys from the key half)", n)


def seq_len(cfg: AssocRecallConfig) -> int:
    return 2 * pairs_of(cfg)[0] + 1


def input_vocab(cfg: AssocRecallConfig) -> int:
    return cfg.vocab_size


def n_classes(cfg: AssocRecallConfig) -> int:
    lo, hi = value_range(cfg.vocab_size)
    return hi - lo


def n_queries(cfg: AssocRecallConfig) -> int:
    return 1  # the query at the end


def d_in(cfg: AssocRecallConfig) -> int:
    return 0


def make_batch(cfg: AssocRecallConfig, rng: jax.Array, batch_size: int) -> Batch:
    validate(cfg)
    b, n, t = batch_size, pairs_of(cfg)[0], seq_len(cfg)
    k_lo, k_hi = key_range(cfg.vocab_size)
    v_lo, v_hi = value_range(cfg.vocab_size)
    rng_k, rng_v, rng_q = jax.random.split(rng, 3)

    keys = k_lo + sample_distinct(rng_k, jnp.zeros(k_hi - k_lo), b, n)  # (B, n)
    values = jax.random.randint(rng_v, (b, n), v_lo, v_hi, jnp.int32)  # (B, n)
    which = jax.random.randint(rng_q, (b, 1), 0, n, jnp.int32)  # (B, 1)
    query = jnp.take_along_axis(keys, which, axis=1)  # (B, 1)
    answer = jnp.take_along_axis(values, which, axis=1) - v_lo  # (B, 1)

    pairs = jnp.stack([keys, values], axis=-1).reshape(b, 2 * n)  # k0 v0 k1 v1 ...
    tokens = jnp.concatenate([pairs, query], axis=1)  # (B, T)
    last = jnp.arange(t) == t - 1  # loss only at the query
    targets = jnp.where(last[None, :], answer, 0)
    loss_mask = jnp.broadcast_to(last, (b, t)).astype(jnp.float32)
    return token_batch(tokens, targets, loss_mask)


SPEC = module_spec("assoc_recall", AssocRecallConfig, globals(), **pairs_axis())
