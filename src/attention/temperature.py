"""The temperature family: one dot-product score whose logit multiplier is a continuous axis.

    logit = c * q.k / d_k^alpha            (* ln n with attention.log_n = n)

The paper's scaled attention is (c, alpha) = (1, 1/2), unscaled (1, 0), muP as its code runs it
(8, 1). The score is bilinear (c(d_k) q.k), so a one-layer model with model.reassociate takes
its factor as data. The factor is formed as f32(c) * f32(d_k^-alpha), c last and apart, so that a lane of a multiplier grid (attention.c_grid: c as data in the lane's state,
training.group) rounds exactly as the run trained alone.

`attention.log_n` multiplies by ln n for a fixed number of keys n (the log n laws: Chiang & Cholak
2022, Scalable-Softmax), usually the task's: `attention.log_n=${task.n_keys}`. It is fixed, not
each row's own count, so that the score stays bilinear (one factor for every row).

`attention.qk_rms=true` divides q and k by their root mean square first (no learned gain, as
modded-nanogpt's QK-norm: its logit 0.12 q^.k^ at d_head 128 is c = 0.12 sqrt(128) = 1.36 here). The
score stays bilinear in the normalised vectors, so a one-layer model still reassociates it
(training.reassociate.bilinear_rows normalises the keys from W_k's Gram matrix).

`learned_temperature` is scaled attention with one learned log-multiplier per head, starting
at 0 (c = 1): what training makes of the temperature when it may choose it.
"""
from __future__ import annotations

import math
from typing import Optional

import jax.numpy as jnp

from attention.dot import dot
from attention.registry import Variant, no_params, option_error, register


def _factor(d_k: int, c: float, alpha: float, dtype, log_n: Optional[int] = None):
    """f32(c) * f32(d_k^-alpha [* ln n]): c enters last, by itself (see the module docstring)."""
    rest = float(d_k) ** -alpha * (math.log(log_n) if log_n is not None else 1.0)
    return jnp.asarray(c, dtype) * jnp.asarray(rest, dtype)


RMS_EPS = 1e-6


def rms_unit(x):
    """x over its root mean square (last axis), in float32: each row's components then have mean
    square 1, so q^.k^ of two such rows lies within +-d_k."""
    x32 = x.astype(jnp.float32)
    return (x32 * jnp.reciprocal(jnp.sqrt(jnp.mean(x32 * x32, -1, keepdims=True) + RMS_EPS))).astype(x.dtype)


def _temperature(params, q, k, key_count=None, c: float = 1.0, alpha: float = 0.5,
                 c_grid: Optional[list[float]] = None, log_n: Optional[int] = None, qk_rms: bool = False):
    # c_grid names the lanes' multipliers (training.group); each lane's own is `c`
    if qk_rms:
        q, k = rms_unit(q), rms_unit(k)
    return dot(q, k) * _factor(q.shape[-1], c, alpha, q.dtype, log_n)


def _check(o: dict) -> None:
    option_error(math.isfinite(o["c"]) and o["c"] > 0, "c", "must be a finite number > 0", o["c"])
    option_error(math.isfinite(o["alpha"]), "alpha", "must be a finite number (0: unscaled, 0.5: the paper, "
                 "1: muP)", o["alpha"])
    n = o.get("log_n")
    option_error(n is None or (isinstance(n, int) and not isinstance(n, bool) and n >= 2), "log_n",
                 "must be null or an integer number of keys >= 2 (the logits times ln n)", n)
    option_error(isinstance(o.get("qk_rms", False), bool), "qk_rms",
                 "must be true or false (q and k over their root mean square first)", o.get("qk_rms"))
    grid = o.get("c_grid")
    if grid is not None:
        values = list(grid)
        option_error(bool(values) and all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in values)
                     and len(set(values)) == len(values), "c_grid",
                     "must be a non-empty list of distinct finite multipliers > 0, or null", values)


register(Variant(
    "temperature", no_params, _temperature,
    doc="softmax(c q.k / d_k^alpha): the logit multiplier as a continuous axis",
    score_options=("c", "alpha", "c_grid", "log_n", "qk_rms"),
    # at its default options, (1, 1/2): the registry's theory lines read it so
    logit_scale=lambda d_k, n_keys: 1.0 / math.sqrt(d_k), bilinear=True,
    label="c q.k / d_k^α", color="#005959",  # dark teal
    check=_check,
))
