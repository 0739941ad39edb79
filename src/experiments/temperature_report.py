"""`python -m experiments.temperature_report results_dir=R`: the temperature study's tables, figures,
README, REPORT and dashboard from R's tables (summary.parquet, history.parquet: run
experiments.collect first, or scripts/regenerate.sh, which does both). conf/temperature.yaml
declares the reading; analysis.temperature computes it; its templates say it."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from experiments.analysis.temperature import clauses as clauselib
from experiments.analysis.tables import chance
from experiments.analysis.temperature import figures, grid, render
from experiments.app.command import make_main
from experiments.app.errors import ConfigError
from experiments.app.temperature_confirm_job import OUTPUT as CONFIRM_RECORD
from experiments.store.results import atomic_write_parquet, atomic_write_text


def sigma0(history: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the logit std at step 0 of the c = 1 selection runs (seed mean)."""
    at_one = runs[(runs["attention"] == grid.GRID_VARIANT) & (runs["c"] == 1.0) & (runs["phase"] == "selection")]
    first = history[history["step"] == 0][["run_id", "logit_std"]]
    return (at_one.merge(first, on="run_id").groupby(grid.CELL)["logit_std"].mean()
            .rename("sigma0_at_1").reset_index())


def sequence_length(row: pd.Series) -> float:
    """The run's sequence length, from its task's own seq_len (NaN where its config cannot be rebuilt)."""
    built = chance.task_config(row)
    return float(built[0].seq_len(built[1])) if built else float("nan")


def walls(runs: pd.DataFrame, cfg) -> pd.DataFrame:
    """Per cell and phase: the wall of its programs (lanes of one program share one wall) beside the
    plan's projection (lanes x steps x the task's pilot cost per lane-step, scaled by the sequence length)."""
    # one program a (cell, variant) in the selection (every multiplier a lane), one a multiplier in
    # the confirmation; its lanes record about the same wall
    job = runs["c"].where(runs["phase"] == "confirmation", -1.0).fillna(-1.0).rename("job")
    per_job = runs.groupby(grid.CELL + ["phase", "attention", job])["wall_time_s"].max()
    wall = per_job.groupby(grid.CELL + ["phase"]).sum().rename("wall_s")
    seq = runs.apply(sequence_length, axis=1)
    default = {"s_per_lane_step": cfg.pilot_s_per_lane_step, "seq_len": cfg.pilot_seq_len}
    pilot = pd.DataFrame([{**default, **cfg.pilot_by_task.get(t, {})} for t in runs["task"]], index=runs.index)
    lane_steps = (runs.assign(cost=runs["steps"] * seq / pilot["seq_len"] * pilot["s_per_lane_step"])
                  .groupby(grid.CELL + ["phase"])["cost"].sum().rename("projected_s"))
    out = pd.concat([wall, lane_steps], axis=1).round(1).reset_index()
    return out.assign(ratio=(out["wall_s"] / out["projected_s"]).round(2))


def run(cfg: DictConfig) -> None:
    root = Path(cfg.results_dir)
    summary, history = root / "summary.parquet", root / "history.parquet"
    if not summary.is_file():
        raise ConfigError(f"results_dir: {str(root)!r} has no summary.parquet (collect it first: "
                          f"python -m experiments.collect results_dir={cfg.results_dir})")
    runs = grid.runs_of(pd.read_parquet(summary), int(cfg.confirm_seed_from))
    if not (runs["attention"] == grid.GRID_VARIANT).any():
        raise ConfigError(f"results_dir: {str(root)!r} holds no runs of the temperature study "
                          "(bash scripts/temperature_study.sh)")
    record_path = root / CONFIRM_RECORD
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    table, opt, fits = clauselib.clause_table(runs, record, cfg)
    hist = pd.read_parquet(history, columns=["run_id", "step", "logit_std"]) if history.is_file() else None
    opt = opt.merge(sigma0(hist, runs), on=grid.CELL, how="left") if hist is not None else opt.assign(sigma0_at_1=float("nan"))
    opt["sigma0_at_c_star"] = opt["c_star"] * opt["sigma0_at_1"]
    chosen = grid.chosen_rates(runs)
    cells = [tuple(o[k] for k in grid.CELL) for _, o in opt.iterrows()]
    opt["lr_edge_at_c_star"] = [grid.rate_edge(chosen, cell, c) for cell, c in zip(cells, opt["c_star"])]
    opt["lr_edge_at_1"] = [grid.rate_edge(chosen, cell, 1.0) for cell in cells]
    wall = walls(runs, cfg)
    atomic_write_parquet(root / "clauses.parquet", table)
    for name, df in (("clauses.csv", table), ("optimum.csv", opt), ("law.csv", fits), ("grid.csv", chosen),
                     ("walls.csv", wall)):
        atomic_write_text(root / name, df.to_csv(index=False))
    paths = {k: root / "figures" / v for k, v in figures.NAMES.items()}
    for task in sorted(opt["task"].unique()):  # one task today; a second would need its own names
        figures.optimum(opt, fits, task, paths["optimum"])
        figures.curves(chosen, opt, task, paths["curves"])
    figures.learned(table, opt, paths["learned"])
    figures.sigma0(opt, paths["sigma0"])
    normed = clauselib.cells_rms_normed(runs)
    qk_rms = bool(normed) and normed == {tuple(o[k] for k in grid.CELL) for _, o in opt.iterrows()}
    arm = {"qk_rms": qk_rms, "steps": int(runs["train.steps"].max()),
           "experiment": "/".join(sorted(runs["experiment"].dropna().astype(str).unique())) or "temperature"}
    written = render.write(root, table, opt, fits, wall, runs["lr"].dropna().unique(), cfg, paths, arm)
    print(f"temperature report: {', '.join(str(p) for p in written.values())}")


def validate(cfg: DictConfig) -> None:
    from experiments.app.temperature_confirm_job import validate as check_reading
    try:
        check_reading(cfg)
    except ConfigError as e:
        if "holds no run folders" not in str(e):  # the report reads tables, not run folders
            raise


main = make_main("temperature", run, validate)

if __name__ == "__main__":
    main()
