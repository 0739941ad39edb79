"""Per-row statistics of attention, pure and jit-able.

A "row" is one query's distribution over the keys it may attend to.
`mask` ([..., n_q, n_k], True = may attend) restricts every statistic to the
row's own keys; `row_mask` ([..., n_q]) selects which rows enter a reduction.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

SATURATION_THRESHOLD = 0.99


def _full_mask(logits, mask):
    if mask is None:
        return jnp.ones(logits.shape, bool)
    return jnp.broadcast_to(mask, logits.shape)


def key_count(logits, mask=None):
    """Keys each row may attend to, [..., n_q] float32."""
    return _full_mask(logits, mask).sum(-1).astype(jnp.float32)


def row_logit_moments(logits, mask=None):
    """Per-row mean, unbiased variance, std and max |logit| over the row's keys.

    The variance is the unbiased sample variance (ddof=1): given the query,
    a row's logits are i.i.d. with mean 0 in the paper's setting, and ddof=1
    makes E[row variance] = c^2 |q|^2 exactly instead of (n-1)/n of it.
    """
    m = _full_mask(logits, mask)
    x = jnp.where(m, logits.astype(jnp.float32), 0.0)
    n = m.sum(-1).astype(jnp.float32)
    mean = x.sum(-1) / jnp.maximum(n, 1.0)
    sq = jnp.where(m, (x - mean[..., None]) ** 2, 0.0).sum(-1)
    var = sq / jnp.maximum(n - 1.0, 1.0)
    absmax = jnp.where(m, jnp.abs(x), 0.0).max(-1)
    return {"mean": mean, "var": var, "std": jnp.sqrt(var), "absmax": absmax}


def row_entropy(weights):
    """Entropy in nats, -sum s log s, with 0 log 0 = 0 (masked keys carry s = 0)."""
    s = weights.astype(jnp.float32)
    safe = jnp.where(s > 0, s, 1.0)
    return -jnp.sum(jnp.where(s > 0, s * jnp.log(safe), 0.0), axis=-1)


def row_entropy_norm(weights, mask=None):
    """Entropy divided by log(keys the row may attend to); 0 for a one-key row."""
    n = key_count(weights, mask)
    log_n = jnp.log(jnp.maximum(n, 1.0))
    return jnp.where(n > 1, row_entropy(weights) / jnp.where(n > 1, log_n, 1.0), 0.0)


def row_saturation(weights, threshold: float = SATURATION_THRESHOLD):
    """1.0 where the row's largest weight exceeds `threshold`, else 0.0."""
    return (weights.astype(jnp.float32).max(-1) > threshold).astype(jnp.float32)


def row_jacobian_norm(weights):
    """Frobenius norm of the softmax Jacobian diag(s) - s s^T, in closed form.

    ||J||_F^2 = sum s^2 - 2 sum s^3 + (sum s^2)^2, so the n x n Jacobian is
    never materialised. Written that way the terms cancel (1 - 2 + 1) on a
    nearly one-hot row and float32 leaves ~3e-4 of noise where the true norm
    is far smaller, so the largest weight m is split off and every term is a
    sum of non-negative parts, with r = sum_{j != m} s_j standing for 1 - s_m:
      ||J||^2 = s_m^2 r^2 + sum_o s_o^2 (1 - s_o)^2 + 2 s_m^2 Q + (Q^2 - sum_o s_o^4),
    where o runs over the other keys and Q = sum_o s_o^2.
    """
    s = weights.astype(jnp.float32)
    is_max = jax.nn.one_hot(jnp.argmax(s, -1), s.shape[-1], dtype=bool)
    s_max = s.max(-1)
    others = jnp.where(is_max, 0.0, s)
    r = others.sum(-1)
    o2 = others * others
    q = o2.sum(-1)
    norm2 = (s_max * s_max * r * r + jnp.sum(o2 * (1.0 - others) ** 2, -1)
             + 2.0 * s_max * s_max * q + jnp.maximum(q * q - jnp.sum(o2 * o2, -1), 0.0))
    return jnp.sqrt(norm2)


# --- reductions over rows ---------------------------------------------------

def _rows(x, row_mask):
    return jnp.ones(x.shape, bool) if row_mask is None else jnp.broadcast_to(row_mask, x.shape)


def masked_mean(x, row_mask=None):
    m = _rows(x, row_mask)
    return jnp.sum(jnp.where(m, x, 0.0)) / jnp.maximum(m.sum(), 1)


def masked_quantile(x, q, row_mask=None):
    """Quantile over the selected rows (NaN if none is selected)."""
    m = _rows(x, row_mask)
    return jnp.nanquantile(jnp.where(m, x, jnp.nan), q)


def masked_median(x, row_mask=None):
    return masked_quantile(x, 0.5, row_mask)


def row_summary(logits, weights, mask=None, row_mask=None,
                threshold: float = SATURATION_THRESHOLD):
    """The contract statistics, reduced over the selected rows.

    logit_mean: mean of row means; logit_var: mean of row variances (so that
    it estimates c^2 E|q|^2 = c^2 d_k in the paper's setting); logit_std:
    sqrt(logit_var); logit_absmax: mean over rows of the row's max |logit|;
    entropy, entropy_norm, saturation (the saturated share),
    jacobian_norm_mean and jacobian_norm_median: over rows.
    """
    moments = row_logit_moments(logits, mask)
    jac = row_jacobian_norm(weights)
    logit_var = masked_mean(moments["var"], row_mask)
    return {
        "logit_mean": masked_mean(moments["mean"], row_mask),
        "logit_var": logit_var,
        "logit_std": jnp.sqrt(logit_var),
        "logit_absmax": masked_mean(moments["absmax"], row_mask),
        "entropy": masked_mean(row_entropy(weights), row_mask),
        "entropy_norm": masked_mean(row_entropy_norm(weights, mask), row_mask),
        "saturation": masked_mean(row_saturation(weights, threshold), row_mask),
        "jacobian_norm_mean": masked_mean(jac, row_mask),
        "jacobian_norm_median": masked_median(jac, row_mask),
    }


STAT_COLUMNS = (
    "logit_mean", "logit_var", "logit_std", "logit_absmax", "entropy",
    "entropy_norm", "saturation", "jacobian_norm_mean", "jacobian_norm_median",
)
