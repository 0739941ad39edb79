"""model.reassociate: the last layer's query rows computed without forming the
keys and values, and the program sharing this allows.

A bilinear variant (score c * q.k) needs only W_k q against each position's
LN(h); a variant with a factored form takes its keys as x @ W_k; the values are
pooled before W_v. The same function as model.attention_layer with other
rounding, hence a config key (part of a run's identity). Where the only layer
is bilinear, the variant reaches the training programs as its factor c alone
(score_scale, data) and its weight function, so the bilinear variants at one
d_k share one program (program_key).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

import attention
from attention.temperature import RMS_EPS, rms_unit
from experiments.training.blocks import causal_mask, layer_norm, split_heads
from experiments.training.spec import ModelSpec


def _factored_inputs(spec: ModelSpec, layer, h, query_idx):
    """What reassociated rows start from: LN(h) (B, T, d_model), the query rows
    (B, H, n_q, d_k), W_k and W_v split by head ([d_model, H, d]) and the mask."""
    dtype = jnp.dtype(spec.dtype)
    x = layer_norm(h, layer["ln"])  # (B, T, d_model)
    d_model, n_heads = h.shape[2], spec.n_heads
    xq = jnp.take_along_axis(x, query_idx[..., None], axis=1)
    q = split_heads(xq @ layer["w_q"], n_heads).astype(dtype)  # (B, H, n_q, d_k)
    w_k = layer["w_k"].reshape(d_model, n_heads, spec.d_k).astype(dtype)
    w_v = layer["w_v"].reshape(d_model, n_heads, spec.d_v).astype(dtype)
    mask = causal_mask(query_idx, h.shape[1])[:, None]  # (B, 1, n_q, T)
    return x.astype(dtype), q, w_k, w_v, mask


def _pooled_output(spec: ModelSpec, layer, h, query_idx, x, w_v, logits, mask):
    """The variant's weights, then sum_t w_t W_v^T x_t = W_v^T (sum_t w_t x_t): the values are never formed."""
    weights = attention.get_variant(spec.attention).weights(logits, mask)
    pooled = jnp.einsum("bhqt,btd->bhqd", weights, x)  # (B, H, n_q, d_model)
    out = jnp.einsum("bhqd,dhe->bqhe", pooled, w_v)  # (B, n_q, H, d_v)
    out = out.reshape(out.shape[0], out.shape[1], -1).astype(h.dtype)
    h_q = jnp.take_along_axis(h, query_idx[..., None], axis=1)
    return h_q + out @ layer["w_o"], logits, weights, mask


def bilinear_factor(spec: ModelSpec, layer):
    """The factor c of a bilinear variant's score c * q.k: its score of a unit
    query against itself (a scalar of the model's dtype)."""
    unit = jnp.zeros((1, spec.d_k), jnp.dtype(spec.dtype)).at[0, 0].set(1)
    head0 = jax.tree_util.tree_map(lambda a: a[0], layer["attn"])
    # the factor of the normalised vectors: bilinear_rows normalises them itself
    options = {**spec.options, "qk_rms": False} if _rms_normed(spec) else spec.options
    return attention.scores(spec.attention, head0, unit, unit, **options)[0, 0]


def _rms_normed(spec: ModelSpec) -> bool:
    """The score is c q^.k^ of q and k over their root mean square (attention.qk_rms)."""
    return bool(spec.options.get("qk_rms", False))


def _key_rms(x, w_k):
    """Each position's key root mean square per head, sqrt(x_t.(W_k W_k^T) x_t / d_k + eps), from
    W_k's Gram matrix per head (B, H, 1, T) in float32: the keys themselves are never formed."""
    w32 = w_k.astype(jnp.float32)  # (d_model, H, d_k)
    gram = jnp.einsum("dhe,fhe->hdf", w32, w32)  # (H, d_model, d_model)
    x32 = x.astype(jnp.float32)
    mean_sq = jnp.einsum("btd,hdf,btf->bht", x32, gram, x32) / w_k.shape[-1]
    return jnp.sqrt(mean_sq + RMS_EPS)[:, :, None, :]


def score_scale(spec: ModelSpec, params):
    """What the training programs take as the lane's `score_scale`: the last
    layer's bilinear factor c where bilinear_rows computes it, else 1 (unused).

    Given as data rather than folded into the program, c is all that tells
    the bilinear variants apart there, so their runs at one d_k share one
    compiled program (and one entry of the persistent compilation cache)."""
    if reassociated_rows(spec) is not bilinear_rows:
        return jnp.ones((), jnp.dtype(spec.dtype))
    return bilinear_factor(spec, params["layers"][-1])


class BilinearProgram(NamedTuple):
    """The key of the training programs of a one-layer model whose layer is
    bilinear_rows: what the variant declares (Variant.bilinear: its score is
    c * q.k; c reaches the programs as data, score_scale) leaves only its weight
    function in them, beside the rest of the model."""
    weights: Callable  # the variant's weight function (attention.weights)
    model: ModelSpec  # the model's spec with no variant named


def program_key(spec: ModelSpec) -> ModelSpec | BilinearProgram:
    """What the training programs of `spec` depend on: the spec, or where the
    model's only layer computes bilinear_rows, a BilinearProgram, the same for
    every bilinear variant with the same weights at one d_k (scaled, unscaled,
    mup): one program, which a sweep that runs them one after another compiles
    and loads once. Below the last layer every variant forms its own scores."""
    if spec.n_layers == 1 and reassociated_rows(spec) is bilinear_rows:
        # RMS-normed q and k (attention.qk_rms) are other rows: a program of their own
        normed = (("qk_rms", True),) if _rms_normed(spec) else ()
        return BilinearProgram(attention.get_variant(spec.attention).weights,
                               spec._replace(attention="", attention_options=normed))
    return spec


def bilinear_rows(spec: ModelSpec, layer, h, query_idx, scale=None):
    """attention_layer's query rows for a bilinear variant (score c * q.k),
    with the products reassociated: q.(W_k^T x_t) = (W_k q).x_t and
    sum_t w_t W_v^T x_t = W_v^T (sum_t w_t x_t).

    With n_q query rows and T keys this never forms the T keys and values
    (2 T d_model (d_k + d_v) multiply-adds per example and head) but works at
    d_model per query: for few queries over many positions, several times
    fewer flops and bytes. The same function with other rounding, so it is
    a config key (model.reassociate), part of a run's identity.

    `scale` is c given as data (score_scale); None computes it here.
    """
    x, q, w_k, w_v, mask = _factored_inputs(spec, layer, h, query_idx)
    scale = bilinear_factor(spec, layer) if scale is None else scale.astype(x.dtype)
    q = rms_unit(q) if _rms_normed(spec) else q
    u = jnp.einsum("bhqe,dhe->bhqd", q, w_k)  # (B, H, n_q, d_model): W_k q
    dots = jnp.einsum("bhqd,btd->bhqt", u, x)
    if _rms_normed(spec):  # q^.k^ = (W_k q^).x_t / rms(k_t)
        dots = (dots.astype(jnp.float32) / _key_rms(x, w_k)).astype(x.dtype)
    logits = dots * scale  # (B, H, n_q, T)
    return _pooled_output(spec, layer, h, query_idx, x, w_v, logits, mask)


def factored_rows(spec: ModelSpec, layer, h, query_idx):
    """attention_layer's query rows for a variant with a factored form
    (Variant.factored): its score takes the keys as x @ W_k, per head, and
    the values are pooled as in bilinear_rows. For additive at large d_k this
    replaces a [T, d_k] x [d_k, d_hidden] product per example by one
    [d_model, d_k] x [d_k, d_hidden] product per step."""
    x, q, w_k, w_v, mask = _factored_inputs(spec, layer, h, query_idx)

    def one_head(p, q_h, w_k_h):
        return attention.factored_scores(spec.attention, p, q_h, w_k_h, x, mask=mask[:, 0],
                                         **spec.options)

    logits = jax.vmap(one_head, in_axes=(0, 1, 1), out_axes=1)(layer["attn"], q, w_k)
    return _pooled_output(spec, layer, h, query_idx, x, w_v, logits, mask)


def reassociated_rows(spec: ModelSpec):
    """The last layer's row function under model.reassociate, None where it changes nothing."""
    variant = attention.get_variant(spec.attention)
    if not spec.reassociate or not variant.reassociable:
        return None
    return bilinear_rows if variant.bilinear else factored_rows

