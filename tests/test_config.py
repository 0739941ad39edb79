"""Config tests: every option of every group and every experiment preset
composes and validates; the pre-flight counts the jobs of a sweep; a bad
command line fails in one line (exit code 2) before anything is written."""

from __future__ import annotations

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
        # each option selects the Hydra launcher plugin of the same name
        assert cfg.hydra.runtime.choices["hydra/launcher"] == option
    else:
        assert cfg[group].name == option


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes(experiment):
    cfg = compose_train(f"experiment={experiment}")
    config.validate(cfg)
    assert cfg.experiment == experiment
    assert cfg.hydra.sweeper.params  # a preset is a sweep


@pytest.mark.parametrize("experiment, n_jobs", [  # jobs of n_seeds vmapped seeds each
    ("claim_quick", 15), ("claim_medium", 112), ("claim_full", 336)])
def test_preflight_counts_jobs(experiment, n_jobs):
    # validates every value of every swept key on the way
    assert preflight("train", ["-m", f"experiment={experiment}"], config.validate) == n_jobs


def test_preflight_counts_command_line_sweep():
    argv = ["-m", "attention=scaled,additive", "d_k=8,16,32", "seed=0"]
    assert preflight("train", argv, config.validate) == 6


# Bad command lines (one line, exit 2, nothing written) for every command: tests/test_bad_input.py
