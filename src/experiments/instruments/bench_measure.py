"""The measurements of `experiments.bench`, one function per figure.

Timings are the best of several calls after a warm-up (the least disturbed
by other processes), each call blocked until its result is ready.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.tasks import TASKS, train_batch
from experiments.training import spec as speclib
from experiments.training import loop
from experiments.training import group as grouplib
from experiments.training.group import Lane
from experiments.training import step as steplib
from experiments.training.compile import ProgramCache
from experiments.training.model import init_model


def lane_caches() -> defaultdict[int, ProgramCache]:
    """One ProgramCache per lane count, for the whole bench. A group's programs depend
    on its lane count and a ProgramCache holds one key, so with one per count a group
    finds the programs an earlier measurement compiled for the same model, optimizer
    and count (the light step's again, a one-seed group after a two-seed one). Every
    timing leaves compiling out, so sharing moves no figure, only the bench's length."""
    return defaultdict(ProgramCache)


def best_time(call: Callable[[], object], min_time_s: float, min_reps: int = 3) -> float:
    """Seconds per call: the best of at least `min_reps` calls and `min_time_s` in all."""
    jax.block_until_ready(call())  # warm-up
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or spent < min_time_s:
        start = time.perf_counter()
        jax.block_until_ready(call())
        elapsed = time.perf_counter() - start
        best, spent, reps = min(best, elapsed), spent + elapsed, reps + 1
    return best


def _flops(compiled) -> float | None:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older JAX: one dict per device
        analysis = analysis[0] if analysis else {}
    return (analysis or {}).get("flops")


def bare_step(cfg: DictConfig, seed: int = 0):
    """The model's train step stripped to what any JAX user would write: loss,
    grad, optimizer update, one fixed batch, no measurements, no data stream.
    Returns (compiled step, params, opt_state, batch)."""
    task_cfg = speclib.task_object(OmegaConf.to_container(cfg.task, resolve=True))
    spec = speclib.model_spec(cfg, task_cfg)
    tx = steplib.make_optimizer(cfg.optimizer, cfg.train)
    batch = train_batch(TASKS[cfg.task.name], task_cfg, seed, 0, cfg.train.batch_size)
    n_queries = TASKS[cfg.task.name].n_queries(task_cfg)
    params = init_model(spec, jax.random.PRNGKey(seed))

    def step(params, opt_state, batch):
        (loss, _), grads = jax.value_and_grad(steplib.loss_fn, has_aux=True)(
            params, spec, batch, n_queries)
        updates, opt_state = tx.update(grads, opt_state, params)
        return jax.tree_util.tree_map(jnp.add, params, updates), opt_state, loss

    opt_state = tx.init(params)
    compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, batch).compile()
    return compiled, params, opt_state, batch


def step_times(cfg: DictConfig, min_time_s: float,
               caches: defaultdict[int, ProgramCache] | None = None) -> dict:
    """Seconds per train step: the harness's chunk (a loop over eval_every
    steps, batches drawn in the graph, measurements) against the bare step
    called from a Python loop. Same model, batch size and optimizer."""
    caches = lane_caches() if caches is None else caches
    group = grouplib.prepare(cfg, loop.lanes_of(cfg)[:1], caches[1])
    length = group.chunk_steps
    n_steps = group.place_shared(np.int32(length))
    box = {"state": group.state}

    def harness_call():
        box["state"], measured, _ = group.chunk(box["state"], n_steps)
        return measured

    harness = best_time(harness_call, min_time_s) / length

    compiled, params, opt_state, batch = bare_step(cfg)
    bare_box = {"params": params, "opt_state": opt_state}

    def bare_call():
        bare_box["params"], bare_box["opt_state"], loss = compiled(
            bare_box["params"], bare_box["opt_state"], batch)
        return loss

    # as many calls as one harness chunk, so both time the same work
    bare = best_time(lambda: [bare_call() for _ in range(length)][-1], min_time_s) / length
    return {"harness_step_s": harness, "bare_step_s": bare, "step_flops": _flops(compiled)}


def train_seeds(cfg: DictConfig, seeds: list[int], cache: ProgramCache) -> list:
    """Train `cfg` at optimizer.lr once per seed, the seeds as one program's lanes."""
    return loop.train_lanes(cfg, [Lane(s, float(cfg.optimizer.lr)) for s in seeds], cache=cache)


def seed_group_times(cfg: DictConfig, n_seeds: int, repeats: int = 5,
                     caches: defaultdict[int, ProgramCache] | None = None) -> dict:
    """Training time (compile excluded) of n_seeds seeds vmapped against the
    same seeds one after another, each compiled and warmed up first; the two
    are timed in alternation `repeats` times and the ratio of each pair kept,
    so that a burst of load on a shared machine hits one pair, not the median."""
    seeds = list(range(cfg.seed, cfg.seed + n_seeds))
    caches = lane_caches() if caches is None else caches  # each group size compiles once
    for group in ([seeds[0]], seeds):  # compile both programs, then a quiet warm-up run
        train_seeds(cfg, group, caches[len(group)])
        train_seeds(cfg, group, caches[len(group)])
    ratios, sequential, vmapped = [], [], []
    for _ in range(repeats):
        sequential.append(sum(train_seeds(cfg, [s], caches[1])[0].train_time_s for s in seeds))
        vmapped.append(train_seeds(cfg, seeds, caches[len(seeds)])[0].train_time_s)
        ratios.append(sequential[-1] / vmapped[-1])
    return {"sequential_train_s": float(np.median(sequential)),
            "vmapped_train_s": float(np.median(vmapped)),
            "vmap_seed_speedup": float(np.median(ratios)),
            "vmap_seed_speedup_min": float(min(ratios)), "vmap_seed_speedup_max": float(max(ratios)),
            "vmap_seed_speedup_repeats": repeats}


def lane_throughput(cfg: DictConfig, lane_counts: list[int], min_time_s: float,
                    rounds: int = 3, caches: defaultdict[int, ProgramCache] | None = None) -> dict:
    """Run-steps per second (lanes x train steps per second of the group's
    compiled chunk, evaluations left out) for each lane count: lanes are
    seeds x rates of one program, so the count alone sets the work.

    Every count's program is compiled first, then the counts are timed in
    turn, `rounds` times over: a burst of load on a shared machine hits one
    round of every count alike rather than one count's whole timing. Returns
    {"median": {count: run-steps/s}, "rounds": {count: [run-steps/s per round]}}."""
    calls, caches = {}, lane_caches() if caches is None else caches
    for n in lane_counts:
        group = grouplib.prepare(cfg, [Lane(cfg.seed + i, float(cfg.optimizer.lr))
                                       for i in range(n)], caches[n])
        n_steps = group.place_shared(np.int32(group.chunk_steps))
        box = {"state": group.state}

        def call(group=group, n_steps=n_steps, box=box):
            box["state"], measured, _ = group.chunk(box["state"], n_steps)
            return measured

        calls[str(n)] = (call, n * group.chunk_steps)
    per_round = {k: [] for k in calls}
    for _ in range(rounds):
        for k, (call, run_steps) in calls.items():
            per_round[k].append(run_steps / best_time(call, min_time_s))
    return {"median": {k: float(np.median(v)) for k, v in per_round.items()}, "rounds": per_round}


def matmul_peak_flops(sizes: list[int], min_time_s: float) -> dict:
    """This machine's float32 matmul throughput: the best over square sizes."""
    best = {"matmul_peak_gflops": 0.0, "matmul_peak_size": None}
    for n in sizes:
        a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
        b = jax.random.normal(jax.random.PRNGKey(1), (n, n), jnp.float32)
        f = jax.jit(jnp.matmul).lower(a, b).compile()
        gflops = 2 * n ** 3 / best_time(lambda: f(a, b), min_time_s) / 1e9
        if gflops > best["matmul_peak_gflops"]:
            best = {"matmul_peak_gflops": gflops, "matmul_peak_size": n}
    return best


def compile_probe(cache_dir: str, overrides: list[str]) -> dict:
    """Compile one training configuration in a fresh process (the persistent
    cache at `cache_dir`); returns its compile times."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache_dir}
    proc = subprocess.run([sys.executable, "-m", "experiments.app.bench_compile", *overrides],
                          env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"compile probe failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sweep_wall(command: list[str], env: dict) -> dict:
    """Wall time and peak resident memory of a command (a whole sweep).

    The peak comes from the kernel (wait4's ru_maxrss): the high-water mark
    of the largest process of the command, its reaped children included. It
    is read by a small launcher (instruments.peak_rss), because a process
    forked from this one would carry this one's memory into its figure.
    """
    with tempfile.TemporaryDirectory() as scratch:
        figure = os.path.join(scratch, "peak.json")
        launcher = [sys.executable, "-m", "experiments.instruments.peak_rss", figure]
        with open(os.path.join(scratch, "stderr"), "w+") as err:
            start = time.perf_counter()
            code = subprocess.call([*launcher, *command], env=env, stdout=subprocess.DEVNULL,
                                   stderr=err)
            wall = time.perf_counter() - start
            if code != 0:
                err.seek(0)
                tail = err.read().strip()[-500:]
                raise RuntimeError(f"{' '.join(command[:4])} ... failed: {tail}")
        with open(figure) as f:
            maxrss_kib = json.load(f)["maxrss_kib"]
    return {"wall_s": wall, "peak_rss_gb": maxrss_kib * 1024 / 1e9}
