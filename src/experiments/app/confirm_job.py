"""The confirmation phase as a job: choose each (variant, d_k)'s rate on the selection
seeds, then train fresh seeds at that rate only (`python -m experiments.confirm`).

A confirmation job is a selection run's own config (its folder's config.yaml)
with seed, optimizer.lr, optimizer.lr_grid, train.n_seeds and train.prune
changed: everything else that makes a run what it is (steps, task sizes,
d_hidden, mup's multiplier, the model) is the selection's, so the two phases
pair seed by seed in every analysis. Each job runs through the train job
(app.train_job.run): run folders, resume and claims are the train command's.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from attention.checks import check
from experiments.analysis.lr import select
from experiments.analysis.tables.load import split_width
from experiments.app import config as train_config
from experiments.app import progress, train_job
from experiments.app.analysis_cli import confirm_record
from experiments.app.errors import CONF_DIR, ConfigError
from experiments.store.collect import ENDED, collect_runs, flatten, run_folders
from experiments.store.results import atomic_write_text, run_dir
from experiments.training.compile import ProgramCache

OUTPUT = "confirm.json"


def cells() -> list[str]:
    return sorted(p.stem for p in (Path(CONF_DIR) / "cell").glob("*.yaml"))


def validate(cfg: DictConfig) -> None:
    """The cell exists, the seed counts are in range, results_dir holds run folders."""
    check(cfg.for_cell in cells(), "for_cell", f"must be one of {', '.join(cells())}", cfg.for_cell)
    check(cfg.n_seeds >= 1, "n_seeds", "must be >= 1", cfg.n_seeds)
    check(cfg.stage in (1, 2), "stage", "must be 1 (train n_seeds confirmation seeds) or 2 (the top-up "
          "of conf/analysis.yaml's two_stage)", cfg.stage)
    check(cfg.seed_from >= 1, "seed_from", "must be >= 1 (the seeds below it are the selection's)",
          cfg.seed_from)
    for item in cfg.train:
        check(isinstance(item, str) and "=" in item, "train", "must be a list of key=value overrides",
              item)
    root = Path(cfg.results_dir)
    if not run_folders(root):
        raise ConfigError(f"results_dir: {str(root)!r} holds no run folders (train the selection "
                          f"first: python -m experiments.train -m experiment=answer cell={cfg.for_cell} "
                          f"results_dir={cfg.results_dir})")
    confirm_record(root)  # readable, before anything is chosen or written


def cell_condition(cell: str) -> tuple[dict, str]:
    """(task config, optimizer name) the cell composes to."""
    from hydra import compose

    composed = compose(config_name="train", overrides=[f"cell={cell}"])
    return OmegaConf.to_container(composed.task), str(composed.optimizer.name)


def selection(summary: pd.DataFrame, task: dict, optimizer: str, seed_from: int) -> pd.DataFrame:
    """The fixed-width runs of the cell's task (every task.* field as the cell sets it) and
    optimizer on seeds below seed_from."""
    if summary.empty:
        return summary
    fixed = split_width(summary, None)[0]
    keep = (fixed["optimizer"] == optimizer) & (fixed["seed"] < seed_from)
    for key, value in flatten(task).items():  # lists as the tables hold them (JSON text)
        column = fixed.get(f"task.{key}")
        keep &= (column.isna() if value is None else column.eq(value)) if column is not None else False
    return fixed[keep]


def chosen_rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (task, optimizer, attention, d_k): best_lr and best_val_auc on these runs, and the
    run id of one selection run at that rate (the config the confirmation copies)."""
    best = select.best_lrs(select.scored(runs))
    lr = select.lr_values(runs)
    ids = []
    for _, row in best.iterrows():
        at = runs[(runs[select.CELL] == row[select.CELL].to_numpy()).all(axis=1)
                  & (lr == row["best_lr"])].sort_values("seed")
        ids.append(at["run_id"].iloc[0])
    return best.assign(source=ids)


def job_config(source: Path, lr: float, cfg: DictConfig, seed: int, n_seeds: int) -> DictConfig:
    """The source run's config training seeds seed .. seed+n_seeds-1 at lr, and nothing else changed."""
    job = OmegaConf.load(source / "config.yaml")
    job.seed = int(seed)
    job.results_dir = str(cfg.results_dir)
    job.overwrite = False
    job.optimizer.lr = float(lr)
    job.optimizer.lr_grid = None
    job.train.n_seeds = int(n_seeds)
    job.train.prune.enabled = False  # one rate: nothing to prune
    job = OmegaConf.merge(job, OmegaConf.from_dotlist(list(cfg.train)))
    try:
        train_config.validate(job)
    except ValueError as exc:
        raise ConfigError(f"train: {exc}") from None
    return job


def record(root: Path, best: pd.DataFrame, cfg: DictConfig, selection_seeds: list[int]) -> None:
    """confirm.json: the chosen rates and both seed ranges, the other cells' entries kept."""
    path = root / OUTPUT
    old = confirm_record(root)
    key = lambda e: (e["task"], e["optimizer"], e["attention"], int(e["d_k"]))
    entries = {key(e): e for e in old.get("cells", [])}
    for _, row in best.iterrows():
        entry = dict(task=row["task"], optimizer=row["optimizer"], attention=row["attention"],
                     d_k=int(row["d_k"]), lr=float(row["best_lr"]),
                     selection_val_auc=float(row["best_val_auc"]), grid=list(row["grid"]),
                     selection_seeds=selection_seeds,
                     confirm_seeds=list(range(cfg.seed_from, cfg.seed_from + cfg.n_seeds)))
        entries[key(entry)] = entry
    out = {**old, "confirm_seeds_from": int(cfg.seed_from), "cells": [entries[k] for k in sorted(entries)]}
    atomic_write_text(path, json.dumps(out, indent=2) + "\n")


def run(cfg: DictConfig) -> list[dict]:
    root = Path(cfg.results_dir)
    task, optimizer = cell_condition(cfg.for_cell)
    summary, _, _ = collect_runs(root)
    runs = selection(summary, task, optimizer, int(cfg.seed_from))
    if runs.empty:
        raise ConfigError(f"for_cell: {str(root)!r} holds no runs of {cfg.for_cell} ({task['name']}/{optimizer}) "
                          f"on seeds below {cfg.seed_from}; train the selection first")
    open_runs = runs[~runs["status"].isin(ENDED)]
    if len(open_runs):
        raise ConfigError(f"for_cell: {len(open_runs)} selection runs of {cfg.for_cell} have not ended "
                          f"(e.g. {open_runs['run_id'].iloc[0]}: {open_runs['status'].iloc[0]}); "
                          "finish the selection (relaunch its train command) first")
    best = chosen_rates(runs)
    jobs = [job_config(run_dir(root, row["source"]), row["best_lr"], cfg, cfg.seed_from, cfg.n_seeds)
            for _, row in best.iterrows()]
    record(root, best, cfg, sorted(int(s) for s in runs["seed"].unique()))
    progress.say(f"{cfg.for_cell}: {len(jobs)} (variant, d_k) at their chosen rates, seeds "
                 f"{cfg.seed_from}..{cfg.seed_from + cfg.n_seeds - 1}; rates in {root / OUTPUT}")
    return train_jobs(jobs)


def train_jobs(jobs: list[DictConfig]) -> list[dict]:
    """Each job through the train job, in order; a job reuses the programs of the one before where it can."""
    summaries, cache = [], ProgramCache()
    for job in jobs:
        summaries += train_job.run(job, cache)
    return summaries
