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

from experiments.app.command import make_main
from experiments.app.replay_job import run, validate

main = make_main("replay", run, validate)

if __name__ == "__main__":
    main()
