"""`python -m experiments.probe`: the init-time probe against theory.

    python -m experiments.probe n_keys=64 input_model=iid results_dir=results
    python -m experiments.probe input_model=model init=lecun_normal d_ks=[16,64,256]

Measures every variant and d_k at initialisation (instruments.probe), writes
${results_dir}/probe.parquet and prints measured / theory.
"""
from __future__ import annotations

from experiments.app import interrupt, runtime

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.app.command import make_main
from experiments.instruments.probe import probe, validate
from experiments.store.results import atomic_write_parquet


def print_table(frame: pd.DataFrame, console=None) -> None:
    """Compact: measured / theory for logit_var and entropy, then the rest."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table("input", "init", "attention", "d_k", "logit_var", "/theory", "entropy",
                  "/theory", "sat", "jac_med", "grad_q", "grad_k", box=None, pad_edge=False)
    for r in frame.itertuples():
        table.add_row(r.input_model, r.init, r.attention, str(r.d_k), f"{r.logit_var:.4g}",
                      _ratio(r.logit_var, r.theory_logit_var), f"{r.entropy:.3f}",
                      _ratio(r.entropy, r.theory_entropy), f"{r.saturation:.3f}",
                      f"{r.jacobian_norm_median:.3g}", f"{r.grad_norm_q:.3g}",
                      f"{r.grad_norm_k:.3g}")
    console.print(table)


def _ratio(a: float, b: float) -> str:
    return "-" if not (b == b and b != 0) else f"{a / b:.3f}"


def run(cfg: DictConfig) -> pd.DataFrame:
    from rich.console import Console

    validate(cfg)
    runtime.check_platform()  # before anything is written
    console = Console(width=140)
    t0 = time.perf_counter()
    log = console.log if cfg.progress else (lambda *_: None)
    seeds = list(cfg.seeds) or [cfg.seed]
    frame = pd.concat([probe(OmegaConf.merge(cfg, {"seed": s}), log=log) for s in seeds],
                      ignore_index=True)
    path = Path(cfg.results_dir) / "probe.parquet"
    atomic_write_parquet(path, frame)
    if cfg.progress:
        print_table(frame, console)
        console.print(f"wrote {path} ({len(frame)} rows) in {time.perf_counter() - t0:.1f} s")
    return frame


def main() -> None:
    make_main("probe", run, validate)()


if __name__ == "__main__":
    main()
