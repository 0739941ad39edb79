"""Vectorised seeds: train.n_seeds=S trains S seeds as one vmapped program,
and each seed is still its own run, with the numbers it has when trained alone."""

from __future__ import annotations

import json

import jax
import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from test_wandb_mirror import read_offline_run

from experiments import train
from experiments.app import config  # noqa: F401 - registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.store import results
from experiments.training.compile import ProgramCache
from experiments.training.loop import _diverged, _diverged_at, _diverged_lanes

TINY = ["attention=unscaled", "d_k=16", "train.steps=30", "train.eval_every=10",
        "train.n_val=48", "train.n_test=80", "train.batch_size=8"]
# Reductions over a seed axis may be ordered differently by XLA: float32 noise.
TOL = dict(rtol=1e-4, atol=1e-5)


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=[*TINY, *overrides])


def _history(results_dir, rid) -> pd.DataFrame:
    return pd.read_parquet(results.run_dir(results_dir, rid) / "history.parquet")


@pytest.fixture(scope="module")
def group_and_alone(tmp_path_factory):
    """Seeds 3-6 trained as one group (spread over the two devices), and each alone."""
    grouped = tmp_path_factory.mktemp("grouped")
    alone = tmp_path_factory.mktemp("alone")
    cache = ProgramCache()  # one for the jobs, as the train command holds one for a sweep
    group = train.run(compose_train("seed=3", "train.n_seeds=4", f"results_dir={grouped}"), cache)
    singles = [train.run(compose_train(f"seed={s}", f"results_dir={alone}"), cache)[0] for s in (3, 4, 5, 6)]
    return {"grouped": grouped, "alone": alone, "group": group, "singles": singles, "cache": cache}


def test_seeds_are_spread_over_devices():
    from experiments.training import lane_axis

    assert jax.local_device_count() == 2  # tests/conftest.py
    assert lane_axis.n_devices_for(4) == 2 and lane_axis.n_devices_for(3) == 1
    assert lane_axis.n_devices_for(1) == 1
    tree = lane_axis.placer(2)({"x": jax.numpy.zeros((4, 3))})
    assert len(tree["x"].sharding.device_set) == 2


def test_each_seed_is_its_own_run(group_and_alone):
    group, singles = group_and_alone["group"], group_and_alone["singles"]
    assert [s["seed"] for s in group] == [3, 4, 5, 6]
    # the run id of a seed does not depend on how it was scheduled
    assert [s["run_id"] for s in group] == [s["run_id"] for s in singles]
    folders = sorted(p.name for p in (group_and_alone["grouped"] / "runs").iterdir())
    assert folders == sorted(s["run_id"] for s in group)
    assert {s["n_seeds_vmapped"] for s in group} == {4}
    assert {s["n_seeds_vmapped"] for s in singles} == {1}


def test_group_numbers_equal_seeds_alone(group_and_alone):
    for g, a in zip(group_and_alone["group"], group_and_alone["singles"]):
        assert g["status"] == a["status"] == "completed"
        for key in ("test_accuracy", "final_val_accuracy", "accuracy_auc"):
            assert g[key] == pytest.approx(a[key], abs=1e-6), key
        hg = _history(group_and_alone["grouped"], g["run_id"])
        ha = _history(group_and_alone["alone"], a["run_id"])
        assert list(hg.columns) == list(ha.columns) and len(hg) == len(ha) == 4
        numeric = hg.select_dtypes("number").columns
        np.testing.assert_allclose(hg[numeric].to_numpy(), ha[numeric].to_numpy(), **TOL)
    # the seeds really differ: a group is not one seed copied four times
    accs = [s["accuracy_auc"] for s in group_and_alone["group"]]
    losses = [_history(group_and_alone["grouped"], s["run_id"])["loss"].iloc[-1]
              for s in group_and_alone["group"]]
    assert len(set(losses)) == 4, (accs, losses)


def test_a_job_that_differs_only_in_seed_reuses_the_programs(group_and_alone, tmp_path):
    """The single-seed jobs share one program: the first compiles it (the
    4-lane group before it has other shapes), the next three reuse it, and a
    reused program gives exactly the numbers of a fresh compile."""
    compiles = [s["compile_time_s"] for s in group_and_alone["singles"]]
    assert group_and_alone["group"][0]["compile_time_s"] > 0
    assert compiles[0] > 0 and compiles[1:] == [0.0, 0.0, 0.0], compiles
    (fresh,) = train.run(compose_train("seed=6", f"results_dir={tmp_path}"))  # a cache of its own
    assert fresh["compile_time_s"] > 0
    reused = group_and_alone["singles"][3]
    assert fresh["run_id"] == reused["run_id"] and fresh["test_accuracy"] == reused["test_accuracy"]
    pd.testing.assert_frame_equal(_history(tmp_path, fresh["run_id"]),
                                  _history(group_and_alone["alone"], reused["run_id"]))
    # another shape drops the held programs before compiling its own: the shape before compiles again
    cache = group_and_alone["cache"]
    for d_k, folder in ((8, tmp_path / "d_k8"), (16, tmp_path / "d_k16")):
        (other,) = train.run(compose_train("seed=6", f"d_k={d_k}", f"results_dir={folder}"), cache)
        assert other["compile_time_s"] > 0, d_k


def test_relaunch_trains_only_missing_seeds(group_and_alone, tmp_path, capsys):
    results_dir = group_and_alone["alone"]
    done = {p.name: (p / "summary.json").stat().st_mtime_ns for p in (results_dir / "runs").iterdir()}
    group = train.run(compose_train("seed=3", "train.n_seeds=5", f"results_dir={results_dir}"))
    err = capsys.readouterr().err
    assert [s["seed"] for s in group] == [3, 4, 5, 6, 7]
    assert sum(f"skip {rid}: already completed" in err for rid in done) == 4
    assert {p.name: (p / "summary.json").stat().st_mtime_ns
            for p in (results_dir / "runs").iterdir() if p.name in done} == done
    assert json.loads((results.run_dir(results_dir, group[4]["run_id"]) / "summary.json")
                      .read_text())["status"] == "completed"


def test_each_seed_has_its_own_wandb_run(tmp_path):
    group = train.run(compose_train("seed=0", "train.n_seeds=2", "logger.mode=offline",
                                    f"results_dir={tmp_path}"))
    for summary in group:
        got = read_offline_run(tmp_path, summary["run_id"])
        assert got["exit_code"] == 0 and sorted(got["history"]) == [0, 10, 20, 30]
        assert got["summary"]["test_accuracy"] == pytest.approx(summary["test_accuracy"])


@pytest.mark.parametrize("row, expected", [
    ({"loss": 1.0, "train_loss": 1.0, "grad_norm": 2.0}, False),
    ({"loss": float("nan"), "train_loss": 1.0}, True),
    ({"loss": 1.0, "train_loss": 1e9}, True),
    ({"loss": 1.0, "train_loss": 1.0, "grad_norm_q": float("inf")}, True),
])
def test_divergence_rule(row, expected):
    assert _diverged(row, limit=1e4) is expected


@pytest.mark.parametrize("row, first_bad, expected", [
    ({"step": 20, "loss": 1.0, "train_loss": 1.0}, -1, None),
    ({"step": 20, "loss": 1.0, "train_loss": 1.0}, 7, 27),  # inside the chunk
    ({"step": 20, "loss": float("nan"), "train_loss": 1.0}, 3, 20),  # the row itself
])
def test_divergence_step(row, first_bad, expected):
    assert _diverged_at(row, first_bad, limit=1e4) == expected


def test_a_lane_that_ends_at_its_row_is_judged_on_the_row_alone():
    """The chunk after a lane's last row (it reached the threshold, or its budget
    ended) runs past the lane's end: a bad step there is not the lane's."""
    fine, bad = {"step": 30, "loss": 1.0, "train_loss": 1.0}, {"step": 30, "loss": 1e9, "train_loss": 1.0}
    rows = {0: fine, 1: fine, 2: bad}
    assert _diverged_lanes(rows, [4, 4, -1], ending=[0, 2], limit=1e4) == {1: 34, 2: 30}


def test_diverging_seed_stops_alone(tmp_path):
    """A seed whose loss crosses train.divergence_loss inside a chunk stops at
    that exact step; its group mate trains on to the end, unchanged."""
    every_step = compose_train("seed=0", "train.n_seeds=2", "train.eval_every=1",
                               f"results_dir={tmp_path / 'a'}")
    first = train.run(every_step)
    peaks = [_history(tmp_path / "a", s["run_id"])["train_loss"] for s in first]
    high, low = sorted(range(2), key=lambda i: -peaks[i].max())
    assert peaks[high].max() > peaks[low].max() + 1e-3  # seeds differ enough to split
    limit = (peaks[high].max() + peaks[low].max()) / 2
    crossing = int(_history(tmp_path / "a", first[high]["run_id"])
                   .loc[lambda h: h["train_loss"] > limit, "step"].iloc[0])

    chunked = compose_train("seed=0", "train.n_seeds=2", f"train.divergence_loss={limit}",
                            f"results_dir={tmp_path / 'b'}")
    second = train.run(chunked)
    assert second[high]["status"] == "diverged"
    assert second[high]["diverged_at_step"] == crossing and second[high]["test_accuracy"] is None
    assert second[low]["status"] == "completed" and second[low]["diverged_at_step"] is None
    assert second[low]["test_accuracy"] == pytest.approx(first[low]["test_accuracy"], abs=1e-6)
