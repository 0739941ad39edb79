"""How a job uses this machine: JAX's persistent compilation cache, and
threads per job. Neither changes a number, only how fast it comes.

* Compilation dominates a quick sweep on a CPU (seconds per configuration
  against about a second of training), so compiled programs are kept on disk
  and a repeated sweep, or the next seed group of one, loads them instead.
* Parallel jobs on one machine (joblib, submitit_local) each get
  cores / parallel jobs threads, so that N jobs do not fight over the cores
  with N full-size thread pools. XLA's CPU client sizes its pool from the
  process's CPU affinity, and BLAS/OpenMP libraries from their environment
  variables; both must be set before the backend starts, which is why this
  runs at the top of each job, before the first computation.
* A job's cores are also presented as that many CPU devices, over which
  the seeds of a group are spread (training.lane_axis): a small model's step keeps
  one core busy, so S seeds on k cores run k at a time.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from experiments.app.errors import SWEEP_JOBS_ENV, fault

log = logging.getLogger(__name__)

APP = "attention-scaling"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def default_cache_dir() -> Path:
    """JAX_COMPILATION_CACHE_DIR when set, else <user cache dir>/attention-scaling/jax
    (XDG_CACHE_HOME, else ~/.cache)."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / APP / "jax"


def cache_dir(runtime_cfg) -> Path:
    return Path(runtime_cfg.compile_cache_dir or default_cache_dir()).expanduser()


def configure_cache(enabled: bool, path: Path | None) -> None:
    """Turn JAX's persistent compilation cache on (at `path`) or off.

    Every program is cached, however quick its compile: ours take 1-10 s each
    and a sweep has dozens (JAX's default threshold of 1 s would skip some).
    JAX opens its cache once per process, so a change is followed by a reset.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    global _cache_setting
    setting = (enabled, str(path) if enabled else None)
    if setting == _cache_setting:
        return
    if enabled:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # HOME read-only, a file in the way, /proc
            log.warning("runtime.compile_cache_dir: cannot create %s (%s); running without the "
                        "compilation cache", path, exc.strerror or exc)
            enabled, setting = False, (False, None)
    jax.config.update("jax_enable_compilation_cache", enabled)
    if enabled:
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    if _cache_setting is not None:
        compilation_cache.reset_cache()
    _cache_setting = setting


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parallel_jobs() -> int:
    """How many jobs of this sweep run at once on this machine (Hydra's launcher)."""
    from hydra.core.hydra_config import HydraConfig

    try:
        launcher = HydraConfig.get().launcher
    except ValueError:  # not under Hydra
        return 1
    target = str(launcher.get("_target_", "")).lower()
    if "joblib" in target:
        n = int(launcher.get("n_jobs", 1) or 1)
        return available_cores() if n < 0 else n
    if "submitit" in target and "local" in target:
        # submitit's local executor starts every job of a batch at once; the
        # preset caps a batch with the sweeper's max_batch_size
        batch = HydraConfig.get().sweeper.get("max_batch_size")
        return max(1, int(batch or os.environ.get(SWEEP_JOBS_ENV, "1") or 1))
    return 1  # basic launcher: one job at a time; a SLURM job owns its allocation


def _slurm_cpus() -> int | None:
    """SLURM's --cpus-per-task when this job runs under SLURM and its affinity
    was not already restricted to it (cgroups usually do that)."""
    cpus = os.environ.get("SLURM_CPUS_PER_TASK")
    return int(cpus) if cpus and cpus.isdigit() and int(cpus) < available_cores() else None


def threads_per_job(requested: int | None, n_parallel: int, cores: int) -> int:
    """`requested`, or an equal share of the cores (at least 1)."""
    return requested if requested else max(1, cores // max(1, n_parallel))


def _backend_started() -> bool:
    # No public API says this; the private one is guarded so that a JAX
    # upgrade that moves it only costs the thread limit, not the run.
    try:
        from jax._src.xla_bridge import backends_are_initialized
    except ImportError:
        return True
    return backends_are_initialized()


def limit_threads(n: int, job_num: int = 0) -> None:
    """Give this process `n` cores (slot job_num % (cores // n)) and tell BLAS/OpenMP."""
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if cores and n < len(cores):
        slot = job_num % max(1, len(cores) // n)
        os.sched_setaffinity(0, cores[slot * n:(slot + 1) * n])


def configure(runtime_cfg, job_num: int | None = None) -> None:
    """Apply `runtime.*` to this process: threads and CPU devices once, before
    JAX starts (it cannot change them afterwards); the cache every time."""
    global _threads_set
    if not _threads_set:
        _threads_set = True
        n_parallel = parallel_jobs()
        requested = runtime_cfg.threads or _slurm_cpus()
        n = threads_per_job(requested, n_parallel, available_cores())
        if _backend_started():
            if requested or n_parallel > 1:
                log.warning("runtime.threads: JAX already started in this process; not limited")
        else:
            if requested or n_parallel > 1:
                limit_threads(n, job_num or 0)
            if runtime_cfg.shard_seeds:
                set_cpu_devices(n)
    configure_cache(runtime_cfg.compile_cache, cache_dir(runtime_cfg))
    check_platform()


def check_platform() -> None:
    """Start JAX's backend now, before anything is written, so that a platform the
    machine lacks (JAX_PLATFORMS=tpu on a CPU host) ends in one line, not in a run
    folder marked failed."""
    import jax

    try:
        jax.devices()
    except Exception as exc:  # noqa: BLE001 - RuntimeError, or an AssertionError for a plugin-less name
        platforms = os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME")
        named = f"JAX_PLATFORMS={platforms!r}" if platforms else "JAX"
        reason = (str(exc).split(" (set JAX_PLATFORMS")[0].strip().splitlines() or [type(exc).__name__])[0]
        fault(f"{named}: no such accelerator platform on this machine ({reason}); "
              "unset JAX_PLATFORMS or name one that is installed, e.g. JAX_PLATFORMS=cpu")


def set_cpu_devices(n: int) -> None:
    """Present this job's n cores as n CPU devices (training.lane_axis spreads lanes over them)."""
    import jax

    jax.config.update("jax_num_cpu_devices", n)


_threads_set = False
_cache_setting: tuple | None = None
