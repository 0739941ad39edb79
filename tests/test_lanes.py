"""Lanes: optimizer.lr_grid x train.n_seeds trained as one program.

Each lane is its own run, with the run id, numbers and files it has when
trained alone; a lane that diverges, or reaches the threshold under
train.stop_at_threshold, stops alone and is evaluated no more; a killed grid
resumes only its missing lanes, including after a kill between the lanes'
per-run writes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from experiments import train
from experiments.app import config  # noqa: F401 - registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.store import results

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

# the suite's compile cache (conftest) is on: a lane trained alone, and every launch of a
# killed grid, loads the programs the grid before it compiled
BASE = ["d_k=16", "train.steps=60", "train.eval_every=10", "train.n_val=64", "train.n_test=128",
        "train.batch_size=16", "logger=none", "progress=false"]
GRID = "optimizer.lr_grid=[3e-4,3e-3]"


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=[*BASE, *overrides])


def _history(folder: Path) -> pd.DataFrame:
    return pd.read_parquet(folder / "history.parquet").drop(columns=["run_id"])


def test_each_lane_equals_its_run_trained_alone(tmp_path):
    grouped, alone = tmp_path / "grouped", tmp_path / "alone"
    group = train.run(compose_train("seed=1", "train.n_seeds=2", GRID, f"results_dir={grouped}"))
    assert [(s["seed"], s["lr"]) for s in group] == [(1, 3e-4), (2, 3e-4), (1, 3e-3), (2, 3e-3)]
    singles = [train.run(compose_train(f"seed={s['seed']}", f"optimizer.lr={s['lr']}",
                                       f"results_dir={alone}"))[0] for s in group]
    assert [s["run_id"] for s in group] == [s["run_id"] for s in singles]
    worst = 0.0
    for g, a in zip(group, singles):
        hg = _history(results.run_dir(grouped, g["run_id"]))
        ha = _history(results.run_dir(alone, a["run_id"]))
        assert list(hg.columns) == list(ha.columns) and len(hg) == len(ha)
        numeric = hg.select_dtypes("number").columns
        np.testing.assert_allclose(hg[numeric].to_numpy(float), ha[numeric].to_numpy(float),
                                   rtol=1e-4, atol=1e-5)
        worst = max(worst, float(np.nanmax(np.abs(hg[numeric].to_numpy(float)
                                                  - ha[numeric].to_numpy(float)))))
        assert abs(g["test_accuracy"] - a["test_accuracy"]) <= 1e-6
    print(f"lanes vs alone: largest abs difference over every history column {worst:.2e}")
    # the rates really differ: a 10x rate is not the same run
    assert group[0]["accuracy_auc"] != group[2]["accuracy_auc"]


def test_relaunch_skips_lanes_however_they_were_grouped(tmp_path, capsys):
    out = tmp_path / "r"
    first = train.run(compose_train("seed=0", "train.n_seeds=2", GRID, f"results_dir={out}"))
    stamps = {s["run_id"]: (results.run_dir(out, s["run_id"]) / "summary.json").stat().st_mtime_ns
              for s in first}
    capsys.readouterr()
    again = train.run(compose_train("seed=1", "optimizer.lr=3e-3", f"results_dir={out}"))
    assert again[0]["run_id"] in stamps and "skip" in capsys.readouterr().err
    train.run(compose_train("seed=0", "train.n_seeds=3", GRID, f"results_dir={out}"))  # 2 new lanes
    after = {p.parent.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*/summary.json")}
    assert len(after) == 6 and all(after[rid] == t for rid, t in stamps.items())


def test_an_ended_lane_is_not_evaluated_and_the_live_ones_read_the_same():
    import jax

    from experiments.training import group as lane_group
    from experiments.training import loop

    cfg = compose_train("train.n_seeds=2", GRID)
    g = lane_group.prepare(cfg, loop.lanes_of(cfg))
    live = np.array([True, False, True, False])

    def measured(mask):
        out = jax.device_get(g.evaluate(g.state["params"], g.val, g.state["score_scale"], g.place(mask)))
        return {k: np.asarray(v) for k, v in out.items()}

    every, some = measured(np.ones(4, bool)), measured(live)
    skipped = lane_group.lane_block(cfg) == 1  # a block with a live lane is evaluated whole
    for name, values in every.items():
        np.testing.assert_array_equal(some[name][live], values[live], err_msg=name)
        if skipped and np.issubdtype(values.dtype, np.floating):
            assert np.isnan(some[name][~live]).all(), name


def test_diverging_lane_stops_alone(tmp_path):
    cfg = compose_train("optimizer=sgd", "optimizer.lr_grid=[0.05,1e6]", f"results_dir={tmp_path}")
    calm, wild = train.run(cfg)
    assert calm["status"] == "completed" and calm["steps_done"] == 60
    assert wild["status"] == "diverged" and wild["diverged_at_step"] is not None
    assert wild["test_accuracy"] is None and calm["test_accuracy"] is not None


def test_stop_at_threshold(tmp_path):
    """A lane ends at its first evaluation at or above the threshold; its test
    accuracy is that of its params there, as a run of exactly that length."""
    over = ["train.steps=400", "train.eval_every=20", "optimizer.lr_grid=[1e-4,1e-2]",
            "train.threshold=0.3", "train.stop_at_threshold=true"]
    slow, fast = train.run(compose_train(*over, f"results_dir={tmp_path / 'stop'}"))
    assert fast["steps_to_threshold"] is not None, fast
    stt = fast["steps_to_threshold"]
    assert fast["steps_done"] == stt < 400
    hist = _history(results.run_dir(tmp_path / "stop", fast["run_id"]))
    assert hist["step"].iloc[-1] == stt and (hist["accuracy"].iloc[:-1] < 0.3).all()
    assert hist["accuracy"].iloc[-1] >= 0.3
    # its AUC holds the last accuracy over the rest of the budget's 21 evaluations
    held = [*hist["accuracy"], *[hist["accuracy"].iloc[-1]] * (21 - len(hist))]
    assert fast["accuracy_auc"] == pytest.approx(np.mean(held)) and fast["stopped_at_threshold"]
    # the slow lane never got there: it trained the whole budget
    assert slow["steps_to_threshold"] is None and slow["steps_done"] == 400
    [same] = train.run(compose_train("optimizer.lr=1e-2", f"train.steps={stt}", "train.eval_every=20",
                                     "train.threshold=0.3", f"results_dir={tmp_path / 'short'}"))
    assert abs(same["test_accuracy"] - fast["test_accuracy"]) <= 1e-6
    assert same["run_id"] != fast["run_id"]  # stopping is part of what a run is


def test_group_stops_when_every_lane_has_ended(tmp_path):
    over = ["train.steps=2000", "train.eval_every=20", "optimizer.lr_grid=[3e-3,1e-2]",
            "train.threshold=0.2", "train.stop_at_threshold=true"]
    lanes = train.run(compose_train(*over, f"results_dir={tmp_path}"))
    assert all(s["steps_to_threshold"] is not None for s in lanes), lanes
    assert max(s["steps_done"] for s in lanes) < 2000


# --- SIGKILL of a multi-lane job ------------------------------------------------------------

KILL_AFTER_FIRST_SUMMARY = """
import os, signal, sys
from experiments.store import results
original = results.write_summary
def write_then_die(folder, summary):
    original(folder, summary)
    os.kill(os.getpid(), signal.SIGKILL)  # between the lanes' per-run writes
results.write_summary = write_then_die
sys.argv = ["train", *sys.argv[1:]]
from experiments.train import main
main()
"""


def _grid_command(out: Path, steps: int) -> list[str]:
    return [*BASE, "train.n_seeds=2", GRID, f"train.steps={steps}", f"results_dir={out}"]


def _summaries(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/summary.json")}


@pytest.mark.parametrize("when", ["between_writes", "while_training"])
def test_killed_grid_resumes_only_missing_lanes(tmp_path, when):
    out = tmp_path / "res"
    env = {**os.environ, "WANDB_SILENT": "true"}
    command = _grid_command(out, 60 if when == "between_writes" else 300)  # 300: seconds of training
    if when == "between_writes":
        proc = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_SUMMARY, *command],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        done = _summaries(out)
        assert len(done) == 1  # one lane recorded, three not
    else:
        proc = subprocess.Popen([sys.executable, "-m", "experiments.train", *command],
                                cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(list(out.glob("runs/*/config.yaml"))) < 4:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)  # compiling or training: before any lane is recorded
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        done = _summaries(out)
        assert done == {}  # nothing recorded: every lane trains again
    stamps = {rid: (out / "runs" / rid / "summary.json").stat().st_mtime_ns for rid in done}
    again = subprocess.run([sys.executable, "-m", "experiments.train", *command],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    final = _summaries(out)
    assert len(final) == 4 and {s["status"] for s in final.values()} == {"completed"}
    assert all((out / "runs" / rid / "summary.json").stat().st_mtime_ns == t
               for rid, t in stamps.items())
    assert again.stderr.count("skip ") == len(done)
