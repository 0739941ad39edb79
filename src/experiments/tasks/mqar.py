"""Multi-query associative recall (MQAR; Arora et al. 2023, Zoology).

n_pairs key-value pairs first (keys distinct, from [1, V//2); values from
[V//2, V)), then a query region where every key is queried once. Query slots
sit at even offsets 2*g after the pairs, so a query is never next to another
one; the gap g in [0, space), space = (T - 2n) // 2, is drawn as in Zoology:
without replacement, p(g) proportional to a * (g+1)^(a-1), which with a = 0.01
strongly favours short distances. As in Zoology, the j-th key of the context
takes the j-th drawn gap.

Convention for a causal model with token shift: the target sits at the query
position itself (Zoology puts it on the next token). Loss and accuracy at query
positions only.

The study's defaults are a scaled-down MQAR, so that a 1-layer model learns it
on a CPU in ~1000 steps. Each difference from Zoology (Figure 2 and its
configs), and the setting that gives Zoology's (conf/experiment/mqar_zoology.yaml
sets them all, at Zoology's sizes):

    what           here (default)                   Zoology                 setting
    vocabulary     256                              8,192                   vocab_size=8192
    pairs, T = 64  8                                4                       n_pairs=4
    values         drawn with replacement           distinct                distinct_values=true
    output head    V//2 classes: value - V//2       V classes: the token    head=full_vocab
    fillers        uniform over the value half      the null token 0        random_fillers=false

Fillers are the positions of the query region that hold no query. Zoology's
code can also draw them (random_non_queries, from the whole vocabulary; its
paper configs turn it off); ours keep keys out of the fillers because a filler
equal to a key k makes the next position look like a second value of k (its
shifted token is k), a distractor that would make the task ill-posed (vocab
8192, seq_len 512, 64 pairs: 320 fillers * 64/8192 = 2.5 such collisions per
sequence). With head=full_vocab the chance level the analysis reads
(1 / classes) is 1/V, though only the V//2 value tokens are ever right.

Worked example, vocab_size=16, seq_len=12, n_pairs=2 (keys 1..7, values
8..15, space = 4 slots at positions 4, 6, 8, 10), gaps: key 3 -> 2, key 5 -> 0:

    position   0  1  2  3  4  5  6  7  8  9 10 11
    tokens     3 12  5  9  5 14 10  8  3 11 15 13
    targets    0  0  0  0  1  0  0  0  4  0  0  0   <- 9-8, 12-8
    loss_mask  0  0  0  0  1  0  0  0  1  0  0  0

With head=full_vocab the targets are the values themselves: 9 at 4, 12 at 8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp

from .common import (
    NULL_TOKEN,
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
class MQARConfig:
    name: str = "mqar"
    # A scaled-down MQAR (the docstring's table); Zoology's settings are accepted
    # unchanged (conf/experiment/mqar_zoology.yaml).
    vocab_size: int = 256
    seq_len: int = 64
    n_pairs: int = 8
    # the cross-task name of the axis (TaskSpec.n_keys): where set, the number of pairs
    n_keys: Optional[int] = None
    power_a: float = 0.01  # Zoology's default; 1.0 makes the gaps uniform
    random_fillers: bool = True  # false: fillers are the null token 0, as in Zoology's configs
    distinct_values: bool = False  # true: values without replacement, as in Zoology
    head: str = "value_half"  # or full_vocab: a class per token, the class of a value its id


HEADS = ("value_half", "full_vocab")


def validate(cfg: MQARConfig) -> None:
    check(cfg.name == "mqar", "name", "must be 'mqar'", cfg.name)
    check_int(cfg, "vocab_size", 4)
    n, field = pairs_of(cfg)
    check_int(cfg, field, 1)
    check_int(cfg, "seq_len", 4)
    lo, hi = key_range(cfg.vocab_size)
    check(n <= hi - lo, field, f"must be <= vocab_size//2 - 1 = {hi - lo} (distinct keys from the key half)", n)
    check(cfg.seq_len >= 4 * n, "seq_len",
          f"must be >= 4 * {field} = {4 * n} (pairs, then one query slot per key "
          "at even offsets)", cfg.seq_len)
    a = cfg.power_a
    check(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) and a > 0,
          "power_a", "must be a finite number > 0", a)
    check(cfg.head in HEADS, "head", f"must be one of {', '.join(HEADS)}", cfg.head)


def seq_len(cfg: MQARConfig) -> int:
    return cfg.seq_len


def input_vocab(cfg: MQARConfig) -> int:
    return cfg.vocab_size


def n_classes(cfg: MQARConfig) -> int:
    if cfg.head == "full_vocab":
        return cfg.vocab_size
    lo, hi = value_range(cfg.vocab_size)
    return hi - lo


def n_queries(cfg: MQARConfig) -> int:
    return pairs_of(cfg)[0]  # every key is queried once


def d_in(cfg: MQARConfig) -> int:
    return 0


def n_slots(cfg: MQARConfig) -> int:
    """Number of candidate query slots (gaps) after the key-value pairs."""
    return (cfg.seq_len - 2 * pairs_of(cfg)[0]) // 2


def gap_log_weights(cfg: MQARConfig) -> jax.Array:
    """log p(g) up to a constant: p(g) proportional to a * (g+1)^(a-1)."""
    i = jnp.arange(1, n_slots(cfg) + 1, dtype=jnp.float32)
    return (cfg.power_a - 1.0) * jnp.log(i)


def make_batch(cfg: MQARConfig, rng: jax.Array, batch_size: int) -> Batch:
    validate(cfg)
    b, n, t = batch_size, pairs_of(cfg)[0], cfg.seq_len
    k_lo, k_hi = key_range(cfg.vocab_size)
    v_lo, v_hi = value_range(cfg.vocab_size)
    rng_k, rng_v, rng_g, rng_f = jax.random.split(rng, 4)

    keys = k_lo + sample_distinct(rng_k, jnp.zeros(k_hi - k_lo), b, n)  # (B, n)
    if cfg.distinct_values:  # n <= V//2 - 1 keys, so there are always enough values
        values = v_lo + sample_distinct(rng_v, jnp.zeros(v_hi - v_lo), b, n)  # (B, n)
    else:
        values = jax.random.randint(rng_v, (b, n), v_lo, v_hi, jnp.int32)  # (B, n)
    gaps = sample_distinct(rng_g, gap_log_weights(cfg), b, n)  # (B, n)
    query_pos = 2 * n + 2 * gaps  # (B, n)

    if cfg.random_fillers:
        tokens = jax.random.randint(rng_f, (b, t), v_lo, v_hi, jnp.int32)
    else:
        tokens = jnp.full((b, t), NULL_TOKEN, jnp.int32)
    pairs = jnp.stack([keys, values], axis=-1).reshape(b, 2 * n)  # k0 v0 k1 v1 ...
    tokens = tokens.at[:, : 2 * n].set(pairs)
    rows = jnp.arange(b)[:, None]
    tokens = tokens.at[rows, query_pos].set(keys)
    classes = values if cfg.head == "full_vocab" else values - v_lo
    targets = jnp.zeros((b, t), jnp.int32).at[rows, query_pos].set(classes)
    loss_mask = jnp.zeros((b, t), jnp.float32).at[rows, query_pos].set(1.0)
    return token_batch(tokens, targets, loss_mask)


SPEC = module_spec("mqar", MQARConfig, globals(), **pairs_axis())
