"""Training runs, from a composed config to rows and a summary (no file I/O).

The lanes of a configuration (seeds x learning rates) train as one program
(`train_lanes`, the one way to train). training.group builds that program and
is the loop's one door to the devices (lane blocks, devices, reassociation):
`group.run(state, n)` trains every running lane n steps and `group.validate`
evaluates them, so that the host only wakes up at evaluations.

`_loop` is the whole loop. A lane leaves the running once, through the
ledger's `stop`, in one of four states: it diverged, reached train.threshold
(under train.stop_at_threshold), was pruned (train.prune) or ended its budget.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import jax
import numpy as np
from omegaconf import DictConfig

from experiments.training import lane_axis, prune
from experiments.training.compile import ProgramCache
from experiments.training.fixed_sets import test_scores
from experiments.training.group import Group, Lane, devices_for, prepare


@dataclass
class RunResult:
    rows: list = field(default_factory=list)
    status: str = "completed"
    diverged_at_step: int | None = None
    test_accuracy: float | None = None
    test_loss: float | None = None  # mean cross-entropy on the test set, nats
    compile_time_s: float = 0.0
    train_time_s: float = 0.0
    steps_done: int = 0
    n_params: int = 0
    n_seeds_vmapped: int = 1
    stopped_at_threshold: bool = False
    pruned_at_step: int | None = None
    auc_bound: float | None = None  # a pruned lane's bound on its final AUC (training.prune.lane_bound)


class LaneState(Enum):
    RUNNING = "running"
    REACHED = "reached"  # its validation accuracy reached train.threshold: completed there
    DIVERGED = "diverged"
    PRUNED = "pruned"  # its rate could no longer be the job's best (train.prune)
    ENDED = "ended"  # trained the whole budget: completed


COMPLETED = (LaneState.REACHED, LaneState.ENDED)  # the lanes that have a test accuracy


class Ledger:
    """Where each lane of a group stands: its state, the step it stopped at, its rows."""

    def __init__(self, lanes: list[Lane]):
        self.rates = [lane.lr for lane in lanes]
        self.multipliers = [lane.c for lane in lanes]
        self.seeds = [lane.seed for lane in lanes]
        self.states = [LaneState.RUNNING] * len(lanes)
        self.stopped_at: list[int | None] = [None] * len(lanes)
        self.rows: list[list[dict]] = [[] for _ in lanes]

    def running(self) -> list[int]:
        return [i for i, s in enumerate(self.states) if s is LaneState.RUNNING]

    def stop(self, lanes: dict[int, int], why: LaneState) -> None:
        """Moves `lanes` ({lane: the step its training stopped at}) out of the running, as `why`."""
        for i, step in lanes.items():
            self.states[i], self.stopped_at[i] = why, step


@dataclass
class Pruning:
    """train.prune over one group: its rule, the evaluations of the whole
    budget, the seeds it never stops and the rates it has stopped (training.prune)."""
    rule: prune.PruneRule
    n_evals: int
    spared: range = range(0)
    # per logit multiplier (attention.c_grid): rates compete only with the other rates of their c,
    # so that every multiplier keeps its own best rate
    stopped_rates: dict[float, set[float]] = field(default_factory=dict)

    @classmethod
    def of(cls, cfg) -> Pruning:
        rule = prune.rule_of(cfg.train)
        return cls(rule, len(eval_steps(cfg.train)), prune.spared_seeds(cfg.seed, rule))

    def lanes_to_stop(self, ledger: Ledger, step: int) -> dict[int, int]:
        """{lane: step} of the running lanes whose rate can no longer be the best at their
        multiplier, but the spared."""
        stop = []
        for c in dict.fromkeys(ledger.multipliers):
            mine = [i for i, m in enumerate(ledger.multipliers) if m == c]
            picked = prune.lanes_to_stop([[row["accuracy"] for row in ledger.rows[i]] for i in mine],
                                         [ledger.rates[i] for i in mine],
                                         [ledger.states[i] is LaneState.DIVERGED for i in mine],
                                         [j for j, i in enumerate(mine) if ledger.states[i] is LaneState.RUNNING],
                                         self.stopped_rates.setdefault(c, set()), self.n_evals, self.rule,
                                         [ledger.seeds[i] in self.spared for i in mine])
            stop += [mine[j] for j in picked]
        return dict.fromkeys(stop, step)

    def bound(self, rows: list[dict]) -> float:
        """A pruned lane's bound on its final AUC, from its rows."""
        return prune.lane_bound([row["accuracy"] for row in rows], self.n_evals, self.rule)


def lanes_of(cfg: DictConfig) -> list[Lane]:
    """The lanes of a job: every multiplier of attention.c_grid (where the variant has one) x
    every rate of optimizer.lr_grid (or optimizer.lr) x the seeds seed .. seed + n_seeds - 1."""
    rates = list(cfg.optimizer.get("lr_grid") or [cfg.optimizer.lr])
    grid = cfg.attention.get("c_grid")
    multipliers = list(grid) if grid else [cfg.attention.get("c", 1.0)]
    return [Lane(seed, float(lr), float(c)) for c in multipliers for lr in rates
            for seed in range(cfg.seed, cfg.seed + cfg.train.n_seeds)]


def train_lanes(cfg: DictConfig, lanes: list[Lane],
                on_eval: Callable[[int, dict], None] = lambda i, row: None,
                on_steps: Callable[[int], None] = lambda n: None,
                cache: ProgramCache | None = None) -> list[RunResult]:
    """Train `cfg` once per lane (seed, rate), all lanes as one program, with
    the programs `cache` holds where they fit (None: compiled for this call).

    `on_eval(i, row)` sees each evaluation row of lanes[i] as it comes. A lane's
    test accuracy is that of its params when its training ended: never used to
    stop anything. The lanes sit on the lane axis in lane_axis.dealt order (a
    lane's numbers do not depend on where it sits); results and callbacks are
    in `lanes` order.
    """
    order = lane_axis.dealt(len(lanes), devices_for(cfg, len(lanes)))
    group, pruning = prepare(cfg, [lanes[i] for i in order], cache), Pruning.of(cfg)
    start = time.perf_counter()
    ledger, state, final_params = _loop(cfg, group, pruning, lambda p, row: on_eval(order[p], row), on_steps)
    train_time = time.perf_counter() - start
    completed = [s in COMPLETED for s in ledger.states]
    tests = test_scores(group, final_params, state["score_scale"], cfg, completed) \
        if any(completed) else [{}] * len(lanes)
    results: list[RunResult] = [None] * len(lanes)  # type: ignore[list-item]
    for p, i in enumerate(order):
        results[i] = _result(group, ledger, pruning, p, tests[p], train_time)
    return results


def _loop(cfg: DictConfig, group: Group, pruning: Pruning, on_eval: Callable[[int, dict], None],
          on_steps: Callable[[int], None]) -> tuple[Ledger, dict, dict]:
    """Evaluate, train a chunk, record each running lane's row, stop lanes; until
    none is running. Returns the ledger, the state and the params each lane ended with.

    A row holds the validation measurements of the params at `step` and the
    train-step measurements (gradients, update) of the step taken from them,
    which the chunk from there gives: so after the last evaluation too, whose
    chunk is one step past the budget. The lanes whose training ends at a row
    leave their params in `kept` before that chunk moves on.
    """
    t, ledger = cfg.train, Ledger(group.lanes)
    state, step, kept = group.state, 0, None
    # the device is read only through explicit device_get: any implicit transfer is an error
    with jax.transfer_guard("disallow"):
        while True:
            val_rows = group.validate(state)
            final = step >= t.steps
            reached = _at_threshold(t, ledger, val_rows)
            ending = ledger.running() if final else reached
            kept = group.keep(ending, state["params"], kept)
            n = min(t.eval_every, t.steps - step) or 1
            state, train_rows, first_bad = group.run(state, n)
            rows = _record(ledger, step, val_rows, train_rows, on_eval)
            ledger.stop(_diverged_lanes(rows, first_bad, ending, t.divergence_loss), LaneState.DIVERGED)
            ledger.stop({i: step for i in reached if i in ledger.running()}, LaneState.REACHED)
            if final:
                ledger.stop(dict.fromkeys(ledger.running(), step), LaneState.ENDED)
            else:
                ledger.stop(pruning.lanes_to_stop(ledger, step), LaneState.PRUNED)
            if not ledger.running():
                return ledger, state, kept
            state = group.with_running(state, ledger.running())
            step += n
            on_steps(n)


def _at_threshold(train_cfg, ledger: Ledger, val_rows: list[dict]) -> list[int]:
    """The running lanes whose validation accuracy reached train.threshold
    (none unless train.stop_at_threshold)."""
    if not train_cfg.get("stop_at_threshold", False):
        return []
    return [i for i in ledger.running() if val_rows[i]["accuracy"] >= train_cfg.threshold]


def _record(ledger: Ledger, step: int, val_rows: list[dict], train_rows: list[dict],
            on_eval: Callable[[int, dict], None]) -> dict[int, dict]:
    """Each running lane's row at `step`, added to the ledger and passed to on_eval."""
    rows = {i: {"step": step, **val_rows[i], **train_rows[i]} for i in ledger.running()}
    for i, row in rows.items():
        ledger.rows[i].append(row)
        on_eval(i, row)
    return rows


def _diverged(row: dict, limit: float) -> bool:
    """A non-finite loss or gradient norm, or a loss above `limit`."""
    losses = [row.get("loss"), row.get("train_loss")]
    if any(v is not None and (not math.isfinite(v) or v > limit) for v in losses):
        return True
    return any(not math.isfinite(v) for k, v in row.items() if k.startswith("grad_norm"))


def _diverged_at(row: dict, first_bad: int, limit: float) -> int | None:
    """The step a lane diverged at: this row's own step if its values are bad,
    else the first bad step the chunk after it saw (`first_bad` steps after
    the row; -1: none)."""
    if _diverged(row, limit):
        return row["step"]
    return row["step"] + first_bad if first_bad >= 0 else None


def _diverged_lanes(rows: dict[int, dict], first_bad: list[int], ending: list[int],
                    limit: float) -> dict[int, int]:
    """{lane: the step it diverged at} of the lanes with a row; one whose
    training ends at its row is judged on the row alone (the chunk is past its end)."""
    at = {i: _diverged_at(row, -1 if i in ending else first_bad[i], limit) for i, row in rows.items()}
    return {i: step for i, step in at.items() if step is not None}


def _result(group: Group, ledger: Ledger, pruning: Pruning, i: int, test: dict[str, float],
            train_time: float) -> RunResult:
    """Lane i's RunResult from its place in the ledger."""
    state, at, rows = ledger.states[i], ledger.stopped_at[i], ledger.rows[i]
    return RunResult(
        rows=rows, status="completed" if state in COMPLETED else state.value,
        diverged_at_step=at if state is LaneState.DIVERGED else None,
        test_accuracy=test.get("accuracy") if state in COMPLETED else None,
        test_loss=test.get("loss") if state in COMPLETED else None,
        compile_time_s=group.compile_time_s, train_time_s=train_time, steps_done=at,
        n_params=group.n_params, n_seeds_vmapped=len(group.lanes),
        stopped_at_threshold=state is LaneState.REACHED,
        pruned_at_step=at if state is LaneState.PRUNED else None,
        auc_bound=pruning.bound(rows) if state is LaneState.PRUNED else None)


def _bits(nats: float | None) -> float | None:
    return None if nats is None else nats / math.log(2)


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
        "test_loss": result.test_loss,
        "final_val_loss": result.rows[-1].get("loss") if result.rows else None,
        # the cross-entropy in bits: per character on text (charlm), per query elsewhere
        "test_bpc": _bits(result.test_loss),
        "final_val_bpc": _bits(result.rows[-1].get("loss")) if result.rows else None,
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
        # a learned multiplier's last value (attention=learned_temperature); None elsewhere
        "final_temperature": result.rows[-1].get("temperature") if result.rows else None,
    }
