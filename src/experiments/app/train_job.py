"""A training job: the runs of one composed config, skipped, trained and recorded.

`run(cfg)` is what `python -m experiments.train` runs for each Hydra job.
With train.n_seeds=S and optimizer.lr_grid=[r1, ..., rK] a job trains the
K x S lanes (each rate with seeds seed .. seed+S-1) together as one program
(training.loop); each lane is still its own run (folder, summary, W&B run),
with the run id it would have alone with optimizer.lr=r and that seed, so a
relaunch, however it is grouped, skips what is done. A run whose summary says completed (or
diverged), and whose files can be read, is skipped unless overwrite=true (one whose files
cannot be read is set aside whole, store.claim.set_aside, and trained again); an
overwrite is trained beside the old run and replaces it only once it has
finished. One that says pruned (train.prune stopped it: its rate could no longer
be the best) is skipped while train.prune is on, and trained again, the whole
budget, once it is off, replacing it the same way: train.prune is not part of the
run id, since a lane it lets run has the same numbers either way. Each run is
claimed while this job holds it (store.claim): a sweep running at the same time
into the same results_dir skips it.
"""
from __future__ import annotations

import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments.app import interrupt, progress, runtime
from experiments.store import claim, results
from experiments.store.collect import ENDED, Incomplete, finished_run, is_finished
from experiments.store.wandb_mirror import Mirror, open_run
from experiments.tasks import TASKS
from experiments.tasks.common import recorded_yardsticks
from experiments.training import prune
from experiments.training.compile import ProgramCache
from experiments.training.group import Lane
from experiments.training.loop import eval_steps, lanes_of, summarize, train_lanes
from experiments.training.spec import task_object


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
            "lr": float(cfg.optimizer.lr), "experiment": cfg.experiment}


def _fmt(summary: dict, keys: dict) -> str:
    acc = summary.get("test_accuracy")
    stt = summary.get("steps_to_threshold")
    return (f"{keys['attention']:>9} d_k={keys['d_k']:<5} seed={keys['seed']} "
            f"{keys['task']}/{keys['optimizer']} lr={keys['lr']:g}: {summary['status']}, "
            f"test acc {'-' if acc is None else f'{acc:.3f}'}, "
            f"steps to {summary['threshold']:g}: {'never' if stt is None else stt}, "
            f"{summary['wall_time_s']:.1f} s")


def run(cfg: DictConfig, cache: ProgramCache | None = None) -> list[dict]:
    """Train one configuration, or its lanes (train.n_seeds seeds x the rates of
    optimizer.lr_grid) as one program, and write each lane's results; returns
    one summary per lane. `cache` holds the programs of the job before, for a
    job that can reuse them (None: compiled for this job)."""
    interrupt.raise_if_lost()  # a stop lost in a gc callback during the job before
    job_num = _job_num()
    progress.sweep_started(job_num)
    runtime.configure(cfg.runtime, job_num)
    try:
        return _run(cfg, multirun=job_num is not None, cache=cache or ProgramCache())
    finally:
        progress.sweep_job_done()


@dataclass
class Member:
    """One lane of a job (a seed and a rate): its config, run id and folder."""
    lane: Lane
    cfg: DictConfig
    rid: str
    folder: Path
    keys: dict


def members(cfg: DictConfig) -> list[Member]:
    out = []
    for lane in lanes_of(cfg):
        member_cfg = cfg.copy()  # the config this run has when trained alone
        member_cfg.seed = lane.seed
        member_cfg.optimizer.lr = lane.lr
        member_cfg.optimizer.lr_grid = None
        if "c_grid" in cfg.attention:
            member_cfg.attention.c, member_cfg.attention.c_grid = lane.c, None
        rid = results.run_id(member_cfg)
        out.append(Member(lane, member_cfg, rid, results.run_dir(cfg.results_dir, rid),
                          keys_of(member_cfg, rid)))
    return out


def _run(cfg: DictConfig, multirun: bool, cache: ProgramCache) -> list[dict]:
    group = members(cfg)
    done, todo, replacing = {}, [], set()
    skipped = results.FINISHED + (("pruned",) if prune.rule_of(cfg.train).enabled else ())
    with ExitStack() as claims:  # each run claimed until it is recorded (store.claim)
        for m in group:
            if not claims.enter_context(claim.claim(cfg.results_dir, m.rid)):
                progress.say(f"skip {m.rid}: being trained by another process"
                             f"{claim.holder(cfg.results_dir, m.rid)}")
                done[m.rid] = {**m.keys, "status": "claimed"}
                continue
            finished = _finished(cfg, m)
            if finished and finished["status"] in skipped and not cfg.overwrite:
                progress.say(f"skip {m.rid}: already {finished['status']}")
                done[m.rid] = finished
                continue
            if finished:  # replaced only once the new run has finished
                replacing.add(m.rid)
            todo.append(m)
        if todo:
            done.update(zip([m.rid for m in todo], _train_staged(cfg, todo, replacing, multirun, cache)))
    return [done[m.rid] for m in group]


def _finished(cfg: DictConfig, m: Member) -> dict | None:
    """The summary of the finished run in m's folder, after any swap a killed process
    left is settled; None when there is none, or it cannot be read (its folder is set
    aside whole, never deleted, and the run trained again)."""
    claim.recover(m.folder, cfg.results_dir, m.rid, is_finished)
    results.check_run_folder(m.folder)
    try:
        return finished_run(m.folder)
    except Incomplete as why:
        kept = claim.set_aside(m.folder, cfg.results_dir, m.rid)
        progress.say(f"retrain {m.rid}: {why}; its folder is kept, as it was, in {kept}")
        return None


def _train_staged(cfg: DictConfig, todo: list[Member], replacing: set[str],
                  multirun: bool, cache: ProgramCache) -> list[dict]:
    """Train `todo`; a run in `replacing` is trained in staging and swapped in only
    once it has finished: a failed or stopped overwrite leaves the old run as it was."""
    staged = [replace(m, folder=claim.staged(cfg.results_dir, m.rid)) if m.rid in replacing
              else m for m in todo]
    try:
        summaries = _train(cfg, staged, multirun, cache)
    except BaseException:
        with interrupt.deferred():
            for rid in replacing:
                claim.discard(cfg.results_dir, rid)
        raise
    with interrupt.deferred():
        for m, new, summary in zip(todo, staged, summaries):
            if m.rid not in replacing:
                continue
            if summary["status"] in ENDED:
                claim.swap_in(new.folder, m.folder, cfg.results_dir, m.rid)
            else:
                claim.discard(cfg.results_dir, m.rid)
                progress.say(f"overwrite of {m.rid} failed: its earlier run is kept")
    return summaries


def _bar(cfg: DictConfig, lanes: list) -> progress.RunBar:
    """The job's progress bar, named by its variant, d_k, seeds and rates."""
    seeds = sorted({lane.seed for lane in lanes})
    rates = sorted({lane.lr for lane in lanes})
    label = (f"s{seeds[0]}" if len(seeds) == 1 else f"s{seeds[0]}-{seeds[-1]}") + \
        (f" lr={rates[0]:g}" if len(rates) == 1 else f" {len(rates)} lrs")
    return progress.RunBar(f"{cfg.attention.name} d_k={cfg.d_k} {label}", cfg.train.steps, enabled=cfg.progress)


def _train(cfg: DictConfig, todo: list[Member], multirun: bool, cache: ProgramCache) -> list[dict]:
    """Train the lanes in `todo` together; write and mirror each one's results."""
    lanes = [m.lane for m in todo]
    bar = _bar(cfg, lanes)
    started = time.time()
    histories: list[list[dict]] = [[] for _ in todo]
    # the budget and the task's yardsticks in the summary itself: the analysis reads them there,
    # with or without the run's config.yaml or the task's inputs
    recorded = {"threshold": cfg.train.threshold, "steps": cfg.train.steps, "batch_size": cfg.train.batch_size,
                **recorded_yardsticks(TASKS[cfg.task.name], task_object(OmegaConf.to_container(cfg.task)))}
    summaries = [{**m.keys, **recorded, "versions": results.package_versions()} for m in todo]
    mirrors = [Mirror() for _ in todo]  # no-ops until opened
    with ExitStack() as stack:  # whatever happens, every opened W&B run is closed

        def on_eval(i, row):
            histories[i].append({**todo[i].keys, **row})
            mirrors[i].log_eval(row, row["step"])

        try:
            for i, m in enumerate(todo):
                results.write_config(m.folder, m.cfg)
                mirrors[i] = stack.enter_context(_open_mirror(m))
            try:
                outcomes = train_lanes(cfg, lanes, on_eval=on_eval, on_steps=bar.advance, cache=cache)
            except BaseException:
                # a failed job's executables (and what XLA keeps for them) go now; a
                # finished one's stay for the next job, which reuses them when it
                # differs only in seed or rate and drops them before compiling if not
                cache.release()
                raise
        except BaseException as exc:
            with interrupt.deferred():  # a second Ctrl-C still stops at once
                for i, m in enumerate(todo):
                    summaries[i].update(status="failed", error=f"{type(exc).__name__}: {exc}")
                    _record(m.folder, histories[i], summaries[i], started, mirrors[i], 1)
            bar.close()
            if multirun and isinstance(exc, Exception) and not isinstance(exc, OSError):
                progress.say(f"FAILED {', '.join(m.rid for m in todo)}: {summaries[0]['error']}")
                progress.say(traceback.format_exc(limit=3))
                return summaries
            raise
        with interrupt.deferred():
            for i, m in enumerate(todo):
                summaries[i].update(summarize(outcomes[i], cfg.train.threshold, eval_steps(cfg.train)))
                _record(m.folder, histories[i], summaries[i], started, mirrors[i], 0)
        bar.close()
    for m, summary in zip(todo, summaries):
        progress.say(_fmt(summary, m.keys))
    return summaries


def _open_mirror(m: Member):
    plain = {k: v for k, v in OmegaConf.to_container(m.cfg, resolve=True).items() if k != "hydra"}
    tags = [m.cfg.attention.name, f"d_k={m.cfg.d_k}", m.cfg.task.name, m.cfg.optimizer.name]
    return open_run(m.cfg.logger, run_id=m.rid, results_dir=m.cfg.results_dir, config=plain,
                    tags=tags, group=m.cfg.experiment, shield=interrupt.deferred)


def _record(folder, rows, summary, started, mirror, exit_code: int) -> None:
    """Write the run's history, close its W&B run, and write its summary last:
    summary.json is what marks a run finished, so a kill at any point before
    it leaves a run that the next launch trains again."""
    summary["wall_time_s"] = time.time() - started
    results.write_history(folder, rows)
    mirror.finish(summary, exit_code=exit_code)
    results.write_summary(folder, summary)
