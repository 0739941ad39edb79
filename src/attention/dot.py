"""Dot-product compatibility functions: scaled, unscaled (Luong), muP's 1/d."""
from __future__ import annotations

import math

import jax.numpy as jnp

from attention.registry import Variant, no_params, option_error, register


def dot(q, k):
    """q: [..., n_q, d_k], k: [..., n_k, d_k] -> [..., n_q, n_k]."""
    return jnp.einsum("...qd,...kd->...qk", q, k)


def _scaled(params, q, k, key_count=None):
    return dot(q, k) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


def _unscaled(params, q, k, key_count=None):
    return dot(q, k)


def _mup(params, q, k, key_count=None, multiplier: float = 1.0):
    # muP (Tensor Programs V): once trained, q and k correlate and q.k grows
    # like d, so the logit is divided by d rather than sqrt(d).
    return dot(q, k) * jnp.asarray(multiplier / q.shape[-1], q.dtype)


register(Variant(
    "scaled", no_params, _scaled,
    doc="softmax(q.k / sqrt(d_k)): Vaswani et al. 2017",
    logit_scale=lambda d_k, n_keys: 1.0 / math.sqrt(d_k), bilinear=True,
    label="scaled (1/√d_k)", color="#1f77b4",
))
register(Variant(
    "unscaled", no_params, _unscaled,
    doc="softmax(q.k): multiplicative attention (Luong et al. 2015)",
    logit_scale=lambda d_k, n_keys: 1.0, bilinear=True,
    label="unscaled (1)", color="#d62728",
))
register(Variant(
    "mup", no_params, _mup,
    doc="softmax(multiplier * q.k / d_k): muP (Yang et al. 2022)",
    score_options=("multiplier",),
    logit_scale=lambda d_k, n_keys: 1.0 / d_k, bilinear=True,
    label="muP (1/d_k)", color="#9467bd",
    check=lambda o: option_error(math.isfinite(o["multiplier"]) and o["multiplier"] > 0, "multiplier",
                                 "must be a finite number > 0", o["multiplier"]),
))
