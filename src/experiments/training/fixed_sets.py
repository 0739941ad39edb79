"""The lanes' fixed sets: validation and test examples packed into chunks, one per
seed, and each lane's test scores through the compiled evaluation."""
from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.tasks import TASKS, fixed_set
from experiments.training.spec import task_object


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


def test_scores(group, params, score_scale, cfg: DictConfig, live) -> list[dict[str, float]]:
    """Accuracy and loss of each lane on its seed's test split, in blocks shaped like the
    validation set (so the compiled evaluation serves both); `score_scale` is
    the lanes' state["score_scale"]. Only the `live` lanes (a bool per lane)
    need evaluating: a pruned or diverged lane has no test accuracy (its
    value is NaN, or a number nobody reads where a block mixes it with live lanes).
    Both are means over the test set's loss positions."""
    live = group.place(np.asarray(live, bool))
    task_cfg = task_object(OmegaConf.to_container(cfg.task, resolve=True))
    task, t = TASKS[cfg.task.name], cfg.train
    chunk = group.val["tokens"].shape[2]  # (L, n_chunks, chunk, T)
    block = group.val["tokens"].shape[1] * chunk
    n_blocks = math.ceil(t.n_test / block)
    tests = per_seed(lambda s: fixed_set(task, task_cfg, s, "test", n_blocks * block),
                     [lane.seed for lane in group.lanes])
    correct, nll, weight = (np.zeros(len(group.lanes)) for _ in range(3))
    for b in range(n_blocks):
        part = group.place(stack([
            chunked({k: v[b * block:(b + 1) * block] for k, v in test.items()}, chunk)
            for test in tests]))
        out = jax.device_get(group.evaluate(params, part, score_scale, live))
        correct += np.asarray(out["accuracy"]) * np.asarray(out["n_loss"])
        nll += np.asarray(out["loss"]) * np.asarray(out["n_loss"])
        weight += np.asarray(out["n_loss"])
    n = np.maximum(weight, 1.0)
    return [{"accuracy": float(c), "loss": float(l)} for c, l in zip(correct / n, nll / n)]
