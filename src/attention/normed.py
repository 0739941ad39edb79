"""Variants that control the logit scale beyond a fixed factor.

qk_norm: LayerNorm (learned gain) on q and k, then / sqrt(d_k)
         (Dehghani et al. 2023; Wortsman et al. 2023).
cosine:  g * cos(q, k), g = exp(log_temp) learned, starting at 10
         (Henry et al. 2020 QKNorm; Swin v2).
ssmax:   (q.k / sqrt(d_k)) * s * log(n), s learned, n the number of keys the
         row may attend to (Nakanishi 2025, scalable softmax).
"""
from __future__ import annotations

import math

import jax.numpy as jnp

from attention.dot import dot
from attention.registry import Variant, option_error, register

_EPS = 1e-6


def _layer_norm(x, gain):
    # statistics in float32 even for bfloat16 inputs
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
    return ((x32 - mean) * jnp.reciprocal(jnp.sqrt(var + _EPS)) * gain).astype(x.dtype)


def init_qk_norm(rng, d_k: int):
    return {"gain_q": jnp.ones((d_k,)), "gain_k": jnp.ones((d_k,))}


def _qk_norm(params, q, k, key_count=None):
    qn = _layer_norm(q, params["gain_q"])
    kn = _layer_norm(k, params["gain_k"])
    return dot(qn, kn) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


def _qk_norm_factored(params, q, w_k, x, key_count=None):
    # k = x w_k. LayerNorm centres k's components: k - mean(k) = x w_c, with w_c
    # the column-centred w_k; its variance is x.(w_c w_c^T) x / d_k. So the
    # score is x.(w_c (g_k * LN(q))) / (sqrt(var_k + eps) sqrt(d_k)), and only
    # [d_model, d_k] and [d_model, d_model] matrices are formed, never the keys.
    d_k = q.shape[-1]
    qn = _layer_norm(q, params["gain_q"])
    w32 = w_k.astype(jnp.float32)
    w_c = w32 - w32.mean(-1, keepdims=True)
    gram = w_c @ w_c.T  # (d_model, d_model)
    x32 = x.astype(jnp.float32)
    var_k = jnp.einsum("...td,de,...te->...t", x32, gram, x32) / d_k  # (..., n_k)
    u = (qn * params["gain_k"].astype(qn.dtype)) @ w_c.T.astype(qn.dtype)  # (..., n_q, d_model)
    dots = jnp.einsum("...qd,...td->...qt", u, x.astype(qn.dtype))
    inv_norm = jnp.reciprocal(jnp.sqrt(var_k + _EPS)).astype(qn.dtype)
    return dots * inv_norm[..., None, :] / jnp.sqrt(jnp.asarray(d_k, qn.dtype))


def init_cosine(rng, d_k: int, init_temperature: float = 10.0):
    return {"log_temp": jnp.asarray(math.log(init_temperature), jnp.float32)}


def _unit(x):
    x32 = x.astype(jnp.float32)
    # sqrt(sum x^2 + eps) keeps the gradient finite at x = 0
    return (x32 / jnp.sqrt(jnp.sum(x32 * x32, -1, keepdims=True) + _EPS)).astype(x.dtype)


def _cosine(params, q, k, key_count=None):
    g = jnp.exp(params["log_temp"]).astype(q.dtype)
    return g * dot(_unit(q), _unit(k))


def init_ssmax(rng, d_k: int, init_s: float = 1.0):
    return {"s": jnp.asarray(init_s, jnp.float32)}


def _ssmax(params, q, k, key_count=None):
    if key_count is None:
        key_count = jnp.full(q.shape[:-1] + (1,), k.shape[-2], jnp.float32)
    # log(1) = 0 would zero a single-key row's logits, which is harmless:
    # softmax over one key is 1 whatever the logit.
    log_n = jnp.log(jnp.maximum(key_count, 1.0)).astype(q.dtype)
    base = dot(q, k) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))
    return base * params["s"].astype(q.dtype) * log_n


register(Variant(
    "qk_norm", init_qk_norm, _qk_norm,
    doc="LayerNorm(q).LayerNorm(k) / sqrt(d_k)",
    logit_scale=None, factored=_qk_norm_factored,
    label="QK-LayerNorm", color="#ff7f0e",
))
register(Variant(
    "cosine", init_cosine, _cosine,
    doc="g * cos(q, k), learned temperature g (starts at 10)",
    init_options=("init_temperature",),
    label="cosine (learned g)", color="#8c564b",
    check=lambda o: option_error(math.isfinite(o["init_temperature"]) and o["init_temperature"] > 0,
                                 "init_temperature", "must be a finite number > 0", o["init_temperature"]),
))
register(Variant(
    "ssmax", init_ssmax, _ssmax,
    doc="s * log(n) * q.k / sqrt(d_k), learned s (starts at 1)",
    init_options=("init_s",),
    logit_scale=lambda d_k, n_keys: math.log(n_keys) / math.sqrt(d_k),
    label="scalable softmax", color="#e377c2",
    check=lambda o: option_error(math.isfinite(o["init_s"]), "init_s", "must be a finite number", o["init_s"]),
))
