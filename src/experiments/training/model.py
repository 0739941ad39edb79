"""Embedding -> attention layer(s) from the attention library -> output head.

Input at each position (each part has unit-variance components, and their sum
is divided by sqrt(#parts), so the attention input matches the paper's
assumption at init):
  token embedding E[t]                                   (all tasks)
  + token-shift embedding E_shift[t_prev]                (model.token_shift)
  + vectors @ W_in                                       (tasks with d_in > 0)
  + P[position]                                          (model.positions)
The token shift is a width-2 convolution over tokens: at a value position it
carries the preceding key, so that ONE causal attention layer can solve
associative recall (a plain single layer cannot; Zoology uses short
convolutions for the same reason). With it, d_k is exactly the swept quantity. The retrieval tasks need no
positions (a key is found by content); on text (task=charlm) the learned
position embedding lets the one layer attend to the characters at given
distances, which a model of content alone cannot tell apart.

Each layer: h = h + W_o attend(LN(h) W_q, LN(h) W_k, LN(h) W_v), causal;
with model.mlp, then h = h + MLP(LN(h)) (blocks.feed_forward), a transformer block.
The last layer computes only the query rows at loss positions (`query_idx`):
nothing else reaches the loss, and it keeps additive attention's
[n_q, n_k, d_hidden] tensor small. Head: LN(h) W_head over the classes.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

import attention
from experiments.training.blocks import causal_mask, feed_forward, layer_norm, ln_params, split_heads
from experiments.training.inits import init_projection, query_init_factor
from experiments.training.reassociate import bilinear_rows, reassociated_rows
from experiments.training.spec import ModelSpec

__all__ = ["ModelSpec", "attention_layer", "causal_mask", "count_params", "embed", "forward",
           "init_model", "query_positions"]


def init_model(spec: ModelSpec, rng) -> dict:
    """Parameters: a plain dict pytree."""
    keys = iter(jax.random.split(rng, 5 + 6 * spec.n_layers))
    # drawn from their own folds of rng: a model without them keeps every other draw
    positions, mlps = jax.random.fold_in(rng, 0x9051), jax.random.fold_in(rng, 0x3A9)
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
            "ln": ln_params(dm),
            "w_q": query_init_factor(spec.attention, spec.d_k) * spec.qk_init_gain
            * init_projection(spec.init, next(keys), dm, h * spec.d_k),
            "w_k": spec.qk_init_gain * init_projection(spec.init, next(keys), dm, h * spec.d_k),
            "w_v": init_projection(spec.init, next(keys), dm, h * spec.d_v),
            "w_o": init_projection(spec.init, next(keys), h * spec.d_v, dm),
            # the variant's own parameters, one set per head
            "attn": jax.vmap(lambda r: attention.init_params(
                spec.attention, r, spec.d_k, **spec.options))(head_keys),
        })
    for layer, key in zip(layers, jax.random.split(mlps, spec.n_layers)) if spec.mlp else ():
        layer["mlp"] = mlp_params(spec, key)
    params["layers"] = layers
    if spec.positions:
        params["pos_embed"] = jax.random.normal(positions, (spec.positions, dm))
    params["ln_out"] = ln_params(dm)
    params["head"] = init_projection("lecun_normal", next(keys), dm, spec.n_classes)
    return params


def mlp_params(spec: ModelSpec, rng) -> dict:
    k1, k2 = jax.random.split(rng)
    return {"ln": ln_params(spec.d_model), "b_1": jnp.zeros((spec.mlp,)), "b_2": jnp.zeros((spec.d_model,)),
            "w_1": init_projection(spec.init, k1, spec.d_model, spec.mlp),
            "w_2": init_projection(spec.init, k2, spec.mlp, spec.d_model)}


def embed(spec: ModelSpec, params, batch):
    """(B, T, d_model) input representation."""
    tokens = batch["tokens"]  # (B, T)
    parts = [params["embed"][tokens]]
    if spec.token_shift:
        prev = jnp.pad(tokens[:, :-1], ((0, 0), (1, 0)))  # position 0 sees token 0
        parts.append(params["shift_embed"][prev])
    if spec.d_in:
        parts.append(batch["vectors"] @ params["vec_in"])
    if spec.positions:
        parts.append(jnp.broadcast_to(params["pos_embed"][: tokens.shape[1]], parts[0].shape))
    return sum(parts) / math.sqrt(len(parts))



def attention_layer(spec: ModelSpec, layer, h, query_idx=None):
    """One causal attention layer.

    h: (B, T, d_model); query_idx: (B, n_q) positions whose rows are computed
    (None: every position). Returns the layer output (B, n_q, d_model) and
    the rows' logits and weights (B, H, n_q, T) for the statistics.
    """
    dtype = jnp.dtype(spec.dtype)
    x = layer_norm(h, layer["ln"])
    t = h.shape[1]
    pos_q = jnp.broadcast_to(jnp.arange(t), h.shape[:2]) if query_idx is None else query_idx
    xq = x if query_idx is None else jnp.take_along_axis(x, query_idx[..., None], axis=1)
    q = split_heads(xq @ layer["w_q"], spec.n_heads).astype(dtype)  # (B, H, n_q, d_k)
    k = split_heads(x @ layer["w_k"], spec.n_heads).astype(dtype)   # (B, H, T, d_k)
    v = split_heads(x @ layer["w_v"], spec.n_heads).astype(dtype)   # (B, H, T, d_v)
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



def query_positions(loss_mask, n_queries: int):
    """(B, n_queries) positions of the loss, in order; a row with fewer pads
    with its first non-loss positions (the first n_queries of a stable sort
    of the positions by loss first, then sorted).

    Built from running counts rather than a sort: two sorts of (B, T) per step
    are a visible share of a short-sequence step on a CPU. Integer arithmetic: exact."""
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
        if spec.mlp:
            h = feed_forward(layer["mlp"], h)
    out = layer_norm(h, params["ln_out"]) @ params["head"]  # (B, n_q, C)
    return out, query_idx, rows


def count_params(params) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(params))
