"""Stage 2 of the two-stage confirmation (`python -m experiments.confirm for_cell=C stage=2`):
read the cell's clauses on its stage-1 seeds, and train, for each (variant, d_k) that an
undecided clause needs, the extra seeds up to the number verdicts.top_up finds, at the rate
stage 1 trained at (confirm.json's).

The design is conf/analysis.yaml's two_stage, as the analysis reads it: stage 1 is confirmation
seeds seed_from .. seed_from+first_seeds-1, stage 2 the seeds after them. Stage 1 must have ended
for every (variant, d_k) of the cell first. The first look is recomputed from the stage-1 seeds
alone on every launch, so a relaunch finds the same seeds and the train job skips those done.
confirm.json gains, per (variant, d_k), its stage_1_seeds and stage_2_seeds, and per cell the
top-ups behind them (clause, comparison, observed Δ and sd, test, seeds needed and given, power).
"""
from __future__ import annotations

import json
from types import SimpleNamespace
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality, top_up
from experiments.analysis.verdicts import quality_profile as qp
from experiments.app import confirm_job, progress
from experiments.app.analysis_cli import confirm_record, two_stage_of
from experiments.app.errors import ConfigError
from experiments.store.collect import ENDED, collect_runs
from experiments.store.results import atomic_write_text, run_dir


def declared(root: Path) -> tuple[top_up.TwoStage, dict]:
    """(the two-stage design, the clauses' declared values) from conf/analysis.yaml."""
    from hydra import compose

    composed = compose(config_name="analysis", overrides=[f"results_dir={root}"])
    return two_stage_of(composed.two_stage), OmegaConf.to_container(composed)


def cell_entries(root: Path, cell: str, task: str, optimizer: str) -> dict[tuple[str, int], dict]:
    """{(variant, d_k): its confirm.json entry} of the cell; an error where stage 1 never ran."""
    path = root / confirm_job.OUTPUT
    cells = confirm_record(root).get("cells", [])
    mine = {(e["attention"], int(e["d_k"])): e for e in cells if (e["task"], e["optimizer"]) == (task, optimizer)}
    if not mine:
        raise ConfigError(f"stage: stage 2 needs stage 1 first, and {str(path)!r} records none of {cell}; run "
                          f"python -m experiments.confirm for_cell={cell} results_dir={root}")
    return mine


def validate(cfg: DictConfig) -> None:
    """Stage 1's checks, and stage 1 recorded for the cell (confirm.json), before anything runs."""
    confirm_job.validate(cfg)
    task, optimizer = confirm_job.cell_condition(str(cfg.for_cell))
    cell_entries(Path(cfg.results_dir), str(cfg.for_cell), task["name"], optimizer)


def stage_one_runs(runs: pd.DataFrame, entries: dict, seeds: list[int], cell: str) -> pd.DataFrame:
    """The cell's ended stage-1 runs at their recorded rates; an error naming one missing."""
    ended = runs[runs["status"].isin(ENDED) & runs["seed"].isin(seeds)]
    done = {(r.attention, int(r.d_k), int(r.seed)) for r in ended.itertuples()
            if r.lr == entries.get((r.attention, int(r.d_k)), {}).get("lr")}
    missing = [(v, d, s) for (v, d) in entries for s in seeds if (v, d, s) not in done]
    if missing:
        v, d, s = missing[0]
        raise ConfigError(f"stage: stage 1 is not complete: {len(missing)} of {len(entries) * len(seeds)} runs "
                          f"of {cell} on seeds {seeds[0]}..{seeds[-1]} have not ended (e.g. {v} at d_k {d}, "
                          f"seed {s}); finish it first (python -m experiments.confirm for_cell={cell} "
                          f"n_seeds={len(seeds)})")
    return ended


def first_look(runs: pd.DataFrame, history, given: dict, task: str, seed_from: int, name: str, alpha: float):
    """(sub-claim 4's clauses at the first look's alpha, the profile, the margin) on the selection
    and stage-1 seeds."""
    res = SimpleNamespace(declared=given)  # what quality_profile's declared readers take
    every = load.with_phase(runs[runs["status"] != "failed"], seed_from)
    p = qp.cell_profile(every, history, qp.declared(res)[1], name)  # the declared rule, its comparator gate too
    margin = qp.margin_of(res, task)
    return quality.profile_parts(p, margin, qp.alike_rule_of(res, task), alpha)[0], p, margin


def record(root: Path, cell: str, entries: dict, stage_one: list[int], extra: dict, ups) -> None:
    """confirm.json: each (variant, d_k)'s stage-1 and stage-2 seeds, and the cell's condition,
    stage-1 seeds and top-ups (the analysis judges the cells recorded here in two looks)."""
    path = root / confirm_job.OUTPUT
    out = confirm_record(root)
    for entry in out["cells"]:
        key = (entry["attention"], int(entry["d_k"]))
        if key in entries:
            entry["stage_1_seeds"], entry["stage_2_seeds"] = stage_one, extra.get(key, [])
            entry["confirm_seeds"] = sorted(set(entry["confirm_seeds"]) | set(stage_one) | set(extra.get(key, [])))
    some = next(iter(entries.values()))
    out.setdefault(top_up.RECORD, {})[cell] = {"task": some["task"], "optimizer": some["optimizer"],
                                               "stage_1_seeds": stage_one, "top_ups": [top_up.as_record(u) for u in ups]}
    atomic_write_text(path, json.dumps(out, indent=2) + "\n")


def run(cfg: DictConfig) -> list[dict]:
    root, cell = Path(cfg.results_dir), str(cfg.for_cell)
    task, optimizer = confirm_job.cell_condition(cell)
    design, given = declared(root)
    entries = cell_entries(root, cell, task["name"], optimizer)
    seed_from, first = int(cfg.seed_from), design.first_seeds
    stage_one = list(range(seed_from, seed_from + first))
    summary, history, _ = collect_runs(root)
    runs = confirm_job.selection(summary, task, optimizer, seed_from + first)
    ended = stage_one_runs(runs, entries, stage_one, cell)
    parts, p, margin = first_look(runs, history, given, task["name"], seed_from, cell, design.alphas[0])
    ups = top_up.top_ups(parts, p, margin, design)
    wanted = {key: n for key, n in top_up.seeds_per_run(ups).items() if key in entries and n > first}
    extra = {key: list(range(seed_from + first, seed_from + n)) for key, n in wanted.items()}
    jobs = []
    for (variant, d_k), seeds in extra.items():
        source = ended[(ended["attention"] == variant) & (ended["d_k"] == d_k)].sort_values("seed")["run_id"].iloc[0]
        jobs.append(confirm_job.job_config(run_dir(root, source), entries[(variant, d_k)]["lr"], cfg,
                                           seeds[0], len(seeds)))
    record(root, cell, entries, stage_one, extra, ups)
    progress.say(f"{cell}: {len(ups)} undecided comparisons after stage 1; {len(jobs)} (variant, d_k) get "
                 f"seeds up to {max(wanted.values(), default=first)}; in {root / confirm_job.OUTPUT}")
    return confirm_job.train_jobs(jobs)
