"""The probe's `task` input model: the harness's own attention layer on real task inputs.

For each (d_k, init) it builds the harness model (experiments.training.model.init_model;
ModelSpec for the probe's `task`, d_model from the probe, 1 layer, 1 head,
token_shift True, the variant's default options), draws the task's fixed
validation set (experiments.tasks.fixed_set, the probe's seed, split "val")
and takes the first examples whose loss positions give >= n_rows query rows.
It then runs the steps of experiments.training.model.attention_layer on the query rows
at loss positions: x = LN(embed(batch)), q = x_q W_q, k = x W_k, causal mask
(the same logits and weights as experiments.training.model.forward; the tests check
this), and reduces them with attention.stats.row_summary (mask = the causal
mask, row_mask = loss positions).

Keys per row: each query attends to the keys at or before it (causal), so
rows may differ in key count (mqar); `n_keys` is the mean key count over the
rows, and the theory (experiments.instruments.theory.predict, exactly as for the `model`
input: LN makes the layer's input unit-variance, so Var(q.k) = d_k (d_model
s^2)^2, rank d_model) assumes every row has round(n_keys) keys. The theory
also assumes independent keys; task inputs repeat tokens (a query's own key
appears earlier in the sequence), which it ignores.

Gradients: the same fixed random downstream loss as the other input models,
with the model's values replaced by v ~ N(0, 1) [T, d_v] per example and a
direction r_i ~ N(0, I / d_v) per query row: l_i = <out_i, r_i>. Examples come
in groups of `queries_per_batch`; L_b = sum_{i in b} l_i / sqrt(rows in b),
and grad_norm_q = sqrt(sum_b rows_b |dL_b/dW_q|^2 / sum_b rows_b) (W_q the
layer's projection), the RMS of the per-row gradient norm in expectation;
likewise grad_norm_k. Deterministic for a seed: the examples, v and r are
shared by every d_k, init and variant; the model's parameters by every variant
at one (d_k, init) (one PRNG key for all d_k and inits, as in the harness).
"""
from __future__ import annotations

import math
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

import attention
from experiments.tasks import TASKS, fixed_set
from experiments.training import blocks
from experiments.training import model as harness

_VALUES, _MODEL = 0x544B56, 0x544B4D  # fold_in tags: task values/directions, model params
CHUNK_ELEMENTS = 1 << 24
STATS = ("logit_var", "logit_std", "entropy", "entropy_norm", "saturation", "jacobian_norm_mean",
         "jacobian_norm_median")


def model_spec(cfg, name: str, d_k: int, init: str) -> harness.ModelSpec:
    task = TASKS[cfg.task_name]
    task_cfg = task.config_cls()
    return harness.ModelSpec(
        attention=name, attention_options=(), d_k=d_k, d_model=cfg.d_model, d_v=cfg.d_v,
        n_layers=1, n_heads=1, init=init, token_shift=True, vocab=task.input_vocab(task_cfg),
        n_classes=task.n_classes(task_cfg), d_in=task.d_in(task_cfg))


@lru_cache(maxsize=4)
def task_rows(task: str, seed: int, n_rows: int, group: int, d_v: int) -> dict:
    """numpy: the batch of the first examples that give >= n_rows query rows, grouped
    [n_groups, group, ...] (padded with loss-free copies), their query positions
    qidx [g, G, n_q], row mask [g, G, n_q], values v [g, G, T, d_v], directions r
    [g, G, n_q, d_v]."""
    spec = TASKS[task]
    batch = {k: np.asarray(x) for k, x in fixed_set(spec, spec.config_cls(), seed, "val", n_rows).items()}
    per_ex = batch["loss_mask"].sum(-1)
    n_ex = int(np.searchsorted(np.cumsum(per_ex), n_rows) + 1)
    n_q = int(per_ex[:n_ex].max())
    n_groups = math.ceil(n_ex / group)
    pad = n_groups * group - n_ex
    out = {}
    for key, x in batch.items():
        x = x[:n_ex]
        if pad:
            x = np.concatenate([x, np.zeros_like(x[:pad]) if key == "loss_mask" else x[:pad]])
        out[key] = x
    qidx = np.asarray(harness.query_positions(jnp.asarray(out["loss_mask"]), n_q))
    row_mask = np.take_along_axis(out["loss_mask"], qidx, axis=1) > 0
    b, t = out["tokens"].shape
    rng = np.random.default_rng([seed, _VALUES])
    f32 = np.float32
    v = rng.standard_normal((b, t, d_v), f32)
    r = rng.standard_normal((b, n_q, d_v), f32) / f32(math.sqrt(d_v))
    grouped = lambda x: x.reshape((n_groups, group) + x.shape[1:])
    return {"batch": out, "qidx": grouped(qidx), "row_mask": grouped(row_mask),
            "v": grouped(v), "r": grouped(r)}


@lru_cache(maxsize=None)
def _measure_fn(name: str, chunk: int):
    """Jitted: (w, attn params, rows) -> logits, weights [g, G, n_q, T],
    |grad W_q|^2, |grad W_k|^2 [g]."""
    def per_group(w, params, rows):
        def loss(w):
            q, k = rows["xq"] @ w["w_q"], rows["x"] @ w["w_k"]  # (G, n_q, d_k), (G, T, d_k)
            out, weights, logits = attention.attend_with_logits(
                name, params, q, k, rows["v"], mask=rows["mask"])
            return jnp.sum(out * rows["r"]) / jnp.sqrt(rows["n"]), (logits, weights)

        g, (logits, weights) = jax.grad(loss, has_aux=True)(w)
        return logits, weights, jnp.sum(g["w_q"] ** 2), jnp.sum(g["w_k"] ** 2)

    def measure(w, params, rows):
        return jax.lax.map(lambda b: per_group(w, params, b), rows, batch_size=chunk)

    return jax.jit(measure)


_summary = jax.jit(attention.stats.row_summary)


@partial(jax.jit, static_argnums=0)
def _inputs(spec, params, batch, qidx):
    """The layer's input x = LN(embed) (B, T, d_model) and its query rows (B, n_q, d_model)."""
    x = blocks.layer_norm(harness.embed(spec, params, batch), params["ln"])
    return x, jnp.take_along_axis(x, qidx[..., None], axis=1)


def measure_task(cfg, d_k: int, inits: list[str]) -> dict:
    """{(variant, init): measured stats + n_keys (mean key count) + n_rows} at one d_k."""
    data = task_rows(cfg.task_name, cfg.seed, cfg.n_rows, cfg.queries_per_batch, cfg.d_v)
    g, G, n_q = data["qidx"].shape
    t = data["batch"]["tokens"].shape[1]
    mask = np.asarray(harness.causal_mask(jnp.asarray(data["qidx"]), t))  # (g, G, n_q, T)
    n_b = data["row_mask"].sum((1, 2)).astype(np.float64)                 # rows per group
    rows = {"v": jnp.asarray(data["v"]), "mask": jnp.asarray(mask),
            "r": jnp.asarray(data["r"] * data["row_mask"][..., None]),      # padding rows: no loss
            "n": jnp.asarray(np.maximum(n_b, 1), jnp.float32)}
    row_mask = jnp.asarray(data["row_mask"])
    width = max(d_k, cfg.d_v, cfg.d_model)
    limit = max(1, CHUNK_ELEMENTS // (G * n_q * t * width))
    chunk = max(c for c in range(1, g + 1) if g % c == 0 and c <= limit)  # no remainder: one body
    key = jax.random.fold_in(jax.random.PRNGKey(cfg.seed), _MODEL)
    batch = {k: jnp.asarray(x) for k, x in data["batch"].items()}
    qidx = jnp.asarray(data["qidx"].reshape(g * G, n_q))
    keys = (data["qidx"] + 1)[data["row_mask"]]
    out = {}
    for name in cfg.variants:
        for init in inits:
            spec = model_spec(cfg, name, d_k, init)
            params = harness.init_model(spec, key)
            layer = params["layers"][0]
            embed_params = {k: v for k, v in params.items() if k in ("embed", "shift_embed", "vec_in")}
            x, xq = _inputs(spec._replace(attention="", d_k=0, init=""),  # one compile for all
                            {**embed_params, "ln": layer["ln"]}, batch, qidx)
            rows["x"], rows["xq"] = (a.reshape((g, G) + a.shape[1:]) for a in (x, xq))
            attn = jax.tree_util.tree_map(lambda a: a[0], layer["attn"])  # head 0 of 1
            logits, weights, gq2, gk2 = _measure_fn(name, chunk)(
                {"w_q": layer["w_q"], "w_k": layer["w_k"]}, attn, rows)
            stats = _summary(logits, weights, rows["mask"], row_mask)
            row = {c: float(stats[c]) for c in STATS}
            row["grad_norm_q"] = math.sqrt(float(np.sum(n_b * np.asarray(gq2)) / n_b.sum()))
            row["grad_norm_k"] = math.sqrt(float(np.sum(n_b * np.asarray(gk2)) / n_b.sum()))
            row["n_keys"] = float(keys.mean())
            row["n_rows"] = int(data["row_mask"].sum())
            out[(name, init)] = row
    return out
