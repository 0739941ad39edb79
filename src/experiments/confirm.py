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

from experiments.app.command import make_main
from experiments.app.confirm_job import run, validate

main = make_main("confirm", run, validate)

if __name__ == "__main__":
    main()
