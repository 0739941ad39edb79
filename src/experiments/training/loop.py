"""Training runs, from a composed config to rows and a summary (no file I/O).

The lanes of a configuration (seeds x learning rates) train as one program
(`train_lanes`, the one way to train; training.group builds and compiles it). The host loop only
wakes up at evaluations: `eval_every` steps run inside one jitted loop.
With train.stop_at_threshold a lane's training ends at the first evaluation
that reaches train.threshold; the group stops once every lane has ended.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import DictConfig

from experiments.training import lane_axis, prune
from experiments.training.compile import ProgramCache
from experiments.training.fixed_sets import test_accuracy
from experiments.training.group import Lane, devices_for, prepare


@dataclass
class RunResult:
    rows: list = field(default_factory=list)
    status: str = "completed"
    diverged_at_step: int | None = None
    test_accuracy: float | None = None
    compile_time_s: float = 0.0
    train_time_s: float = 0.0
    steps_done: int = 0
    n_params: int = 0
    n_seeds_vmapped: int = 1
    stopped_at_threshold: bool = False
    pruned_at_step: int | None = None
    auc_bound: float | None = None  # a pruned lane's bound on its final AUC (training.prune.lane_bound)


def _host_per_lane(tree, n_lanes: int) -> list[dict]:
    """{name: (L,) array} -> one {name: float} per lane (one transfer if on device)."""
    host = jax.device_get(tree)
    return [{k: float(v[i]) for k, v in host.items()} for i in range(n_lanes)]


def _diverged(row: dict, limit: float) -> bool:
    """A non-finite loss or gradient norm, or a loss above `limit`."""
    losses = [row.get("loss"), row.get("train_loss")]
    if any(v is not None and (not math.isfinite(v) or v > limit) for v in losses):
        return True
    return any(not math.isfinite(v) for k, v in row.items() if k.startswith("grad_norm"))


def _diverged_at(row: dict, first_bad: int, final: bool, limit: float) -> int | None:
    """The step a seed diverged at: this row's own step if its values are bad,
    else the first bad step the chunk saw (`first_bad` steps after the row;
    -1: none). After the last step the chunk is thrown away, so then only the
    row counts."""
    if _diverged(row, limit):
        return row["step"]
    if first_bad >= 0 and not final:
        return row["step"] + first_bad
    return None


@jax.jit
def _keep(mask, new, old):
    """`new` where a lane's mask is set, `old` elsewhere (lane axis first)."""
    pick = lambda a, b: jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
    return jax.tree_util.tree_map(pick, new, old)


def _lane_mask(group, mask: np.ndarray):
    """A host (L,) bool mask on the devices, laid out as the lane axis is."""
    return group.place(jax.device_put(mask))


def lanes_of(cfg: DictConfig) -> list[Lane]:
    """The lanes of a job: every rate of optimizer.lr_grid (or optimizer.lr) x
    the seeds seed .. seed + n_seeds - 1."""
    rates = list(cfg.optimizer.get("lr_grid") or [cfg.optimizer.lr])
    return [Lane(seed, float(lr)) for lr in rates
            for seed in range(cfg.seed, cfg.seed + cfg.train.n_seeds)]


def train_lanes(cfg: DictConfig, lanes: list[Lane],
                on_eval: Callable[[int, dict], None] = lambda i, row: None,
                on_steps: Callable[[int], None] = lambda n: None,
                cache: ProgramCache | None = None) -> list[RunResult]:
    """Train `cfg` once per lane (seed, rate), all lanes as one program, with
    the programs `cache` holds where they fit (None: compiled for this call).

    `on_eval(i, row)` sees each evaluation row of lanes[i] as it comes. A lane
    that diverges, or (with train.stop_at_threshold) reaches the threshold,
    stops being recorded, and from the next chunk on its slice skips the work
    (state["active"]); the others go on. A lane's test accuracy is that of its params when its training
    ended: never used to stop anything.

    The lanes sit on the lane axis in lane_axis.dealt order (a lane's numbers
    do not depend on where it sits); results and callbacks are in `lanes` order.
    """
    order = lane_axis.dealt(len(lanes), devices_for(cfg, len(lanes)))
    placed = _train_placed(cfg, [lanes[i] for i in order],
                           lambda p, row: on_eval(order[p], row), on_steps, cache)
    results: list[RunResult] = [None] * len(lanes)  # type: ignore[list-item]
    for p, result in enumerate(placed):
        results[order[p]] = result
    return results


def _train_placed(cfg: DictConfig, lanes: list[Lane], on_eval: Callable[[int, dict], None],
                  on_steps: Callable[[int], None], cache: ProgramCache | None) -> list[RunResult]:
    """train_lanes with the lanes in lane-axis order."""
    t = cfg.train
    stop_early = bool(t.get("stop_at_threshold", False))
    group = prepare(cfg, lanes, cache)
    state, val, evaluate = group.state, group.val, group.evaluate
    n_lanes = len(lanes)

    def validate(state) -> list[dict]:  # per lane; an ended lane's row is NaN and never read
        return _host_per_lane(evaluate(state["params"], val, state["score_scale"], state["active"]), n_lanes)
    results = [RunResult(n_params=group.n_params, n_seeds_vmapped=n_lanes) for _ in lanes]

    start = time.perf_counter()
    active = list(range(n_lanes))
    ended = np.zeros(n_lanes, bool)  # reached the threshold and stopped there
    kept = None  # the params of the lanes that stopped, from the step they stopped at
    rule, pruned_rates, n_evals = prune.rule_of(t), set(), len(eval_steps(t))
    step = 0
    # A row holds the validation measurements of the params at `step` and the
    # train-step measurements (gradients, update) of the step taken from them.
    # After the last step, one more chunk runs on a copy and is thrown away,
    # so the final row has them too without compiling a second function.
    # Inside the loop, the device is read only through explicit device_get at
    # evaluations: any implicit transfer is an error.
    with jax.transfer_guard("disallow"):
        val_rows = validate(state)
        while True:
            n = min(t.eval_every, t.steps - step) or 1
            final = step >= t.steps
            reached = {i for i in active if stop_early and val_rows[i]["accuracy"] >= t.threshold}
            if reached:  # their training ends here: keep these params before the chunk moves on
                mask = _lane_mask(group, np.isin(np.arange(n_lanes), list(reached)))
                kept = _keep(mask, state["params"], state["params"] if kept is None else kept)
            new_state, measured, first_bad = group.run(
                jax.tree_util.tree_map(jnp.copy, state) if final else state, n)
            if not final:
                state = new_state  # the chunk donated the old buffers
            measured, first_bad = jax.device_get((measured, first_bad))  # one transfer
            train_rows = _host_per_lane(measured, n_lanes)
            for i in list(active):
                row = {"step": step, **val_rows[i], **train_rows[i]}
                results[i].rows.append(row)
                on_eval(i, row)
                # a lane that ends here is judged on its row alone: the chunk is past its end
                bad_at = _diverged_at(row, -1 if i in reached else int(first_bad[i]), final,
                                      t.divergence_loss)
                if bad_at is not None:
                    results[i].status, results[i].diverged_at_step = "diverged", bad_at
                    results[i].steps_done = bad_at
                    active.remove(i)
                elif i in reached:
                    results[i].steps_done, ended[i] = step, True
                    results[i].stopped_at_threshold = True
                    active.remove(i)
            # a pruned lane stops here like one at the threshold; no test accuracy (not completed)
            for i in [] if final else prune.lanes_to_stop(
                    [[r["accuracy"] for r in res.rows] for res in results], [lane.lr for lane in lanes],
                    [res.status == "diverged" for res in results], active, pruned_rates, n_evals, rule):
                results[i].status, results[i].pruned_at_step, results[i].steps_done = "pruned", step, step
                results[i].auc_bound = prune.lane_bound([r["accuracy"] for r in results[i].rows], n_evals, rule)
                active.remove(i)
            if final or not active:
                break
            if len(active) < n_lanes:  # the lanes that ended skip the work from here on
                state = {**state, "active": _lane_mask(group, np.isin(np.arange(n_lanes), active))}
            step += n
            val_rows = validate(state)
            on_steps(n)
        jax.block_until_ready(state)
        final_params = state["params"] if kept is None else \
            _keep(_lane_mask(group, ended), kept, state["params"])
    train_time = time.perf_counter() - start
    completed = np.asarray([res.status == "completed" for res in results])
    accuracies = test_accuracy(group, final_params, state["score_scale"], cfg, completed)
    for i, result in enumerate(results):
        result.compile_time_s, result.train_time_s = group.compile_time_s, train_time
        if result.status == "completed":
            if not ended[i]:
                result.steps_done = step
            result.test_accuracy = accuracies[i]
    return results


def eval_steps(train_cfg) -> list[int]:
    """The steps a run of the whole budget is evaluated at."""
    return sorted({*range(0, train_cfg.steps, train_cfg.eval_every), train_cfg.steps})


def summarize(result: RunResult, threshold: float, budget_steps: list[int] | None = None) -> dict:
    """The summary metrics of a run from its evaluation rows.

    A run that stopped at the threshold, or was pruned, has its last accuracy held over the
    rest of `budget_steps` (the evaluation grid of the whole budget) in its
    AUC, so that stopping early never lowers the area against a run that
    trained the whole budget."""
    acc = [r["accuracy"] for r in result.rows]
    if (result.stopped_at_threshold or result.status == "pruned") and budget_steps and acc:
        acc += [acc[-1]] * sum(1 for s in budget_steps if s > result.rows[-1]["step"])
    reached = [r["step"] for r in result.rows if r["accuracy"] >= threshold]
    return {
        "status": result.status,
        "diverged_at_step": result.diverged_at_step,
        "test_accuracy": result.test_accuracy,
        "final_val_accuracy": acc[-1] if acc else None,
        "steps_to_threshold": reached[0] if reached else None,
        "accuracy_auc": float(np.mean(acc)) if acc else None,
        "compile_time_s": result.compile_time_s,
        "train_time_s": result.train_time_s,
        "steps_per_s": result.steps_done / result.train_time_s if result.train_time_s else None,
        "steps_done": result.steps_done,
        "n_params": result.n_params,
        "n_seeds_vmapped": result.n_seeds_vmapped,
        "stopped_at_threshold": result.stopped_at_threshold,
        "pruned_at_step": result.pruned_at_step,
        "accuracy_auc_bound": result.auc_bound,
    }
