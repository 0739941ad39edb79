"""`python -m experiments.confirm results_dir=R for_cell=C n_seeds=N`: confirmation seeds at the chosen rates.

The selection phase trains a cell's variants on seeds 0 .. seed_from-1 over a
grid of rates (`python -m experiments.train -m experiment=answer cell=C
results_dir=R`). This command reads those runs' folders under R, chooses each
(variant, d_k)'s rate on them by validation AUC (analysis.lr.select.best_lrs,
the rule the analysis applies), and trains seeds seed_from .. seed_from+N-1 at
that rate only: each selection run's own config with the seed, the rate and
n_seeds changed, so a confirmation run differs from a selection run in its seed
alone. The runs go through the train job (same run folders, run ids, resume,
claims): a relaunch skips what is done, a larger n_seeds trains only the new
seeds. ${results_dir}/confirm.json records the chosen rates and both seed
ranges per (task, optimizer, variant, d_k); the analysis tells the phases apart
by seed (conf/analysis.yaml's confirm_seeds_from).
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore

from experiments.app.command import make_main
from experiments.app.confirm_job import run, validate


@dataclass
class ConfirmConfig:
    results_dir: str = "results"
    # a conf/cell/ name: its task and optimizer select the runs confirmed (not `cell`: that
    # key is the train command's config group, and Hydra would load the cell's file here)
    for_cell: str = ""
    n_seeds: int = 8  # confirmation seeds per (variant, d_k)
    seed_from: int = 8  # the first confirmation seed; seeds below it are the selection's
    # train overrides every confirmation job takes (e.g. runtime.threads=1)
    train: list[str] = field(default_factory=list)


ConfigStore.instance().store(name="confirm_schema", node=ConfirmConfig)

main = make_main("confirm", run, validate)

if __name__ == "__main__":
    main()
