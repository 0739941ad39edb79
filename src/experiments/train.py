"""`python -m experiments.train`: train one configuration, or a sweep with -m.

    python -m experiments.train attention=unscaled d_k=256 seed=1 task=mqar train.steps=2000
    python -m experiments.train -m attention=scaled,unscaled,additive d_k=8,64,512 seed=0,1,2
    python -m experiments.train -m experiment=claim_quick
    python -m experiments.train attention=unscaled train.n_seeds=4   # seeds 0-3, one vmapped program

Each run writes ${results_dir}/runs/<run_id>/ (config.yaml, history.parquet,
summary.json) and mirrors to W&B (logger=wandb, offline by default). A run
whose summary says completed (or diverged) is skipped unless overwrite=true.
With train.n_seeds=S a job trains seeds seed .. seed+S-1 together; each seed
is still its own run (folder, summary, W&B run), with the run id it would
have alone, so a relaunch with another S skips what is done.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from functools import partial

from experiments.app import config as schemas  # registers the schemas
from experiments.app import ranges
from experiments.app.command import make_main
from experiments.app.train_job import run
from experiments.training.compile import ProgramCache

# one cache for the jobs of a sweep: the next job reuses the programs of the one
# before where it differs only in seed or rate (or, at one d_k, in its bilinear variant)
main = make_main("train", partial(run, cache=ProgramCache()), schemas.validate, ranges.validate_jobs)

if __name__ == "__main__":
    main()
