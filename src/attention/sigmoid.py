"""Sigmoid attention (Ramapuram et al. 2024): each key's weight is an independent
sigmoid of its logit, sigmoid(q.k / sqrt(d_k) + b), with b = -log n.

The bias keeps the total weight of a row near its softmax value at init: with
logits near 0 each of the n keys gets about 1/n. n is the number of keys the
row may attend to (the causal count), read from key_count. The example of a
variant with its own weight function: it registers `weights=masked_sigmoid`,
and core.attend and the model use it in place of softmax. In the probe, not
in the study (docs/EXTENDING.md).
"""
from __future__ import annotations

import jax.numpy as jnp

from attention.dot import dot
from attention.registry import Variant, no_params, register
from attention.weights import masked_sigmoid


def _sigmoid_logits(params, q, k, key_count=None):
    if key_count is None:
        key_count = jnp.full(q.shape[:-1] + (1,), k.shape[-2], jnp.float32)
    bias = -jnp.log(jnp.maximum(key_count, 1.0)).astype(q.dtype)  # (..., n_q, 1)
    return dot(q, k) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype)) + bias


register(Variant(
    "sigmoid", no_params, _sigmoid_logits,
    doc="sigmoid(q.k / sqrt(d_k) - log n): Ramapuram et al. 2024",
    weights=masked_sigmoid, label="sigmoid (b = -log n)",
))
