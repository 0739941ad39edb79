"""The tasks (synthetic retrieval, and text): pure functions of (config, rng) -> Batch.

    spec = get_task("mqar")
    cfg = spec.config_cls()
    val = fixed_set(spec, cfg, seed=0, split="val", n_examples=1024)
    batch = train_batch(spec, cfg, seed=0, step=step, batch_size=64)

A task is one module of this package that defines `SPEC = TaskSpec(...)`, and
optionally conf/task/<name>.yaml (docs/EXTENDING.md): every module here is
imported and each SPEC found joins TASKS. See common.py for the batch contract and the key
streams. The lowest layer of experiments: it may import only `attention`.
"""
import importlib
import pkgutil

from attention.checks import check

from . import threefry
from .common import Batch, TaskSpec, fixed_set, stream_key, train_batch

threefry.use_straight_line_on_cpu()  # batches are drawn inside every step: no loop there


def _discover() -> dict[str, TaskSpec]:
    specs = {}
    for name in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        spec = getattr(importlib.import_module(f"{__name__}.{name}"), "SPEC", None)
        if isinstance(spec, TaskSpec):
            specs[spec.name] = spec
    return specs


TASKS: dict[str, TaskSpec] = _discover()


def get_task(name: str) -> TaskSpec:
    check(name in TASKS, "task.name", f"must be one of {sorted(TASKS)}", name)
    return TASKS[name]


__all__ = ["Batch", "TASKS", "TaskSpec", "fixed_set", "get_task", "stream_key", "train_batch"]
