"""training.model.query_positions: built from counts, it picks what a stable
sort of the positions (loss first) picks, then in order."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from experiments.training.model import query_positions


def _by_sorting(loss_mask, n_queries: int):
    order = jnp.argsort(-loss_mask, axis=-1, stable=True)[:, :n_queries]
    return jnp.sort(order, axis=-1)


def test_the_positions_are_those_a_sort_picks():
    rng = np.random.default_rng(0)
    t = 24
    pick = jax.jit(query_positions, static_argnums=1)
    for n_queries in (1, 3, 8, t):
        # rows with no loss, fewer losses than queries (padded), exactly as many, and more
        masks = (rng.random((64, t)) < rng.random((64, 1))).astype(np.float32)
        masks[0] = 0
        masks[1] = 1
        got = np.asarray(pick(jnp.asarray(masks), n_queries))
        np.testing.assert_array_equal(got, np.asarray(_by_sorting(jnp.asarray(masks), n_queries)))


def test_a_worked_example():
    mask = jnp.asarray([[0, 1, 0, 0, 1, 1], [0, 0, 0, 1, 0, 0]], jnp.float32)
    np.testing.assert_array_equal(query_positions(mask, 3), [[1, 4, 5], [0, 1, 3]])
