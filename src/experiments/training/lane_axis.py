"""Where the lanes of a group run: the lane axis split over devices, in blocks.

A lane is one run (a seed and a learning rate); a group of L lanes is one
program mapped over a leading lane axis. On a CPU, JAX presents the cores as
CPU devices (runtime.configure sets jax_num_cpu_devices), and the lane axis
is split over them with shard_map: each device runs its own lanes with no
communication at all. (The SPMD partitioner, left to split a plain jit,
inserts an all-gather of the batch sampler's Gumbel noise before every step's
top_k and a rendezvous: lanes that need nothing of each other would wait.) On one
GPU there is one device and the program is a plain vmap.

A group of L lanes on k devices needs L divisible by k, so k is the largest
device count that divides L (4 lanes on 2 cores: 2 per device; 3 lanes: one
device), and the lanes are dealt round the devices (`dealt`). The lanes are
not padded up to a multiple of k (3 lanes as 4): a step heavy enough to gain
from it (additive at large d_k) already keeps every core busy with one lane,
two heavy lanes at once run slower, and the extra device programs take longer
to compile (docs/PERFORMANCE.md: why lanes stop at about 2x on a CPU).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "lane"


def n_devices_for(n_lanes: int) -> int:
    """How many of this process's devices the lane axis is spread over: the
    most that divide n_lanes evenly."""
    return max(k for k in range(1, jax.local_device_count() + 1) if n_lanes % k == 0)


def dealt(n_lanes: int, n_devices: int) -> list[int]:
    """The lane-axis order of a group's lanes: position p holds lane order[p].

    The axis is split over the devices in contiguous slices, so lanes in list
    order would give the first device a job's lowest rates and the last its
    highest. Lanes that stop early (at the threshold, or diverged) cost nothing
    from then on, and how long a lane trains follows its rate, so a split by
    rate leaves one core idle while the other works through the slow rates
    (on experiment=quality's jobs such a split gives the busier core 10 % more
    lane-steps than an even split, 24 % on MQAR's). The lanes are dealt round
    the devices like cards instead: device d runs lanes d, d + k, d + 2k, ...,
    and each rate's seeds are shared out evenly."""
    return [i for d in range(n_devices) for i in range(d, n_lanes, n_devices)]


def _mesh(n_devices: int) -> Mesh:
    return Mesh(np.array(jax.local_devices()[:n_devices]), (AXIS,))


def _sharding(n_devices: int, spec: PartitionSpec) -> jax.sharding.Sharding:
    if n_devices == 1:
        return jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    return NamedSharding(_mesh(n_devices), spec)


def lane_sharding(n_devices: int) -> jax.sharding.Sharding:
    """Where a pytree with a leading lane axis lives: split along it over the devices."""
    return _sharding(n_devices, PartitionSpec(AXIS))


def shared_sharding(n_devices: int) -> jax.sharding.Sharding:
    """Where a value every lane shares (a chunk's step count) lives: on each device."""
    return _sharding(n_devices, PartitionSpec())


def _putter(sharding: jax.sharding.Sharding) -> Callable:
    """Puts a pytree where `sharding` says (an explicit transfer: allowed under
    the training loop's transfer guard)."""
    return lambda tree: jax.device_put(tree, sharding)


def placer(n_devices: int) -> Callable:
    """Puts a pytree with a leading lane axis on the devices, split along it."""
    return _putter(lane_sharding(n_devices))


def shared_placer(n_devices: int) -> Callable:
    """Puts a value every lane shares (a chunk's step count) on each device."""
    return _putter(shared_sharding(n_devices))


def abstract(tree, sharding: jax.sharding.Sharding):
    """The shapes and dtypes of `tree` (arrays or ShapeDtypeStructs) placed by
    `sharding`: what a program is lowered from before its inputs exist."""
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), tree)


def block_size(n_local: int, block: int | None) -> int:
    """Lanes per block on one device: the most that divide n_local, up to
    `block` (None or 0: all of them)."""
    if not block:
        return n_local
    return max(b for b in range(1, min(block, n_local) + 1) if n_local % b == 0)


def default_block(backend: str) -> int | None:
    """Lanes vmapped at once on one device when runtime.lane_block is unset.

    On a CPU the step is bound by memory traffic: a vmapped lane costs what a
    lane alone costs, and a wide block spills the caches, so lanes run one at
    a time (lax.map), each at its single-lane speed, while the devices (cores)
    run side by side. On an accelerator, small models are bound by kernel
    launches, and vmapping every lane into one kernel is what pays."""
    return 1 if backend == "cpu" else None


def lane_program(one_lane: Callable, n_devices: int, n_lane_args: int = 1,
                 block: int | None = None, idle: tuple[Callable, Callable] | None = None) -> Callable:
    """`one_lane` over the leading lane axis of its first `n_lane_args`
    arguments (the rest are shared by every lane, e.g. a step count), each
    device running its own slice of lanes, `block` lanes vmapped at a time
    and the blocks one after another (lax.map).

    `idle` = (live, rest): live(*lane_args) says whether a lane has work
    left, and rest(*args) is what one_lane gives a lane that has none. A
    block none of whose lanes has work returns rest's values without running
    one_lane: a real branch, since the predicate is the block's, not a lane's
    (with blocks of one lane, an ended lane costs nothing)."""
    program = _in_blocks(one_lane, n_lane_args, block, idle)
    return program if n_devices == 1 else _sharded(program, n_devices, n_lane_args)


def _in_blocks(one_lane: Callable, n_lane_args: int, block: int | None,
               idle: tuple[Callable, Callable] | None) -> Callable:
    """One device's lanes: vmapped `block` at a time, the blocks in sequence."""
    def program(*args):
        lane_args, shared = args[:n_lane_args], args[n_lane_args:]
        lanes_in = (0,) * n_lane_args + (None,) * len(shared)
        batched = jax.vmap(one_lane, in_axes=lanes_in)

        def run_block(blk):
            if idle is None:
                return batched(*blk, *shared)
            live, rest = idle
            return jax.lax.cond(jnp.any(jax.vmap(live)(*blk)),
                                lambda b: batched(*b, *shared),
                                lambda b: jax.vmap(rest, in_axes=lanes_in)(*b, *shared), blk)

        n_local = jax.tree_util.tree_leaves(lane_args)[0].shape[0]
        b = block_size(n_local, block)
        if b == n_local:
            return run_block(lane_args)
        split = lambda t: jax.tree_util.tree_map(  # noqa: E731
            lambda a: a.reshape((n_local // b, b) + a.shape[1:]), t)
        merge = lambda t: jax.tree_util.tree_map(  # noqa: E731
            lambda a: a.reshape((n_local,) + a.shape[2:]), t)
        return merge(jax.lax.map(run_block, split(lane_args)))

    return program


def _sharded(program: Callable, n_devices: int, n_lane_args: int) -> Callable:
    """`program` with its lane arguments split over n_devices, the rest replicated."""
    def sharded(*args):
        n_shared = len(args) - n_lane_args
        specs = (PartitionSpec(AXIS),) * n_lane_args + (PartitionSpec(),) * n_shared
        # lanes never communicate: nothing to check or insert between devices
        return jax.shard_map(program, mesh=_mesh(n_devices), in_specs=specs,
                             out_specs=PartitionSpec(AXIS), check_vma=False)(*args)

    return sharded
