"""Every name the issues made a contract (docs/ARCHITECTURE.md, "contract") is importable and
has its shape: the attention API, the statistics over seeds, the commands, and the keys and
columns of the committed study's files. A name that moves breaks this test, not a user's script."""
from __future__ import annotations

import importlib
import json
import tomllib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow.parquet as pq
import pytest

import attention

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
VARIANT_NAMES = ("scaled", "unscaled", "additive", "mup", "qk_norm", "cosine", "ssmax", "sigmoid")
STAT_FUNCTIONS = ("row_logit_moments", "row_entropy", "row_entropy_norm", "row_saturation",
                  "row_jacobian_norm", "row_summary")
MEASUREMENTS = ("loss", "accuracy", "logit_mean", "logit_var", "logit_std", "logit_absmax", "entropy",
                "entropy_norm", "saturation", "jacobian_norm_mean", "jacobian_norm_median")
PROBED = ("logit_var", "logit_std", "entropy", "entropy_norm", "saturation", "jacobian_norm_mean",
          "jacobian_norm_median")  # the probe's statistics, each beside its theory_ prediction
RUN_KEYS = ("run_id", "attention", "d_k", "seed", "task", "optimizer")
COLUMNS = {
    "history": (*RUN_KEYS, "step", "lr", "experiment", *MEASUREMENTS, "train_loss", "grad_norm",
                "grad_norm_q", "grad_norm_k", "grad_norm_v", "grad_norm_attn", "update_norm"),
    "summary": (*RUN_KEYS, "experiment", "status", "test_accuracy", "final_val_accuracy",
                "steps_to_threshold", "accuracy_auc", "wall_time_s", "compile_time_s", "steps_per_s",
                "steps", "threshold", "lr", "diverged_at_step", "steps_done", "pruned_at_step",
                "n_seeds_vmapped", "train_time_s"),
    "probe": ("attention", "d_k", "n_keys", "input_model", "init", "n_rows", "seed", "d_model", "task",
              *PROBED, "grad_norm_q", "grad_norm_k", "grad_wrt", "grad_qk_row_median", "grad_qk_row_rms",
              *(f"theory_{m}" for m in PROBED)),
    "cost": ("impl", "mode", "n", "d_k", "batch", "time_median_s", "time_min_s", "time_max_s",
             "temp_bytes", "argument_bytes", "output_bytes", "peak_bytes", "peak_method", "skipped",
             "note", "time_ratio", "memory_ratio", "peak_memory_ratio", "predicted_memory_ratio",
             "predicted_bytes", "device"),
}
BENCH_KEYS = ("harness_vs_bare_ratio", "vmap_seed_speedup", "compile_cached_over_cold", "claim_quick_wall_s",
              "fraction_of_matmul_peak", "peak_rss_gb", "lane_throughput", "lane_speedup_16",
              "lane_speedup_32", "single_lane_step_s", "heavy_lane_ratio_min", "vmap_seed_speedup_min",
              "vmap_seed_speedup_max", "machine", "targets")
REPLAY_MEASURES = ("lane_steps_saved", "best_lr_agreement", "auc_loss_at_choice", "verdicts_changed",
                   "lr_sensitivity_error")
REPLAY_KEYS = (*REPLAY_MEASURES, "cells", "rule", "tuning_cell", "lanes", "lanes_pruned", "n_choices",
               "choices_changed")


def test_attention_api():
    assert set(VARIANT_NAMES) <= set(attention.VARIANTS)
    assert attention.variant_names()[:3] == ["scaled", "unscaled", "additive"]
    q, k, v = (jax.random.normal(jax.random.PRNGKey(i), (2, 3, 8)) for i in range(3))
    for name in attention.variant_names():
        params = attention.init_params(name, jax.random.PRNGKey(0), 8)
        assert isinstance(params, dict)
        assert attention.scores(name, params, q, k).shape == (2, 3, 3)
        out, weights = attention.attend(name, params, q, k, v, mask=None)
        assert out.shape == (2, 3, 8) and weights.shape == (2, 3, 3)


def test_attention_statistics():
    for name in STAT_FUNCTIONS:
        assert callable(getattr(attention.stats, name)), name
    logits = jnp.arange(12.0).reshape(3, 4)
    weights = jax.nn.softmax(logits)
    summary = attention.stats.row_summary(logits, weights, mask=None, row_mask=None)
    assert set(summary) == set(MEASUREMENTS[2:])


def test_statistics_over_seeds():
    from experiments.analysis.stats import mean_ci, paired_diff_ci

    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5, 2.0])
    assert mean_ci(a) is not None and paired_diff_ci(a, b) is not None


def console_scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.mark.parametrize("script", sorted(console_scripts()))
def test_every_command_has_its_main(script):
    module, _, function = console_scripts()[script].partition(":")
    assert module.startswith("experiments.") and function == "main"
    main = getattr(importlib.import_module(module), function)
    assert callable(main)


@pytest.mark.parametrize("table", sorted(COLUMNS))
def test_reference_tables_hold_their_columns(table):
    names = set(pq.read_schema(REFERENCE / f"{table}.parquet").names)
    assert not set(COLUMNS[table]) - names


def test_reference_bench_keys():
    bench = json.loads((REFERENCE / "bench.json").read_text())
    assert not set(BENCH_KEYS) - set(bench)
    for lanes in ("scaled_dk64", "additive_dk1024"):
        assert {"1", "4", "16", "32"} <= set(bench["lane_throughput"][lanes])


def test_reference_pruning_replay_keys():
    replay = json.loads((REFERENCE / "pruning_replay.json").read_text())
    assert not set(REPLAY_KEYS) - set(replay)
    assert {"mean", "max"} <= set(replay["auc_loss_at_choice"])
    assert replay["cells"]
    for name, cell in replay["cells"].items():
        optimizer, _, task = name.partition("_")
        assert optimizer and task and not set(REPLAY_MEASURES) - set(cell), name
