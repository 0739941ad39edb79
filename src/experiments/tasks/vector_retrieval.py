"""Continuous retrieval: keys are random unit vectors, the query a noisy copy
of one key; predict that key's label. This isolates the compatibility
function: nothing but q.k-style matching of vectors can solve it.

Positions 0..n_keys-1 carry vectors[i] (fresh random unit vectors in R^d_in
for every example) and the token label_i + 1 (labels drawn uniformly from
n_labels, with repetition). The last position carries the query
    q = key_j + noise * g / sqrt(d_in),   g ~ N(0, I),
renormalised to unit length (so the input scale does not change with noise;
renormalising does not change which key is nearest), and the null token 0.
Target at the last position: label_j. Loss only there.

The noise term has norm ~noise whatever d_in is. The Bayes-optimal rule
(nearest key) is right ~99.5% of the time at the defaults (n_keys 64, d_in 32,
noise 1.0), ~87% at noise 1.5, ~63% at 2.0: learnable, not trivial.

Scale note for the model: the vectors have unit norm, so entries ~1/sqrt(d_in).
A linear(vectors) with fan-in init then gives features ~1/sqrt(d_in) times
smaller than N(0,1) token embeddings; in a toy 1-layer d_model=64 check, the
task stayed at chance for 1000 Adam steps that way, but reached ~58% (and
rising) when the vector features had unit scale (e.g. init std 1 for that
projection).

Worked example, n_keys=3, d_in=2, n_labels=4, j=1:

    position   0            1            2            3
    vectors    [1, 0]       [0, 1]       [-.6, -.8]   [.2, .98]  <- ~key 1
    tokens     3            1            4            0          <- labels 2, 0, 3
    targets    0            0            0            0          <- label of key 1
    loss_mask  0            0            0            1
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .common import NULL_TOKEN, Batch, check, check_int, module_spec


@dataclass
class VectorRetrievalConfig:
    name: str = "vector_retrieval"
    n_keys: int = 64
    d_in: int = 32
    noise: float = 1.0  # norm of the perturbation relative to the unit key
    n_labels: int = 64  # chance accuracy ~1/64


def validate(cfg: VectorRetrievalConfig) -> None:
    check(cfg.name == "vector_retrieval", "name", "must be 'vector_retrieval'", cfg.name)
    check_int(cfg, "n_keys", 1)
    check_int(cfg, "d_in", 1)
    check_int(cfg, "n_labels", 2)
    x = cfg.noise
    check(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0,
          "noise", "must be a finite number >= 0", x)


def seq_len(cfg: VectorRetrievalConfig) -> int:
    return cfg.n_keys + 1


def input_vocab(cfg: VectorRetrievalConfig) -> int:
    return cfg.n_labels + 1  # label tokens 1..n_labels plus the null token 0


def n_classes(cfg: VectorRetrievalConfig) -> int:
    return cfg.n_labels


def n_queries(cfg: VectorRetrievalConfig) -> int:
    return 1  # the query vector at the end


def d_in(cfg: VectorRetrievalConfig) -> int:
    return cfg.d_in


def _unit(x: jax.Array) -> jax.Array:
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


def make_batch(cfg: VectorRetrievalConfig, rng: jax.Array, batch_size: int) -> Batch:
    validate(cfg)
    b, n, d = batch_size, cfg.n_keys, cfg.d_in
    rng_k, rng_l, rng_q, rng_n = jax.random.split(rng, 4)

    keys = _unit(jax.random.normal(rng_k, (b, n, d), jnp.float32))  # (B, n, d)
    labels = jax.random.randint(rng_l, (b, n), 0, cfg.n_labels, jnp.int32)  # (B, n)
    which = jax.random.randint(rng_q, (b, 1), 0, n, jnp.int32)  # (B, 1)
    key = jnp.take_along_axis(keys, which[:, :, None], axis=1)[:, 0]  # (B, d)
    noise = jax.random.normal(rng_n, (b, d), jnp.float32)
    query = _unit(key + cfg.noise * noise / math.sqrt(d))  # (B, d)

    vectors = jnp.concatenate([keys, query[:, None, :]], axis=1)  # (B, T, d)
    null = jnp.full((b, 1), NULL_TOKEN, jnp.int32)
    tokens = jnp.concatenate([labels + 1, null], axis=1)  # (B, T)
    last = jnp.arange(n + 1) == n
    answer = jnp.take_along_axis(labels, which, axis=1)  # (B, 1)
    return dict(
        tokens=tokens,
        vectors=vectors,
        targets=jnp.where(last[None, :], answer, 0).astype(jnp.int32),
        loss_mask=jnp.broadcast_to(last, (b, n + 1)).astype(jnp.float32),
    )


def oracle_accuracy(cfg: VectorRetrievalConfig, rank: int, rng: jax.Array, batch_size: int = 4096) -> float:
    """Accuracy of the nearest-key rule when the score is a bilinear form of rank `rank`, as a
    head of dimension d_k = rank computes it: keys and query seen through a rank-r projection
    (the first r coordinates: the keys are isotropic, so every r-dimensional subspace reads
    alike). From rank >= d_in on it is the Bayes rule itself: the task's difficulty stops
    depending on d_k there (at d_in = 32 it is ~6.5% at r = 2, 16% at 4, 37% at 8, 76% at
    16, 99.6% at 32)."""
    batch = make_batch(cfg, rng, batch_size)
    r = min(rank, cfg.d_in)
    keys, query = batch["vectors"][:, :-1, :r], batch["vectors"][:, -1, :r]
    nearest = jnp.argmax(jnp.einsum("bnd,bd->bn", keys, query), axis=1)
    labels = batch["tokens"][:, :-1] - 1  # label tokens are label + 1
    picked = jnp.take_along_axis(labels, nearest[:, None], axis=1)[:, 0]
    return float(jnp.mean(picked == batch["targets"][:, -1]))


SPEC = module_spec("vector_retrieval", VectorRetrievalConfig, globals(), n_keys=lambda cfg: cfg.n_keys)
