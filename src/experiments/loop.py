"""One training run, from a composed config to rows and a summary (no file I/O).

The host loop only wakes up at evaluations: `eval_every` steps run inside one
jitted lax.scan. Compiled functions are cached on everything static (model
shape, optimizer, task, batch size), so the seeds of a sweep share one compile.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments import step as steplib
from experiments.model import ModelSpec, count_params, init_model
from experiments.tasks import TASKS, fixed_set, train_batch

EVAL_CHUNK = 128  # examples per evaluation chunk: bounds additive's memory


def model_spec(cfg: DictConfig, task_cfg) -> ModelSpec:
    task = TASKS[cfg.task.name]
    options = {k: v for k, v in OmegaConf.to_container(cfg.attention).items() if k != "name"}
    return ModelSpec(
        attention=cfg.attention.name, attention_options=tuple(sorted(options.items())),
        d_k=cfg.d_k, d_model=cfg.model.d_model, d_v=cfg.model.d_v,
        n_layers=cfg.model.n_layers, n_heads=cfg.model.n_heads, init=cfg.model.init,
        token_shift=cfg.model.token_shift, vocab=task.input_vocab(task_cfg),
        n_classes=task.n_classes(task_cfg), d_in=task.d_in(task_cfg), dtype=cfg.model.dtype)


def _frozen(node) -> tuple:
    return tuple(sorted(OmegaConf.to_container(node, resolve=True).items()))


@lru_cache(maxsize=64)
def _compiled(spec: ModelSpec, opt_key: tuple, train_key: tuple, task_key: tuple,
              batch_size: int, n_queries: int):
    opt_cfg, train_cfg = OmegaConf.create(dict(opt_key)), OmegaConf.create(dict(train_key))
    task_cfg = _task_object(dict(task_key))
    tx = steplib.make_optimizer(opt_cfg, train_cfg)
    task = TASKS[task_cfg.name]

    def make_train_batch(state):
        return train_batch(task, task_cfg, state["seed"], state["step"], batch_size)

    return tx, steplib.compile_fns(spec, tx, make_train_batch, n_queries)


def _task_object(task_dict: dict):
    """The task's config dataclass (what the task functions expect)."""
    return TASKS[task_dict["name"]].config_cls(**task_dict)


def _chunked(batch: dict, chunk: int) -> dict:
    """(N, ...) -> (N / chunk, chunk, ...), padding N up with loss-free copies."""
    n = batch["tokens"].shape[0]
    n_chunks = math.ceil(n / chunk)
    pad = n_chunks * chunk - n

    def fix(name, x):
        if pad:
            filler = x[:pad] if name != "loss_mask" else jnp.zeros_like(x[:pad])
            x = jnp.concatenate([x, filler])
        return x.reshape((n_chunks, chunk) + x.shape[1:])

    return {k: fix(k, v) for k, v in batch.items()}


@dataclass
class RunResult:
    rows: list = field(default_factory=list)
    status: str = "completed"
    test_accuracy: float | None = None
    compile_time_s: float = 0.0
    train_time_s: float = 0.0
    steps_done: int = 0
    n_params: int = 0


def _host(tree) -> dict:
    return {k: float(v) for k, v in jax.device_get(tree).items()}


def _diverged(row: dict, limit: float) -> bool:
    losses = [row.get("loss"), row.get("train_loss")]
    return any(v is not None and (not math.isfinite(v) or v > limit) for v in losses)


def train_run(cfg: DictConfig, on_eval: Callable[[dict], None] = lambda row: None,
              on_steps: Callable[[int], None] = lambda n: None) -> RunResult:
    """Train one configuration; `on_eval(row)` sees each evaluation row as it comes."""
    task_cfg = _task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task = TASKS[cfg.task.name]
    t = cfg.train
    spec = model_spec(cfg, task_cfg)
    val = fixed_set(task, task_cfg, cfg.seed, "val", t.n_val)
    n_queries = int(np.asarray(val["loss_mask"]).sum(-1).max())
    val = _chunked(val, min(EVAL_CHUNK, t.n_val))
    tx, (chunk_fn, eval_fn) = _compiled(
        spec, _frozen(cfg.optimizer), _frozen(t), _frozen(cfg.task), t.batch_size, n_queries)

    params = init_model(spec, jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 1))
    state = {"params": params, "opt_state": tx.init(params),
             "step": jnp.asarray(0, jnp.int32), "seed": jnp.asarray(cfg.seed, jnp.int32)}
    result = RunResult(n_params=count_params(params))

    # Compile ahead of time so that compile time and step time are measured apart.
    start = time.perf_counter()
    lengths = sorted({min(t.eval_every, t.steps), t.steps % t.eval_every} - {0})
    chunks = {n: chunk_fn.lower(state, length=n).compile() for n in lengths}
    evaluate = eval_fn.lower(params, val).compile()
    result.compile_time_s = time.perf_counter() - start

    start = time.perf_counter()
    step, first = 0, lengths[0]
    # A row holds the validation measurements of the params at `step` and the
    # train-step measurements (gradients, update) of the step taken from them.
    # After the last step, one more chunk runs on a copy and is thrown away,
    # so the final row has them too without compiling a second function.
    val_row = _host(evaluate(state["params"], val))
    while True:
        n = min(t.eval_every, t.steps - step) or first
        final = step >= t.steps
        new_state, measured = chunks[n](jax.tree_util.tree_map(jnp.copy, state) if final else state)
        if not final:
            state = new_state  # the chunk donated the old buffers
        row = {"step": step, **val_row, **_host(jax.tree_util.tree_map(lambda m: m[0], measured))}
        result.rows.append(row)
        on_eval(row)
        if _diverged(row, t.divergence_loss):
            result.status = "diverged"
            break
        if final:
            break
        step += n
        val_row = _host(evaluate(state["params"], val))
        on_steps(n)
    jax.block_until_ready(state)
    result.train_time_s = time.perf_counter() - start
    result.steps_done = step
    if result.status == "completed":
        result.test_accuracy = _test_accuracy(evaluate, state["params"], task, task_cfg, cfg, val)
    return result


def _test_accuracy(evaluate, params, task, task_cfg, cfg, val) -> float:
    """Accuracy on the test split, in blocks shaped like the validation set
    (so the compiled evaluation serves both)."""
    block = val["tokens"].shape[0] * val["tokens"].shape[1]
    n_blocks = math.ceil(cfg.train.n_test / block)
    test = fixed_set(task, task_cfg, cfg.seed, "test", n_blocks * block)
    chunk = val["tokens"].shape[1]
    correct = weight = 0.0
    for i in range(n_blocks):
        part = _chunked({k: v[i * block:(i + 1) * block] for k, v in test.items()}, chunk)
        out = _host(evaluate(params, part))
        correct += out["accuracy"] * out["n_loss"]
        weight += out["n_loss"]
    return correct / max(weight, 1.0)


def summarize(result: RunResult, threshold: float) -> dict:
    """The summary metrics of a run from its evaluation rows."""
    acc = [r["accuracy"] for r in result.rows]
    reached = [r["step"] for r in result.rows if r["accuracy"] >= threshold]
    return {
        "status": result.status,
        "test_accuracy": result.test_accuracy,
        "final_val_accuracy": acc[-1] if acc else None,
        "steps_to_threshold": reached[0] if reached else None,
        "accuracy_auc": float(np.mean(acc)) if acc else None,
        "compile_time_s": result.compile_time_s,
        "train_time_s": result.train_time_s,
        "steps_per_s": result.steps_done / result.train_time_s if result.train_time_s else None,
        "steps_done": result.steps_done,
        "n_params": result.n_params,
    }
