"""MQAR as Zoology defines it: experiment=mqar_zoology sets Zoology's vocabulary, sizes,
values, head and fillers; the options are part of a run's identity only where they
leave their defaults; a tiny run of the preset trains."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from experiments.app import config  # registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.store.results import run_id
from experiments.tasks import TASKS, fixed_set
from experiments.training.group import Lane
from experiments.training.loop import train_lanes
from experiments.training.spec import task_object

# Zoology's Figure 2 configs: (T, pairs, batch); 64 epochs of 100,000 examples
ZOOLOGY = {"t64": (64, 4, 512), "t128": (128, 8, 512), "t256": (256, 16, 256)}


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=list(overrides))
    config.validate(cfg)
    return cfg


@pytest.mark.parametrize("size", sorted(ZOOLOGY))
def test_the_preset_sets_zoology_s_mqar(size):
    cfg = compose_train("experiment=mqar_zoology", f"experiment/zoology_size={size}")
    t = cfg.task
    assert (t.name, t.vocab_size, t.distinct_values, t.head, t.random_fillers) == \
        ("mqar", 8192, True, "full_vocab", False)
    assert (t.seq_len, t.n_pairs, cfg.train.batch_size) == ZOOLOGY[size]
    assert cfg.train.steps * cfg.train.batch_size == 64 * 100_000
    task_cfg = task_object(dict(t))
    batch = {k: np.asarray(v) for k, v in fixed_set(TASKS["mqar"], task_cfg, 0, "val", 8).items()}
    nonzero = (batch["tokens"][:, 2 * t.n_pairs:] != 0).sum(-1)
    assert (nonzero == t.n_pairs).all()  # the query region holds the queried keys, else 0
    values = batch["tokens"][:, 1:2 * t.n_pairs:2]
    assert all(len(set(row)) == t.n_pairs for row in values.tolist())
    assert TASKS["mqar"].n_classes(task_cfg) == 8192


def test_the_preset_sweeps_the_sizes():
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=["experiment=mqar_zoology"], return_hydra_config=True)
    params = cfg.hydra.sweeper.params
    assert params["experiment/zoology_size"] == ",".join(ZOOLOGY)


@pytest.mark.parametrize("key, value", [("distinct_values", "true"), ("head", "full_vocab")])
def test_an_option_away_from_its_default_is_another_run(key, value):
    """At its default a new key leaves the run id as it was (the reference resumes:
    tests/test_config.py); set, it names another run."""
    default = compose_train("task=mqar")
    assert run_id(compose_train("task=mqar", f"task.{key}={value}")) != run_id(default)


def test_a_tiny_run_of_the_preset_trains():
    cfg = compose_train("experiment=mqar_zoology", "logger=none", "progress=false", "train.steps=2",
                        "train.eval_every=1", "train.n_val=16", "train.n_test=16", "train.batch_size=4",
                        "train.n_seeds=1")
    [result] = train_lanes(cfg, [Lane(cfg.seed, float(cfg.optimizer.lr))])
    assert result.status == "completed" and [row["step"] for row in result.rows] == [0, 1, 2]
    assert all(math.isfinite(v) for row in result.rows for v in row.values())
    assert result.rows[0]["loss"] == pytest.approx(math.log(8192), rel=0.2)  # a head over the vocabulary
