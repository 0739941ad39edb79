"""app.reuse_job: a committed study's selection runs carried as run folders the train command
skips, the whole-curve seeds left to train, and a cell trained apart merged in."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from experiments.app import config as schemas  # noqa: F401 - registers the schemas compose reads
from experiments.app import reuse_job
from experiments.app.errors import CONF_DIR
from experiments.app.train_job import members
from experiments.store.collect import collect_runs, finished_run

JOB = ["experiment=answer", "cell=adam_assoc_recall", "attention=scaled", "d_k=8", "train.n_seeds=4",
       "optimizer.lr_grid=[1e-3,3e-3]"]


def _tables(root) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A committed study in small: one job's 8 lanes (4 seeds x 2 rates) as its tables would hold
    them, and a confirmation seed beside them."""
    cfg = compose(config_name="train", overrides=[*JOB, f"results_dir={root}"])
    rows, history = [], []
    for i, m in enumerate(members(cfg)):
        config = pd.json_normalize(OmegaConf.to_container(m.cfg, resolve=True)).iloc[0].to_dict()
        config.pop("task.distinct_values", None)  # a key added after the runs: absent from old tables
        rows.append({**config, **m.keys, "status": "completed" if i % 2 else "pruned",
                     "accuracy_auc": 0.5 + i / 100, "test_accuracy": np.nan, "steps_done": 100 + i})
        history += [{"run_id": m.rid, "step": s, "accuracy": 0.1 * s + i} for s in (0, 50)]
    rows.append({**rows[0], "seed": 8, "run_id": "scaled-dk8-assoc_recall-adam-s8-confirmation"})
    return pd.DataFrame(rows), pd.DataFrame(history)


def test_selection_runs_are_carried_as_finished_runs_with_their_numbers_and_whole_seeds_left(tmp_path):
    source, root = tmp_path / "reference", tmp_path / "new"
    source.mkdir()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        summary, history = _tables(tmp_path / "elsewhere")
        summary.to_parquet(source / "summary.parquet")
        history.to_parquet(source / "history.parquet")
        whole = reuse_job.Whole(2, ("adam_assoc_recall",), ("scaled",))
        done = reuse_job.carry(source, root, 8, whole)
        again = reuse_job.carry(source, root, 8, whole)
    assert (done.written, done.present, done.left) == (4, 0, [])  # seeds 2, 3 at both rates
    assert (again.written, again.present) == (0, 4)
    carried, hist, _ = collect_runs(root)
    assert sorted(carried["seed"].unique()) == [2, 3]  # neither the whole seeds nor seed 8
    expected = summary.set_index("run_id").loc[carried["run_id"]]
    assert np.allclose(carried["accuracy_auc"], expected["accuracy_auc"])
    assert list(carried["status"]) == list(expected["status"])
    assert carried["test_accuracy"].isna().all() and len(hist) == 8
    assert all(finished_run(root / "runs" / rid) for rid in carried["run_id"])
    assert (carried["train.prune.spare_seeds"] == 2).all()  # composed as the study trains the job


def test_a_job_the_presets_no_longer_compose_is_named_not_carried(tmp_path):
    source = tmp_path / "reference"
    source.mkdir()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        summary, history = _tables(tmp_path / "elsewhere")
        summary.assign(run_id=summary["run_id"] + "x").to_parquet(source / "summary.parquet")
        history.to_parquet(source / "history.parquet")
        done = reuse_job.carry(source, tmp_path / "new", 8, reuse_job.Whole())
    assert done.written == 0 and len(done.left) == 1


def test_summary_record_keeps_the_summary_keys_with_nan_as_null():
    row = pd.Series({"run_id": "r", "train.steps": 2000, "runtime.gone": 1, "progress": False,
                     "accuracy_auc": np.float64(0.25), "steps_done": np.int64(7), "test_accuracy": np.nan,
                     "steps_to_threshold": pd.NA})
    assert reuse_job.summary_record(row, {"train.steps", "progress"}) == {
        "run_id": "r", "accuracy_auc": 0.25, "steps_done": 7, "test_accuracy": None, "steps_to_threshold": None}


def test_later_keys_take_the_value_the_runs_ran_with():
    table = pd.DataFrame({"task.head": [np.nan, "value_all"]})
    filled = reuse_job.with_later_keys(table)
    assert list(filled["task.head"]) == ["value_half", "value_all"]
    assert (filled["task.distinct_values"] == False).all()  # noqa: E712 - the column's values


def test_merged_confirm_holds_both_cells_and_both_two_stage_records():
    entry = lambda task, lr: {"task": task, "optimizer": "adam", "attention": "scaled", "d_k": 8, "lr": lr}
    old = {"confirm_seeds_from": 200, "cells": [entry("mqar", 0.01)], "two_stage": {"adam_mqar": {"n": 1}}}
    new = {"confirm_seeds_from": 8, "cells": [entry("charlm", 0.003), entry("mqar", 0.03)],
           "two_stage": {"adam_charlm": {"n": 2}}}
    out = reuse_job.merged_confirm(old, new)
    assert out["confirm_seeds_from"] == 200
    assert [(e["task"], e["lr"]) for e in out["cells"]] == [("charlm", 0.003), ("mqar", 0.03)]
    assert set(out["two_stage"]) == {"adam_mqar", "adam_charlm"}


def test_a_cell_trained_apart_is_copied_whole_and_its_unfinished_runs_named(tmp_path):
    source, root = tmp_path / "text", tmp_path / "new"
    for name, status in (("done", "completed"), ("open", "running")):
        folder = source / "runs" / name
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"status": status}))
        (folder / "config.yaml").write_text("d_k: 8\n")
        pd.DataFrame({"step": [0]}).to_parquet(folder / "history.parquet")
    (source / "confirm.json").write_text(json.dumps({"cells": []}))  # stage 1 only
    done = reuse_job.carry_folder(source, root)
    assert (done.written, len(done.left)) == (1, 2) and (root / "runs" / "done" / "summary.json").is_file()
    assert not (root / "confirm.json").exists()
    (source / "confirm.json").write_text(json.dumps({"cells": [], "two_stage": {"adam_charlm": {"n": 1}}}))
    again = reuse_job.carry_folder(source, root)
    assert (again.written, again.present, len(again.left)) == (0, 1, 1)
    assert json.loads((root / "confirm.json").read_text())["two_stage"] == {"adam_charlm": {"n": 1}}
