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
with that key, as the study trains them.

`carry_folder` brings a cell trained in a folder of its own (the text cell: results/text) in
whole: its finished run folders, copied, and its confirm.json's rates and two-stage records
merged into the new folder's, so that experiments.report judges it as if trained there.

Both write a run through `place_run`, by the rule the train command skips by: a run already
there is one that ended (completed, diverged or pruned: collect.finished_run) and whose files
read; it is left as it is, so a rerun carries only what is missing. Any other folder of that run
id is replaced by the carried run: a failed or unfinished one (no summary.json) outright, one
whose files cannot be read (or whose summary says it is still running) after it is moved whole
to unreadable/ (store.claim.set_aside: never deleted). The run is claimed while it is written
(store.claim; a run another process holds is named, not written), written into .staging/ and
moved into runs/ only once all its files are there: a carry stopped halfway leaves the old folder
or the carried one, never a mix (one killed between the two renames of a swap is settled by the
next carry or train: store.claim.recover).

`check_folders` and `check_cell_folder` say, as a ConfigError naming the argument, what makes
a carry impossible before anything is written.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from experiments.analysis.tables.consistency import LATER_DEFAULTS
from experiments.analysis.verdicts.top_up import RECORD
from experiments.app import confirm_job
from experiments.app.analysis_cli import confirm_record
from experiments.app.errors import CONF_DIR, ConfigError
from experiments.app.train_job import Member, members
from experiments.store import claim, results
from experiments.store.collect import Incomplete, finished_run, is_finished, run_folders

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
    """What a carry did: runs written, runs already there, the runs and jobs not carried, with
    why, and the unreadable folders it set aside, with where they went."""
    written: int = 0
    present: int = 0
    left: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def place_run(root: Path, rid: str, fill: Callable[[Path], None], done: Carried) -> None:
    """Run `rid` written into `root`/runs/<rid> by `fill(folder)` (which makes the folder and
    its files) unless a run that ended, and whose files read, is there already (see the module
    docstring); counted in `done`. An OSError (the machine's: a full disk, a file gone) leaves
    the folder as it was, the staged copy removed."""
    folder = results.run_dir(root, rid)
    with claim.claim(root, rid) as mine:
        if not mine:
            done.left.append(f"{rid}: being written or trained by another process{claim.holder(root, rid)}")
            return
        claim.recover(folder, root, rid, is_finished)  # a swap a killed carry or train left
        results.check_run_folder(folder)
        try:
            if finished_run(folder) is not None:
                done.present += 1
                return
        except Incomplete as why:
            kept = claim.set_aside(folder, root, rid)
            done.kept.append(f"{rid}: {why}; its folder is kept, as it was, in {kept}")
        new = claim.staged(root, rid)
        try:
            fill(new)
            if folder.exists():  # a failed or unfinished run: replaced
                claim.swap_in(new, folder, root, rid)
            else:
                folder.parent.mkdir(parents=True, exist_ok=True)
                os.replace(new, folder)
        except BaseException:
            claim.discard(root, rid)
            raise
        done.written += 1


def copy_run(folder: Path, new: Path) -> None:
    """`folder`'s files copied into `new` (made here). Not shutil.copytree: its error gathers
    every failed file into one message; this one stops at the first, an OSError naming it."""
    new.mkdir(parents=True)
    for path in sorted(folder.rglob("*")):
        target = new / path.relative_to(folder)
        if path.is_dir():
            target.mkdir()
        else:
            shutil.copy2(path, target)


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


def write_run(root: Path, member: Member, row: pd.Series, history: pd.DataFrame, done: Carried) -> None:
    """The run's folder (config, history, then the summary that marks it finished), placed by
    `place_run`."""
    def fill(folder: Path) -> None:
        folder.mkdir(parents=True)
        results.write_config(folder, member.cfg)
        results.atomic_write_parquet(folder / "history.parquet", history.reset_index(drop=True))
        # d_k, seed and experiment are config keys and the summary's too (train_job.keys_of)
        results.write_summary(folder, summary_record(row, config_keys(member.cfg) - set(member.keys)))

    place_run(root, member.rid, fill, done)


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
                write_run(root, lanes[row["run_id"]], row, by_run.get(row["run_id"], pd.DataFrame()), done)
    return done


def check_folders(source: Path, root: Path) -> None:
    """A ConfigError unless source holds readable tables (a committed study's summary.parquet
    and history.parquet) and root is a folder apart from it."""
    import pyarrow.parquet as pq

    what = "a committed study's folder, with its summary.parquet and history.parquet"
    for name in ("summary.parquet", "history.parquet"):
        path = source / name
        if not path.is_file():
            raise ConfigError(f"from: {str(path)!r} does not exist ({what})")
        try:
            pq.read_metadata(path)
        except Exception:  # pyarrow's errors for a truncated or foreign file vary
            raise ConfigError(f"from: {str(path)!r} is not a readable parquet table ({what})") from None
    check_destination(source, root)


def check_cell_folder(source: Path, root: Path) -> None:
    """A ConfigError unless source is a folder with run folders under runs/, root is a folder
    apart from it, and each one's confirm.json, where it has one, is a JSON object."""
    what = "a cell's own results folder, with runs/<run id>/ folders"
    if not source.is_dir():
        raise ConfigError(f"from: {str(source)!r} " + ("is not a folder" if source.exists() else "does not exist")
                          + f" ({what})")
    if not run_folders(source):
        raise ConfigError(f"from: no run folders under {str(source / 'runs')!r} ({what})")
    check_destination(source, root)
    for key, folder in (("from", source), ("to", root)):
        try:
            confirm_record(folder)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None


def check_destination(source: Path, root: Path) -> None:
    """root is a folder (or absent: it is made) other than source, and neither lies in the other's
    runs/ (the one's runs would be read as the other is written)."""
    if root.exists() and not root.is_dir():
        raise ConfigError(f"to: {str(root)!r} is a file (the new study's results folder: a folder, "
                          "made if absent)")
    a, b = source.resolve(), root.resolve()
    if a == b:
        raise ConfigError(f"to: must be another folder than from ({str(root)!r})")
    if b.is_relative_to(a / "runs") or a.is_relative_to(b / "runs"):
        raise ConfigError(f"to: {str(root)!r} and from {str(source)!r} lie one in the other's runs/ "
                          "(to must be a folder apart from from)")


def carry_folder(source: Path, root: Path) -> Carried:
    """Every finished run folder of `source` copied into `root`/runs by `place_run` (an unfinished
    one is named in `left`, unless root holds that run finished), then source's confirm.json
    merged into root's once it records a stage 2 (before that, `left` says the confirmation has
    not ended). `check_cell_folder` first."""
    done = Carried()
    for folder in run_folders(source):
        if is_finished(folder):
            place_run(root, folder.name, lambda new, folder=folder: copy_run(folder, new), done)
        elif is_finished(results.run_dir(root, folder.name)):
            done.present += 1
        else:
            done.left.append(f"{folder.name}: not finished in {source}")
    path, into = source / confirm_job.OUTPUT, root / confirm_job.OUTPUT
    record = confirm_record(source)
    if not record.get(RECORD):  # the two-stage design is every cell's: its stage 2 ends the cell
        done.left.append(f"{path}: no stage 2 recorded (its confirmation has not ended)")
        return done
    old = confirm_record(root)
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
