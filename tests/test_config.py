"""Config tests: every option of every group and every experiment preset
composes and validates; the pre-flight counts the jobs of a sweep; a bad
command line fails in one line (exit code 2) before anything is written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

import attention
from experiments.app import config  # registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.app.preflight import check_jobs
from experiments.tasks import TASKS

GROUPS = ("attention", "task", "optimizer", "logger", "launcher")


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=True)


def test_groups_are_complete():
    # every variant and task is an option, by its yaml or by its schema alone (docs/EXTENDING.md);
    # a yaml beyond them is a setting of a variant (mup8: mup, multiplier 8)
    variants = set(attention.VARIANTS)
    assert {compose_train(f"attention={v}").attention.name for v in variants} == variants
    assert {compose_train(f"attention={o}").attention.name for o in options("attention")} <= variants
    assert {compose_train(f"task={t}").task.name for t in TASKS} == set(TASKS)
    assert set(options("task")) <= set(TASKS)
    assert options("optimizer") == sorted(config.OPTIMIZER_SCHEMAS)
    assert options("experiment") == ["answer", "answer_text", "answer_vector", "answer_wide", "claim_full",
                                     "claim_medium", "claim_quick", "init_gain", "init_gain_mqar", "mqar_zoology", "mup_width",
                                     "quality", "quality_quick", "temperature", "temperature_lr_wide", "temperature_mqar",
                                     "temperature_qk_rms", "temperature_qk_rms_lr_wide"]


# what an option says it needs beside it (its yaml's comment): a multiplier grid trains as lanes
# of the reassociated one-layer program
NEEDS = {("attention", "temperature_grid"): ["model.reassociate=true"]}


@pytest.mark.parametrize("group, option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_group_option_composes(group, option):
    cfg = compose_train(f"{group}={option}", *NEEDS.get((group, option), []))
    config.validate(cfg)
    if group == "launcher":
        # each option selects the Hydra launcher plugin of the same name
        assert cfg.hydra.runtime.choices["hydra/launcher"] == option
    elif group == "attention" and option not in config.ATTENTION_SCHEMAS:
        assert cfg.attention.name in config.ATTENTION_SCHEMAS  # a setting of a variant
    else:
        assert cfg[group].name == option


def test_mup8_is_mup_at_multiplier_8():
    """attention=mup8: 8 q.k / d_k, equal to scaled's q.k / sqrt(d_k) at d_k = 64."""
    import numpy as np

    cfg = compose_train("attention=mup8", "d_k=64")
    assert (cfg.attention.name, cfg.attention.multiplier) == ("mup", 8.0)
    rng = np.random.default_rng(0)
    for d_k, same in ((64, True), (16, False)):
        q, k = rng.normal(size=(2, 5, d_k)).astype(np.float32)
        mup = attention.VARIANTS["mup"].score({}, q, k, multiplier=cfg.attention.multiplier)
        scaled = attention.VARIANTS["scaled"].score({}, q, k)
        assert np.allclose(mup, scaled, rtol=1e-5) == same


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes(experiment):
    cfg = compose_train(f"experiment={experiment}")
    config.validate(cfg)
    assert cfg.experiment == experiment
    assert cfg.hydra.sweeper.params  # a preset is a sweep


@pytest.mark.parametrize("experiment, n_jobs", [  # jobs of n_seeds vmapped seeds each
    ("claim_quick", 15), ("claim_medium", 112), ("claim_full", 336), ("mup_width", 8),
    ("quality", 84), ("quality_quick", 12), ("answer", 120), ("answer_wide", 30), ("answer_vector", 40),
    ("mqar_zoology", 9)])
def test_preflight_counts_jobs(experiment, n_jobs):
    # validates every value of every swept key on the way
    assert check_jobs("train", ["-m", f"experiment={experiment}"], config.validate)[0] == n_jobs


def test_preflight_counts_command_line_sweep():
    argv = ["-m", "attention=scaled,additive", "d_k=8,16,32", "seed=0"]
    assert check_jobs("train", argv, config.validate)[0] == 6


# Bad command lines (one line, exit 2, nothing written) for every command: tests/test_bad_input.py


def test_help_offers_options_not_schemas():
    """`--help` lists each group's options; the typed schemas are no option of a group."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "experiments.train", "--help"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    listing = out.split("== Configuration groups ==")[1].split("== Config ==")[0]
    groups = dict(line.split(": ", 1) for line in listing.splitlines() if ": " in line)
    conf = Path(__file__).resolve().parents[1] / "conf"
    for group, registered in (("attention", attention.VARIANTS), ("task", TASKS)):
        # every yaml of the group and every registered name (its yaml is optional)
        yamls = {p.stem for p in (conf / group).glob("*.yaml")}
        assert groups[group] == ", ".join(sorted(yamls | set(registered)))
    assert {"scaled", "unscaled", "additive"} <= set(groups["attention"].split(", "))
    assert groups["optimizer"] == "adam, adamw, sgd"
    assert groups["logger"] == "none, wandb"
    assert "schema" not in listing


@pytest.mark.parametrize("overrides", [
    ("cell=adam_assoc_recall", "attention=scaled", "d_k=8", "seed=0", "optimizer.lr=0.001"),
    ("cell=sgd_assoc_recall", "attention=additive", "d_k=1024", "seed=2", "optimizer.lr=0.1"),
    ("cell=adam_mqar", "attention=qk_norm", "d_k=2", "seed=7", "optimizer.lr=0.03"),
    ("cell=adam_vector_retrieval_d8", "attention=unscaled", "d_k=1024", "seed=5", "optimizer.lr=0.0003")])
def test_run_ids_of_the_committed_reference_are_stable(overrides):
    """A new config key at its default leaves run ids alone, and a lane keeps the id it has
    trained alone: the committed reference (and every folder made before the key) still resumes.
    Its runs were trained by experiment=answer; quality gives a run of the same cell the same id."""
    from experiments.store.results import run_id

    reference = pd.read_parquet(Path(__file__).resolve().parents[1] / "results" / "reference"
                                / "summary.parquet")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=quality", *overrides])
    assert run_id(cfg) in set(reference["run_id"])


@pytest.mark.parametrize("width, n_heads, expected", [("fixed", 1, 64), ("proportional", 1, 32),
                                                      ("proportional", 2, 64)])
def test_model_width_ties_d_model_to_d_k(width, n_heads, expected):
    """model.width=proportional: d_model = d_k * n_heads, in the model and in the memory estimate."""
    from experiments.training import group, memory

    cfg = compose_train("d_k=32", f"model.width={width}", f"model.n_heads={n_heads}")
    config.validate(cfg)
    assert group.model_spec(cfg, cfg.task).d_model == expected
    assert memory.Shapes.from_config(cfg).d_model == expected


def test_bad_model_width_is_one_line():
    cfg = compose_train("model.width=wide")
    with pytest.raises(ValueError, match=r"^model\.width: must be one of fixed, proportional, got 'wide'$"):
        config.validate(cfg)


@pytest.mark.parametrize("cell", options("cell"))
def test_every_quality_cell_composes(cell):
    """A cell of experiment=quality names its task and optimizer in its file
    name and carries a log-spaced grid of at least 5 rates."""
    import numpy as np

    cfg = compose_train("experiment=quality", f"cell={cell}")
    config.validate(cfg)
    optimizer, task = cell.split("_", 1)  # <optimizer>_<task>, or <optimizer>_<task>_<setting>
    assert cfg.optimizer.name == optimizer and (task == cfg.task.name or task.startswith(cfg.task.name + "_"))
    grid = np.log(list(cfg.optimizer.lr_grid))
    # half-decade steps (x3 or x3.33): log-spaced to the grid's rounding
    assert len(grid) >= 5 and np.all((np.diff(grid) > np.log(2.9)) & (np.diff(grid) < np.log(3.4)))
    assert cfg.train.n_seeds >= 8 and cfg.train.stop_at_threshold


def test_additive_wide_is_a_variant_of_its_own_with_its_width():
    """The d_hidden = 64 arm is named apart from additive (its runs never share additive's cells)
    and the memory estimate counts its own width, not d_k."""
    from experiments.store.results import run_id
    from experiments.training import memory

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        wide, tied = (compose("train", overrides=[f"attention={a}", "d_k=2"]) for a in ("additive_wide", "additive"))
    config.validate(wide)
    assert (wide.attention.name, wide.attention.d_hidden) == ("additive_wide", 64)
    assert run_id(wide).startswith("additive_wide-dk2-") and run_id(wide) != run_id(tied)
    assert (memory.Shapes.from_config(wide).d_hidden, memory.Shapes.from_config(tied).d_hidden) == (64, 2)
