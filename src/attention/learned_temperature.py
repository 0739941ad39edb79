"""learned_temperature: scaled dot-product attention whose multiplier each head learns.

    logit = exp(log_c) * q.k / sqrt(d_k),    log_c learned per head, starting at 0

It starts as the paper's scaled attention (c = 1) and lets training move the temperature; its
value is logged at every evaluation (the history's `temperature`: exp(log_c) averaged over heads
and layers) and its last in the summary (`final_temperature`), to set beside the best fixed
multiplier a grid finds (attention=temperature). The keys may come factored (model.reassociate):
q.(x W_k) = (q W_k^T).x forms no key.
"""
from __future__ import annotations

import jax.numpy as jnp

from attention.dot import dot
from attention.registry import Variant, register

PARAM = "log_c"  # read by training.step.evaluate for the temperature column


def init(rng, d_k: int):
    return {PARAM: jnp.zeros((), jnp.float32)}


def _factor(params, q):
    return jnp.exp(params[PARAM]).astype(q.dtype) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


def _score(params, q, k, key_count=None):
    return dot(q, k) * _factor(params, q)


def _factored(params, q, w_k, x, key_count=None):
    u = q @ w_k.T.astype(q.dtype)  # (..., n_q, d_model): W_k q
    return jnp.einsum("...qd,...td->...qt", u, x.astype(q.dtype)) * _factor(params, q)


register(Variant(
    "learned_temperature", init, _score,
    doc="exp(log_c) q.k / sqrt(d_k), log_c learned per head from 0",
    factored=_factored,
    label="learned temperature", color="#8c4d0e",  # dark ochre
))
