"""The CPU lowering of jax.random's threefry (experiments.tasks.threefry):
the published hash, no loop left, and the same batches as JAX's own lowering."""
from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from jax.extend.random import threefry_2x32

import experiments.tasks  # noqa: F401 - registers the lowering

# Known-answer vectors of Threefry-2x32-20 from the Random123 distribution
# (key, counter) -> output
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("key, counter, expected", KNOWN_ANSWERS)
def test_the_hash_is_threefry_2x32_20(key, counter, expected):
    out = jax.jit(threefry_2x32)(jnp.array(key, jnp.uint32), jnp.array(counter, jnp.uint32))
    assert [int(v) for v in out] == list(expected)


def test_no_loop_is_left_on_the_cpu():
    hlo = jax.jit(lambda k: jax.random.bits(k, (8,))).lower(jax.random.PRNGKey(0)).compile().as_text()
    assert "while" not in hlo


# The batches of every task, hashed; run here (our lowering, registered on import) and in a
# child process where the lowering module is stubbed out (JAX's own lowering stays).
DIGEST = """
import hashlib
import jax, numpy as np
from experiments.tasks import TASKS, train_batch
from experiments.tasks.assoc_recall import AssocRecallConfig
from experiments.tasks.mqar import MQARConfig
from experiments.tasks.vector_retrieval import VectorRetrievalConfig
h = hashlib.sha256()
for cfg in (AssocRecallConfig(n_pairs=8), MQARConfig(), VectorRetrievalConfig()):
    batch = jax.jit(lambda s, t: train_batch(TASKS[cfg.name], cfg, s, t, 16))(3, 1999)
    for k in sorted(batch):
        h.update(np.asarray(batch[k]).tobytes())
digest = h.hexdigest()
"""
JAXS_OWN = """
import sys
sys.modules["experiments.tasks.threefry"] = type(sys)("stub")
sys.modules["experiments.tasks.threefry"].use_straight_line_on_cpu = lambda: None
""" + DIGEST + "print(digest)"


def test_batches_are_those_of_jaxs_own_lowering():
    jaxs = subprocess.run([sys.executable, "-c", JAXS_OWN], capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]
    ours: dict = {}
    exec(DIGEST, ours)
    assert ours["digest"] == jaxs
