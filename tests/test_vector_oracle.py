"""vector_retrieval measures attention only where its difficulty does not depend on d_k:
the nearest-key rule through a rank-d_k bilinear score (tasks.vector_retrieval.oracle_accuracy)
is flat over the d_k that experiment=answer_vector sweeps, and falls below d_in."""
from __future__ import annotations

import jax
import pytest
from hydra import compose, initialize_config_dir

from experiments.app import config  # noqa: F401 - registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.tasks.vector_retrieval import VectorRetrievalConfig, oracle_accuracy


def _swept():
    """The cell's task and the d_k values experiment=answer_vector sweeps."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        params = compose("train", overrides=["experiment=answer_vector"],
                         return_hydra_config=True).hydra.sweeper.params
        cfg = compose("train", overrides=["experiment=answer_vector", f"cell={params.cell}"])
        task = VectorRetrievalConfig(**{k: v for k, v in cfg.task.items()})
        d_ks = [int(d) for d in str(params.d_k).split(",")]
    return task, d_ks


def test_answer_vector_sweeps_d_k_from_d_in_on_and_its_oracle_is_flat():
    task, d_ks = _swept()
    assert min(d_ks) >= task.d_in
    key = jax.random.key(0)  # one draw for every rank: the ranks are compared on the same batch
    accuracy = {d: oracle_accuracy(task, d, key) for d in d_ks}
    assert max(accuracy.values()) - min(accuracy.values()) < 1e-9, accuracy
    assert 0.9 < accuracy[min(d_ks)] < 1.0  # learnable, not trivial: chance is 1/64


@pytest.mark.parametrize("rank, low, high", [(2, 0.04, 0.10), (4, 0.12, 0.20), (8, 0.32, 0.42),
                                             (16, 0.71, 0.81), (32, 0.98, 1.0)])
def test_the_old_task_depends_on_d_k_below_d_in(rank, low, high):
    """d_in = 32 (the committed study's task): a head of d_k < 32 cannot represent the rule."""
    old = VectorRetrievalConfig()  # the defaults: n_keys 64, d_in 32, noise 1.0
    assert low < oracle_accuracy(old, rank, jax.random.key(0)) < high
