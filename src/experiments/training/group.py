"""A group: the lanes of one configuration, initialised and compiled as one program.

A lane is one run: a (seed, learning rate) pair, and under attention.c_grid a logit
multiplier too (the lane's score_scale, data in its state: training.reassociate). Lanes share everything
static (model shape, optimizer kind, task, batch size), so one compiled
program trains them all: the seed picks the init and the data stream, the
rate sits in the optimizer state (training.step.make_optimizer). Compiled
programs are held by a compile.ProgramCache, so the jobs of a sweep that
differ only in seed or learning rate share one compile.

A Group is the loop's one door to the devices: `run`, `validate`, `keep` and
`with_running` take and give host values per lane, and behind them sit the
lane axis (blocks of lanes, devices: training.lane_axis) and the reassociated
model (training.reassociate).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.tasks import TASKS, fixed_set
from experiments.training import lane_axis
from experiments.training.compile import PER_LANE_OPTIMIZER_KEYS, ProgramCache, frozen, input_signature, programs
from experiments.training.fixed_sets import chunked, per_seed, stack
from experiments.training.model import count_params
from experiments.training.reassociate import program_key
from experiments.training.spec import model_spec, task_object

EVAL_CHUNK = 128  # examples per evaluation chunk: bounds additive's memory


class Lane(NamedTuple):
    seed: int
    lr: float
    c: float = 1.0  # the lane's logit multiplier (attention.c_grid): its score_scale times c


def lane_block(cfg: DictConfig) -> int | None:
    """runtime.lane_block, or the platform's default (training.lane_axis)."""
    block = cfg.runtime.get("lane_block")
    return (block or None) if block is not None else lane_axis.default_block(jax.default_backend())


def _per_lane(tree, n_lanes: int) -> list[dict]:
    """{name: (L,) array} -> one {name: float} per lane, in one transfer."""
    host = jax.device_get(tree)
    return [{k: float(v[i]) for k, v in host.items()} for i in range(n_lanes)]


@jax.jit
def _where(mask, new, old):
    """`new` where a lane's mask is set, `old` elsewhere (lane axis first)."""
    pick = lambda a, b: jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
    return jax.tree_util.tree_map(pick, new, old)


@dataclass
class Group:
    """The lanes of one configuration, ready to train: state, validation sets
    and compiled functions with a leading lane axis (spread over devices; see
    training.lane_axis)."""
    lanes: list[Lane]
    state: dict
    val: dict  # (L, n_chunks, chunk, ...)
    chunk: Callable  # compiled (state, n_steps) -> (state, first step's measurements, first bad step)
    chunk_steps: int  # a full chunk: steps between evaluations
    evaluate: Callable  # compiled (params, batches, the state's score_scale, live lanes) -> measurements
    place: Callable  # puts a lane-axis pytree where the programs expect it
    place_shared: Callable  # puts a value every lane shares (a step count) on the devices
    compile_time_s: float  # tracing + lowering + XLA compile of every program
    xla_compile_time_s: float  # the XLA part alone (what the persistent cache saves)
    n_params: int

    def run(self, state, n_steps: int) -> tuple[dict, list[dict], list[int]]:
        """n_steps train steps of every running lane: (state, each lane's
        measurements of the first step, each lane's first diverging step of the
        chunk or -1). The state passed in is consumed (donated)."""
        state, measured, first_bad = self.chunk(state, self.place_shared(np.int32(n_steps)))
        measured, first_bad = jax.device_get((measured, first_bad))  # one transfer
        return state, _per_lane(measured, len(self.lanes)), [int(b) for b in first_bad]

    def validate(self, state) -> list[dict]:
        """Each lane's measurements on its validation set (a lane that has ended: NaN, never read)."""
        return _per_lane(self.evaluate(state["params"], self.val, state["score_scale"], state["active"]),
                         len(self.lanes))

    def _mask(self, lanes: list[int]):
        return self.place(np.isin(np.arange(len(self.lanes)), lanes))

    def keep(self, lanes: list[int], params, kept):
        """`params` for `lanes`, `kept` for the others (None: nothing kept yet):
        the params of lanes whose training ends, taken before a chunk moves on."""
        if not lanes:
            return kept
        return _where(self._mask(lanes), params, params if kept is None else kept)

    def with_running(self, state, running: list[int]) -> dict:
        """The state with only the `running` lanes active: the others skip the work from here on."""
        return {**state, "active": self._mask(running)}


def devices_for(cfg: DictConfig, n_lanes: int) -> int:
    """How many devices a group of n_lanes lanes is split over."""
    return lane_axis.n_devices_for(n_lanes) if cfg.runtime.shard_seeds else 1


def prepare(cfg: DictConfig, lanes: list[Lane], cache: ProgramCache | None = None) -> Group:
    """Initialise every lane and compile (ahead of time, so that compile time
    and step time are measured apart; the programs compile in parallel), or
    take the programs `cache` holds (None: a cache of this group alone)."""
    task_cfg, task, t = task_object(OmegaConf.to_container(cfg.task, resolve=True)), TASKS[cfg.task.name], cfg.train
    spec = model_spec(cfg, task_cfg)
    seeds = [lane.seed for lane in lanes]
    n_devices = devices_for(cfg, len(lanes))
    place = lane_axis.placer(n_devices)
    chunk = min(EVAL_CHUNK, t.n_val)
    vals = per_seed(lambda s: fixed_set(task, task_cfg, s, "val", t.n_val), seeds)
    n_queries = task.n_queries(task_cfg)
    val = place(stack([chunked(v, chunk) for v in vals]))
    opt_key, train_key = frozen(cfg.optimizer, PER_LANE_OPTIMIZER_KEYS), frozen(t, ("prune",))  # host-side only
    static = (opt_key, train_key, frozen(cfg.task), t.batch_size, n_queries, n_devices, lane_block(cfg))
    cache = cache or ProgramCache()
    init = cache.init_program(spec, opt_key, train_key)
    init_args = (np.asarray(seeds, np.int32), np.asarray([lane.lr for lane in lanes], np.float32),
                 np.asarray([lane.c for lane in lanes], np.float32))

    def lane_state(params, opt_state, scale):
        return {"params": params, "opt_state": opt_state, "step": np.zeros(len(lanes), np.int32),
                "seed": np.asarray(seeds, np.int32), "active": np.ones(len(lanes), bool),
                "score_scale": scale}

    # the programs are lowered from the state's shapes and compile while the lanes initialise
    shapes = lane_axis.abstract(lane_state(*init.eval_shape(*init_args)), lane_axis.lane_sharding(n_devices))
    n_steps = lane_axis.abstract(np.int32(1), lane_axis.shared_sharding(n_devices))
    chunk_fn, eval_fn = programs(spec, *static)
    wait = cache.compile(
        (program_key(spec), *static, input_signature((shapes, n_steps)), input_signature(val)),
        {"chunk": lambda: chunk_fn.lower(shapes, n_steps),
         "eval": lambda: eval_fn.lower(shapes["params"], val, shapes["score_scale"], shapes["active"])})
    params, opt_state, scale = init(*init_args)
    state = place(lane_state(params, opt_state, scale))
    compiled, compile_s, xla_compile_s = wait()
    return Group(lanes=list(lanes), state=state, val=val, chunk=compiled["chunk"],
                 chunk_steps=min(t.eval_every, t.steps), evaluate=compiled["eval"],
                 place=place, place_shared=lane_axis.shared_placer(n_devices), compile_time_s=compile_s,
                 xla_compile_time_s=xla_compile_s, n_params=count_params(params) // len(lanes))
