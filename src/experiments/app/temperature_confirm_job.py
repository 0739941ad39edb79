"""The temperature study's confirmation as a job (`python -m experiments.temperature_confirm`):
per cell, c* estimated on the selection seeds (analysis.temperature.optimum), then fresh seeds at
c* and at the paper's c = 1, each a selection run's own config with the multiplier, the rate and
the seeds changed, through the train job (run folders, resume, claims). A cell whose best
multiplier did not learn (conf/temperature.yaml learned_over_chance) is left out, and named."""
from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from attention.checks import check
from experiments.analysis.temperature import grid, optimum
from experiments.app import config as train_config
from experiments.app import progress, ranges, train_job
from experiments.app.errors import ConfigError
from experiments.store.collect import ENDED, collect_runs, run_folders
from experiments.store.results import atomic_write_text, run_dir
from experiments.training.compile import ProgramCache

OUTPUT = "temperature_confirm.json"


def validate(cfg: DictConfig) -> None:
    ranges.check_fresh_seed_reading(cfg)
    check(cfg.fit_half_width >= 1, "fit_half_width", "must be >= 1 (three points or more)", cfg.fit_half_width)
    check(cfg.learned_over_chance >= 1, "learned_over_chance", "must be >= 1", cfg.learned_over_chance)
    if not run_folders(Path(cfg.results_dir)):
        raise ConfigError(f"results_dir: {cfg.results_dir!r} holds no run folders (train the selection "
                          "first: bash scripts/temperature_study.sh)")


def estimates(runs, chosen, cfg) -> list[dict]:
    """Per cell: c* (4 significant digits: the value the runs are trained at), where it lies, whether
    the cell's best multiplier learned, and the two rates."""
    out = []
    for cell, at in chosen.groupby(grid.CELL):
        log2_c, auc = grid.seed_matrix(runs, chosen, cell)
        log2_star, where = optimum.vertex(log2_c, auc.mean(axis=1), cfg.fit_half_width)
        c_star = float(f"{2.0 ** log2_star:.4g}")
        best = at.sort_values("val_auc").iloc[-1]
        learned = bool(best["val_final"] >= cfg.learned_over_chance * best["chance"])
        out.append({**dict(zip(grid.CELL, [str(cell[0]), int(cell[1]), int(cell[2])])), "c_star": c_star,
                    "where": where, "learned": learned, "best_final_val_accuracy": float(best["val_final"]),
                    "lr_at_c_star": grid.nearest_grid_rate(chosen, cell, c_star),
                    "lr_at_1": float(at.loc[at["c"] == 1.0, "lr"].iloc[0]),
                    "source": runs[(runs[grid.CELL] == list(cell)).all(axis=1)
                                   & (runs["attention"] == grid.GRID_VARIANT)]["run_id"].iloc[0]})
    return out


def job_config(source: Path, c: float, lr: float, cfg: DictConfig) -> DictConfig:
    job = OmegaConf.load(source / "config.yaml")
    job.seed, job.results_dir, job.overwrite = int(cfg.confirm_seed_from), str(cfg.results_dir), False
    job.attention.c, job.attention.c_grid = float(c), None
    job.optimizer.lr, job.optimizer.lr_grid = float(lr), None
    job.train.n_seeds = int(cfg.confirm_n_seeds)
    job.train.prune.enabled = False  # one rate: nothing to prune
    train_config.validate(job)
    return job


def run(cfg: DictConfig) -> list[dict]:
    root = Path(cfg.results_dir)
    summary, _, _ = collect_runs(root)
    runs = grid.runs_of(summary, int(cfg.confirm_seed_from))
    open_runs = runs[(runs["phase"] == "selection") & ~runs["status"].isin(ENDED)]
    if len(open_runs):
        raise ConfigError(f"results_dir: {len(open_runs)} selection runs have not ended (e.g. "
                          f"{open_runs['run_id'].iloc[0]}); finish the selection first")
    chosen = grid.chosen_rates(runs)
    cells = estimates(runs, chosen, cfg)
    atomic_write_text(root / OUTPUT, json.dumps({"confirm_seed_from": int(cfg.confirm_seed_from),
                                                 "confirm_n_seeds": int(cfg.confirm_n_seeds),
                                                 "cells": cells}, indent=2) + "\n")
    jobs = []
    for e in cells:
        if not e["learned"]:
            progress.say(f"{e['task']} n_keys={e['n_keys']} d_k={e['d_k']}: no multiplier learned "
                         f"(best final accuracy {e['best_final_val_accuracy']:.3f}); not confirmed")
            continue
        source = run_dir(root, e["source"])
        jobs += [job_config(source, e["c_star"], e["lr_at_c_star"], cfg), job_config(source, 1.0, e["lr_at_1"], cfg)]
    summaries, cache = [], ProgramCache()
    for job in jobs:
        summaries += train_job.run(job, cache)
    return summaries
