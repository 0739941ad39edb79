"""The temperature family (attention=temperature: c q.k / d_k^alpha), its multiplier grid as
lanes (attention.c_grid), and the learned temperature (attention=learned_temperature)."""
from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from test_lanes import compose_train

import attention
from attention.temperature import RMS_EPS
from experiments import train
from experiments.store import results

ONE_LAYER = ["model.n_layers=1", "model.reassociate=true"]


def _scores(name: str, d_k: int, **options):
    q = jax.random.normal(jax.random.PRNGKey(d_k), (3, 5, d_k))
    k = jax.random.normal(jax.random.PRNGKey(d_k + 1), (3, 7, d_k))
    variant = attention.VARIANTS[name]
    return np.asarray(variant.score(variant.init(jax.random.PRNGKey(0), d_k), q, k, **options))


@pytest.mark.parametrize("d_k", [2, 4, 8, 16, 64, 128, 1024])
def test_the_named_variants_are_points_of_the_family(d_k):
    """unscaled is (1, 0), mup8 (8, 1): the same bits; scaled (1, 1/2): the same bits where
    sqrt(d_k) is a power of two, within one rounding elsewhere."""
    np.testing.assert_array_equal(_scores("temperature", d_k, c=1.0, alpha=0.0), _scores("unscaled", d_k))
    np.testing.assert_array_equal(_scores("temperature", d_k, c=8.0, alpha=1.0), _scores("mup", d_k, multiplier=8.0))
    got, want = _scores("temperature", d_k, c=1.0, alpha=0.5), _scores("scaled", d_k)
    if np.log2(d_k) % 2 == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)
    assert not np.allclose(_scores("temperature", d_k, c=2.0, alpha=0.5), want)  # c moves it


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("attention.qk_rms=true",)])
def test_each_multiplier_lane_is_the_run_trained_alone(tmp_path, extra):
    """A grid of multipliers as lanes of one program: each lane has the run id, and the very
    numbers, of the run trained alone at its attention.c (with q and k RMS-normed too)."""
    grid = [0.25, 4.0]
    lanes = train.run(compose_train("attention=temperature", *ONE_LAYER, f"attention.c_grid=[{grid[0]},{grid[1]}]",
                                    *extra, f"results_dir={tmp_path / 'grid'}"))
    assert [s["n_seeds_vmapped"] for s in lanes] == [2, 2]
    for c, lane in zip(grid, lanes):
        [alone] = train.run(compose_train("attention=temperature", *ONE_LAYER, f"attention.c={c}", *extra,
                                          f"results_dir={tmp_path / 'alone'}"))
        assert lane["run_id"] == alone["run_id"]
        read = lambda root: pd.read_parquet(results.run_dir(root, alone["run_id"]) / "history.parquet")
        pd.testing.assert_frame_equal(read(tmp_path / "grid").drop(columns=["run_id"]),
                                      read(tmp_path / "alone").drop(columns=["run_id"]))
    first = pd.read_parquet(results.run_dir(tmp_path / "grid", lanes[0]["run_id"]) / "history.parquet")
    last = pd.read_parquet(results.run_dir(tmp_path / "grid", lanes[1]["run_id"]) / "history.parquet")
    assert first["logit_std"].iloc[0] * 16 == pytest.approx(last["logit_std"].iloc[0], rel=1e-4)  # 16x c, at init


@pytest.mark.slow
@pytest.mark.parametrize("args, key", [
    (["model.n_layers=2", "model.reassociate=true"], "attention.c_grid"),
    (["model.reassociate=false"], "attention.c_grid"),
    (ONE_LAYER + ["attention.c=2"], "attention.c"),
    (ONE_LAYER + ["attention.c_grid=[1,1]"], "attention.c_grid"),
])
def test_a_grid_the_program_cannot_take_is_refused(tmp_path, args, key):
    grid = [] if any(a.startswith("attention.c_grid") for a in args) else ["attention.c_grid=[1,2]"]
    proc = subprocess.run([sys.executable, "-m", "experiments.train", "attention=temperature", *args, *grid,
                           "logger=none", f"results_dir={tmp_path / 'r'}"], capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {key}: "), proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_learned_temperature_is_logged_and_moves(tmp_path):
    [run] = train.run(compose_train("attention=learned_temperature", "optimizer.lr=3e-2", f"results_dir={tmp_path}"))
    history = pd.read_parquet(results.run_dir(tmp_path, run["run_id"]) / "history.parquet")
    assert history["temperature"].iloc[0] == 1.0  # exp(0): scaled attention at init
    assert run["final_temperature"] == history["temperature"].iloc[-1] != 1.0
    assert np.isfinite(history["temperature"]).all()


def test_the_learned_temperature_starts_as_scaled():
    np.testing.assert_allclose(_scores("learned_temperature", 16), _scores("scaled", 16), rtol=1e-6)
    params = {"log_c": jnp.log(jnp.float32(3.0))}
    q = jax.random.normal(jax.random.PRNGKey(0), (2, 16))
    got = attention.scores("learned_temperature", params, q, q)
    np.testing.assert_allclose(got, 3.0 * attention.scores("scaled", {}, q, q), rtol=1e-5)


def test_log_n_multiplies_the_logits_by_ln_n():
    """attention.log_n=n: the logits of c = 1 times ln n, to one rounding; a bad n is refused."""
    np.testing.assert_allclose(_scores("temperature", 16, log_n=64), _scores("temperature", 16) * np.log(64),
                               rtol=1e-6)
    np.testing.assert_array_equal(_scores("temperature", 16, log_n=None), _scores("temperature", 16))
    for bad in (1, 2.5, True):
        with pytest.raises(ValueError, match="attention.log_n"):
            attention.VARIANTS["temperature"].check({"c": 1.0, "alpha": 0.5, "log_n": bad})


def test_qk_rms_scores_normalised_vectors():
    """attention.qk_rms: c q^.k^ / sqrt(d_k) with q^, k^ of root mean square 1, whatever the size of
    q and k; off, the plain score; a non-boolean is refused."""
    d_k = 16
    q = 5 * jax.random.normal(jax.random.PRNGKey(0), (3, 5, d_k))
    k = 0.1 * jax.random.normal(jax.random.PRNGKey(1), (3, 7, d_k))
    unit = lambda x: x / np.sqrt((np.asarray(x) ** 2).mean(-1, keepdims=True) + RMS_EPS)
    got = attention.scores("temperature", {}, q, k, c=1.36, qk_rms=True)
    want = 1.36 / np.sqrt(d_k) * np.einsum("bqd,bkd->bqk", unit(q), unit(k))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(attention.scores("temperature", {}, 3 * q, k, c=1.36, qk_rms=True), got,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(attention.scores("temperature", {}, q, k, qk_rms=False),
                                  attention.scores("temperature", {}, q, k))
    with pytest.raises(ValueError, match="attention.qk_rms"):
        attention.VARIANTS["temperature"].check({"c": 1.0, "alpha": 0.5, "qk_rms": "yes"})


def test_qk_rms_off_keeps_every_run_id():
    """A run from before attention.qk_rms existed keeps its id at qk_rms=false."""
    cfg = compose_train("attention=temperature", *ONE_LAYER)
    before = results.run_id(cfg)
    cfg.attention.qk_rms = True
    assert results.run_id(cfg) != before
    cfg.attention.qk_rms = False
    assert results.run_id(cfg) == before and "qk_rms" not in results.identity(cfg)["attention"]


def test_pruning_compares_rates_within_each_multiplier():
    """Two multipliers, one far better than the other: the weak multiplier keeps its own best rate
    (a rate is stopped only by a rate of its own c)."""
    from experiments.training import loop, prune
    lanes = [loop.Lane(0, lr, c) for c in (0.25, 4.0) for lr in (1e-3, 1e-2)]
    ledger = loop.Ledger(lanes)
    # pooled over c, 1e-2 (mean 0.2) would lose to 1e-3 (0.45) and stop c = 4's best rate too
    good = {(0.25, 1e-3): 0.9, (0.25, 1e-2): 0.1, (4.0, 1e-3): 0.0, (4.0, 1e-2): 0.3}
    ledger.rows = [[{"accuracy": good[(lane.c, lane.lr)]}] * 30 for lane in lanes]
    pruning = loop.Pruning(prune.PruneRule(enabled=True), n_evals=40)
    stopped = {(lanes[i].c, lanes[i].lr) for i in pruning.lanes_to_stop(ledger, 1500)}
    assert (0.25, 1e-2) in stopped  # c = 0.25's loser
    assert (4.0, 1e-2) not in stopped  # the weak multiplier's best rate trains on
