"""Determinism: the same config and seed, trained twice in two processes (each
compiling for itself, with different hash seeds), give identical history
rows and identical summary metrics on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

RUN = ["attention=unscaled", "d_k=16", "seed=3", "train.steps=30", "train.eval_every=10",
       "train.n_val=32", "train.n_test=64", "train.batch_size=8", "logger=none", "progress=false",
       "runtime.compile_cache=false"]
# Summary keys that measure the machine, not the training.
TIMING = {"wall_time_s", "compile_time_s", "train_time_s", "steps_per_s", "versions"}


def _train(tmp_path, name: str, hash_seed: str):
    results = tmp_path / name
    # the suite's cheaper compile (conftest): determinism is a property of any one program
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run([sys.executable, "-m", "experiments.train", *RUN, f"results_dir={results}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = (results / "runs").iterdir()
    return folder.name, pd.read_parquet(folder / "history.parquet"), \
        json.loads((folder / "summary.json").read_text())


def test_same_config_and_seed_give_identical_results(tmp_path):
    rid_a, hist_a, summ_a = _train(tmp_path, "a", "1")
    rid_b, hist_b, summ_b = _train(tmp_path, "b", "2")
    assert rid_a == rid_b
    assert not [c for c in hist_a.columns if "time" in c]  # no wall-clock column in history
    assert list(hist_a["step"]) == [0, 10, 20, 30]
    pd.testing.assert_frame_equal(hist_a, hist_b, check_exact=True)
    strip = lambda s: {k: v for k, v in s.items() if k not in TIMING}  # noqa: E731
    assert strip(summ_a) == strip(summ_b) and summ_a["status"] == "completed"
