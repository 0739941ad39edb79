"""Additive (Bahdanau) compatibility: score(q, k) = v . tanh(q W_q + k W_k).

Computed in the direct broadcast form, which materialises the
[..., n_q, n_k, d_hidden] tensor: that is the form whose cost the paper
compares with the dot product.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from attention.registry import Variant, option_error, register


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


@jax.custom_vjp
def weight_product(x, w):
    """x @ w for x (..., k) and a weight w (k, h), with w's gradient computed
    in w's own orientation: dw = x^T g, contracting every leading axis.

    Under vmap (heads, lanes), JAX's transpose rule computes a weight's
    gradient as g^T x and transposes it, and XLA:CPU can leave that
    transpose to each consumer: every optimizer update then read the
    [k, h] gradient column by column, which dominates a step at large d_k.
    Autodiff's gradient up to float rounding (tests/test_additive_grad.py);
    on the training programs of the committed study, bit for bit the same."""
    return x @ w


def _weight_product_fwd(x, w):
    return x @ w, (x, w)


def _weight_product_bwd(residuals, g):
    x, w = residuals
    leading = tuple(range(x.ndim - 1))
    dx = jax.lax.dot_general(g, w, (((g.ndim - 1,), (1,)), ((), ())))  # (..., k)
    dw = jax.lax.dot_general(x, g, ((leading, leading), ((), ())))  # (k, h)
    return dx, dw


weight_product.defvjp(_weight_product_fwd, _weight_product_bwd)


def _hidden_scores(params, hq, hk):
    hidden = jnp.tanh(hq[..., :, None, :] + hk[..., None, :, :])  # (..., n_q, n_k, h)
    return hidden @ params["v"].astype(hq.dtype)  # (..., n_q, n_k)


def _additive(params, q, k, key_count=None):
    dtype = q.dtype
    hq = weight_product(q, params["w_q"].astype(dtype))  # (..., n_q, h)
    hk = weight_product(k, params["w_k"].astype(dtype))  # (..., n_k, h)
    return _hidden_scores(params, hq, hk)


def _additive_factored(params, q, w_k, x, key_count=None):
    # k W_k = x (w_k W_k): one [d_model, h] matrix per step in place of a
    # [n_k, d_k] x [d_k, h] product per example (d_model << d_k at large d_k)
    dtype = q.dtype
    hq = weight_product(q, params["w_q"].astype(dtype))
    hk = x @ weight_product(w_k.astype(dtype), params["w_k"].astype(dtype))  # (..., n_k, h)
    return _hidden_scores(params, hq, hk)


def _check_d_hidden(options: dict) -> None:
    option_error(options["d_hidden"] is None or options["d_hidden"] >= 1, "d_hidden",
                 "must be >= 1 or null", options["d_hidden"])


def _register(name: str, init, doc: str, label: str, color: str) -> None:
    register(Variant(name, init, _additive, doc=doc, init_options=("d_hidden",),
                     factored=_additive_factored, label=label, color=color, check=_check_d_hidden))


def init_additive_wide(rng, d_k: int, d_hidden: int | None = 64):
    return init_additive(rng, d_k, d_hidden)


_register("additive", init_additive, "v . tanh(q W_q + k W_k): Bahdanau et al. 2015",
          "additive (Bahdanau)", "#2ca02c")
# The same score with a hidden width of its own: at d_k = 2 the tied form (d_hidden = d_k,
# Britz et al.'s setting, the one judged) is a 2-unit tanh network, so "additive behind at
# small d_k" could be its width, not its compatibility function. A name of its own keeps
# its runs out of the tied form's cells in every table.
_register("additive_wide", init_additive_wide,
          "v . tanh(q W_q + k W_k) with d_hidden fixed (64), apart from d_k",
          "additive, d_hidden 64", "#808000")  # olive: kin to additive, another hue
