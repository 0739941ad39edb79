"""A group: the lanes of one configuration, initialised and compiled as one program.

A lane is one run: a (seed, learning rate) pair. Lanes share everything
static (model shape, optimizer kind, task, batch size), so one compiled
program trains them all: the seed picks the init and the data stream, the
rate sits in the optimizer state (training.step.make_optimizer). Compiled
programs are cached on what is static, so the jobs of a sweep that differ
only in seed or learning rate share one compile.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

import attention
from experiments.tasks import TASKS, fixed_set, train_batch
from experiments.training import lane_axis
from experiments.training import step as steplib
from experiments.training.memory import model_width
from experiments.training.model import ModelSpec, count_params, init_model, program_spec, score_scale

EVAL_CHUNK = 128  # examples per evaluation chunk: bounds additive's memory
PER_LANE_OPTIMIZER_KEYS = ("lr", "lr_grid")  # in the state, not in the program


class Lane(NamedTuple):
    seed: int
    lr: float


def model_spec(cfg: DictConfig, task_cfg) -> ModelSpec:
    task = TASKS[cfg.task.name]
    options = {k: v for k, v in OmegaConf.to_container(cfg.attention).items() if k != "name"}
    return ModelSpec(
        attention=cfg.attention.name, attention_options=tuple(sorted(options.items())),
        d_k=cfg.d_k, d_model=model_width(cfg.model.get("width", "fixed"), cfg.model.d_model, cfg.d_k,
                                         cfg.model.n_heads), d_v=cfg.model.d_v,
        n_layers=cfg.model.n_layers, n_heads=cfg.model.n_heads, init=cfg.model.init,
        token_shift=cfg.model.token_shift, vocab=task.input_vocab(task_cfg),
        n_classes=task.n_classes(task_cfg), d_in=task.d_in(task_cfg), dtype=cfg.model.dtype,
        reassociate=bool(cfg.model.get("reassociate", False))
        and attention.get_variant(cfg.attention.name).reassociable)


def _frozen(node, drop: tuple[str, ...] = ()) -> tuple:
    plain = OmegaConf.to_container(node, resolve=True)
    return tuple(sorted((k, v) for k, v in plain.items() if k not in drop))


def _optimizer(opt_key: tuple, train_key: tuple):
    # the rate in the program is a placeholder: each lane's own is set in its state
    return steplib.make_optimizer(OmegaConf.create({**dict(opt_key), "lr": 1.0}),
                                  OmegaConf.create(dict(train_key)))


@lru_cache(maxsize=4)
def _init_program(spec: ModelSpec, opt_key: tuple, train_key: tuple):
    """Every lane's params and optimizer state from one program (the same bits
    as op by op, where each op of a new shape compiles on its own)."""
    tx = _optimizer(opt_key, train_key)

    def init_lane(seed, lr):
        params = init_model(spec, jax.random.fold_in(jax.random.PRNGKey(seed), 1))
        return params, steplib.with_learning_rate(tx.init(params), lr), score_scale(spec, params)

    return jax.jit(jax.vmap(init_lane))


@lru_cache(maxsize=4)  # a few configurations: their executables stay alive with them
def _programs(spec: ModelSpec, opt_key: tuple, train_key: tuple, task_key: tuple,
              batch_size: int, n_queries: int, n_devices: int, block: int | None):
    """The training and evaluation programs (`spec`: a program_spec)."""
    task_cfg = task_object(dict(task_key))
    task = TASKS[task_cfg.name]

    def make_train_batch(state):
        return train_batch(task, task_cfg, state["seed"], state["step"], batch_size)

    return steplib.compile_fns(spec, _optimizer(opt_key, train_key), make_train_batch, n_queries,
                               dict(train_key)["divergence_loss"], n_devices, block)


def lane_block(cfg: DictConfig) -> int | None:
    """runtime.lane_block, or the platform's default (training.lane_axis)."""
    block = cfg.runtime.get("lane_block")
    return (block or None) if block is not None else lane_axis.default_block(jax.default_backend())


# The executables of the last group compiled, keyed on everything they depend
# on: the static configuration and the shapes, dtypes and placement of their
# inputs. The next job of a sweep that differs only in seed or rate (a seed
# sweep at train.n_seeds=1), or at one d_k only in which bilinear variant it
# trains (model.program_spec), reuses them instead of tracing, lowering and
# loading them again; any other job drops them before it compiles its own, so
# one group's programs at most are alive at a time.
_last_executables: tuple[tuple, dict] | None = None


def release_compiled() -> None:
    """Drop the cached programs (and the executables they keep alive)."""
    global _last_executables
    _last_executables = None
    _init_program.cache_clear()
    _programs.cache_clear()


def input_signature(tree) -> tuple:
    """What a compiled program's inputs are, to XLA: tree structure, and each
    leaf's shape, dtype and sharding."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((x.shape, x.dtype, x.sharding) for x in leaves)


def _start_executables(key: tuple, lowerers: dict[str, Callable]) -> Callable[[], tuple[dict, float, float]]:
    """Starts compiling the programs for `key` (or reuses the last group's when
    it is the same) and returns `wait`: wait() gives the compiled programs with
    the seconds spent in tracing + lowering + compile and in XLA's compile
    alone (0 when reused).

    XLA compiles outside the GIL, so each program compiles in a thread as soon
    as it is lowered, the next one is traced meanwhile, and the caller works
    (initialises its lanes) until it calls wait()."""
    global _last_executables
    if _last_executables is not None and _last_executables[0] == key:
        reused = _last_executables[1]
        return lambda: (reused, 0.0, 0.0)
    # before compiling: the old programs and the new are never both alive (the jitted
    # functions in _programs hold no executables: every program here is compiled ahead of time)
    _last_executables = None
    start = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=len(lowerers))
    pending, xla_start = {}, None
    try:
        for name, lower in lowerers.items():
            lowered = lower()
            xla_start = xla_start or time.perf_counter()
            pending[name] = pool.submit(lowered.compile)
    finally:
        pool.shutdown(wait=False)

    def wait() -> tuple[dict, float, float]:
        global _last_executables
        compiled = {name: future.result() for name, future in pending.items()}
        end = time.perf_counter()
        _last_executables = key, compiled
        return compiled, end - start, end - xla_start

    return wait


def task_object(task_dict: dict):
    """The task's config dataclass (what the task functions expect)."""
    return TASKS[task_dict["name"]].config_cls(**task_dict)


def chunked(batch: dict, chunk: int) -> dict:
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


def stack(trees: list):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def per_seed(make: Callable[[int], dict], seeds: list[int]) -> list[dict]:
    """make(seed) for each lane's seed, made once per distinct seed."""
    made = {s: make(s) for s in dict.fromkeys(seeds)}
    return [made[s] for s in seeds]


@dataclass
class Group:
    """The lanes of one configuration, ready to train: state, validation sets
    and compiled functions with a leading lane axis (spread over devices; see
    training.lane_axis)."""
    lanes: list[Lane]
    state: dict
    val: dict  # (L, n_chunks, chunk, ...)
    chunk: Callable  # compiled (state, n_steps) -> (state, first step's measurements, first bad step)
    chunk_steps: int  # a full chunk: steps between evaluations
    evaluate: Callable  # compiled (params, batches, the state's score_scale) -> measurements
    place: Callable  # puts a lane-axis pytree where the programs expect it
    place_shared: Callable  # puts a value every lane shares (a step count) on the devices
    compile_time_s: float  # tracing + lowering + XLA compile of every program
    xla_compile_time_s: float  # the XLA part alone (what the persistent cache saves)
    n_params: int

    def run(self, state, n_steps: int):
        """n_steps train steps of every lane: (state, measurements, first bad step)."""
        return self.chunk(state, self.place_shared(np.int32(n_steps)))


def devices_for(cfg: DictConfig, n_lanes: int) -> int:
    """How many devices a group of n_lanes lanes is split over."""
    return lane_axis.n_devices_for(n_lanes) if cfg.runtime.shard_seeds else 1


def prepare(cfg: DictConfig, lanes: list[Lane]) -> Group:
    """Initialise every lane and compile (ahead of time, so that compile time
    and step time are measured apart; the programs compile in parallel)."""
    task_cfg = task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task = TASKS[cfg.task.name]
    t = cfg.train
    spec = model_spec(cfg, task_cfg)
    seeds = [lane.seed for lane in lanes]
    n_devices = devices_for(cfg, len(lanes))
    place = lane_axis.placer(n_devices)
    chunk = min(EVAL_CHUNK, t.n_val)
    vals = per_seed(lambda s: fixed_set(task, task_cfg, s, "val", t.n_val), seeds)
    n_queries = max(int(np.asarray(v["loss_mask"]).sum(-1).max()) for v in vals)
    val = place(stack([chunked(v, chunk) for v in vals]))
    opt_key, train_key = _frozen(cfg.optimizer, PER_LANE_OPTIMIZER_KEYS), _frozen(t, ("prune",))  # host-side only
    static = (program_spec(spec), opt_key, train_key, _frozen(cfg.task), t.batch_size, n_queries,
              n_devices, lane_block(cfg))
    init, (chunk_fn, eval_fn) = _init_program(spec, opt_key, train_key), _programs(*static)
    init_args = (np.asarray(seeds, np.int32), np.asarray([lane.lr for lane in lanes], np.float32))

    def lane_state(params, opt_state, scale):
        return {"params": params, "opt_state": opt_state, "step": np.zeros(len(lanes), np.int32),
                "seed": np.asarray(seeds, np.int32), "active": np.ones(len(lanes), bool),
                "score_scale": scale}

    # the programs are lowered from the state's shapes and compile while the lanes initialise
    shapes = lane_axis.abstract(lane_state(*init.eval_shape(*init_args)), lane_axis.lane_sharding(n_devices))
    n_steps = lane_axis.abstract(np.int32(1), lane_axis.shared_sharding(n_devices))
    wait = _start_executables(
        (static, input_signature((shapes, n_steps)), input_signature(val)),
        {"chunk": lambda: chunk_fn.lower(shapes, n_steps),
         "eval": lambda: eval_fn.lower(shapes["params"], val, shapes["score_scale"])})
    params, opt_state, scale = init(*init_args)
    state = place(lane_state(params, opt_state, scale))
    compiled, compile_s, xla_compile_s = wait()
    return Group(lanes=list(lanes), state=state, val=val, chunk=compiled["chunk"],
                 chunk_steps=min(t.eval_every, t.steps), evaluate=compiled["eval"],
                 place=place, place_shared=lane_axis.shared_placer(n_devices), compile_time_s=compile_s,
                 xla_compile_time_s=xla_compile_s, n_params=count_params(params) // len(lanes))


def test_accuracy(group: Group, params, score_scale, cfg: DictConfig) -> list[float]:
    """Accuracy of each lane on its seed's test split, in blocks shaped like the
    validation set (so the compiled evaluation serves both); `score_scale` is
    the lanes' state["score_scale"]."""
    task_cfg = task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task, t = TASKS[cfg.task.name], cfg.train
    chunk = group.val["tokens"].shape[2]  # (L, n_chunks, chunk, T)
    block = group.val["tokens"].shape[1] * chunk
    n_blocks = math.ceil(t.n_test / block)
    tests = per_seed(lambda s: fixed_set(task, task_cfg, s, "test", n_blocks * block),
                     [lane.seed for lane in group.lanes])
    correct = np.zeros(len(group.lanes))
    weight = np.zeros(len(group.lanes))
    for b in range(n_blocks):
        part = group.place(stack([
            chunked({k: v[b * block:(b + 1) * block] for k, v in test.items()}, chunk)
            for test in tests]))
        out = jax.device_get(group.evaluate(params, part, score_scale))
        correct += np.asarray(out["accuracy"]) * np.asarray(out["n_loss"])
        weight += np.asarray(out["n_loss"])
    return list(correct / np.maximum(weight, 1.0))
