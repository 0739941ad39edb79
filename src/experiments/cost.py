"""`python -m experiments.cost`: wall time and memory of scaled vs additive vs the reference.

    python -m experiments.cost results_dir=results              # full grid (minutes)
    python -m experiments.cost quick=true results_dir=/tmp/c    # n in {64, 256}, d_k in {16, 64}

Measures every cell (instruments.cost), writes ${results_dir}/cost.parquet
and prints the table.
"""
from __future__ import annotations

from experiments.app import interrupt, runtime

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from experiments.app.command import make_main
from experiments.instruments.cost import benchmark, validate
from experiments.store.results import atomic_write_parquet


def print_table(frame: pd.DataFrame, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=140)
    table = Table("impl", "mode", "n", "d_k", "median ms", "min ms", "max ms", "temp MB",
                  "peak MB", "time x", "mem x", "pred mem x", "note", box=None, pad_edge=False)
    for r in frame.itertuples():
        ms = (lambda x: "-" if x != x else f"{x * 1e3:.3g}")
        mb = (lambda x: "-" if x != x else f"{x / 1e6:.4g}")
        rt = (lambda x: "-" if x != x else f"{x:.3g}")
        table.add_row(r.impl, r.mode, str(r.n), str(r.d_k), ms(r.time_median_s), ms(r.time_min_s),
                      ms(r.time_max_s), mb(r.temp_bytes), mb(r.peak_bytes), rt(r.time_ratio),
                      rt(r.memory_ratio), rt(r.predicted_memory_ratio), r.note)
    console.print(table)


def run(cfg: DictConfig) -> pd.DataFrame:
    from rich.console import Console

    validate(cfg)
    runtime.check_platform()  # before anything is written
    console = Console(width=140)
    t0 = time.perf_counter()
    frame = benchmark(cfg, log=console.log if cfg.progress else (lambda *_: None))
    path = Path(cfg.results_dir) / "cost.parquet"
    atomic_write_parquet(path, frame)
    if cfg.progress:
        print_table(frame, console)
        console.print(f"wrote {path} ({len(frame)} rows, {frame.device.iloc[0]}) "
                      f"in {time.perf_counter() - t0:.1f} s")
    return frame


def main() -> None:
    make_main("cost", run, validate)()


if __name__ == "__main__":
    main()
