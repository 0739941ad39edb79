"""Training runs, from a composed config to rows and a summary (no file I/O).

The seeds of a configuration train as one vmapped program (`train_seeds`).
The host loop only wakes up at evaluations: `eval_every` steps run inside one
jitted lax.scan. Compiled functions are cached on everything static (model
shape, optimizer, task, batch size), so the jobs of a sweep that differ only
in seed share one compile.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.tasks import TASKS, fixed_set, train_batch
from experiments.training import lanes
from experiments.training import step as steplib
from experiments.training.memory import model_width
from experiments.training.model import ModelSpec, count_params, init_model

EVAL_CHUNK = 128  # examples per evaluation chunk: bounds additive's memory


def model_spec(cfg: DictConfig, task_cfg) -> ModelSpec:
    task = TASKS[cfg.task.name]
    options = {k: v for k, v in OmegaConf.to_container(cfg.attention).items() if k != "name"}
    return ModelSpec(
        attention=cfg.attention.name, attention_options=tuple(sorted(options.items())),
        d_k=cfg.d_k, d_model=model_width(cfg.model.get("width", "fixed"), cfg.model.d_model, cfg.d_k,
                                         cfg.model.n_heads), d_v=cfg.model.d_v,
        n_layers=cfg.model.n_layers, n_heads=cfg.model.n_heads, init=cfg.model.init,
        token_shift=cfg.model.token_shift, vocab=task.input_vocab(task_cfg),
        n_classes=task.n_classes(task_cfg), d_in=task.d_in(task_cfg), dtype=cfg.model.dtype)


def _frozen(node) -> tuple:
    return tuple(sorted(OmegaConf.to_container(node, resolve=True).items()))


@lru_cache(maxsize=4)  # a few configurations: their executables stay alive with them
def _compiled(spec: ModelSpec, opt_key: tuple, train_key: tuple, task_key: tuple,
              batch_size: int, n_queries: int):
    opt_cfg, train_cfg = OmegaConf.create(dict(opt_key)), OmegaConf.create(dict(train_key))
    task_cfg = _task_object(dict(task_key))
    tx = steplib.make_optimizer(opt_cfg, train_cfg)
    task = TASKS[task_cfg.name]

    def make_train_batch(state):
        return train_batch(task, task_cfg, state["seed"], state["step"], batch_size)

    return tx, steplib.compile_fns(spec, tx, make_train_batch, n_queries,
                                   train_cfg.divergence_loss)


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
    diverged_at_step: int | None = None
    test_accuracy: float | None = None
    compile_time_s: float = 0.0
    train_time_s: float = 0.0
    steps_done: int = 0
    n_params: int = 0
    n_seeds_vmapped: int = 1


def _host_per_seed(tree, n_seeds: int) -> list[dict]:
    """{name: (S,) array} -> one {name: float} per seed (one transfer if on device)."""
    host = jax.device_get(tree)
    return [{k: float(v[i]) for k, v in host.items()} for i in range(n_seeds)]


def _diverged(row: dict, limit: float) -> bool:
    """A non-finite loss or gradient norm, or a loss above `limit`."""
    losses = [row.get("loss"), row.get("train_loss")]
    if any(v is not None and (not math.isfinite(v) or v > limit) for v in losses):
        return True
    return any(not math.isfinite(v) for k, v in row.items() if k.startswith("grad_norm"))


def _diverged_at(row: dict, first_bad: int, final: bool, limit: float) -> int | None:
    """The step a seed diverged at: this row's own step if its values are bad,
    else the first bad step the chunk saw (`first_bad` steps after the row;
    -1: none). After the last step the chunk is thrown away, so then only the
    row counts."""
    if _diverged(row, limit):
        return row["step"]
    if first_bad >= 0 and not final:
        return row["step"] + first_bad
    return None


def _stack(trees: list):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def train_run(cfg: DictConfig, on_eval: Callable[[dict], None] = lambda row: None,
              on_steps: Callable[[int], None] = lambda n: None) -> RunResult:
    """Train one configuration (seed cfg.seed); `on_eval(row)` sees each row as it comes."""
    return train_seeds(cfg, [cfg.seed], lambda i, row: on_eval(row), on_steps)[0]


@dataclass
class Group:
    """The seeds of one configuration, ready to train: state, validation sets
    and compiled functions with a leading seed axis (spread over devices; see
    training.lanes)."""
    seeds: list[int]
    state: dict
    val: dict  # (S, n_chunks, chunk, ...)
    chunks: dict  # chunk length -> compiled train chunk
    evaluate: Callable
    place: Callable  # puts a seed-axis pytree where the programs expect it
    compile_time_s: float  # tracing + lowering + XLA compile of every program
    xla_compile_time_s: float  # the XLA part alone (what the persistent cache saves)
    n_params: int


def prepare(cfg: DictConfig, seeds: list[int]) -> Group:
    """Initialise every seed and compile (ahead of time, so that compile time
    and step time are measured apart; the programs compile in parallel)."""
    task_cfg = _task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task = TASKS[cfg.task.name]
    t = cfg.train
    spec = model_spec(cfg, task_cfg)
    n_devices = lanes.n_devices_for(len(seeds)) if cfg.runtime.shard_seeds else 1
    place = lanes.placer(n_devices)
    chunk = min(EVAL_CHUNK, t.n_val)
    vals = [fixed_set(task, task_cfg, s, "val", t.n_val) for s in seeds]
    n_queries = max(int(np.asarray(v["loss_mask"]).sum(-1).max()) for v in vals)
    val = place(_stack([_chunked(v, chunk) for v in vals]))
    tx, (chunk_fn, eval_fn) = _compiled(
        spec, _frozen(cfg.optimizer), _frozen(t), _frozen(cfg.task), t.batch_size, n_queries)

    params = _stack([init_model(spec, jax.random.fold_in(jax.random.PRNGKey(s), 1)) for s in seeds])
    state = place({"params": params, "opt_state": jax.vmap(tx.init)(params),
                   "step": jnp.zeros(len(seeds), jnp.int32), "seed": jnp.asarray(seeds, jnp.int32)})

    start = time.perf_counter()
    lengths = sorted({min(t.eval_every, t.steps), t.steps % t.eval_every} - {0})
    lowered = {n: chunk_fn.lower(state, length=n) for n in lengths}
    lowered["eval"] = eval_fn.lower(state["params"], val)
    xla_start = time.perf_counter()
    # XLA compiles outside the GIL: the programs of a group compile side by side.
    with ThreadPoolExecutor(max_workers=len(lowered)) as pool:
        compiled = dict(zip(lowered, pool.map(lambda low: low.compile(), lowered.values())))
    evaluate = compiled.pop("eval")
    end = time.perf_counter()
    return Group(seeds=list(seeds), state=state, val=val, chunks=compiled, evaluate=evaluate,
                 place=place, compile_time_s=end - start, xla_compile_time_s=end - xla_start,
                 n_params=count_params(jax.tree_util.tree_map(lambda x: x[0], params)))


def train_seeds(cfg: DictConfig, seeds: list[int],
                on_eval: Callable[[int, dict], None] = lambda i, row: None,
                on_steps: Callable[[int], None] = lambda n: None) -> list[RunResult]:
    """Train `cfg` once per seed, all seeds as one vmapped program.

    `on_eval(i, row)` sees each evaluation row of seeds[i] as it comes. A seed
    that diverges stops being recorded (its slice keeps computing, harmlessly);
    the others go on.
    """
    t = cfg.train
    group = prepare(cfg, seeds)
    state, val, chunks, evaluate = group.state, group.val, group.chunks, group.evaluate
    n_seeds, first = len(seeds), min(group.chunks)
    results = [RunResult(n_params=group.n_params, n_seeds_vmapped=n_seeds) for _ in seeds]

    start = time.perf_counter()
    active = list(range(n_seeds))
    step = 0
    # A row holds the validation measurements of the params at `step` and the
    # train-step measurements (gradients, update) of the step taken from them.
    # After the last step, one more chunk runs on a copy and is thrown away,
    # so the final row has them too without compiling a second function.
    # Inside the loop, the device is read only through explicit device_get at
    # evaluations: any implicit transfer is an error.
    with jax.transfer_guard("disallow"):
        val_rows = _host_per_seed(evaluate(state["params"], val), n_seeds)
        while True:
            n = min(t.eval_every, t.steps - step) or first
            final = step >= t.steps
            new_state, measured, first_bad = chunks[n](
                jax.tree_util.tree_map(jnp.copy, state) if final else state)
            if not final:
                state = new_state  # the chunk donated the old buffers
            measured, first_bad = jax.device_get((measured, first_bad))  # one transfer
            train_rows = _host_per_seed(measured, n_seeds)
            for i in list(active):
                row = {"step": step, **val_rows[i], **train_rows[i]}
                results[i].rows.append(row)
                on_eval(i, row)
                bad_at = _diverged_at(row, int(first_bad[i]), final, t.divergence_loss)
                if bad_at is not None:
                    results[i].status, results[i].diverged_at_step = "diverged", bad_at
                    results[i].steps_done = bad_at
                    active.remove(i)
            if final or not active:
                break
            step += n
            val_rows = _host_per_seed(evaluate(state["params"], val), n_seeds)
            on_steps(n)
        jax.block_until_ready(state)
    train_time = time.perf_counter() - start
    accuracies = _test_accuracy(group, state["params"], cfg)
    for i, result in enumerate(results):
        result.compile_time_s, result.train_time_s = group.compile_time_s, train_time
        if result.status == "completed":
            result.steps_done = step
            result.test_accuracy = accuracies[i]
    return results


def _test_accuracy(group: Group, params, cfg: DictConfig) -> list[float]:
    """Accuracy of each seed on its test split, in blocks shaped like the
    validation set (so the compiled evaluation serves both)."""
    task_cfg = _task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task, t = TASKS[cfg.task.name], cfg.train
    chunk = group.val["tokens"].shape[2]  # (S, n_chunks, chunk, T)
    block = group.val["tokens"].shape[1] * chunk
    n_blocks = math.ceil(t.n_test / block)
    tests = [fixed_set(task, task_cfg, s, "test", n_blocks * block) for s in group.seeds]
    correct = np.zeros(len(group.seeds))
    weight = np.zeros(len(group.seeds))
    for b in range(n_blocks):
        part = group.place(_stack([
            _chunked({k: v[b * block:(b + 1) * block] for k, v in test.items()}, chunk)
            for test in tests]))
        out = jax.device_get(group.evaluate(params, part))
        correct += np.asarray(out["accuracy"]) * np.asarray(out["n_loss"])
        weight += np.asarray(out["n_loss"])
    return list(correct / np.maximum(weight, 1.0))


def summarize(result: RunResult, threshold: float) -> dict:
    """The summary metrics of a run from its evaluation rows."""
    acc = [r["accuracy"] for r in result.rows]
    reached = [r["step"] for r in result.rows if r["accuracy"] >= threshold]
    return {
        "status": result.status,
        "diverged_at_step": result.diverged_at_step,
        "test_accuracy": result.test_accuracy,
        "final_val_accuracy": acc[-1] if acc else None,
        "steps_to_threshold": reached[0] if reached else None,
        "accuracy_auc": float(np.mean(acc)) if acc else None,
        "compile_time_s": result.compile_time_s,
        "train_time_s": result.train_time_s,
        "steps_per_s": result.steps_done / result.train_time_s if result.train_time_s else None,
        "steps_done": result.steps_done,
        "n_params": result.n_params,
        "n_seeds_vmapped": result.n_seeds_vmapped,
    }
