"""Config tests: every option of every group and every experiment preset
composes and validates; the pre-flight counts the jobs of a sweep; a bad
command line fails in one line (exit code 2) before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from experiments import config  # registers the schemas
from experiments.cli import CONF_DIR, preflight

GROUPS = ("attention", "task", "optimizer", "logger", "launcher")


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=True)


def test_groups_are_complete():
    assert options("attention") == sorted(config.ATTENTION_SCHEMAS)
    assert options("optimizer") == sorted(config.OPTIMIZER_SCHEMAS)
    assert options("task") == ["assoc_recall", "mqar", "vector_retrieval"]
    assert options("experiment") == ["claim_full", "claim_medium", "claim_quick"]


@pytest.mark.parametrize("group, option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_group_option_composes(group, option):
    cfg = compose_train(f"{group}={option}")
    config.validate(cfg)
    if group == "launcher":
        assert cfg.hydra.launcher._target_.lower().endswith(f"{option}launcher")
    else:
        assert cfg[group].name == option


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes(experiment):
    cfg = compose_train(f"experiment={experiment}")
    config.validate(cfg)
    assert cfg.experiment == experiment
    assert cfg.hydra.sweeper.params  # a preset is a sweep


@pytest.mark.parametrize("experiment, n_jobs", [
    ("claim_quick", 45), ("claim_medium", 336), ("claim_full", 1680)])
def test_preflight_counts_jobs(experiment, n_jobs):
    # validates every value of every swept key on the way
    assert preflight("train", ["-m", f"experiment={experiment}"], config.validate) == n_jobs


def test_preflight_counts_command_line_sweep():
    argv = ["-m", "attention=scaled,additive", "d_k=8,16,32", "seed=0"]
    assert preflight("train", argv, config.validate) == 6


# --- bad command lines through the real CLI -----------------------------------------

BAD = {  # overrides -> (key named, a fragment of what is allowed)
    ("train.stepz=3",): ("train.stepz", "unknown key"),
    ("train.steps=abc",): ("train.steps", "integer"),
    ("d_k=1.5",): ("d_k", "integer"),
    ("d_k=0",): ("d_k", ">= 1"),
    ("optimizer.lr=0",): ("optimizer.lr", "> 0"),
    ("train.threshold=1.5",): ("train.threshold", "(0, 1]"),
    ("model.init=foo",): ("model.init", "lecun_normal"),
    ("task.n_pairs=1000",): ("task.n_pairs", "1000"),
    ("logger.mode=foo",): ("logger.mode", "offline"),
    ("attention=foo",): ("attention", ", ".join(sorted(config.ATTENTION_SCHEMAS))),
    ("-m", "d_k=8,0"): ("d_k", ">= 1"),  # the first job is fine: nothing may run
}


@pytest.mark.parametrize("args", list(BAD), ids=" ".join)
def test_bad_config_fails_in_one_line(tmp_path, args):
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    cmd = [sys.executable, "-m", "experiments.train", *args, f"results_dir={tmp_path / 'results'}"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    key, allowed = BAD[args]
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}:"), proc.stderr
    assert allowed in lines[0]
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no results_dir, no outputs/ or multirun/
