"""Initialisers of the projections W_q, W_k, W_v ([fan_in, fan_out]).

The variance claim depends on the init: with x ~ N(0, I_dm) and W entries
of variance s^2, q = x W has component variance d_model s^2, and
Var(q.k) = d_k (d_model s^2)^2.

  lecun_normal:  s^2 = 1 / fan_in                      -> Var(q.k) = d_k
  xavier:        s^2 = 2 / (fan_in + fan_out)          (Glorot normal)
  torch_default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)),    s^2 = 1 / (3 fan_in)
                 (PyTorch nn.Linear: kaiming_uniform with a = sqrt(5))
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from attention.checks import check
from attention.registry import get_variant

INITS = ("lecun_normal", "xavier", "torch_default")


def init_variance(name: str, fan_in: int, fan_out: int) -> float:
    """Variance s^2 of one weight entry under the named init."""
    check(name in INITS, "model.init", f"must be one of {', '.join(INITS)}", name)
    if name == "lecun_normal":
        return 1.0 / fan_in
    if name == "xavier":
        return 2.0 / (fan_in + fan_out)
    return 1.0 / (3.0 * fan_in)  # torch_default


def component_var(name: str, d_model: int, d_k: int) -> float:
    """Variance p = d_model s^2 of one component of q = x W_q (x ~ N(0, I_d_model)); 1 for
    `none` (the query itself drawn iid N(0, 1)). The init's part of the logit-variance law,
    `instruments.theory.predicted_logit_var` (Var(q.k) = d_k p^2 for the bare dot product)."""
    return 1.0 if name == "none" else d_model * init_variance(name, d_model, d_k)


def query_init_factor(variant: str, d_k: int) -> float:
    """The factor on W_q's init that `variant` declares (Variant.query_init_scale: unscaled_init
    shrinks it by 1/sqrt(d_k), so that its logits at init have scaled's law), 1 where none."""
    scale = get_variant(variant).query_init_scale
    return 1.0 if scale is None else float(scale(d_k))


def init_projection(name: str, rng, fan_in: int, fan_out: int, dtype=jnp.float32):
    """A [fan_in, fan_out] weight matrix under the named init."""
    if name == "torch_default":
        bound = 1.0 / jnp.sqrt(fan_in)
        return jax.random.uniform(rng, (fan_in, fan_out), dtype, -bound, bound)
    std = init_variance(name, fan_in, fan_out) ** 0.5
    # plain (untruncated) normal, so that the variance is exactly s^2
    return std * jax.random.normal(rng, (fan_in, fan_out), dtype)
