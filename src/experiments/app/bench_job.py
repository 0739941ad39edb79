"""The speed benchmark as a job: compose training configs, run every
measurement of instruments.bench_measure, write bench.json and a table of
figures against their targets. `python -m experiments.bench` runs it."""
from __future__ import annotations

import json
import math
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from attention.checks import check
from experiments.app import config, preflight, progress, runtime  # config: registers the schemas
from experiments.app.errors import CONF_DIR, ConfigError, explain
from experiments.instruments import bench_measure as measure
from experiments.store.results import atomic_write_text, package_versions
from experiments.training import memory

# key -> (label, target, direction): direction +1 means "at least", -1 "at most"
TARGETS = {
    "harness_vs_bare_ratio": ("harness / bare train-step throughput", 0.9, +1),
    "vmap_seed_speedup": ("vmapped seeds / sequential seeds throughput", 2.0, +1),
    "compile_cached_over_cold": ("compile time cached / cold", 0.2, -1),
    "claim_quick_wall_s": ("experiment=claim_quick wall time (s)", 120.0, -1),
    "fraction_of_matmul_peak": ("train-step GFLOP/s / matmul peak", 0.5, +1),
    "peak_rss_gb": ("peak resident memory of the quick sweep (GB)", 2.0, -1),
    "lane_speedup_16": ("16 lanes / 1 lane run-steps per s (light step)", 3.0, +1),
    "lane_speedup_32": ("32 lanes / 1 lane run-steps per s (light step)", 5.0, +1),
    "heavy_lane_ratio_min": ("most lanes / 1 lane run-steps per s (heavy step)", 1.0, +1),
}


def validate(cfg: DictConfig) -> None:
    for key in ("d_k", "n_seeds", "peak_d_k", "vmap_repeats", "lane_rounds"):
        check(cfg[key] >= 1, key, "must be >= 1", cfg[key])
    check(bool(cfg.matmul_sizes) and min(cfg.matmul_sizes) >= 1, "matmul_sizes",
          "must be a non-empty list of sizes >= 1", list(cfg.matmul_sizes))
    have, source = memory.available_bytes()
    if have is not None and 3 * 4 * max(cfg.matmul_sizes) ** 2 > have:
        raise ValueError(f"matmul_sizes: three float32 matrices of {max(cfg.matmul_sizes)}^2 need "
                         f"{12 * max(cfg.matmul_sizes) ** 2 / 1e9:.1f} GB, {source} allows {have / 1e9:.1f} GB")
    check(bool(cfg.lane_counts) and min(cfg.lane_counts) >= 1 and 1 in cfg.lane_counts, "lane_counts",
          "must be a list of counts >= 1 that holds 1", list(cfg.lane_counts))
    check(math.isfinite(cfg.min_time_s) and cfg.min_time_s > 0, "min_time_s", "must be a finite number > 0",
          cfg.min_time_s)
    _train_cfg(cfg, [])  # the base overrides must compose
    # every training config the bench builds composes, is in range and fits in memory
    lanes = f"train.n_seeds={max(cfg.lane_counts)}"
    for key, extra in (("d_k", [f"d_k={cfg.d_k}"]),
                       ("n_seeds", [f"d_k={cfg.d_k}", f"train.n_seeds={cfg.n_seeds}"]),
                       ("peak_d_k", [f"d_k={cfg.peak_d_k}"]), ("heavy", list(cfg.heavy)),
                       ("lane_counts", [f"d_k={cfg.d_k}", lanes]), ("lane_counts", [*cfg.heavy, lanes])):
        try:
            _train_cfg(cfg, extra)
        except ValueError as exc:
            raise ValueError(f"{key}: {str(exc).removeprefix('train: ')}") from None
    try:
        swept = preflight.expand_overrides(list(cfg.claim_quick_overrides))
    except ConfigError as exc:
        raise ValueError(f"claim_quick_overrides: each must be key=value[,value...] ({exc})") from None
    try:  # every value of every swept key composes, as the train pre-flight checks them
        for job in preflight.coverage(swept) if swept else []:  # none: the base, composed above
            _train_cfg(cfg, job)
    except ValueError as exc:
        raise ValueError(f"claim_quick_overrides: {str(exc).removeprefix('train: ')}") from None


def _train_cfg(cfg: DictConfig, extra: list[str]) -> DictConfig:
    overrides = [*cfg.train, "logger=none", "progress=false", *extra]
    try:
        if GlobalHydra.instance().is_initialized():  # inside the pre-flight or the job
            train_cfg = compose("train", overrides=overrides)
        else:
            with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
                train_cfg = compose("train", overrides=overrides)
    except Exception as exc:  # noqa: BLE001 - Hydra/OmegaConf raise many types
        raise ValueError(f"train: {explain(exc)}") from None
    config.validate(train_cfg)
    return train_cfg


def measure_all(cfg: DictConfig, scratch: Path, log=progress.say) -> dict:
    """Every bench.json figure, measurement by measurement (the seven steps the log names)."""
    out: dict = {}
    caches = measure.lane_caches()  # every measurement's programs, one cache per lane count
    log("1/7 harness step against a bare jitted step")
    steps = measure.step_times(_train_cfg(cfg, [f"d_k={cfg.d_k}"]), cfg.min_time_s, caches)
    out.update(steps, harness_vs_bare_ratio=steps["bare_step_s"] / steps["harness_step_s"])

    log(f"2/7 {cfg.n_seeds} seeds vmapped against one after another")
    out.update(measure.seed_group_times(_train_cfg(cfg, [f"d_k={cfg.d_k}"]), cfg.n_seeds,
                                        cfg.vmap_repeats, caches))

    log("3/7 compile time, cold and with the persistent cache (fresh processes)")
    out.update(_compile_figures(cfg, scratch))

    log(f"4/7 float32 matmul peak and the train step at d_k={cfg.peak_d_k}")
    out.update(measure.matmul_peak_flops(list(cfg.matmul_sizes), cfg.min_time_s))
    out.update(_peak_figures(cfg, caches, out["matmul_peak_gflops"]))

    log(f"5/7 lanes: run-steps per s at {list(cfg.lane_counts)} lanes, light and heavy step")
    out.update(lane_figures(cfg, caches))

    out.update(claim_quick_wall_s=None, peak_rss_gb=None)
    if cfg.claim_quick:
        out.update(_claim_quick_figures(cfg, scratch, log))
    return out


def _compile_figures(cfg: DictConfig, scratch: Path) -> dict:
    """One job's compile time in fresh processes: cold, then with the persistent cache it filled."""
    probe = [*cfg.train, f"d_k={cfg.d_k}", "attention=additive"]  # not compiled by the steps before
    cold = measure.compile_probe(str(scratch / "cache"), probe)
    cached = measure.compile_probe(str(scratch / "cache"), probe)
    return dict(compile_cold_s=cold["compile_s"], compile_cached_s=cached["compile_s"],
                xla_compile_cold_s=cold["xla_compile_s"], xla_compile_cached_s=cached["xla_compile_s"],
                compile_cache_requests_cold=cold["cache_requests"], compile_cache_hits_cold=cold["cache_hits"],
                compile_cache_requests_cached=cached["cache_requests"],
                compile_cache_hits_cached=cached["cache_hits"],
                compile_cached_over_cold=cached["compile_s"] / cold["compile_s"])


def _peak_figures(cfg: DictConfig, caches: dict, matmul_peak_gflops: float) -> dict:
    """The train step at peak_d_k: its FLOPs, times and throughput against the matmul peak."""
    big = measure.step_times(_train_cfg(cfg, [f"d_k={cfg.peak_d_k}"]), cfg.min_time_s, caches)
    harness_gflops = big["step_flops"] / big["harness_step_s"] / 1e9
    return dict(peak_step_flops=big["step_flops"], peak_harness_step_s=big["harness_step_s"],
                peak_bare_step_s=big["bare_step_s"], train_step_gflops=harness_gflops,
                bare_step_gflops=big["step_flops"] / big["bare_step_s"] / 1e9,
                fraction_of_matmul_peak=harness_gflops / matmul_peak_gflops)


def _claim_quick_figures(cfg: DictConfig, scratch: Path, log) -> dict:
    """experiment=claim_quick end to end in a fresh process, cold cache (and warm, if asked)."""
    log("6/7 experiment=claim_quick end to end, cold compilation cache")
    command = [sys.executable, "-m", "experiments.train", "-m", *cfg.train, *cfg.claim_quick_overrides,
               f"results_dir={scratch / 'claim_quick'}", "progress=false"]
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(scratch / "sweep_cache")}
    cold = measure.sweep_wall(command, env)
    out = dict(claim_quick_wall_s=cold["wall_s"], peak_rss_gb=cold["peak_rss_gb"])
    if cfg.claim_quick_warm:
        log("7/7 the same sweep again (overwrite=true), warm cache")
        warm = measure.sweep_wall([*command, "overwrite=true"], env)
        out.update(claim_quick_warm_wall_s=warm["wall_s"], peak_rss_warm_gb=warm["peak_rss_gb"])
    return out


def lane_figures(cfg: DictConfig, caches: dict | None = None) -> dict:
    """lane_throughput (run-steps/s per lane count, the median over rounds) on the
    light step (the bench's d_k) and the heavy one (additive at d_k=1024), the
    speedups over one lane, and each speedup's range over the rounds."""
    counts = sorted(set(cfg.lane_counts))
    out, tables, rounds = {}, {}, {}
    for kind, extra in (("light", [f"d_k={cfg.d_k}"]), ("heavy", list(cfg.heavy))):
        train_cfg = _train_cfg(cfg, extra)
        name = f"{train_cfg.attention.name}_dk{train_cfg.d_k}"
        measured = measure.lane_throughput(train_cfg, counts, cfg.min_time_s, cfg.lane_rounds, caches)
        tables[kind] = out.setdefault("lane_throughput", {})[name] = measured["median"]
        rounds[kind] = out.setdefault("lane_throughput_rounds", {})[name] = measured["rounds"]
    light, heavy = tables["light"], tables["heavy"]
    out["single_lane_step_s"] = 1.0 / light["1"]
    out["heavy_lane_ratio_min"] = min(v / heavy["1"] for v in heavy.values())
    for n in (16, 32):
        out[f"lane_speedup_{n}"] = light[str(n)] / light["1"] if str(n) in light else None
        if str(n) in light:  # the same ratio round by round: how far one round can move it
            ratios = [a / b for a, b in zip(rounds["light"][str(n)], rounds["light"]["1"])]
            out[f"lane_speedup_{n}_range"] = [min(ratios), max(ratios)]
    return out


def machine() -> dict:
    import jax

    return {"platform": platform.platform(), "processor": platform.processor(),
            "cores": runtime.available_cores(), "device": str(jax.devices()[0]),
            "backend": jax.default_backend(), "versions": package_versions()}


def table(figures: dict) -> str:
    lines = [f"{'figure':<48} {'measured':>10} {'target':>9}  met", "-" * 74]
    for key, (label, target, direction) in TARGETS.items():
        value = figures.get(key)
        if value is None:
            lines.append(f"{label:<48} {'not run':>10} {'':>9}")
            continue
        met = value >= target if direction > 0 else value <= target
        sign = ">=" if direction > 0 else "<="
        lines.append(f"{label:<48} {value:>10.3f} {sign + format(target, 'g'):>9}  "
                     f"{'yes' if met else 'NO'}")
    return "\n".join(lines)


def run(cfg: DictConfig) -> dict:
    # this process as a training job sets itself up: devices, threads, cache
    runtime.configure(_train_cfg(cfg, []).runtime)
    scratch = Path(tempfile.mkdtemp(prefix="attn-bench-"))
    try:
        figures = measure_all(cfg, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = {**figures, "machine": machine(),
              "targets": {k: {"target": t, "at_least": d > 0} for k, (_, t, d) in TARGETS.items()}}
    path = Path(cfg.results_dir) / "bench.json"
    atomic_write_text(path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(table(figures))
    print(f"wrote {path}")
    return report
