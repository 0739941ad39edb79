"""Threefry-2x32 on the CPU as straight-line code, not a loop.

Every batch is drawn inside the training step from JAX's counter-based
generator, Threefry-2x32 with 20 rounds (Salmon et al. 2011, "Parallel
random numbers: as easy as 1, 2, 3"). On the CPU, JAX lowers that hash as a
rolled loop of five 4-round blocks (an XLA while loop, for quicker compiles);
on every other platform as straight-line code. In a training step the loop
form costs: each draw of a batch (keys, values, queries) is one such loop,
each iteration a round trip through XLA's runtime, a large share of a
small step with many lanes. The straight-line form computes the same bits
(tests/test_threefry.py holds it to the published known-answer vectors) and
compiles no slower.

`use_straight_line_on_cpu()` registers it as the CPU lowering of JAX's
public threefry primitive; importing experiments.tasks does so.
"""
from __future__ import annotations

import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

# the rotation constants of Threefry-2x32, alternating block by block
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = np.uint32(0x1BD11BDA)  # the third key word: key1 ^ key2 ^ this
N_BLOCKS = 5  # 5 blocks x 4 rounds = Threefry-2x32-20


def _rotate_left(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key1, key2, x1, x2):
    """The hash of the counter words (x1, x2) under the key (key1, key2), all
    uint32 arrays of one shape: two uint32 arrays."""
    keys = (key1, key2, key1 ^ key2 ^ KEY_PARITY)
    x1, x2 = x1 + keys[0], x2 + keys[1]
    for block in range(N_BLOCKS):
        for r in ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = _rotate_left(x2, r) ^ x1
        # key injection after every 4 rounds, with the block number
        x1 = x1 + keys[(block + 1) % 3]
        x2 = x2 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def use_straight_line_on_cpu() -> None:
    """Lower jax.random's threefry on the CPU as `threefry2x32` (the same bits)."""
    # out of line, as JAX does for its own straight-line form: XLA inlines it
    mlir.register_lowering(threefry2x32_p, mlir.lower_fun(threefry2x32, multiple_results=True),
                           platform="cpu", inline=False)
