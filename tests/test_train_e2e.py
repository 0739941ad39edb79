"""End to end: a tiny sweep from the command line, collected and read back
(files and the W&B offline mirror), relaunched and overwritten; and in-process
runs of every variant, every task, several layers/heads and the run statuses."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from test_wandb_mirror import read_offline_run

from experiments import train
from experiments.app import config  # registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.tasks import TASKS
from experiments.training.group import Lane
from experiments.training.loop import train_lanes

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

HISTORY = ("run_id attention d_k seed task optimizer step loss accuracy logit_mean logit_var "
           "logit_std logit_absmax entropy entropy_norm saturation jacobian_norm_mean "
           "jacobian_norm_median grad_norm grad_norm_q grad_norm_k grad_norm_v grad_norm_attn "
           "update_norm").split()
SUMMARY = ("run_id attention d_k seed task optimizer status test_accuracy final_val_accuracy "
           "steps_to_threshold accuracy_auc wall_time_s compile_time_s steps_per_s").split()
TINY = ["seed=0", "train.steps=20", "train.eval_every=10", "train.n_val=64", "train.n_test=64",
        "train.batch_size=8"]
SWEEP = ["-m", "attention=scaled,additive", "d_k=8,16", *TINY]


# --- the tiny sweep, from the command line --------------------------------------


def _files(results: Path) -> dict[str, int]:
    return {str(p.relative_to(results)): p.stat().st_mtime_ns
            for p in sorted((results / "runs").glob("*/*"))}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Launch, collect, relaunch, overwrite one run; snapshots in between."""
    cwd = tmp_path_factory.mktemp("cwd")
    results = cwd / "results"
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline",
           # compiled programs shared between the launches (the overwrite rerun)
           "JAX_COMPILATION_CACHE_DIR": str(tmp_path_factory.mktemp("jax_cache"))}

    def cli(module, *args):
        proc = subprocess.run([sys.executable, "-m", module, *args, f"results_dir={results}"],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    out = {"cwd": cwd, "results": results, "first": cli("experiments.train", *SWEEP)}
    out["cwd_after_first"] = sorted(p.name for p in cwd.iterdir())
    out["collect"] = cli("experiments.collect")
    out["summary"] = pd.read_parquet(results / "summary.parquet")
    out["history"] = pd.read_parquet(results / "history.parquet")
    out["files_first"] = _files(results)
    out["relaunch"] = cli("experiments.train", *SWEEP)
    out["files_relaunch"] = _files(results)
    out["overwrite"] = cli("experiments.train", "attention=scaled", "d_k=8", *TINY,
                           "overwrite=true")
    out["files_overwrite"] = _files(results)
    return out


def _run_folder(sweep, attention: str, d_k: int) -> Path:
    (folder,) = (sweep["results"] / "runs").glob(f"{attention}-dk{d_k}-*")
    return folder


def test_sweep_writes_one_folder_per_run(sweep):
    runs = sorted(p.name for p in (sweep["results"] / "runs").iterdir())
    assert [r.split("-assoc")[0] for r in runs] == [
        "additive-dk16", "additive-dk8", "scaled-dk16", "scaled-dk8"]
    for run in runs:
        assert sorted(p.name for p in (sweep["results"] / "runs" / run).iterdir()) == [
            "config.yaml", "history.parquet", "summary.json"]
    # Hydra's folders under results_dir; nothing in the cwd but results_dir
    assert sweep["cwd_after_first"] == ["results"]
    assert (sweep["results"] / "hydra" / "multirun").is_dir()
    assert sorted(p.name for p in sweep["cwd"].iterdir()) == ["results"]


def test_collect_writes_contract_columns(sweep):
    summary, history = sweep["summary"], sweep["history"]
    assert not set(SUMMARY) - set(summary.columns)
    assert not set(HISTORY) - set(history.columns)
    assert len(summary) == 4 and set(summary.status) == {"completed"}
    assert sorted(history.groupby("run_id").step.apply(list).iloc[0]) == [0, 10, 20]
    assert len(history) == 12
    assert np.isfinite(history[HISTORY[7:]].to_numpy(float)).all()


def test_summary_metrics_follow_history(sweep):
    history = sweep["history"]
    for _, row in sweep["summary"].iterrows():
        acc = history[history.run_id == row.run_id].sort_values("step").accuracy
        assert row.accuracy_auc == pytest.approx(acc.mean())
        assert row.final_val_accuracy == pytest.approx(acc.iloc[-1])
        assert 0 <= row.test_accuracy <= 1
        assert acc.max() < row.threshold and pd.isna(row.steps_to_threshold)  # never reached
        stored = json.loads((sweep["results"] / "runs" / row.run_id / "summary.json").read_text())
        assert stored["steps_to_threshold"] is None


def test_wandb_offline_run_mirrors_the_files(sweep):
    folder = _run_folder(sweep, "additive", 16)  # launched once: one offline run
    got = read_offline_run(sweep["results"], folder.name)
    history = pd.read_parquet(folder / "history.parquet").set_index("step")
    assert sorted(got["history"]) == [0, 10, 20]
    for step, row in got["history"].items():
        assert row["val/accuracy"] == pytest.approx(history.accuracy[step])
        assert row["attn/entropy"] == pytest.approx(history.entropy[step])
        assert row["grad/grad_norm_q"] == pytest.approx(history.grad_norm_q[step])
    summary = json.loads((folder / "summary.json").read_text())
    assert got["summary"]["test_accuracy"] == pytest.approx(summary["test_accuracy"])
    assert got["summary"]["status"] == "completed" and got["exit_code"] == 0


def test_relaunch_skips_finished_runs(sweep):
    assert sweep["relaunch"].count("skip ") == 4
    assert sweep["files_relaunch"] == sweep["files_first"]


def test_overwrite_reruns_with_identical_numbers(sweep):
    rerun = _run_folder(sweep, "scaled", 8)
    changed = {k for k in sweep["files_first"]
               if sweep["files_overwrite"][k] != sweep["files_first"][k]}
    assert changed == {f"runs/{rerun.name}/{f}"
                       for f in ("config.yaml", "history.parquet", "summary.json")}
    before = sweep["history"][sweep["history"].run_id == rerun.name].reset_index(drop=True)
    after = pd.read_parquet(rerun / "history.parquet")
    pd.testing.assert_frame_equal(before[after.columns], after)  # no timing columns in history


# --- in-process runs -------------------------------------------------------------

STEPS = ["logger=none", "progress=false", "d_k=8", "train.steps=2", "train.eval_every=1",
         "train.n_val=16", "train.n_test=16", "train.batch_size=4"]


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[*STEPS, *overrides])
    config.validate(cfg)
    return cfg


def _assert_finite_rows(result, steps=(0, 1, 2)):
    assert result.status == "completed"
    assert [row["step"] for row in result.rows] == list(steps)
    assert all(math.isfinite(v) for row in result.rows for v in row.values())
    assert math.isfinite(result.test_accuracy)


def train_run(cfg):
    """Train one configuration (seed cfg.seed, rate optimizer.lr): its one lane's result."""
    return train_lanes(cfg, [Lane(cfg.seed, float(cfg.optimizer.lr))])[0]


@pytest.mark.parametrize("variant", sorted(config.ATTENTION_SCHEMAS))
def test_every_variant_trains(variant):
    _assert_finite_rows(train_run(compose_train(f"attention={variant}")))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_trains(task):
    result = train_run(compose_train(f"task={task}"))
    _assert_finite_rows(result)
    assert not [c for c in result.rows[0] if "_l0" in c]  # one layer, one head: no suffixes


def test_layers_and_heads_get_suffixed_columns():
    result = train_run(compose_train("model.n_layers=2", "model.n_heads=2"))
    _assert_finite_rows(result)
    columns = set(result.rows[0])
    for layer in (0, 1):
        assert f"grad_norm_q_l{layer}" in columns
        for head in (0, 1):
            assert {f"entropy_l{layer}h{head}", f"logit_std_l{layer}h{head}"} <= columns


def _launch(cfg, capsys) -> tuple[dict, str]:
    [summary] = train.run(cfg)
    return summary, capsys.readouterr().err


def test_diverged_run_is_final(tmp_path, capsys):
    cfg = compose_train("optimizer=sgd", "optimizer.lr=1e6", "train.steps=3",
                        f"results_dir={tmp_path}")
    summary, _ = _launch(cfg, capsys)
    assert summary["status"] == "diverged" and summary["test_accuracy"] is None
    (folder,) = (tmp_path / "runs").iterdir()
    mtime = (folder / "summary.json").stat().st_mtime_ns
    again, err = _launch(cfg, capsys)
    assert f"skip {folder.name}: already diverged" in err and again["status"] == "diverged"
    assert (folder / "summary.json").stat().st_mtime_ns == mtime


def test_failed_run_is_rerun(tmp_path, capsys):
    cfg = compose_train(f"results_dir={tmp_path}")  # compiled above: scaled, assoc_recall
    first, _ = _launch(cfg, capsys)
    (folder,) = (tmp_path / "runs").iterdir()
    failed = {**first, "status": "failed", "error": "RuntimeError: boom"}
    (folder / "summary.json").write_text(json.dumps(failed))
    again, err = _launch(cfg, capsys)
    assert "skip" not in err and again["status"] == "completed"
    assert json.loads((folder / "summary.json").read_text())["status"] == "completed"
