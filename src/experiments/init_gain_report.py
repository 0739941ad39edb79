"""`python -m experiments.init_gain_report`: the Britz control's reading (conf/init_gain.yaml) into
out_dir: clauses.csv (every verdict a row), points.csv (each point's fresh-seed AUC and sigma_0), the
figure and README.md. It reads the run folders of results_dir where there are any, and keeps their
tables in out_dir (summary.parquet, and sigma0.parquet: each run's logit std at step 0), so that a
clone without the runs reads the same tables. analysis.init_gain computes; its template speaks."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from experiments.analysis.init_gain import clauses as clauselib
from experiments.analysis.init_gain import figures, points, render
from experiments.app.command import make_main
from experiments.app.errors import ConfigError
from experiments.app.init_gain_confirm_job import check_reading
from experiments.store.collect import collect_runs, run_folders
from experiments.store.results import atomic_write_parquet, atomic_write_text

SIGMA0 = "sigma0.parquet"


def tables(cfg: DictConfig) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(summary, step-0 history) from results_dir's run folders, kept in out_dir; else out_dir's."""
    out = Path(cfg.out_dir)
    if run_folders(Path(cfg.results_dir)):
        summary, history, _ = collect_runs(Path(cfg.results_dir))
        first = history[history["step"] == 0][["run_id", "step", "logit_std"]] if len(history) else None
        atomic_write_parquet(out / "summary.parquet", summary)
        if first is not None:
            atomic_write_parquet(out / SIGMA0, first.reset_index(drop=True))
        return summary, first
    if (out / "summary.parquet").is_file():
        first = out / SIGMA0
        return pd.read_parquet(out / "summary.parquet"), pd.read_parquet(first) if first.is_file() else None
    raise ConfigError(f"results_dir: {cfg.results_dir!r} holds no run folders and out_dir {cfg.out_dir!r} no "
                      f"summary.parquet (train them first: python -m experiments.train -m experiment=init_gain "
                      f"results_dir={cfg.results_dir})")


def run(cfg: DictConfig) -> None:
    summary, history = tables(cfg)
    fresh = points.fresh(summary, history, int(cfg.confirm_seed_from))
    variants = set(fresh["variant"]) if len(fresh) else set()
    if not {cfg.collapse_variant, cfg.comparator} <= variants:
        raise ConfigError(f"results_dir: {cfg.results_dir!r} has no fresh seeds (from {cfg.confirm_seed_from}) of "
                          f"{cfg.collapse_variant} and {cfg.comparator}; train them first: "
                          f"python -m experiments.init_gain_confirm results_dir={cfg.results_dir}")
    table, pts, _ = clauselib.reading(fresh, cfg)
    out = Path(cfg.out_dir)
    atomic_write_text(out / "clauses.csv", table.to_csv(index=False))
    atomic_write_text(out / "points.csv", pts.to_csv(index=False))
    figure = out / "figures" / figures.NAME
    figures.collapse(pts, table, cfg, figure)
    cell = f"{fresh['task'].iloc[0]}/{fresh['optimizer'].iloc[0].capitalize()}"
    readme = render.write(out, table, pts, cfg, figure, cell, str(cfg.preset))
    print(f"init_gain report: {out / 'clauses.csv'}, {out / 'points.csv'}, {figure}, {readme}")


main = make_main("init_gain", run, check_reading)

if __name__ == "__main__":
    main()
