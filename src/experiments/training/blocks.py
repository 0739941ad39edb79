"""The model's small building blocks, shared by the plain layer (model) and the
reassociated rows (reassociate): layer norm, the head split, the causal mask."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def layer_norm(x, p):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["gain"] + p["bias"]


def ln_params(d):
    return {"gain": jnp.ones((d,)), "bias": jnp.zeros((d,))}



def feed_forward(p, h):
    """The transformer block's MLP on a residual stream: h + W_2 gelu(LN(h) W_1 + b_1) + b_2."""
    return h + jax.nn.gelu(layer_norm(h, p["ln"]) @ p["w_1"] + p["b_1"]) @ p["w_2"] + p["b_2"]


def split_heads(x, n_heads):
    b, t, _ = x.shape
    return x.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # (B, H, T, d)


def causal_mask(pos_q, t: int):
    """(..., n_q, T) bool: a query at position p may attend to keys 0..p."""
    return jnp.arange(t) <= pos_q[..., None]

