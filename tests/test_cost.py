"""experiments.cost: the quick preset writes every column; oversized cells are skipped."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments import cost as cost_command
from experiments.instruments import cost

ROOT = Path(__file__).resolve().parents[1]


def make_cfg(**overrides):
    cfg = OmegaConf.structured(cost.CostConfig)
    cfg.progress = False
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


def test_quick_preset_from_the_command_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.cost", "quick=true",
                           f"results_dir={tmp_path}"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    frame = pd.read_parquet(tmp_path / "cost.parquet")
    assert set(cost.COLUMNS) <= set(frame.columns)
    assert len(frame) == 3 * 2 * 2 * 2 and not frame.skipped.any()
    assert (frame.time_median_s > 0).all() and (frame.temp_bytes >= 0).all()
    assert frame[frame.impl == "scaled"].time_ratio.eq(1).all()
    additive = frame[frame.impl == "additive"]
    assert (additive.predicted_memory_ratio == additive.d_k).all()
    assert (additive.memory_ratio > 5).all()  # the [B, n, n, d_hidden] layer shows


def test_tiny_budget_skips_with_a_note(tmp_path):
    cfg = make_cfg(ns=[64, 128], d_ks=[16], impls=["scaled", "additive"], memory_budget_gb=1e-5,
                   results_dir=str(tmp_path))
    frame = cost_command.run(cfg)
    assert frame.skipped.all() and frame.note.str.contains(r"^predicted .* GB > budget .* GB$").all()
    assert pd.read_parquet(tmp_path / "cost.parquet").shape == frame.shape


def test_budget_skips_only_the_additive_cells(tmp_path):
    # 4 * 1 * 64^2 * 16 * 3 bytes ~ 0.8 MB for additive; scaled's [B, n, n] is 16x smaller
    cfg = make_cfg(ns=[64], d_ks=[16], batch=1, repeats=1, warmup=0, memory_budget_gb=2e-4,
                   impls=["scaled", "additive"], results_dir=str(tmp_path))
    frame = cost_command.run(cfg)
    assert not frame[frame.impl == "scaled"].skipped.any()
    assert frame[frame.impl == "additive"].skipped.all()


def test_resource_exhausted_is_a_skip(monkeypatch):
    def boom(impl, mode):
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")
    monkeypatch.setattr(cost, "benchmark_fn", boom)
    row = cost.measure_cell("scaled", "forward", 64, 16, make_cfg(), cost.grid(make_cfg()))
    assert row["skipped"] and row["note"].startswith("RESOURCE_EXHAUSTED")


def test_validate_errors():  # the command's one line: test_bad_input's cost cases
    with pytest.raises(ValueError, match=r"^batch: must be >= 1, got 0$"):
        cost.validate(make_cfg(batch=0))
