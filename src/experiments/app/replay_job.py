"""The pruning replay as a job: read a study's tables, replay train.prune on them, write the figures.

`run(cfg)` is what `python -m experiments.replay` runs: analysis.prune_replay
stops the lanes the rule would have stopped, analysis.verdicts.replay compares
the result with the study as trained, and ${results_dir}/pruning_replay.json
holds the figures, overall and per cell, with the rule that made them.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from attention.checks import check
from experiments.analysis.lr import prune_replay
from experiments.analysis.tables import diverged
from experiments.analysis.tables import load
from experiments.analysis.verdicts import replay
from experiments.app import progress
from experiments.app.analysis_cli import check_results_dir, folder_overrides
from experiments.app.config import validate_prune
from experiments.app.errors import CONF_DIR
from experiments.store.results import atomic_write_text
from experiments.tasks import TASKS
from experiments.training.prune import PruneRule

OUTPUT = "pruning_replay.json"


def rule_of(cfg: DictConfig) -> PruneRule:
    return PruneRule(**{**OmegaConf.to_container(cfg.prune), "enabled": True})


def validate(cfg: DictConfig) -> None:
    """results_dir holds a summary and a history table; the rule's options are in range."""
    root = check_results_dir(str(cfg.results_dir))
    tables = {}
    for name in ("summary", "history"):
        if not (root / f"{name}.parquet").is_file():
            raise ValueError(f"results_dir: {str(root)!r} has no {name}.parquet (run experiments.collect first)")
        tables[name] = load._read(root / f"{name}.parquet")  # one line naming the file if not a study's table
    _refuse_a_pruned_study(root, tables["summary"])
    validate_prune(cfg.prune, "prune")
    # the tuning cell need not be in this study (a rule tuned elsewhere holds every cell out); it must be a cell
    optimizers = sorted(p.stem for p in (Path(CONF_DIR) / "optimizer").glob("*.yaml"))
    cells = [replay.cell_name(t, o) for o in optimizers for t in sorted(TASKS)]
    check(cfg.tuning_cell in cells, "tuning_cell", f"must be <optimizer>_<task>, one of {', '.join(cells)}",
          cfg.tuning_cell)


def _refuse_a_pruned_study(root: Path, summary: pd.DataFrame) -> None:
    """A replay needs every lane's whole validation curve; a study trained with train.prune on cut them."""
    n = int(diverged.pruned(summary).sum())
    if n:
        raise ValueError(f"results_dir: {str(root)!r} was trained with train.prune on ({n} pruned runs), so its "
                         "losing lanes' curves stop early; replay a study trained with train.prune off")


def _primary(cfg: DictConfig) -> tuple[str, str | None]:
    """(primary_optimizer, primary_task): the command line's, else the folder's analysis.yaml."""
    given = dict(a.split("=", 1) for a in folder_overrides(str(cfg.results_dir), []))
    optimizer = cfg.primary_optimizer or given.get("primary_optimizer", "adam")
    task = cfg.primary_task or given.get("primary_task")
    return optimizer, None if task in (None, "null") else task


def run(cfg: DictConfig) -> dict:
    root = Path(cfg.results_dir)
    tables = {name: load._read(root / f"{name}.parquet") for name in load.TABLES}
    rule = rule_of(cfg)
    summary, history = prune_replay.replay(tables["summary"], tables["history"], rule)
    out = {"rule": dataclasses.asdict(rule), "tuning_cell": cfg.tuning_cell,
           **replay.measures(tables, summary, history, root, _primary(cfg))}
    atomic_write_text(root / OUTPUT, json.dumps(out, indent=2) + "\n")
    for name, c in out["cells"].items():
        role = "tuning" if name == cfg.tuning_cell else "held out"
        progress.say(f"{name} ({role}): lane-steps saved {c['lane_steps_saved']:.3f}, best lr agreement "
                     f"{c['best_lr_agreement']:.3f}, AUC lost at choice max {c['auc_loss_at_choice']['max']:.4f}, "
                     f"{len(c['verdicts_changed'])} verdict readings changed, LR sensitivity error "
                     f"{c['lr_sensitivity_error']:.4f}")
    progress.say(f"overall: lane-steps saved {out['lane_steps_saved']:.3f}, best lr agreement "
                 f"{out['best_lr_agreement']:.3f}, {len(out['verdicts_changed'])} verdict readings changed; "
                 f"wrote {root / OUTPUT}")
    return out
