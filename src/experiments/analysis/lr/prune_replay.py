"""The pruning rule replayed on a study as it was trained: which lanes it stops, and where.

Every run's validation curve is in the history, so the rule of training.prune
can be run again, evaluation by evaluation, on each job's lanes (a job: one
experiment, task, optimizer, variant and d_k; its lanes: the rates x seeds), as
the training loop would have run it. A lane the rule stops becomes a run with
`status` pruned and `pruned_at_step`, its history cut there, its summary as
training.loop.summarize writes it for a pruned lane (last accuracy held over the
rest of the budget in its AUC, the rule's bound on its final AUC in
accuracy_auc_bound, no test accuracy). Everything here is pure.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.training import prune

from experiments.analysis.tables import diverged

JOB = ["experiment", "task", "optimizer", "attention", "d_k"]


def eval_grid(steps: int, eval_every: int) -> np.ndarray:
    """The steps a run of the whole budget is evaluated at (training.loop.eval_steps)."""
    return np.array(sorted({*range(0, steps, eval_every), steps}))


def _job_budget(s: pd.DataFrame, h: pd.DataFrame) -> np.ndarray:
    steps = int(s["steps"].max())
    every = s["train.eval_every"].dropna() if "train.eval_every" in s else pd.Series(dtype=float)
    if len(every):
        return eval_grid(steps, int(every.iloc[0]))
    return np.array(sorted(set(h["step"].astype(int)) | {steps}))


def replay_job(s: pd.DataFrame, h: pd.DataFrame, rule: prune.PruneRule) -> dict[str, tuple]:
    """{run_id: (pruned_at_step, held AUC, AUC bound)} for the lanes of one job that the rule stops."""
    grid = _job_budget(s, h)
    n_evals = len(grid)
    col = {int(step): j for j, step in enumerate(grid)}
    s = s.sort_values(["lr", "seed"])
    rates, seeds = sorted(s["lr"].unique()), sorted(s["seed"].unique())
    if len(rates) < 2:
        return {}
    acc = np.full((len(rates), len(seeds), n_evals), np.nan)
    n_done = np.zeros((len(rates), len(seeds)), int)
    broke = np.zeros_like(n_done, bool)
    ids = np.full(n_done.shape, "", dtype=object)
    lane = {(r, sd): (rates.index(r), seeds.index(sd)) for r in rates for sd in seeds}
    for row in s.itertuples():
        ids[lane[(row.lr, row.seed)]] = row.run_id
        broke[lane[(row.lr, row.seed)]] = row.status == diverged.DIVERGED
    for rid, g in h[h["run_id"].isin(set(s["run_id"]))].groupby("run_id"):
        where = np.argwhere(ids == rid)[0]
        js = [col[int(x)] for x in g["step"] if int(x) in col]
        acc[where[0], where[1], js] = g.loc[g["step"].isin(list(col)), "accuracy"].to_numpy(float)
        n_done[tuple(where)] = max(js) + 1 if js else 0
    running = np.ones(len(rates), bool)
    out: dict[str, tuple[int, float]] = {}
    for k in range(2, n_evals):
        known = broke & (n_done <= k)
        curves = prune.held_curves(acc.reshape(-1, n_evals), np.minimum(n_done, k).ravel(),
                                   known.ravel(), k).reshape(len(rates), len(seeds), k)
        stop = prune.to_stop(curves, running, n_evals, rule)
        for r in np.flatnonzero(stop):
            running[r] = False
            for sd in range(len(seeds)):
                if n_done[r, sd] > k:  # still training after this evaluation
                    held = prune.held_curves(acc[r, sd][None], np.array([k]), np.array([False]), n_evals)
                    out[ids[r, sd]] = (int(grid[k - 1]), float(held.mean()),
                                       prune.lane_bound(acc[r, sd, :k], n_evals, rule))
    return out


def replay(summary: pd.DataFrame, history: pd.DataFrame, rule: prune.PruneRule):
    """(summary, history) as the study would have ended with `rule` in training."""
    s = summary.reset_index(drop=True).copy()
    stopped: dict[str, tuple] = {}
    hist_by_run = history.groupby("run_id")
    for _, g in s.groupby(JOB, sort=False):
        h = pd.concat([hist_by_run.get_group(r) for r in g["run_id"] if r in hist_by_run.groups])
        stopped.update(replay_job(g, h, rule))
    at = s["run_id"].map(lambda r: stopped.get(r, (np.nan, np.nan, np.nan)))
    hit = s["run_id"].isin(set(stopped))
    s["pruned_at_step"] = [a[0] for a in at]
    s.loc[hit, "status"] = diverged.PRUNED
    s.loc[hit, "steps_done"] = s.loc[hit, "pruned_at_step"]
    s.loc[hit, "accuracy_auc"] = [a[1] for a in at[hit]]
    s["accuracy_auc_bound"] = [a[2] for a in at]
    s.loc[hit, "test_accuracy"] = np.nan
    s.loc[hit, "stopped_at_threshold"] = False
    cut = history["run_id"].map(lambda r: stopped.get(r, (np.inf,))[0])
    h = history[history["step"] <= cut]
    last = h[h["run_id"].isin(set(stopped))].sort_values("step").groupby("run_id")["accuracy"].last()
    s.loc[hit, "final_val_accuracy"] = s.loc[hit, "run_id"].map(last).to_numpy(dtype=float)
    late = hit & (s["steps_to_threshold"] > s["pruned_at_step"])
    s.loc[late, "steps_to_threshold"] = np.nan
    return s, h.reset_index(drop=True)
