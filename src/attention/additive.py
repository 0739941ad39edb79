"""Additive (Bahdanau) compatibility: score(q, k) = v . tanh(q W_q + k W_k).

Computed in the direct broadcast form, which materialises the
[..., n_q, n_k, d_hidden] tensor: that is the form whose cost the paper
compares with the dot product.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from attention.registry import Variant, register


def init_additive(rng, d_k: int, d_hidden: int | None = None):
    d_hidden = d_k if d_hidden is None else d_hidden
    rq, rk, rv = jax.random.split(rng, 3)
    lecun = jax.nn.initializers.lecun_normal()
    return {
        "w_q": lecun(rq, (d_k, d_hidden)),
        "w_k": lecun(rk, (d_k, d_hidden)),
        # v maps d_hidden -> 1; lecun_normal on a [d_hidden, 1] matrix.
        "v": lecun(rv, (d_hidden, 1))[:, 0],
    }


def _hidden_scores(params, hq, hk):
    hidden = jnp.tanh(hq[..., :, None, :] + hk[..., None, :, :])  # (..., n_q, n_k, h)
    return hidden @ params["v"].astype(hq.dtype)  # (..., n_q, n_k)


def _additive(params, q, k, key_count=None):
    dtype = q.dtype
    hq = q @ params["w_q"].astype(dtype)  # (..., n_q, h)
    hk = k @ params["w_k"].astype(dtype)  # (..., n_k, h)
    return _hidden_scores(params, hq, hk)


def _additive_factored(params, q, w_k, x, key_count=None):
    # k W_k = x (w_k W_k): one [d_model, h] matrix per step in place of a
    # [n_k, d_k] x [d_k, h] product per example (d_model << d_k at large d_k)
    dtype = q.dtype
    hq = q @ params["w_q"].astype(dtype)
    hk = x @ (w_k.astype(dtype) @ params["w_k"].astype(dtype))  # (..., n_k, h)
    return _hidden_scores(params, hq, hk)


register(Variant(
    "additive", init_additive, _additive,
    doc="v . tanh(q W_q + k W_k): Bahdanau et al. 2015",
    init_options=("d_hidden",),
    factored=_additive_factored,
))
