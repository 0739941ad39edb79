"""The pure, jitted pieces of training: loss, train step, evaluation.

State is a plain pytree {"params", "opt_state", "step", "seed", "active",
"score_scale"}; a lane's learning rate is a leaf of its opt_state
(optax.inject_hyperparams), so lanes of different rates and seeds are one
program, and its bilinear factor (reassociate.score_scale) is data too, so that
the bilinear variants share their programs. `train_chunk` loops the train
step a traced number of times, so that the host only wakes up at
evaluations and one program serves every chunk length; `compile_fns` maps
it and `evaluate` over the lane axis (training.lane_axis).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax

from attention import stats
from experiments.training import lane_axis
from attention.learned_temperature import PARAM as TEMPERATURE
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


def per_query(spec: ModelSpec, params, batch, n_queries: int, score_scale=None):
    """Cross-entropy, correctness and weight of each query: (B, n_q) each, plus rows."""
    logits, query_idx, rows = forward(spec, params, batch, n_queries, score_scale)
    targets = _gather(batch["targets"], query_idx)
    weight = _gather(batch["loss_mask"], query_idx)
    nll = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), targets)
    correct = (logits.argmax(-1) == targets).astype(jnp.float32)
    return nll, correct, weight, rows


def loss_fn(params, spec: ModelSpec, batch, n_queries: int, score_scale=None):
    nll, correct, weight, _ = per_query(spec, params, batch, n_queries, score_scale)
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


def step_measurements(loss, acc, grads, updates, per_layer: bool) -> dict:
    """What a row records of one train step (of the params it started from)."""
    return {"train_loss": loss, "train_accuracy": acc, "update_norm": _norm(updates),
            **grad_measurements(grads, per_layer=per_layer)}


def train_step(state, batch, *, spec: ModelSpec, tx, n_queries: int):
    """One optimisation step: (new state, loss, accuracy, grads, updates), the
    last four of the params it started from."""
    (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state["params"], spec, batch, n_queries, state["score_scale"])
    updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    new = {**state, "params": params, "opt_state": opt_state, "step": state["step"] + 1}
    return new, loss, acc, grads, updates


def is_bad(loss, grad_norm, divergence_loss: float) -> jax.Array:
    """A loss or gradient that is not finite, or a loss above divergence_loss."""
    return ~(jnp.isfinite(loss) & jnp.isfinite(grad_norm)) | (loss > divergence_loss)


def train_chunk(state, n_steps, *, make_train_batch, spec, tx, n_queries, divergence_loss):
    """`n_steps` train steps of one lane (a traced count: one program serves
    every chunk length), each batch drawn inside from (seed, step).

    Returns (state, measurements of the first step, index of the first
    diverging step or -1). The host reads the first step's measurements
    alone, so the norms of the others are never computed (lax.cond on the
    loop index); every step is checked for divergence. A lane whose
    state["active"] is false (it reached the threshold or diverged) comes
    back unchanged (`ended_chunk`'s values).

    Nothing here branches on the lane's own values: vmapped over lanes, a
    branch on a per-lane value turns into both sides and a select, and it
    would make the loop's count and index per-lane too (a select of every
    carried array at every step). The ended lanes are put back once, at the
    end; a block of lanes that have all ended skips the chunk
    (lane_axis.lane_program's `idle`).
    """
    per_layer = spec.n_layers > 1

    def step(current):
        return train_step(current, make_train_batch(current), spec=spec, tx=tx, n_queries=n_queries)

    def body(i, carry):
        current, measured, first_bad = carry
        new, loss, acc, grads, updates = step(current)
        measured = jax.lax.cond(i == 0, lambda: step_measurements(loss, acc, grads, updates, per_layer),
                                lambda: measured)
        bad = is_bad(loss, _norm(grads), divergence_loss)
        return new, measured, jnp.where((first_bad < 0) & bad, i, first_bad)

    ended = ended_chunk(state, n_steps, spec=spec)
    ran = jax.lax.fori_loop(0, n_steps, body, (state, ended[1], ended[2]))
    keep = lambda a, b: jnp.where(state["active"], a, b)  # noqa: E731
    return jax.tree_util.tree_map(keep, ran, ended)


def ended_chunk(state, n_steps, *, spec: ModelSpec):
    """What `train_chunk` gives a lane that has ended: its state unchanged,
    zero measurements, no diverging step."""
    # a step's measurements are scalars named after the params: shaped without tracing a step
    per_layer = spec.n_layers > 1
    shapes = jax.eval_shape(lambda p: step_measurements(
        jnp.zeros(()), jnp.zeros(()), p, p, per_layer=per_layer), state["params"])
    zeros = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
    return state, zeros, jnp.int32(-1)


def evaluate(params, batches, score_scale=None, *, spec: ModelSpec, n_queries: int):
    """Loss, accuracy and attention statistics on a fixed set.

    `batches` is a Batch with a leading chunk axis (n_chunks, chunk, ...);
    chunks run one at a time (lax.map) to bound memory, then every query
    row of every layer and head is pooled for the statistics.
    """
    def one(batch):
        nll, correct, weight, rows = per_query(spec, params, batch, n_queries, score_scale)
        return nll, correct, weight, rows

    nll, correct, weight, rows = jax.lax.map(one, batches)
    denom = jnp.maximum(weight.sum(), 1.0)
    out = {"loss": (nll * weight).sum() / denom, "accuracy": (correct * weight).sum() / denom,
           "n_loss": weight.sum()}
    out["bpc"] = out["loss"] / jnp.log(2.0)  # bits per loss position: per character on text
    row_mask = weight > 0  # (chunks, chunk, n_q)
    per_head = []
    for logits, weights, mask in rows:  # each (chunks, chunk, H, n_q, T)
        rm = jnp.broadcast_to(row_mask[:, :, None, :], logits.shape[:-1])
        per_head.append((logits, weights, jnp.broadcast_to(mask, logits.shape), rm))
    stack = lambda i: jnp.stack([p[i] for p in per_head])  # (L, chunks, chunk, H, n_q, T)
    out.update(stats.row_summary(stack(0), stack(1), stack(2), stack(3)))
    learned = [layer["attn"][TEMPERATURE] for layer in params["layers"] if TEMPERATURE in layer.get("attn", {})]
    if learned:  # a learned multiplier (attention=learned_temperature): its value, over heads and layers
        out["temperature"] = jnp.mean(jnp.exp(jnp.stack(learned)))
    n_heads = per_head[0][0].shape[2]  # (chunks, chunk, H, n_q, T)
    if len(per_head) * n_heads > 1:
        for li, (logits, weights, mask, rm) in enumerate(per_head):
            for hi in range(n_heads):
                sel = lambda a: a[:, :, hi]
                summary = stats.row_summary(sel(logits), sel(weights), sel(mask), sel(rm))
                out.update({f"{k}_l{li}h{hi}": v for k, v in summary.items()})
    return out


def live_evaluate(params, batches, score_scale, live, *, spec: ModelSpec, n_queries: int):
    """`evaluate` of a lane that is still `live` (a bool); the lane axis skips the others."""
    del live  # read by the lane axis's idle branch, not here
    return evaluate(params, batches, score_scale, spec=spec, n_queries=n_queries)


def unevaluated(params, batches, score_scale, live, *, spec: ModelSpec, n_queries: int):
    """What `live_evaluate` gives a lane that has ended: NaN in every measurement (a
    count is 0), shaped without evaluating, so that a row of an ended lane read by
    mistake shows as missing rather than as a number."""
    shapes = jax.eval_shape(partial(evaluate, spec=spec, n_queries=n_queries), params, batches, score_scale)
    fill = lambda a: jnp.full(a.shape, jnp.nan if jnp.issubdtype(a.dtype, jnp.floating) else 0, a.dtype)  # noqa: E731
    return jax.tree_util.tree_map(fill, shapes)


def compile_fns(spec: ModelSpec, tx, make_train_batch, n_queries: int, divergence_loss: float,
                n_devices: int = 1, block: int | None = None):
    """The jitted functions of a group of lanes: (train_chunk, evaluate).

    chunk(state, n_steps): the state with a leading lane axis, n_steps an
    int32 device scalar every lane shares; evaluate(params, batches,
    score_scale, live): live a bool per lane, the lanes still training (an
    ended or pruned lane is skipped, NaN, where its block has no live lane: always
    with blocks of one lane, the CPU default; a GPU's one vmapped block of every
    lane is evaluated whole while any lane is live). Both
    map over the lane axis (lane_axis.lane_program): L lanes are one
    program, split over n_devices, `block` lanes vmapped at a time.
    """
    fixed = dict(make_train_batch=make_train_batch, spec=spec, tx=tx, n_queries=n_queries,
                 divergence_loss=divergence_loss)
    idle = (lambda state: state["active"], partial(ended_chunk, spec=spec))
    chunk = lane_axis.lane_program(partial(train_chunk, **fixed), n_devices, n_lane_args=1,
                                   block=block, idle=idle)
    ev_fixed = dict(spec=spec, n_queries=n_queries)
    ev_idle = (lambda params, batches, scale, live: live, partial(unevaluated, **ev_fixed))
    ev = lane_axis.lane_program(partial(live_evaluate, **ev_fixed), n_devices, n_lane_args=4,
                                block=block, idle=ev_idle)
    return jax.jit(chunk, donate_argnums=0), jax.jit(ev)
