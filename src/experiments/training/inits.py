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

INITS = ("lecun_normal", "xavier", "torch_default")


def init_variance(name: str, fan_in: int, fan_out: int) -> float:
    """Variance s^2 of one weight entry under the named init."""
    if name == "lecun_normal":
        return 1.0 / fan_in
    if name == "xavier":
        return 2.0 / (fan_in + fan_out)
    if name == "torch_default":
        return 1.0 / (3.0 * fan_in)
    raise ValueError(f"model.init: must be one of {', '.join(INITS)}; got {name!r}")


def predicted_logit_var(name: str, d_model: int, d_k: int, scale: float = 1.0) -> float:
    """Var(scale * q.k) for x ~ N(0, I_d_model) and q = x W_q, k = x' W_k."""
    s2 = init_variance(name, d_model, d_k)
    return scale ** 2 * d_k * (d_model * s2) ** 2


def init_projection(name: str, rng, fan_in: int, fan_out: int, dtype=jnp.float32):
    """A [fan_in, fan_out] weight matrix under the named init."""
    if name == "torch_default":
        bound = 1.0 / jnp.sqrt(fan_in)
        return jax.random.uniform(rng, (fan_in, fan_out), dtype, -bound, bound)
    std = init_variance(name, fan_in, fan_out) ** 0.5
    # plain (untruncated) normal, so that the variance is exactly s^2
    return std * jax.random.normal(rng, (fan_in, fan_out), dtype)
