"""Cost benchmark: wall time and memory of scaled vs additive vs the library reference.

    python -m experiments.cost results_dir=results              # full grid (minutes)
    python -m experiments.cost quick=true results_dir=/tmp/c    # n in {64, 256}, d_k in {16, 64}

docs/CLAIM.md sub-claim 5: dot-product attention is "much faster and more
space-efficient in practice" than additive, whose [B, n_q, n_k, d_hidden]
tanh layer costs O(n^2 d_hidden) memory against the dot product's O(n^2).
One head, q = k = v of shape [batch, n, d_k] (n_q = n_k = n, d_v = d_k,
d_hidden = d_k), float32, jitted. Implementations:
  scaled     attention.attend("scaled", ...)
  additive   attention.attend("additive", ...), lecun_normal params
  reference  jax.nn.dot_product_attention (the library's own kernel)
Modes: forward (the output) and forward_backward (the gradient of sum(out)
w.r.t. q, k, v and the parameters). Time: median, min and max over
`repeats` runs after `warmup` runs (block_until_ready), at most `max_seconds`
of repeats per cell (the `repeats` column holds the count actually run).
Memory: XLA's compiled memory analysis (temp, argument, output bytes) and a
measured peak: on a device with memory_stats() its peak_bytes_in_use (a
process high-water mark: cells run in ascending size so that it tracks the
cell), else the process RSS sampled every ms during the runs, minus the RSS
before (`peak_method` says which).

Additive cells whose predicted tanh layer (4 B n^2 d_hidden bytes, three
such buffers with the backward pass) exceeds `memory_budget_gb` are not run:
they get a row with skipped=True and a note; an XLA RESOURCE_EXHAUSTED is
caught the same way.
"""
from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import pandas as pd
from omegaconf import DictConfig

import attention
from attention.checks import check
from experiments.tasks.common import check_seed

IMPLS = ("scaled", "additive", "reference")
MODES = ("forward", "forward_backward")
QUICK = {"ns": [64, 256], "d_ks": [16, 64], "repeats": 3, "warmup": 1}
BACKWARD_BUFFERS = 3  # tanh layer buffers alive with the backward pass (pre-activation, tanh, its grad)
COLUMNS = ("impl", "mode", "n", "d_k", "batch", "repeats", "time_median_s", "time_min_s",
           "time_max_s", "temp_bytes", "argument_bytes", "output_bytes", "peak_bytes",
           "peak_method", "skipped", "note", "time_ratio", "memory_ratio", "peak_memory_ratio",
           "predicted_memory_ratio", "predicted_bytes", "device")


@dataclass
class CostConfig:
    results_dir: str = "results"
    impls: list[str] = field(default_factory=lambda: list(IMPLS))
    ns: list[int] = field(default_factory=lambda: [64, 256, 1024, 4096])
    d_ks: list[int] = field(default_factory=lambda: [16, 64, 256])
    batch: int = 4
    repeats: int = 7
    warmup: int = 2
    max_seconds: float = 20.0    # cap on the repeats of one cell
    memory_budget_gb: float = 4.0
    quick: bool = False          # n in {64, 256}, d_k in {16, 64}, 3 repeats, 1 warm-up
    seed: int = 0
    progress: bool = True



def validate(cfg: DictConfig) -> None:
    check(len(cfg.impls) > 0, "impls", f"must name at least one of {', '.join(IMPLS)}", list(cfg.impls))
    for impl in cfg.impls:
        check(impl in IMPLS, "impls", f"each must be one of {', '.join(IMPLS)}", impl)
    for key in ("ns", "d_ks"):
        check(len(cfg[key]) > 0, key, "must hold at least one value", list(cfg[key]))
        for x in cfg[key]:
            check(x >= 1, key, "each must be >= 1", x)
    check(cfg.batch >= 1, "batch", "must be >= 1", cfg.batch)
    check(cfg.repeats >= 1, "repeats", "must be >= 1", cfg.repeats)
    check(cfg.warmup >= 0, "warmup", "must be >= 0", cfg.warmup)
    check(cfg.max_seconds > 0, "max_seconds", "must be > 0", cfg.max_seconds)
    check(cfg.memory_budget_gb > 0, "memory_budget_gb", "must be > 0", cfg.memory_budget_gb)
    check_seed("seed", cfg.seed)


def grid(cfg) -> dict:
    """The effective grid: the quick preset replaces ns, d_ks, repeats and warmup."""
    g = {k: list(cfg[k]) if k in ("ns", "d_ks") else cfg[k] for k in ("ns", "d_ks", "repeats", "warmup")}
    return {**g, **QUICK} if cfg.quick else g


# --- the functions under test ---------------------------------------------------

def forward_fn(impl: str):
    """(params, q, k, v) -> out [B, n, d_k]."""
    if impl == "reference":
        def f(params, q, k, v):  # jax.nn layout: [B, T, heads, head_dim]
            return jax.nn.dot_product_attention(q[:, :, None], k[:, :, None], v[:, :, None])[:, :, 0]
        return f
    return lambda params, q, k, v: attention.attend(impl, params, q, k, v)[0]


def benchmark_fn(impl: str, mode: str):
    f = forward_fn(impl)
    if mode == "forward":
        return f
    return jax.grad(lambda params, q, k, v: jnp.sum(f(params, q, k, v)), argnums=(0, 1, 2, 3))


def predicted_bytes(impl: str, mode: str, batch: int, n: int, d_k: int) -> int:
    """The largest intermediate: additive's [B, n, n, d_hidden], else the [B, n, n] logits."""
    width = d_k if impl == "additive" else 1
    buffers = BACKWARD_BUFFERS if mode == "forward_backward" else 1
    return 4 * batch * n * n * width * buffers


def predicted_memory_ratio(impl: str, d_k: int) -> float:
    return float(d_k) if impl == "additive" else 1.0


# --- measuring ------------------------------------------------------------------------

class PeakMeter:
    """Peak memory during a block: device peak_bytes_in_use, else sampled RSS delta."""

    def __init__(self):
        stats = _device_stats()
        self.method = "device_peak_bytes_in_use" if stats and "peak_bytes_in_use" in stats \
            else "rss_sampled_delta"

    def __enter__(self):
        if self.method == "rss_sampled_delta":
            import psutil
            self._proc, self._stop = psutil.Process(), threading.Event()
            self.base = self.peak = self._proc.memory_info().rss
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            self._stop.wait(0.001)

    def __exit__(self, *exc):
        if self.method == "rss_sampled_delta":
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self._proc.memory_info().rss)
            self.bytes = self.peak - self.base
        else:
            self.bytes = _device_stats()["peak_bytes_in_use"]
        return False


def _device_stats():
    try:
        return jax.devices()[0].memory_stats()
    except Exception:  # backends without memory stats
        return None


def _memory(compiled) -> dict:
    try:
        m = compiled.memory_analysis()
    except Exception:  # not available on every backend
        m = None
    get = (lambda a: float(getattr(m, a))) if m is not None else (lambda a: math.nan)
    return {"temp_bytes": get("temp_size_in_bytes"), "argument_bytes": get("argument_size_in_bytes"),
            "output_bytes": get("output_size_in_bytes")}


def measure_cell(impl: str, mode: str, n: int, d_k: int, cfg, g: dict) -> dict:
    """One row: compile, warm up, time `repeats` runs; memory from XLA and the process."""
    row = {"impl": impl, "mode": mode, "n": n, "d_k": d_k, "batch": cfg.batch,
           "predicted_memory_ratio": predicted_memory_ratio(impl, d_k),
           "predicted_bytes": predicted_bytes(impl, mode, cfg.batch, n, d_k),
           "skipped": False, "note": ""}
    budget = cfg.memory_budget_gb * 1e9
    if row["predicted_bytes"] > budget:
        return {**row, "skipped": True, "note": f"predicted {_gb(row['predicted_bytes'])} > budget "
                                               f"{_gb(budget)}"}
    kq, kk, kv, kp = jax.random.split(jax.random.PRNGKey(cfg.seed), 4)
    q, k, v = (jax.random.normal(key, (cfg.batch, n, d_k)) for key in (kq, kk, kv))
    params = attention.init_params(impl, kp, d_k) if impl != "reference" else {}
    try:
        compiled = jax.jit(benchmark_fn(impl, mode)).lower(params, q, k, v).compile()
        row.update(_memory(compiled))
        with PeakMeter() as meter:
            for _ in range(g["warmup"]):
                jax.block_until_ready(compiled(params, q, k, v))
            times, start = [], time.perf_counter()
            while len(times) < g["repeats"] and (not times or time.perf_counter() - start < cfg.max_seconds):
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(params, q, k, v))
                times.append(time.perf_counter() - t0)
    except Exception as exc:  # XLA reports out-of-memory as RESOURCE_EXHAUSTED
        if "RESOURCE_EXHAUSTED" not in str(exc) and not isinstance(exc, MemoryError):
            raise
        return {**row, "skipped": True, "note": f"RESOURCE_EXHAUSTED: {str(exc).splitlines()[0][:160]}"}
    return {**row, "repeats": len(times), "time_median_s": statistics.median(times),
            "time_min_s": min(times), "time_max_s": max(times), "peak_bytes": float(meter.bytes),
            "peak_method": meter.method}


def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB"


def add_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """time_ratio, memory_ratio (XLA temp bytes), peak_memory_ratio (measured
    peak): this impl over scaled at the same (n, d_k, mode). XLA on the CPU can
    report 0 temp bytes for scaled's fused forward; that ratio is then NaN and
    the measured peak is the one to read."""
    keys = ["n", "d_k", "mode"]
    base = frame[frame.impl == "scaled"][keys + ["time_median_s", "temp_bytes", "peak_bytes"]]
    base = base.rename(columns={"time_median_s": "_t", "temp_bytes": "_m", "peak_bytes": "_p"})
    out = frame.merge(base, on=keys, how="left")
    out["time_ratio"] = out["time_median_s"] / out["_t"]
    out["memory_ratio"] = out["temp_bytes"] / out["_m"].where(out["_m"] > 0)
    out["peak_memory_ratio"] = out["peak_bytes"] / out["_p"].where(out["_p"] > 0)
    return out.drop(columns=["_t", "_m", "_p"])


def benchmark(cfg, log=print) -> pd.DataFrame:
    g = grid(cfg)
    cells = [(impl, mode, n, d_k) for n in sorted(g["ns"]) for d_k in sorted(g["d_ks"])
             for impl in cfg.impls for mode in MODES]
    rows = []
    for impl, mode, n, d_k in cells:  # ascending size: a device high-water mark tracks the cell
        t0 = time.perf_counter()
        rows.append(measure_cell(impl, mode, n, d_k, cfg, g))
        r = rows[-1]
        log(f"cost {impl:9s} {mode:16s} n={n:<5d} d_k={d_k:<4d} "
            + (f"skipped: {r['note']}" if r["skipped"] else
               f"{r['time_median_s'] * 1e3:9.2f} ms  temp {_gb(r['temp_bytes'])}")
            + f"  ({time.perf_counter() - t0:.1f} s)")
    frame = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in frame:
            frame[col] = math.nan
    frame = add_ratios(frame.drop(columns=["time_ratio", "memory_ratio", "peak_memory_ratio"]))
    frame["device"] = jax.devices()[0].platform
    frame["peak_method"] = [m if isinstance(m, str) else "" for m in frame["peak_method"]]
    frame["repeats"] = frame["repeats"].fillna(0).astype(int)
    return frame[list(COLUMNS)]
