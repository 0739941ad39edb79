"""`python -m experiments.train`: train one configuration, or a sweep with -m.

    python -m experiments.train attention=unscaled d_k=256 seed=1 task=mqar train.steps=2000
    python -m experiments.train -m attention=scaled,unscaled,additive d_k=8,64,512 seed=0,1,2
    python -m experiments.train -m experiment=claim_quick

Each run writes ${results_dir}/runs/<run_id>/ (config.yaml, history.parquet,
summary.json) and mirrors to W&B (logger=wandb, offline by default). A run
whose summary says completed (or diverged) is skipped unless overwrite=true.
"""
from __future__ import annotations

import time
import traceback

from omegaconf import DictConfig, OmegaConf

from experiments import config as schemas  # registers the schemas
from experiments import progress, results
from experiments.cli import make_main
from experiments.loop import summarize, train_run
from experiments.wandb_mirror import open_run



def _job_num() -> int | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        hc = HydraConfig.get()
    except ValueError:  # not under Hydra (tests call run() directly)
        return None
    return hc.job.num if hc.mode == RunMode.MULTIRUN else None


def keys_of(cfg: DictConfig, rid: str) -> dict:
    return {"run_id": rid, "attention": cfg.attention.name, "d_k": int(cfg.d_k),
            "seed": int(cfg.seed), "task": cfg.task.name, "optimizer": cfg.optimizer.name,
            "experiment": cfg.experiment}


def _fmt(summary: dict, keys: dict) -> str:
    acc = summary.get("test_accuracy")
    stt = summary.get("steps_to_threshold")
    return (f"{keys['attention']:>9} d_k={keys['d_k']:<5} seed={keys['seed']} "
            f"{keys['task']}/{keys['optimizer']}: {summary['status']}, "
            f"test acc {'-' if acc is None else f'{acc:.3f}'}, "
            f"steps to {summary['threshold']:g}: {'never' if stt is None else stt}, "
            f"{summary['wall_time_s']:.1f} s")


def run(cfg: DictConfig) -> dict | None:
    """Train one configuration and write its results; returns the summary."""
    job_num = _job_num()
    progress.sweep_started(job_num)
    try:
        return _run(cfg, multirun=job_num is not None)
    finally:
        progress.sweep_job_done()


def _run(cfg: DictConfig, multirun: bool) -> dict | None:
    rid = results.run_id(cfg)
    folder = results.run_dir(cfg.results_dir, rid)
    if not cfg.overwrite and results.is_finished(folder):
        done = results.read_summary(folder)
        progress.say(f"skip {rid}: already {done['status']}")
        return done
    keys = keys_of(cfg, rid)
    results.write_config(folder, cfg)
    plain = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k != "hydra"}
    tags = [cfg.attention.name, f"d_k={cfg.d_k}", cfg.task.name, cfg.optimizer.name]
    rows: list[dict] = []
    bar = progress.RunBar(f"{cfg.attention.name} d_k={cfg.d_k} s{cfg.seed}", cfg.train.steps,
                          enabled=cfg.progress)
    started = time.time()
    summary = {**keys, "threshold": cfg.train.threshold, "steps": cfg.train.steps,
               "versions": results.package_versions()}
    with open_run(cfg.logger, run_id=rid, results_dir=cfg.results_dir, config=plain,
                  tags=tags, group=cfg.experiment) as mirror:
        def on_eval(row):
            rows.append({**keys, **row})
            mirror.log_eval(row, row["step"])

        try:
            outcome = train_run(cfg, on_eval=on_eval, on_steps=bar.advance)
            summary.update(summarize(outcome, cfg.train.threshold))
        except BaseException as exc:
            summary.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            _record(folder, rows, summary, started, mirror, bar, exit_code=1)
            if multirun and isinstance(exc, Exception):
                progress.say(f"FAILED {rid}: {summary['error']}")
                progress.say(traceback.format_exc(limit=3))
                return summary
            raise
        _record(folder, rows, summary, started, mirror, bar, exit_code=0)
    progress.say(_fmt(summary, keys))
    return summary


def _record(folder, rows, summary, started, mirror, bar, exit_code: int) -> None:
    """Write the run's history and summary (whatever its status), then close
    the W&B mirror and the progress bar."""
    summary["wall_time_s"] = time.time() - started
    results.write_history(folder, rows)
    results.write_summary(folder, summary)
    mirror.finish(summary, exit_code=exit_code)
    bar.close()


main = make_main("train", run, schemas.validate)

if __name__ == "__main__":
    main()
