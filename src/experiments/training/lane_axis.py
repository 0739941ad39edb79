"""Where the lanes of a group live: the lane axis (today: seeds) spread over devices.

On a CPU, one small model's train step keeps about one core busy, however
many seeds are vmapped into it. JAX can present the cores as several CPU
devices (runtime.configure sets jax_num_cpu_devices); sharding the seed axis
over them runs the seeds side by side, one program per core. On one GPU
there is one device and nothing changes.

A group of S seeds on k devices needs S divisible by k, so k is the largest
device count that divides S (4 seeds on 2 cores: 2 per device; 3 seeds: one
device).
"""
from __future__ import annotations

from typing import Callable

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def n_devices_for(n_seeds: int) -> int:
    """How many of this process's devices the seed axis is spread over: the
    most that divide n_seeds evenly. Padding (3 seeds as 4 lanes on 2 devices)
    was measured to cost more than it gains: a step heavy enough to matter
    (additive at d_k = 1024) already keeps every core busy with one seed, so
    the padded lane is pure extra work (163 against 129 ms per step)."""
    fits = [k for k in range(1, jax.local_device_count() + 1) if n_seeds % k == 0]
    return max(fits)


def placer(n_devices: int) -> Callable:
    """A function that puts a pytree with a leading seed axis on the devices
    (split along that axis), or leaves it where it is for one device."""
    if n_devices == 1:
        return lambda tree: tree
    mesh = Mesh(np.array(jax.local_devices()[:n_devices]), ("seed",))
    sharding = NamedSharding(mesh, PartitionSpec("seed"))
    return lambda tree: jax.device_put(tree, sharding)
