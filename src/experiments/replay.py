"""`python -m experiments.replay results_dir=results/reference`: train.prune replayed on a study.

Replays the pruning rule (training.prune, options under `prune`) on every job
of the study's history, as training would have run it, and writes
${results_dir}/pruning_replay.json: lane_steps_saved, best_lr_agreement,
auc_loss_at_choice, verdicts_changed and lr_sensitivity_error, overall and per
cell (analysis.verdicts.replay). The tables are only read.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore

from experiments.app.command import make_main
from experiments.app.replay_job import run, validate
from experiments.training.prune import PruneRule


@dataclass
class ReplayConfig:
    results_dir: str = "results"
    tuning_cell: str = "adam_mqar"  # the cell the rule's options were chosen on; the others are held out
    primary_optimizer: Optional[str] = None  # None: the folder's analysis.yaml, else adam
    primary_task: Optional[str] = None
    prune: PruneRule = field(default_factory=PruneRule)


ConfigStore.instance().store(name="replay_schema", node=ReplayConfig)

main = make_main("replay", run, validate)

if __name__ == "__main__":
    main()
