"""The speed benchmark end to end on a tiny configuration: every contract key
of bench.json is measured (none invented), and the table names each target."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from experiments.app import bench_job as bench
from experiments.app.command_configs import BenchConfig
from experiments.app.errors import CONF_DIR
from experiments.instruments import bench_measure
from experiments.instruments.bench_measure import best_time, sweep_wall

QUICK = ["bench_size=quick"]  # conf/bench_size/quick.yaml: every figure on a tiny model


def compose_bench(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("bench", overrides=overrides)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The bench's quick mode, run as the command runs it (composed, validated, run)."""
    results = tmp_path_factory.mktemp("bench")
    cfg = compose_bench([*QUICK, f"results_dir={results}"])
    bench.validate(cfg)
    return bench.run(cfg), results, cfg


@pytest.mark.slow
def test_bench_json_has_every_contract_key(report):
    figures, results, _ = report
    written = json.loads((results / "bench.json").read_text())
    for key in bench.TARGETS:
        assert key in written and written[key] == pytest.approx(figures[key])
        assert isinstance(written[key], float) and math.isfinite(written[key]) and written[key] > 0
    assert written["machine"]["cores"] >= 1


@pytest.mark.slow
def test_figures_are_consistent(report):
    f, _, cfg = report
    assert f["harness_vs_bare_ratio"] == pytest.approx(f["bare_step_s"] / f["harness_step_s"])
    assert f["vmap_seed_speedup_min"] <= f["vmap_seed_speedup"] <= f["vmap_seed_speedup_max"]
    assert f["vmap_seed_speedup_repeats"] == cfg.vmap_repeats
    steps = [bench._train_cfg(cfg, extra) for extra in ([f"d_k={cfg.d_k}"], list(cfg.heavy))]
    names = [f"{c.attention.name}_dk{c.d_k}" for c in steps]
    assert sorted(f["lane_throughput"]) == sorted(f["lane_throughput_rounds"]) == sorted(names)
    light, heavy = (f["lane_throughput"][name] for name in names)
    assert sorted(light, key=int) == sorted(heavy, key=int) == [str(n) for n in sorted(cfg.lane_counts)]
    assert f["lane_speedup_16"] == pytest.approx(light["16"] / light["1"])
    assert f["lane_speedup_32"] == pytest.approx(light["32"] / light["1"])
    rounds = f["lane_throughput_rounds"][names[0]]  # the count's median over its rounds
    assert all(len(v) == cfg.lane_rounds and light[k] == pytest.approx(np.median(v)) for k, v in rounds.items())
    low, high = f["lane_speedup_16_range"]
    assert low == pytest.approx(min(a / b for a, b in zip(rounds["16"], rounds["1"]))) and low <= high
    assert f["single_lane_step_s"] == pytest.approx(1 / light["1"])
    assert f["heavy_lane_ratio_min"] == pytest.approx(min(v / heavy["1"] for v in heavy.values()))
    assert f["compile_cached_over_cold"] == pytest.approx(f["compile_cached_s"] / f["compile_cold_s"])
    # the cache must actually be used: counted by JAX's events, not judged from
    # times (on a busy machine a cached compile can take half the cold one's time)
    assert f["compile_cache_hits_cold"] == 0 and f["compile_cache_requests_cold"] >= 2
    assert f["compile_cache_hits_cached"] == f["compile_cache_requests_cached"] >= 2
    assert f["fraction_of_matmul_peak"] == pytest.approx(
        f["train_step_gflops"] / f["matmul_peak_gflops"])
    assert 0.05 < f["peak_rss_gb"] < 8  # a JAX process: hundreds of MB


def test_table_names_every_target():
    figures = {key: target for key, (_, target, _) in bench.TARGETS.items()}
    figures["claim_quick_wall_s"] = None
    text = bench.table(figures)
    assert text.count(" yes") == len(bench.TARGETS) - 1 and "not run" in text


def test_best_time_keeps_the_fastest_call(monkeypatch):
    """On a clock that only the calls move (a busy machine's sleeps overshoot)."""
    clock = [0.0]
    monkeypatch.setattr(bench_measure.time, "perf_counter", lambda: clock[0])
    pauses = iter([0.08, 0.06, 0.01, 0.04])  # the first call is the warm-up

    def call():
        clock[0] += next(pauses)

    assert best_time(call, min_time_s=0.0, min_reps=3) == pytest.approx(0.01)


def test_peak_memory_is_the_commands_own():
    """A child forked from a large process inherits that process's high-water
    mark in ru_maxrss; the figure must be the command's own memory."""
    held = np.ones(100_000_000)  # 800 MB in this process
    held[::512] = 2.0  # touched, so resident
    small = sweep_wall([sys.executable, "-c", "pass"], dict(os.environ))
    grows = sweep_wall([sys.executable, "-c", "import numpy as np; print(np.ones(40_000_000).sum())"],
                       dict(os.environ))
    assert small["peak_rss_gb"] < 0.2 and held.sum() > 0
    assert 0.32 < grows["peak_rss_gb"] < 0.2 + 0.32  # its 320 MB array, not this process's 800


def test_claim_quick_overrides_take_hydras_grammar(monkeypatch):
    """A list value's commas are not a sweep (Hydra's parser, as the train pre-flight):
    validate composes one job per swept value, each with the whole list."""
    composed = []
    real = bench._train_cfg
    monkeypatch.setattr(bench, "_train_cfg", lambda cfg, extra: composed.append(extra) or real(cfg, extra))
    cfg = OmegaConf.structured(BenchConfig())
    cfg.claim_quick_overrides = ["optimizer.lr_grid=[1e-3,3e-3]", "d_k=8,16"]
    bench.validate(cfg)
    jobs = composed[-2:]  # after the bench's own configs: the sweep's jobs
    assert jobs == [["optimizer.lr_grid=[1e-3,3e-3]", "d_k=8"], ["optimizer.lr_grid=[1e-3,3e-3]", "d_k=16"]]
    last = real(cfg, jobs[-1])
    assert list(last.optimizer.lr_grid) == [1e-3, 3e-3] and last.d_k == 16


def test_quick_mode_measures_the_full_benchs_figures_in_small():
    """bench_size=quick changes sizes only: the same keys, the full bench's lane counts
    (lane_speedup_16 and _32 need them), a smaller model; the default is the full bench."""
    full, quick = compose_bench([]), compose_bench(QUICK)
    assert full == compose_bench(["bench_size=full"])
    own = OmegaConf.load(os.path.join(CONF_DIR, "bench.yaml"))
    assert all(full[key] == own[key] for key in own if key not in ("defaults", "hydra"))
    assert set(full) == set(quick) and {16, 32, 1} <= set(quick.lane_counts)
    assert quick.d_k < full.d_k and quick.peak_d_k < full.peak_d_k and quick.min_time_s < full.min_time_s
    assert quick.claim_quick and not quick.claim_quick_warm  # figures 4 and 6 measured, once
    bench.validate(quick)
    assert compose_bench([*QUICK, "d_k=16"]).d_k == 16  # the command line still has the last word


@pytest.mark.parametrize("key, value, message", [
    ("n_seeds", 0, "n_seeds: must be >= 1"),
    ("matmul_sizes", [], "matmul_sizes: must be a non-empty list"),
    ("min_time_s", 0.0, "min_time_s: must be a finite number > 0"),
    ("lane_rounds", 0, "lane_rounds: must be >= 1"),
    ("train", ["attention=nope"], "train: attention: unknown option 'nope'"),
    ("claim_quick_overrides", ["d_k"], "claim_quick_overrides: each must be key=value"),
    ("claim_quick_overrides", ["attention=scaled,nope"], "claim_quick_overrides: attention: unknown"),
])
def test_validate(key, value, message):
    cfg = OmegaConf.structured(BenchConfig())
    cfg[key] = value
    with pytest.raises(ValueError, match=message):
        bench.validate(cfg)
