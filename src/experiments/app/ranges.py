"""Range checks of the keys beside the model: seeds, `runtime.*`, the
launchers' keys (conf/launcher/*.yaml, Hydra's `hydra.launcher.*` and
`hydra.sweeper.*`), keys set together that contradict each other, and the
seeds of a sweep's jobs taken together.

Each raises ValueError("<key>: <what is allowed>, got <value>") through the
project's one check (`attention.checks.check`), which the pre-flight prints as
one line with exit code 2.
"""
from __future__ import annotations

import math
from typing import Iterable

from omegaconf import DictConfig, OmegaConf

from attention.checks import check
from experiments.app.preflight import check_output_dir
from experiments.store.results import run_dir

STEPS_MAX = 2**31 - 1  # the step counter is int32 where it is traced (optax's count, the loop's bounds)
EVALS_MAX = 10**6  # the evaluation steps and history rows of a run are held in memory


def _at_least(key: str, value, low: int, null_ok: bool = False) -> None:
    if value is None and null_ok:
        return
    check(value is not None and value >= low, key, f"must be >= {low}" + (" or null" if null_ok else ""),
          value)


def validate_runtime(r: DictConfig | None) -> None:
    if r is None:
        return
    _at_least("runtime.threads", r.threads, 1, null_ok=True)
    # 0: every lane in one block, as on an accelerator
    _at_least("runtime.lane_block", r.get("lane_block"), 0, null_ok=True)
    if r.compile_cache_dir is not None:
        check(bool(str(r.compile_cache_dir).strip()), "runtime.compile_cache_dir",
              "must be a non-empty path or null", r.compile_cache_dir)


# hydra.launcher.<key>: (least value, whether null is allowed); keys a launcher lacks are skipped
_LAUNCHER_INTS = {
    "timeout_min": (1, False), "cpus_per_task": (1, True), "gpus_per_node": (0, True),
    "tasks_per_node": (1, False), "mem_gb": (1, True), "nodes": (1, False),
    "signal_delay_s": (0, False), "max_num_timeout": (0, False), "array_parallelism": (1, False),
    "cpus_per_gpu": (1, True), "gpus_per_task": (0, True), "verbose": (0, False),
}
_JOBLIB_CHOICES = {"prefer": ("processes", "threads"), "require": (None, "sharedmem"),
                   "backend": (None, "loky", "multiprocessing", "threading")}


def validate_launcher(cfg: DictConfig) -> None:
    """hydra.launcher.* and hydra.sweeper.max_batch_size, when the config carries Hydra's part."""
    launcher = OmegaConf.select(cfg, "hydra.launcher")
    if launcher is None:
        return
    for key, (low, null_ok) in _LAUNCHER_INTS.items():
        if key in launcher:
            _at_least(f"hydra.launcher.{key}", launcher[key], low, null_ok)
    if "joblib" in str(launcher.get("_target_", "")):
        n = launcher.n_jobs
        check(n is not None and (n >= 1 or n == -1), "hydra.launcher.n_jobs",
              "must be >= 1 (worker processes), or -1 for one per core", n)
        for key, allowed in _JOBLIB_CHOICES.items():
            check(launcher[key] in allowed, f"hydra.launcher.{key}",
                  f"must be one of {', '.join('null' if a is None else a for a in allowed)}", launcher[key])
        timeout = launcher.timeout
        check(timeout is None or (math.isfinite(timeout) and timeout > 0), "hydra.launcher.timeout",
              "must be a finite number > 0 or null", timeout)
    batch = OmegaConf.select(cfg, "hydra.sweeper.max_batch_size")
    _at_least("hydra.sweeper.max_batch_size", batch, 1, null_ok=True)


def validate_lr(cfg: DictConfig) -> None:
    """optimizer.lr given on the command line beside optimizer.lr_grid would be ignored."""
    if cfg.optimizer.get("lr_grid") is None:
        return
    given = OmegaConf.select(cfg, "hydra.overrides.task") or []
    lr = [o for o in given if o.split("=", 1)[0].lstrip("+~") == "optimizer.lr"]
    check(not lr, "optimizer.lr", "is not used when optimizer.lr_grid is set (each lane trains at a "
          "rate of the grid); drop optimizer.lr, or add its rate to optimizer.lr_grid",
          lr[0].split("=", 1)[1] if lr else None)


def validate_c_grid(cfg: DictConfig) -> None:
    """attention.c_grid trains each multiplier as a lane, its c as data in the lane's state: only
    where that c is all the program reads of the variant (a one-layer model whose layer takes
    the bilinear factor as data: model.reassociate); attention.c beside it would be ignored."""
    if cfg.attention.get("c_grid") is None:
        return
    check(cfg.model.n_layers == 1 and bool(cfg.model.get("reassociate")), "attention.c_grid",
          "needs model.n_layers=1 and model.reassociate=true (each lane's multiplier is data there); "
          "elsewhere sweep attention.c with -m instead",
          f"n_layers={cfg.model.n_layers}, reassociate={cfg.model.get('reassociate')}")
    given = OmegaConf.select(cfg, "hydra.overrides.task") or []
    c = [o for o in given if o.split("=", 1)[0].lstrip("+~") == "attention.c"]
    check(not c, "attention.c", "is not used when attention.c_grid is set (each lane trains at a "
          "multiplier of the grid); drop attention.c, or add it to attention.c_grid",
          c[0].split("=", 1)[1] if c else None)


def validate_jobs(jobs: list[DictConfig]) -> None:
    """Checks over every job of a training command line: the seeds, and that each
    results_dir's runs/ folder can be written (not a file, not read-only)."""
    validate_seed_ranges(jobs)
    for results_dir in sorted({str(cfg.results_dir) for cfg in jobs}):
        check_output_dir("results_dir", run_dir(results_dir, "any").parent)


def validate_seed_ranges(jobs: Iterable[DictConfig]) -> None:
    """Jobs that differ only in `seed` must not train a seed twice: with train.n_seeds=S a
    job trains seed .. seed+S-1, so seed=0,1 with S=2 would train seed 1 in both."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for cfg in jobs:
        rest = OmegaConf.to_container(cfg, resolve=False)
        rest.pop("hydra", None)
        rest.pop("seed", None)
        groups.setdefault(repr(rest), []).append((int(cfg.seed), int(cfg.train.n_seeds)))
    for spans in groups.values():
        spans = sorted(set(spans))
        for (a, n), (b, _) in zip(spans, spans[1:]):
            check(a + n <= b, "seed", f"swept seeds {a} and {b} overlap with train.n_seeds={n} "
                  f"(a job trains seed .. seed+{n - 1}); sweep seeds {n} apart "
                  f"(e.g. seed={a},{a + n}) or lower train.n_seeds", f"{a},{b}")


def check_fresh_seed_reading(cfg: DictConfig, min_seeds: int = 1) -> None:
    """The keys a study read on fresh seeds with bootstrap intervals declares (conf/temperature.yaml,
    conf/init_gain.yaml): its seeds, draws, level, alpha and margin."""
    check(cfg.confirm_n_seeds >= min_seeds, "confirm_n_seeds", f"must be >= {min_seeds}", cfg.confirm_n_seeds)
    check(cfg.confirm_seed_from >= 1, "confirm_seed_from", "must be >= 1 (the seeds below it choose)",
          cfg.confirm_seed_from)
    check(cfg.n_boot >= 100, "n_boot", "must be >= 100", cfg.n_boot)
    check(0 < cfg.level < 1, "level", "must be in (0, 1)", cfg.level)
    check(0 < cfg.alpha < 0.5, "alpha", "must be in (0, 0.5)", cfg.alpha)
    check(cfg.margin > 0, "margin", "must be > 0", cfg.margin)
