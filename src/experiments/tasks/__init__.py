"""Synthetic retrieval tasks: pure functions of (config, rng) -> Batch.

    spec = get_task("mqar")
    cfg = spec.config_cls()
    val = fixed_set(spec, cfg, seed=0, split="val", n_examples=1024)
    batch = train_batch(spec, cfg, seed=0, step=step, batch_size=64)

See common.py for the batch contract and the key streams. The lowest layer of
experiments: it may import only `attention` (and needs nothing of it).
"""

from . import assoc_recall, mqar, threefry, vector_retrieval
from .assoc_recall import AssocRecallConfig
from .common import Batch, TaskSpec, fixed_set, stream_key, train_batch
from .mqar import MQARConfig
from .vector_retrieval import VectorRetrievalConfig

threefry.use_straight_line_on_cpu()  # batches are drawn inside every step: no loop there

TASKS: dict[str, TaskSpec] = {m.SPEC.name: m.SPEC for m in (assoc_recall, mqar, vector_retrieval)}


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise ValueError(f"task.name: must be one of {sorted(TASKS)}, got {name!r}")
    return TASKS[name]


__all__ = [
    "AssocRecallConfig", "Batch", "MQARConfig", "TASKS", "TaskSpec", "VectorRetrievalConfig",
    "fixed_set", "get_task", "stream_key", "train_batch",
]
