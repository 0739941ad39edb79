"""The programs of a group: traced per static configuration, compiled in threads,
and held by one ProgramCache for the next job.

A sweep's jobs that differ only in seed or rate, or at one d_k only in which
bilinear variant they train (reassociate.program_key), reuse the last group's
programs instead of tracing, lowering and loading them again.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
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


def init_program(spec: ModelSpec, opt_key: tuple, train_key: tuple):
    """Every lane's params and optimizer state from one program (the same bits
    as op by op, where each op of a new shape compiles on its own)."""
    tx = _optimizer(opt_key, train_key)

    def init_lane(seed, lr, c):
        # c: the lane's multiplier on its bilinear factor (attention.c_grid; 1 elsewhere, exact)
        params = init_model(spec, jax.random.fold_in(jax.random.PRNGKey(seed), 1))
        return params, steplib.with_learning_rate(tx.init(params), lr), score_scale(spec, params) * c

    return jax.jit(jax.vmap(init_lane))


def programs(spec: ModelSpec, opt_key: tuple, train_key: tuple, task_key: tuple,
             batch_size: int, n_queries: int, n_devices: int, block: int | None):
    """The jitted training and evaluation programs, not yet traced."""
    task_cfg = task_object(dict(task_key))
    task = TASKS[task_cfg.name]

    def make_train_batch(state):
        return train_batch(task, task_cfg, state["seed"], state["step"], batch_size)

    return steplib.compile_fns(spec, _optimizer(opt_key, train_key), make_train_batch, n_queries,
                               dict(train_key)["divergence_loss"], n_devices, block)


def input_signature(tree) -> tuple:
    """What a compiled program's inputs are, to XLA: tree structure, and each
    leaf's shape, dtype and sharding."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((x.shape, x.dtype, x.sharding) for x in leaves)


class ProgramCache:
    """The last group's init program and executables, for the next group that
    has the same key; whoever runs jobs one after another holds one (the train
    command: one for its sweep). A group with another key drops them before it
    compiles its own, so one group's programs at most are alive at a time."""

    def __init__(self) -> None:
        self._init: tuple[tuple, Callable] | None = None  # (spec, opt_key, train_key), jitted init
        self._compiled: tuple[tuple, dict] | None = None  # key, {name: executable}

    def init_program(self, spec: ModelSpec, opt_key: tuple, train_key: tuple) -> Callable:
        """init_program, kept while the next group's model and optimizer are the same."""
        key = (spec, opt_key, train_key)
        if self._init is None or self._init[0] != key:
            self._init = key, init_program(spec, opt_key, train_key)
        return self._init[1]

    def compile(self, key: tuple, lowerers: dict[str, Callable]) -> Callable[[], tuple[dict, float, float]]:
        """Starts compiling the programs for `key` (everything they depend on: the
        static configuration and their inputs' signatures), or reuses the held ones
        when the key is theirs, and returns `wait`: wait() gives the compiled programs
        with the seconds spent in tracing + lowering + compile and in XLA's compile
        alone (0 when reused).

        XLA compiles outside the GIL, so each program compiles in a thread as soon
        as it is lowered, the next one is traced meanwhile, and the caller works
        (initialises its lanes) until it calls wait()."""
        if self._compiled is not None and self._compiled[0] == key:
            reused = self._compiled[1]
            return lambda: (reused, 0.0, 0.0)
        self._compiled = None  # the old programs and the new are never both alive
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
            compiled = {name: future.result() for name, future in pending.items()}
            end = time.perf_counter()
            self._compiled = key, compiled
            return compiled, end - start, end - xla_start

        return wait

    def release(self) -> None:
        """Drop the held programs (and the executables they keep alive)."""
        self._init = self._compiled = None
