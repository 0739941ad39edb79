"""The Britz control's fresh seeds as a job (`python -m experiments.init_gain_confirm`): each point
(variant, d_k, gain) at the rate its selection seeds chose (analysis.init_gain.points), each a
selection run's own config with the seeds and the rate changed (app.confirm_job.job_config),
through the train job (run folders, resume, claims)."""
from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from attention.checks import check
from experiments.analysis.init_gain import points
from experiments.app import confirm_job, progress, ranges
from experiments.app.errors import ConfigError
from experiments.store.collect import ENDED, collect_runs, run_folders
from experiments.store.results import atomic_write_text, run_dir

OUTPUT = "init_gain_confirm.json"


def validate(cfg: DictConfig) -> None:
    """The reading's keys in range, and a selection to confirm."""
    check_reading(cfg)
    if not run_folders(Path(cfg.results_dir)):
        raise ConfigError(f"results_dir: {cfg.results_dir!r} holds no run folders (train the selection "
                          f"first: python -m experiments.train -m experiment=init_gain results_dir={cfg.results_dir})")


def check_reading(cfg: DictConfig) -> None:
    ranges.check_fresh_seed_reading(cfg, min_seeds=2)  # the bootstrap resamples seeds
    check(cfg.grid_points >= 2, "grid_points", "must be >= 2", cfg.grid_points)
    check(cfg.reference_gain > 0, "reference_gain", "must be > 0", cfg.reference_gain)
    check(0 < cfg.britz_low < cfg.britz_high, "britz_low", "must be > 0 and below britz_high", cfg.britz_low)
    for item in cfg.train:
        check(isinstance(item, str) and "=" in item, "train", "must be a list of key=value overrides", item)


def run(cfg: DictConfig) -> list[dict]:
    root = Path(cfg.results_dir)
    summary, _, _ = collect_runs(root)
    selection = summary[summary["seed"] < cfg.confirm_seed_from]
    open_runs = selection[~selection["status"].isin(ENDED)]
    if len(open_runs):
        raise ConfigError(f"results_dir: {len(open_runs)} selection runs have not ended (e.g. "
                          f"{open_runs['run_id'].iloc[0]}); finish the selection first")
    best = confirm_job.chosen_rates(points.labelled(selection))
    record = [{"variant": a.split("@")[0], "gain": float(a.split("@")[1]), "d_k": int(d), "lr": float(lr)}
              for a, d, lr in zip(best["attention"], best["d_k"], best["best_lr"])]
    atomic_write_text(root / OUTPUT, json.dumps({"confirm_seed_from": int(cfg.confirm_seed_from),
                                                 "confirm_n_seeds": int(cfg.confirm_n_seeds),
                                                 "points": record}, indent=2) + "\n")
    jobs = [confirm_job.job_config(run_dir(root, src), lr, cfg, cfg.confirm_seed_from, cfg.confirm_n_seeds)
            for src, lr in zip(best["source"], best["best_lr"])]
    progress.say(f"init_gain: {len(jobs)} points at their chosen rates, seeds {cfg.confirm_seed_from}.."
                 f"{cfg.confirm_seed_from + cfg.confirm_n_seeds - 1}; rates in {root / OUTPUT}")
    return confirm_job.train_jobs(jobs)
