"""The programs of a group: traced once per static configuration, compiled in threads.

Two caches: the jitted programs (lru_cache on what is static) and the last
group's executables (keyed on the static configuration and the inputs'
shapes, dtypes and placement). A sweep's jobs that differ only in seed or rate,
or at one d_k only in which bilinear variant they train (reassociate.program_key),
reuse the executables instead of tracing, lowering and loading them again.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Callable

import jax
from omegaconf import OmegaConf

from experiments.tasks import TASKS, train_batch
from experiments.training import step as steplib
from experiments.training.model import init_model
from experiments.training.reassociate import score_scale
from experiments.training.spec import ModelSpec, task_object

PER_LANE_OPTIMIZER_KEYS = ("lr", "lr_grid")  # in the state, not in the program


def frozen(node, drop: tuple[str, ...] = ()) -> tuple:
    plain = OmegaConf.to_container(node, resolve=True)
    return tuple(sorted((k, v) for k, v in plain.items() if k not in drop))


def _optimizer(opt_key: tuple, train_key: tuple):
    # the rate in the program is a placeholder: each lane's own is set in its state
    return steplib.make_optimizer(OmegaConf.create({**dict(opt_key), "lr": 1.0}),
                                  OmegaConf.create(dict(train_key)))


@lru_cache(maxsize=4)
def init_program(spec: ModelSpec, opt_key: tuple, train_key: tuple):
    """Every lane's params and optimizer state from one program (the same bits
    as op by op, where each op of a new shape compiles on its own)."""
    tx = _optimizer(opt_key, train_key)

    def init_lane(seed, lr):
        params = init_model(spec, jax.random.fold_in(jax.random.PRNGKey(seed), 1))
        return params, steplib.with_learning_rate(tx.init(params), lr), score_scale(spec, params)

    return jax.jit(jax.vmap(init_lane))


@lru_cache(maxsize=4)  # a few configurations: their executables stay alive with them
def programs(spec: ModelSpec, opt_key: tuple, train_key: tuple, task_key: tuple,
              batch_size: int, n_queries: int, n_devices: int, block: int | None):
    """The training and evaluation programs, traced from the variant's own spec."""
    task_cfg = task_object(dict(task_key))
    task = TASKS[task_cfg.name]

    def make_train_batch(state):
        return train_batch(task, task_cfg, state["seed"], state["step"], batch_size)

    return steplib.compile_fns(spec, _optimizer(opt_key, train_key), make_train_batch, n_queries,
                               dict(train_key)["divergence_loss"], n_devices, block)


# The executables of the last group compiled, keyed on everything they depend
# on: the static configuration and the shapes, dtypes and placement of their
# inputs. The next job of a sweep that differs only in seed or rate (a seed
# sweep at train.n_seeds=1), or at one d_k only in which bilinear variant it
# trains (reassociate.program_key), reuses them instead of tracing, lowering and
# loading them again; any other job drops them before it compiles its own, so
# one group's programs at most are alive at a time.
_last_executables: tuple[tuple, dict] | None = None


def release_compiled() -> None:
    """Drop the cached programs (and the executables they keep alive)."""
    global _last_executables
    _last_executables = None
    init_program.cache_clear()
    programs.cache_clear()


def input_signature(tree) -> tuple:
    """What a compiled program's inputs are, to XLA: tree structure, and each
    leaf's shape, dtype and sharding."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((x.shape, x.dtype, x.sharding) for x in leaves)


def start_executables(key: tuple, lowerers: dict[str, Callable]) -> Callable[[], tuple[dict, float, float]]:
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
    # functions in programs hold no executables: every program here is compiled ahead of time)
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
