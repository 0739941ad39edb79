"""The pure, jitted pieces of training: loss, train step, evaluation.

State is a plain pytree {"params", "opt_state", "step", "seed"}. The train
step takes (state, batch) and returns (state, measurements); `train_chunk`
scans it over `eval_every` steps so that the host only wakes up at
evaluations, and `compile_fns` vmaps both over seeds.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax

from attention import stats
from experiments.training.model import ModelSpec, forward

PROJECTIONS = ("w_q", "w_k", "w_v")


def schedule_shape(train_cfg) -> optax.Schedule | None:
    """The learning-rate schedule with peak 1 (None: constant), scaled per lane
    by that lane's rate."""
    steps, warmup = train_cfg.steps, train_cfg.warmup_steps
    if train_cfg.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup, steps, 0.0)
    if warmup:
        return optax.join_schedules(
            [optax.linear_schedule(0.0, 1.0, warmup), optax.constant_schedule(1.0)], [warmup])
    return None


def make_optimizer(opt_cfg, train_cfg) -> optax.GradientTransformation:
    """The optimizer, with its learning rate a value in its state
    (optax.inject_hyperparams): each lane of a group carries its own rate, so a
    grid of rates is one program. `with_learning_rate` sets a lane's rate."""
    shape = schedule_shape(train_cfg)

    def build(learning_rate):
        lr = learning_rate if shape is None else (lambda count: learning_rate * shape(count))
        if opt_cfg.name == "adam":
            tx = optax.adam(lr, b1=opt_cfg.b1, b2=opt_cfg.b2, eps=opt_cfg.eps)
        elif opt_cfg.name == "adamw":
            tx = optax.adamw(lr, b1=opt_cfg.b1, b2=opt_cfg.b2, eps=opt_cfg.eps,
                             weight_decay=opt_cfg.weight_decay)
        else:
            tx = optax.sgd(lr, momentum=opt_cfg.momentum or None, nesterov=opt_cfg.nesterov)
        if train_cfg.clip_norm is not None:
            tx = optax.chain(optax.clip_by_global_norm(train_cfg.clip_norm), tx)
        return tx

    return optax.inject_hyperparams(build)(learning_rate=opt_cfg.lr)


def with_learning_rate(opt_state, lr):
    """An injected optimizer state whose learning rate is `lr` (a lane's rate)."""
    rates = {**opt_state.hyperparams,
             "learning_rate": jnp.asarray(lr, opt_state.hyperparams["learning_rate"].dtype)}
    return opt_state._replace(hyperparams=rates)


def _gather(x, query_idx):
    return jnp.take_along_axis(x, query_idx, axis=1)


def per_query(spec: ModelSpec, params, batch, n_queries: int):
    """Cross-entropy, correctness and weight of each query: (B, n_q) each, plus rows."""
    logits, query_idx, rows = forward(spec, params, batch, n_queries)
    targets = _gather(batch["targets"], query_idx)
    weight = _gather(batch["loss_mask"], query_idx)
    nll = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), targets)
    correct = (logits.argmax(-1) == targets).astype(jnp.float32)
    return nll, correct, weight, rows


def loss_fn(params, spec: ModelSpec, batch, n_queries: int):
    nll, correct, weight, _ = per_query(spec, params, batch, n_queries)
    denom = jnp.maximum(weight.sum(), 1.0)
    return (nll * weight).sum() / denom, (correct * weight).sum() / denom


def _norm(tree) -> jax.Array:
    """Global L2 norm of a pytree (0 for an empty one)."""
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in leaves)) if leaves \
        else jnp.zeros(())


def grad_measurements(grads, per_layer: bool) -> dict:
    """Global and per-part gradient norms (W_q, W_k, W_v, the variant's own)."""
    layers = grads["layers"]
    out = {"grad_norm": _norm(grads)}
    for name in PROJECTIONS:
        out[f"grad_norm_{name[2]}"] = _norm([layer[name] for layer in layers])
    out["grad_norm_attn"] = _norm([layer["attn"] for layer in layers])
    if per_layer:
        for i, layer in enumerate(layers):
            for name in PROJECTIONS:
                out[f"grad_norm_{name[2]}_l{i}"] = _norm(layer[name])
            out[f"grad_norm_attn_l{i}"] = _norm(layer["attn"])
    return out


def train_step(state, batch, *, spec: ModelSpec, tx, n_queries: int):
    """One optimisation step; measurements describe the params it started from."""
    (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state["params"], spec, batch, n_queries)
    updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    measurements = {"train_loss": loss, "train_accuracy": acc,
                    "update_norm": _norm(updates),
                    **grad_measurements(grads, per_layer=spec.n_layers > 1)}
    return {**state, "params": params, "opt_state": opt_state, "step": state["step"] + 1}, measurements


def train_chunk(state, *, length: int, make_train_batch, spec, tx, n_queries):
    """`length` train steps under lax.scan; each batch is drawn inside from (seed, step)."""
    def body(carry, _):
        batch = make_train_batch(carry)
        return train_step(carry, batch, spec=spec, tx=tx, n_queries=n_queries)

    return jax.lax.scan(body, state, None, length=length)


def evaluate(params, batches, *, spec: ModelSpec, n_queries: int):
    """Loss, accuracy and attention statistics on a fixed set.

    `batches` is a Batch with a leading chunk axis (n_chunks, chunk, ...);
    chunks run one at a time (lax.map) to bound memory, then every query
    row of every layer and head is pooled for the statistics.
    """
    def one(batch):
        nll, correct, weight, rows = per_query(spec, params, batch, n_queries)
        return nll, correct, weight, rows

    nll, correct, weight, rows = jax.lax.map(one, batches)
    denom = jnp.maximum(weight.sum(), 1.0)
    out = {"loss": (nll * weight).sum() / denom, "accuracy": (correct * weight).sum() / denom,
           "n_loss": weight.sum()}
    row_mask = weight > 0  # (chunks, chunk, n_q)
    per_head = []
    for logits, weights, mask in rows:  # each (chunks, chunk, H, n_q, T)
        rm = jnp.broadcast_to(row_mask[:, :, None, :], logits.shape[:-1])
        per_head.append((logits, weights, jnp.broadcast_to(mask, logits.shape), rm))
    stack = lambda i: jnp.stack([p[i] for p in per_head])  # (L, chunks, chunk, H, n_q, T)
    out.update(stats.row_summary(stack(0), stack(1), stack(2), stack(3)))
    n_heads = per_head[0][0].shape[2]  # (chunks, chunk, H, n_q, T)
    if len(per_head) * n_heads > 1:
        for li, (logits, weights, mask, rm) in enumerate(per_head):
            for hi in range(n_heads):
                sel = lambda a: a[:, :, hi]
                summary = stats.row_summary(sel(logits), sel(weights), sel(mask), sel(rm))
                out.update({f"{k}_l{li}h{hi}": v for k, v in summary.items()})
    return out


def first_bad_step(measured: dict, divergence_loss: float) -> jax.Array:
    """Index of the first step of a chunk whose loss or gradient is not finite
    (or whose loss exceeds divergence_loss); -1 if none. measured: (length,)."""
    loss = measured["train_loss"]
    bad = ~(jnp.isfinite(loss) & jnp.isfinite(measured["grad_norm"])) | (loss > divergence_loss)
    return jnp.where(bad.any(), jnp.argmax(bad), -1)


def compile_fns(spec: ModelSpec, tx, make_train_batch, n_queries: int, divergence_loss: float):
    """The jitted functions of a group of seeds: (train_chunk, evaluate).

    Both are vmapped over a leading seed axis of the state (and of the
    evaluation sets): S seeds are one program, whose ops are S times larger
    rather than S times as many.
    """
    def chunk(state, length: int):
        """(S, ...) state -> (state after `length` steps, measurements of the
        first step, first diverging step or -1), each with a leading S axis."""
        one_seed = partial(train_chunk, length=length, make_train_batch=make_train_batch,
                           spec=spec, tx=tx, n_queries=n_queries)
        state, measured = jax.vmap(one_seed)(state)  # measured: (S, length)
        bad = jax.vmap(partial(first_bad_step, divergence_loss=divergence_loss))(measured)
        return state, jax.tree_util.tree_map(lambda m: m[:, 0], measured), bad

    ev = jax.vmap(partial(evaluate, spec=spec, n_queries=n_queries))
    return jax.jit(chunk, static_argnames="length", donate_argnums=0), jax.jit(ev)
