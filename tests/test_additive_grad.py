"""additive.weight_product: autodiff's gradients, with the weight's gradient
computed in the weight's own orientation, so that an optimizer update reads
it row by row rather than through a transpose."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attention.additive import weight_product

D_K, D_H = 64, 48  # unequal, so a [d_k, d_h] array is told from a [d_h, d_k] one


def _plain(x, w):
    return x @ w


def _inputs(n_lanes: int, rows: tuple[int, ...]):
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(keys[0], (n_lanes, *rows, D_K))
    w = jax.random.normal(keys[1], (n_lanes, D_K, D_H)) / D_K ** 0.5
    g = jax.random.normal(keys[2], (n_lanes, *rows, D_H))
    return x, w, g


def _lane_update(product):
    """A lane's gradients through product(x, w) and a momentum update of w,
    vmapped over lanes as the training program is (on a CPU, blocks of one lane)."""
    def update(x, w, g):
        dx, dw = jax.grad(lambda x, w: jnp.sum(jnp.tanh(product(x, w)) * g), argnums=(0, 1))(x, w)
        return product(x, w), dx, 0.9 * w + 0.1 * dw

    return jax.jit(jax.vmap(update))


@pytest.mark.parametrize("n_lanes,rows", [(1, (8,)), (1, (4, 1)), (3, (2, 5))])
def test_values_and_gradients_are_autodiffs(n_lanes, rows):
    args = _inputs(n_lanes, rows)
    for ours, theirs in zip(_lane_update(weight_product)(*args), _lane_update(_plain)(*args)):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def _transposed_weight_gradients(product) -> int:
    """Transposes in the optimised program that make a [d_k, d_h] array: a
    gradient computed as [d_h, d_k] and turned round for the update."""
    text = _lane_update(product).lower(*_inputs(1, (8,))).compile().as_text()
    return len(re.findall(rf"= f32\[[0-9,]*{D_K},{D_H}\]\S* transpose\(", text))


def test_the_weight_gradient_is_not_transposed():
    assert _transposed_weight_gradients(_plain) > 0  # what weight_product exists to avoid
    assert _transposed_weight_gradients(weight_product) == 0
