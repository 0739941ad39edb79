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

`stage=2`: the two-stage confirmation's top-up (conf/analysis.yaml's two_stage): after stage 1
(the first two_stage.first_seeds confirmation seeds of every (variant, d_k)), the seeds each
clause still undecided needs for two_stage.power at its observed Δ, up to two_stage.max_seeds,
at the same rates (app.top_up_job). It refuses while stage 1 is incomplete.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from omegaconf import DictConfig

from experiments.app import confirm_job, top_up_job
from experiments.app.command import make_main


def run(cfg: DictConfig) -> list[dict]:
    """Stage 1 (app.confirm_job) or, with stage=2, its top-up (app.top_up_job)."""
    return (top_up_job.run if cfg.stage == 2 else confirm_job.run)(cfg)


def validate(cfg: DictConfig) -> None:
    (top_up_job.validate if cfg.stage == 2 else confirm_job.validate)(cfg)


main = make_main("confirm", run, validate)

if __name__ == "__main__":
    main()
