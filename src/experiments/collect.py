"""`python -m experiments.collect results_dir=…`: one table of runs, one of histories.

Reads ${results_dir}/runs/*/ and writes ${results_dir}/summary.parquet (one
row per run: summary metrics and the flattened config, dotted keys) and
${results_dir}/history.parquet (every evaluation row of every run).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from experiments import progress
from experiments.cli import make_main
from experiments.results import atomic_write_parquet, read_summary


@dataclass
class CollectConfig:
    results_dir: str = "results"


ConfigStore.instance().store(name="collect_schema", node=CollectConfig)


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        elif isinstance(value, list):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat


def run_folders(results_dir: str | Path) -> list[Path]:
    return sorted(p for p in (Path(results_dir) / "runs").glob("*") if p.is_dir())


def summary_row(folder: Path) -> dict | None:
    summary = read_summary(folder)
    if summary is None:
        return None
    summary = {k: v for k, v in summary.items() if k != "versions"}
    config_path = folder / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.load(config_path)) if config_path.exists() else {}
    # summary keys win over config keys of the same name
    return {**_flatten(config), **summary}


def collect(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, history) frames of every run under results_dir (no writes)."""
    rows, histories = [], []
    for folder in run_folders(results_dir):
        row = summary_row(folder)
        if row is None:
            continue  # a run that never finished writing its summary
        rows.append(row)
        hist = folder / "history.parquet"
        if hist.exists():
            histories.append(pd.read_parquet(hist))
    summary = pd.DataFrame(rows)
    history = pd.concat(histories, ignore_index=True) if histories else pd.DataFrame()
    if "steps_to_threshold" in summary:
        summary["steps_to_threshold"] = summary["steps_to_threshold"].astype("Int64")
    return summary, history


def validate(cfg: DictConfig) -> None:
    runs = Path(cfg.results_dir) / "runs"
    if not runs.is_dir():
        raise ValueError(f"results_dir: no runs found under {runs} (run experiments.train first)")


def run(cfg: DictConfig) -> None:
    summary, history = collect(cfg.results_dir)
    root = Path(cfg.results_dir)
    atomic_write_parquet(root / "summary.parquet", summary)
    atomic_write_parquet(root / "history.parquet", history)
    counts = summary["status"].value_counts().to_dict() if len(summary) else {}
    progress.say(f"collected {len(summary)} runs ({counts}) and {len(history)} history rows "
                 f"into {root / 'summary.parquet'} and {root / 'history.parquet'}")


main = make_main("collect", run, validate)

if __name__ == "__main__":
    main()
