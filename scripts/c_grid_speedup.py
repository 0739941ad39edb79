"""The multiplier lanes' speedup: attention.c_grid's K multipliers as lanes of one program against
the same K runs trained one after another (one job each, the programs compiled once and reused).

    python scripts/c_grid_speedup.py [--lanes 16 32] [--steps 200] [--repeats 2]

Prints, per K and repeat, run-steps per second both ways and their ratio (training time only:
compile and evaluation excluded by the runs' own train_time_s). Nothing is kept: each run trains
into a temporary folder.
"""
from __future__ import annotations

import argparse
import tempfile

from hydra import compose, initialize_config_dir

from experiments import train
from experiments.app import config  # noqa: F401 - registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.training.compile import ProgramCache
from experiments.app import train_job

BASE = ["attention=temperature", "model.n_layers=1", "model.reassociate=true", "d_k=64", "logger=none",
        "progress=false", "train.n_val=64", "train.n_test=64"]


def _cfg(*overrides: str):
    return compose("train", overrides=[*BASE, *overrides])


def measure(k: int, steps: int) -> tuple[float, float]:
    """(run-steps/s as lanes, run-steps/s one run at a time) for k multipliers."""
    grid = [2.0 ** (i / 4 - k / 8) for i in range(k)]
    budget = [f"train.steps={steps}", f"train.eval_every={steps}"]
    with tempfile.TemporaryDirectory() as lanes_dir, tempfile.TemporaryDirectory() as alone_dir:
        lanes = train.run(_cfg(*budget, f"attention.c_grid=[{','.join(map(repr, grid))}]",
                               f"results_dir={lanes_dir}"))
        together = k * steps / lanes[0]["train_time_s"]
        cache, alone_s = ProgramCache(), 0.0
        for c in grid:
            [run] = train_job.run(_cfg(*budget, f"attention.c={c!r}", f"results_dir={alone_dir}"), cache)
            alone_s += run["train_time_s"]
        return together, k * steps / alone_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for repeat in range(args.repeats):
            for k in args.lanes:
                together, alone = measure(k, args.steps)
                print(f"c_grid {k} lanes (repeat {repeat + 1}): {together:.0f} run-steps/s as lanes, "
                      f"{alone:.0f} one at a time: {together / alone:.2f}x", flush=True)


if __name__ == "__main__":
    main()
