"""Weight functions: what turns a row of compatibility logits into weights over the keys.

A variant names its own (Variant.weights); masked softmax is the default and
the paper's. Each takes logits [..., n_q, n_k] and a bool mask broadcastable
to them (True = may attend) and gives weights of the logits' shape and dtype,
exactly 0 at masked keys.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


def masked_softmax(logits, mask=None):
    """Softmax over the last axis; masked entries get weight 0.

    A fully masked row gets all-zero weights (not NaN) and finite gradients:
    masked logits are replaced by a large finite negative number before the
    softmax (never -inf, whose gradient is NaN), and the row is zeroed after.
    """
    if mask is None:
        return jax.nn.softmax(logits.astype(jnp.float32), axis=-1).astype(logits.dtype)
    mask = jnp.broadcast_to(mask, logits.shape)
    x = jnp.where(mask, logits.astype(jnp.float32), -1e30)
    weights = jax.nn.softmax(x, axis=-1)
    weights = jnp.where(mask, weights, 0.0)
    return weights.astype(logits.dtype)


def masked_sigmoid(logits, mask=None):
    """An independent sigmoid per key (weights need not sum to 1); masked entries get 0."""
    weights = jax.nn.sigmoid(logits.astype(jnp.float32))
    if mask is not None:
        weights = jnp.where(jnp.broadcast_to(mask, logits.shape), weights, 0.0)
    return weights.astype(logits.dtype)
