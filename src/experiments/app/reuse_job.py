"""Carry a committed study's selection runs into a new results folder, as run folders.

A new reference retrains what is new and keeps the committed selection (seeds 0-7 over each
cell's grid, train.prune on) where the current presets name the very same run. For each cell
(conf/cell), its fixed-width runs on seeds below `seeds_below` (confirm_job.selection: the
confirmation seeds never come along) are grouped by job (experiment, variant, d_k); the job is
composed as its preset composes it today (`experiment=E cell=C attention=A d_k=D`), and a run is
carried only where a lane of that job has its run id: same identity, so the train command skips
it as done and experiments.confirm chooses the rate on it, as on a run trained here. Its folder
gets the composed config, the committed history and the committed summary (the keys that are
not config keys).

A carried run is the committed numbers, not a retrain's: another machine rounds differently
(docs/NEXT_REFERENCE.md measures by how much), so the folder mixes two machines' rounding at the
selection seeds; the confirmation seeds, the runs judged, are all trained anew.
`whole` names the runs left to train instead: the whole-curve seeds of the (cell, variant)s that
the study trains at every rate to the budget (train.prune.spare_seeds); their jobs are composed
with that key, as the study trains them. A folder that already holds a run is left as it is, so
a rerun carries only what is missing.

`carry_folder` brings a cell trained in a folder of its own (the text cell: results/text) in
whole: its finished run folders, copied, and its confirm.json's rates and two-stage records
merged into the new folder's, so that experiments.report judges it as if trained there.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from experiments.analysis.tables.consistency import LATER_DEFAULTS
from experiments.analysis.verdicts.top_up import RECORD
from experiments.app import confirm_job
from experiments.app.errors import CONF_DIR
from experiments.app.train_job import Member, members
from experiments.store import results
from experiments.store.collect import is_finished, run_folders

JOB = ["experiment", "attention", "d_k"]


@dataclass(frozen=True)
class Whole:
    """The runs the study trains whole instead: seeds below `seeds` of `variants` in `cells`."""
    seeds: int = 0
    cells: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()

    def covers(self, cell: str, variant: str) -> bool:
        return self.seeds > 0 and cell in self.cells and variant in self.variants


@dataclass
class Carried:
    """What a carry did: runs written, runs already there, and the jobs not carried, with why."""
    written: int = 0
    present: int = 0
    left: list[str] = field(default_factory=list)


def attention_groups() -> dict[str, list[str]]:
    """{variant name: the conf/attention groups that train it} (mup: mup and mup8)."""
    out: dict[str, list[str]] = {}
    for path in sorted((Path(CONF_DIR) / "attention").glob("*.yaml")):
        out.setdefault(str(OmegaConf.load(path).get("name", path.stem)), []).append(path.stem)
    return out


def summary_record(row: pd.Series, config_keys: Iterable[str]) -> dict:
    """The summary.json of a tabled run: its columns that are neither config keys nor a config
    group's (`group.key`: collect's flattened config, of this build or an older one), NaN as null."""
    config = set(config_keys)
    plain = lambda v: None if pd.api.types.is_scalar(v) and pd.isna(v) else v.item() if hasattr(v, "item") else v
    return {k: plain(v) for k, v in row.items() if k not in config and "." not in k}


def config_keys(cfg) -> set[str]:
    """The flattened keys of a config, as collect names its columns (`group.key`)."""
    def walk(tree: dict, prefix: str = "") -> Iterable[str]:
        for key, value in tree.items():
            yield from walk(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"]
    return set(walk(OmegaConf.to_container(cfg, resolve=True)))


def write_run(root: Path, member: Member, row: pd.Series, history: pd.DataFrame) -> bool:
    """The run's folder (config, history, then the summary that marks it finished); False where the
    folder already holds a run."""
    folder = results.run_dir(root, member.rid)
    if (folder / "summary.json").exists():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    results.write_config(folder, member.cfg)
    results.atomic_write_parquet(folder / "history.parquet", history.reset_index(drop=True))
    # d_k, seed and experiment are config keys and the summary's too (train_job.keys_of)
    results.write_summary(folder, summary_record(row, config_keys(member.cfg) - set(member.keys)))
    return True


def job_members(cell: str, job: tuple, lrs: list[float], root: Path, whole: Whole) -> dict[str, Member]:
    """{run id: lane} of each way the current presets compose this job (one per attention group)."""
    from hydra import compose

    experiment, variant, d_k = job
    out = {}
    for group in attention_groups().get(str(variant), []):
        overrides = [f"experiment={experiment}", f"cell={cell}", f"attention={group}", f"d_k={int(d_k)}",
                     f"results_dir={root}", f"optimizer.lr_grid=[{','.join(repr(float(x)) for x in lrs)}]"]
        if whole.covers(cell, str(variant)):
            overrides.append(f"train.prune.spare_seeds={whole.seeds}")
        try:
            cfg = compose(config_name="train", overrides=overrides)
        except Exception:  # noqa: BLE001 - a preset that no longer composes this job: not carried
            continue
        out.update({m.rid: m for m in members(cfg)})
    return out


def with_later_keys(summary: pd.DataFrame) -> pd.DataFrame:
    """The table with each key added since its runs were recorded at the value they ran with
    (store.results.LATER_KEYS), so that a cell's task matches the runs recorded before it."""
    filled = {k: summary[k].where(summary[k].notna(), v) if k in summary else v for k, v in LATER_DEFAULTS.items()}
    return summary.assign(**filled)


def carry(source: Path, root: Path, seeds_below: int, whole: Whole) -> Carried:
    """Write the carried runs of `source`'s tables into `root`/runs (see the module docstring)."""
    summary = with_later_keys(pd.read_parquet(source / "summary.parquet"))
    history = pd.read_parquet(source / "history.parquet")
    by_run = dict(tuple(history.groupby("run_id")))
    done = Carried()
    for cell in confirm_job.cells():
        task, optimizer = confirm_job.cell_condition(cell)
        runs = confirm_job.selection(summary, task, optimizer, seeds_below)
        for job, rows in runs.groupby(JOB):
            rows = rows[~((rows["seed"] < whole.seeds) & whole.covers(cell, str(job[1])))]
            lanes = job_members(cell, job, sorted(rows["lr"].unique()), root, whole)
            missing = rows[~rows["run_id"].isin(lanes)]
            if len(missing):
                done.left.append(f"{cell} {job}: {len(missing)} of {len(rows)} run ids not composed today "
                                 f"(e.g. {missing['run_id'].iloc[0]})")
                continue
            for _, row in rows.iterrows():
                wrote = write_run(root, lanes[row["run_id"]], row, by_run.get(row["run_id"], pd.DataFrame()))
                done.written, done.present = done.written + wrote, done.present + (not wrote)
    return done


def check_folders(source: Path, root: Path) -> None:
    """source holds the tables; root is not source (its tables would be read as it is written)."""
    for name in ("summary.parquet", "history.parquet"):
        if not (source / name).is_file():
            raise ValueError(f"from: {str(source / name)!r} does not exist (a committed study's tables)")
    if source.resolve() == root.resolve():
        raise ValueError(f"to: must be another folder than from ({str(root)!r})")


def carry_folder(source: Path, root: Path) -> Carried:
    """Every finished run folder of `source` copied into `root`/runs (one there already is left
    as it is; an unfinished one is named in `left`), then source's confirm.json merged into root's
    once it records a stage 2 (before that, `left` says the confirmation has not ended)."""
    done = Carried()
    for folder in run_folders(source):
        target = results.run_dir(root, folder.name)
        if (target / "summary.json").exists():
            done.present += 1
        elif not is_finished(folder):
            done.left.append(f"{folder.name}: not finished in {source}")
        else:
            shutil.copytree(folder, target, dirs_exist_ok=True)
            done.written += 1
    path, into = source / confirm_job.OUTPUT, root / confirm_job.OUTPUT
    record = json.loads(path.read_text()) if path.is_file() else {}
    if not record.get(RECORD):  # the two-stage design is every cell's: its stage 2 ends the cell
        done.left.append(f"{path}: no stage 2 recorded (its confirmation has not ended)")
        return done
    old = json.loads(into.read_text()) if into.is_file() else {}
    results.atomic_write_text(into, json.dumps(merged_confirm(old, record), indent=2) + "\n")
    return done


def merged_confirm(old: dict, new: dict) -> dict:
    """Two confirm.json records as one: the (task, optimizer, variant, d_k) entries of both (new's
    where both have one) and both's two-stage cells; old's other keys kept."""
    key = lambda e: (e["task"], e["optimizer"], e["attention"], int(e["d_k"]))
    entries = {key(e): e for e in [*old.get("cells", []), *new.get("cells", [])]}
    stages = {**(old.get(RECORD) or {}), **(new.get(RECORD) or {})}
    out = {**new, **old, "cells": [entries[k] for k in sorted(entries)]}
    return {**out, RECORD: stages} if stages else out
