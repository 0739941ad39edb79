"""Carry finished runs into a new study's results folder (app.reuse_job).

    PYTHONPATH=src python scripts/carry_runs.py selection FROM TO [--seeds-below 8]
        [--whole-seeds 3 --whole-cells adam_assoc_recall,adam_mqar --whole-variants scaled,unscaled,mup]
    PYTHONPATH=src python scripts/carry_runs.py folder FROM TO

selection: writes TO/runs/<run id>/ for every run of FROM's tables (a committed study's
summary.parquet and history.parquet) on a seed below --seeds-below whose run id the current
presets compose, except the --whole-seeds first seeds of the --whole-variants in the
--whole-cells (the study trains those at every rate to the budget).
folder: copies FROM's finished run folders (a cell trained in a folder of its own) and merges
its confirm.json into TO's.

Runs already in TO are left as they are, so a rerun carries only what is missing. Prints what
it carried; exits 1, naming each, where something could not be carried.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hydra import initialize_config_dir

from experiments.app import config as schemas  # noqa: F401 - registers the schemas compose reads
from experiments.app.errors import CONF_DIR
from experiments.app.reuse_job import Whole, carry, carry_folder, check_folders


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("selection", "folder"))
    parser.add_argument("source", type=Path, help="a committed study's folder, or a cell's own folder")
    parser.add_argument("root", type=Path, help="the new study's results folder")
    parser.add_argument("--seeds-below", type=int, default=8, help="the selection seeds: 0 .. this - 1")
    parser.add_argument("--whole-seeds", type=int, default=0)
    parser.add_argument("--whole-cells", default="")
    parser.add_argument("--whole-variants", default="")
    args = parser.parse_args(argv)
    if args.seeds_below < 1 or args.whole_seeds < 0:
        parser.error("--seeds-below must be >= 1 and --whole-seeds >= 0")
    return args


def main(argv: list[str]) -> int:
    args = arguments(argv)
    if args.what == "folder":
        done = carry_folder(args.source, args.root)
    else:
        try:
            check_folders(args.source, args.root)
        except ValueError as e:
            sys.exit(f"carry_runs: {e}")
        split = lambda text: tuple(x for x in text.split(",") if x)
        whole = Whole(args.whole_seeds, split(args.whole_cells), split(args.whole_variants))
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="carry"):
            done = carry(args.source, args.root, args.seeds_below, whole)
    print(f"carried {done.written} runs into {args.root / 'runs'} ({done.present} already there)")
    for line in done.left:
        print(f"not carried: {line}")
    return 1 if done.left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
