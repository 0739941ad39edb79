"""Embedding -> attention layer(s) from the attention library -> output head.

Input at each position (each part has unit-variance components, and their sum
is divided by sqrt(#parts), so the attention input matches the paper's
assumption at init):
  token embedding E[t]                                   (all tasks)
  + token-shift embedding E_shift[t_prev]                (model.token_shift)
  + vectors @ W_in                                       (tasks with d_in > 0)
The token shift is a width-2 convolution over tokens: at a value position it
carries the preceding key, so that ONE causal attention layer can solve
associative recall (a plain single layer cannot; Zoology uses short
convolutions for the same reason). With it, d_k is exactly the swept quantity.

Each layer: h = h + W_o attend(LN(h) W_q, LN(h) W_k, LN(h) W_v), causal.
The last layer computes only the query rows at loss positions (`query_idx`):
nothing else reaches the loss, and it keeps additive attention's
[n_q, n_k, d_hidden] tensor small. Head: LN(h) W_head over the classes.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

import attention
from experiments.training.inits import init_projection


class ModelSpec(NamedTuple):
    """Everything static about the model (hashable: a jit cache key)."""
    attention: str
    attention_options: tuple  # ((key, value), ...) of the variant's knobs
    d_k: int
    d_model: int
    d_v: int
    n_layers: int
    n_heads: int
    init: str
    token_shift: bool
    vocab: int
    n_classes: int
    d_in: int
    dtype: str = "float32"
    reassociate: bool = False  # model.reassociate: see bilinear_rows

    @property
    def options(self) -> dict:
        return dict(self.attention_options)


def _layer_norm(x, p):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["gain"] + p["bias"]


def _ln_params(d):
    return {"gain": jnp.ones((d,)), "bias": jnp.zeros((d,))}


def init_model(spec: ModelSpec, rng) -> dict:
    """Parameters: a plain dict pytree."""
    keys = iter(jax.random.split(rng, 5 + 6 * spec.n_layers))
    dm, h = spec.d_model, spec.n_heads
    params = {"embed": jax.random.normal(next(keys), (spec.vocab, dm))}
    if spec.token_shift:
        params["shift_embed"] = jax.random.normal(next(keys), (spec.vocab, dm))
    if spec.d_in:
        # vector inputs are unit vectors (component variance 1/d_in)
        params["vec_in"] = jax.random.normal(next(keys), (spec.d_in, dm))
    layers = []
    for _ in range(spec.n_layers):
        head_keys = jax.random.split(next(keys), h)
        layers.append({
            "ln": _ln_params(dm),
            "w_q": init_projection(spec.init, next(keys), dm, h * spec.d_k),
            "w_k": init_projection(spec.init, next(keys), dm, h * spec.d_k),
            "w_v": init_projection(spec.init, next(keys), dm, h * spec.d_v),
            "w_o": init_projection(spec.init, next(keys), h * spec.d_v, dm),
            # the variant's own parameters, one set per head
            "attn": jax.vmap(lambda r: attention.init_params(
                spec.attention, r, spec.d_k, **spec.options))(head_keys),
        })
    params["layers"] = layers
    params["ln_out"] = _ln_params(dm)
    params["head"] = init_projection("lecun_normal", next(keys), dm, spec.n_classes)
    return params


def embed(spec: ModelSpec, params, batch):
    """(B, T, d_model) input representation."""
    tokens = batch["tokens"]  # (B, T)
    parts = [params["embed"][tokens]]
    if spec.token_shift:
        prev = jnp.pad(tokens[:, :-1], ((0, 0), (1, 0)))  # position 0 sees token 0
        parts.append(params["shift_embed"][prev])
    if spec.d_in:
        parts.append(batch["vectors"] @ params["vec_in"])
    return sum(parts) / math.sqrt(len(parts))


def _split_heads(x, n_heads):
    b, t, _ = x.shape
    return x.reshape(b, t, n_heads, -1).transpose(0, 2, 1, 3)  # (B, H, T, d)


def causal_mask(pos_q, t: int):
    """(..., n_q, T) bool: a query at position p may attend to keys 0..p."""
    return jnp.arange(t) <= pos_q[..., None]


def attention_layer(spec: ModelSpec, layer, h, query_idx=None):
    """One causal attention layer.

    h: (B, T, d_model); query_idx: (B, n_q) positions whose rows are computed
    (None: every position). Returns the layer output (B, n_q, d_model) and
    the rows' logits and weights (B, H, n_q, T) for the statistics.
    """
    dtype = jnp.dtype(spec.dtype)
    x = _layer_norm(h, layer["ln"])
    t = h.shape[1]
    pos_q = jnp.broadcast_to(jnp.arange(t), h.shape[:2]) if query_idx is None else query_idx
    xq = x if query_idx is None else jnp.take_along_axis(x, query_idx[..., None], axis=1)
    q = _split_heads(xq @ layer["w_q"], spec.n_heads).astype(dtype)  # (B, H, n_q, d_k)
    k = _split_heads(x @ layer["w_k"], spec.n_heads).astype(dtype)   # (B, H, T, d_k)
    v = _split_heads(x @ layer["w_v"], spec.n_heads).astype(dtype)   # (B, H, T, d_v)
    mask = causal_mask(pos_q, t)[:, None]  # (B, 1, n_q, T)

    def one_head(p, q_h, k_h, v_h, m):
        return attention.attend_with_logits(spec.attention, p, q_h, k_h, v_h, mask=m, **spec.options)

    # heads are axis 1; the variant's parameters are stacked on axis 0
    out, weights, logits = jax.vmap(one_head, in_axes=(0, 1, 1, 1, None), out_axes=1)(
        layer["attn"], q, k, v, mask[:, 0])
    b, _, n_q, _ = out.shape
    out = out.transpose(0, 2, 1, 3).reshape(b, n_q, -1).astype(h.dtype)  # (B, n_q, H*d_v)
    h_q = h if query_idx is None else jnp.take_along_axis(h, query_idx[..., None], axis=1)
    return h_q + out @ layer["w_o"], logits, weights, mask


def _factored_inputs(spec: ModelSpec, layer, h, query_idx):
    """What reassociated rows start from: LN(h) (B, T, d_model), the query rows
    (B, H, n_q, d_k), W_k and W_v split by head ([d_model, H, d]) and the mask."""
    dtype = jnp.dtype(spec.dtype)
    x = _layer_norm(h, layer["ln"])  # (B, T, d_model)
    d_model, n_heads = h.shape[2], spec.n_heads
    xq = jnp.take_along_axis(x, query_idx[..., None], axis=1)
    q = _split_heads(xq @ layer["w_q"], n_heads).astype(dtype)  # (B, H, n_q, d_k)
    w_k = layer["w_k"].reshape(d_model, n_heads, spec.d_k).astype(dtype)
    w_v = layer["w_v"].reshape(d_model, n_heads, spec.d_v).astype(dtype)
    mask = causal_mask(query_idx, h.shape[1])[:, None]  # (B, 1, n_q, T)
    return x.astype(dtype), q, w_k, w_v, mask


def _pooled_output(layer, h, query_idx, x, w_v, logits, mask):
    """softmax, then sum_t w_t W_v^T x_t = W_v^T (sum_t w_t x_t): the values are never formed."""
    weights = attention.masked_softmax(logits, mask)
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
    return attention.scores(spec.attention, head0, unit, unit, **spec.options)[0, 0]


def score_scale(spec: ModelSpec, params):
    """What the training programs take as the lane's `score_scale`: the last
    layer's bilinear factor c where bilinear_rows computes it, else 1 (unused).

    Given as data rather than folded into the program, c is all that tells
    scaled, unscaled and mup apart there, so their runs at one d_k share one
    compiled program (and one entry of the persistent compilation cache)."""
    if reassociated_rows(spec) is not bilinear_rows:
        return jnp.ones((), jnp.dtype(spec.dtype))
    return bilinear_factor(spec, params["layers"][-1])


def program_spec(spec: ModelSpec) -> ModelSpec:
    """The spec the training programs are traced from. Where the model's only
    layer computes bilinear_rows, the variant reaches those programs only as
    its factor c (score_scale, data), so scaled, unscaled and mup at one d_k
    are traced from one spec: one program, which a sweep that runs them one
    after another compiles and loads once. Their init still uses their own."""
    if spec.n_layers == 1 and reassociated_rows(spec) is bilinear_rows:
        return spec._replace(attention="scaled", attention_options=())
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
    u = jnp.einsum("bhqe,dhe->bhqd", q, w_k)  # (B, H, n_q, d_model): W_k q
    logits = jnp.einsum("bhqd,btd->bhqt", u, x) * scale  # (B, H, n_q, T)
    return _pooled_output(layer, h, query_idx, x, w_v, logits, mask)


def factored_rows(spec: ModelSpec, layer, h, query_idx):
    """attention_layer's query rows for a variant with a factored form
    (additive, qk_norm): its score takes the keys as x @ W_k, per head, and
    the values are pooled as in bilinear_rows. For additive at large d_k this
    replaces a [T, d_k] x [d_k, d_hidden] product per example by one
    [d_model, d_k] x [d_k, d_hidden] product per step."""
    x, q, w_k, w_v, mask = _factored_inputs(spec, layer, h, query_idx)

    def one_head(p, q_h, w_k_h):
        return attention.factored_scores(spec.attention, p, q_h, w_k_h, x, mask=mask[:, 0],
                                         **spec.options)

    logits = jax.vmap(one_head, in_axes=(0, 1, 1), out_axes=1)(layer["attn"], q, w_k)
    return _pooled_output(layer, h, query_idx, x, w_v, logits, mask)


def reassociated_rows(spec: ModelSpec):
    """The last layer's row function under model.reassociate, None where it changes nothing."""
    variant = attention.get_variant(spec.attention)
    if not spec.reassociate or not variant.reassociable:
        return None
    return bilinear_rows if variant.bilinear else factored_rows


def query_positions(loss_mask, n_queries: int):
    """(B, n_queries) positions of the loss, in order; a row with fewer pads
    with its first non-loss positions (the first n_queries of a stable sort
    of the positions by loss first, then sorted).

    Built from running counts rather than a sort: two sorts of (B, T) per step
    were 8 % of an MQAR step (T = 64) on a CPU. Integer arithmetic: exact."""
    t = loss_mask.shape[-1]
    is_loss = loss_mask > 0  # (B, T)
    n_pad = n_queries - is_loss.sum(-1, keepdims=True)  # (B, 1)
    chosen = is_loss | (~is_loss & (jnp.cumsum(~is_loss, axis=-1) <= n_pad))
    rank = jnp.cumsum(chosen, axis=-1) - 1  # (B, T): place among the chosen
    slot = chosen[:, None, :] & (rank[:, None, :] == jnp.arange(n_queries)[:, None])  # (B, n_q, T)
    return (slot * jnp.arange(t)).sum(-1).astype(jnp.int32)


def forward(spec: ModelSpec, params, batch, n_queries: int, score_scale=None):
    """Class logits at the query positions and what the statistics need.

    Returns (logits (B, n_q, C), query_idx (B, n_q), rows) where rows is a
    list over layers of (logits, weights, mask), each (B, H, n_q, T).
    `score_scale` (see score_scale) is c for bilinear_rows; None: computed.
    """
    h = embed(spec, params, batch)
    query_idx = query_positions(batch["loss_mask"], n_queries)
    rows = []
    for i, layer in enumerate(params["layers"]):
        last = i == len(params["layers"]) - 1
        if last:
            rows_of = reassociated_rows(spec) or attention_layer
            scaled = {"scale": score_scale} if rows_of is bilinear_rows else {}
            h, logits, weights, mask = rows_of(spec, layer, h, query_idx, **scaled)
            rows.append((logits, weights, mask))
        else:
            h, logits, weights, mask = attention_layer(spec, layer, h)
            pick = query_idx[:, None, :, None]
            take = lambda a: jnp.take_along_axis(
                a, jnp.broadcast_to(pick, a.shape[:2] + pick.shape[2:3] + a.shape[3:]), axis=2)
            rows.append((take(logits), take(weights), take(jnp.broadcast_to(mask, logits.shape))))
    out = _layer_norm(h, params["ln_out"]) @ params["head"]  # (B, n_q, C)
    return out, query_idx, rows


def count_params(params) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(params))
