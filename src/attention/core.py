"""Attention written once: scores from a variant, then its masked weights, then the weighted sum."""
from __future__ import annotations

import jax.numpy as jnp

from attention.checks import check
from attention.registry import VARIANTS, Params, get_variant, split_options
from attention.weights import masked_softmax  # noqa: F401  (attention.masked_softmax)


def init_params(name: str, rng, d_k: int, **options) -> Params:
    """Parameters of the variant's compatibility function ({} if none)."""
    check(d_k >= 1, "d_k", "must be >= 1", d_k)
    variant = get_variant(name)
    init_options, _ = split_options(variant, options)
    return variant.init(rng, d_k, **init_options)


def _key_count(mask, q_shape, n_k: int):
    """Number of keys each query row may attend to, [..., n_q, 1] float32."""
    if mask is None:
        return jnp.full(q_shape[:-1] + (1,), n_k, jnp.float32)
    mask = jnp.broadcast_to(mask, mask.shape[:-2] + (q_shape[-2], n_k))
    return mask.sum(-1, keepdims=True).astype(jnp.float32)


def scores(name: str, params: Params, q, k, mask=None, **options):
    """Compatibility logits [..., n_q, n_k] of q [..., n_q, d_k] with k [..., n_k, d_k].

    `mask` is only used to count each row's keys (for length-aware variants);
    masking itself happens in `attend`. `options` are the variant's knobs
    (see conf/attention/); those that only shape the init are ignored here.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"d_k: queries and keys must have the same last dimension, got "
            f"{q.shape[-1]} and {k.shape[-1]}"
        )
    variant = get_variant(name)
    _, score_options = split_options(variant, options)
    return variant.score(params, q, k, key_count=_key_count(mask, q.shape, k.shape[-2]),
                         **score_options)


def factored_scores(name: str, params: Params, q, w_k, x, mask=None, **options):
    """`scores` of q [..., n_q, d_k] against the keys x @ w_k, given in factored
    form: x [..., n_k, d_model], w_k [d_model, d_k]. The same function, with
    other rounding, for the variants that have such a form (Variant.factored)."""
    variant = get_variant(name)
    if variant.factored is None:
        raise ValueError(f"attention: {name!r} has no factored form; "
                         f"allowed: {', '.join(n for n, v in VARIANTS.items() if v.factored)}")
    if q.shape[-1] != w_k.shape[-1]:
        raise ValueError(f"d_k: queries have {q.shape[-1]} components, w_k maps to {w_k.shape[-1]}")
    _, score_options = split_options(variant, options)
    return variant.factored(params, q, w_k, x, key_count=_key_count(mask, q.shape, x.shape[-2]),
                            **score_options)


def attend(name: str, params: Params, q, k, v, mask=None, **options):
    """weights(score(q, k)) v, the weights the variant's own (masked softmax by default).

    q: [..., n_q, d_k], k: [..., n_k, d_k], v: [..., n_k, d_v];
    mask: bool, broadcastable to [..., n_q, n_k], True = may attend.
    Returns (out [..., n_q, d_v], weights [..., n_q, n_k]).
    """
    out, weights, _ = attend_with_logits(name, params, q, k, v, mask=mask, **options)
    return out, weights


def attend_with_logits(name: str, params: Params, q, k, v, mask=None, **options):
    """Like `attend`, also returning the logits (for the statistics)."""
    logits = scores(name, params, q, k, mask=mask, **options)
    weights = get_variant(name).weights(logits, mask)
    out = jnp.einsum("...qk,...kd->...qd", weights, v.astype(weights.dtype))
    return out, weights, logits
