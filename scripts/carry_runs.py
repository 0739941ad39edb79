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

A run already in TO (ended, its files readable) is left as it is, so a rerun carries only what is
missing; a failed or unfinished run there is replaced by the carried one, and one whose files
cannot be read is first moved whole to TO/unreadable/ (app.reuse_job.place_run).

Prints on stdout what it carried ("carried N runs into TO/runs (M already there)") and where
it set an unreadable folder aside. A user mistake (FROM missing or without runs or tables, TO
the same folder as FROM, a bad option) is one line `error: <argument>: ...` on stderr, exit 2,
before anything is written; a fault of the machine while writing (an OSError) is one line
`error: <file>: <cause>`, exit 1. Runs that could not be carried are named on stderr, one
`not carried: ...` line each, exit 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.app.errors import ConfigError, argument_error, fail, fault, fault_line


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out.add_argument("what", choices=("selection", "folder"))
    out.add_argument("source", metavar="from", type=Path,
                     help="a committed study's folder, or a cell's own folder")
    out.add_argument("root", metavar="to", type=Path, help="the new study's results folder")
    out.add_argument("--seeds-below", type=int, default=8, help="the selection seeds: 0 .. this - 1")
    out.add_argument("--whole-seeds", type=int, default=0)
    out.add_argument("--whole-cells", default="")
    out.add_argument("--whole-variants", default="")
    out.error = argument_error  # one line, not argparse's usage block
    return out


def split(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split(",") if x)


def check_options(args: argparse.Namespace) -> None:
    """A ConfigError naming the option whose value cannot be carried by."""
    from experiments.app.confirm_job import cells
    from experiments.app.reuse_job import attention_groups

    if args.seeds_below < 1:
        raise ConfigError(f"--seeds-below: must be >= 1 (the selection seeds are 0 .. this - 1), "
                          f"got {args.seeds_below}")
    if args.whole_seeds < 0:
        raise ConfigError(f"--whole-seeds: must be >= 0 (0: no seed trained whole), got {args.whole_seeds}")
    for option, given, allowed in (("--whole-cells", args.whole_cells, cells()),
                                   ("--whole-variants", args.whole_variants, sorted(attention_groups()))):
        unknown = [x for x in split(given) if x not in allowed]
        if unknown:
            raise ConfigError(f"{option}: unknown {unknown[0]!r}; allowed (comma-separated): "
                              f"{', '.join(allowed)}")


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from experiments.app import config as schemas  # noqa: F401 - registers the schemas compose reads
    from experiments.app.reuse_job import Whole, carry, carry_folder, check_cell_folder, check_folders

    try:
        check_options(args)
        (check_cell_folder if args.what == "folder" else check_folders)(args.source, args.root)
    except ConfigError as e:
        fail(str(e))
    try:
        if args.what == "folder":
            done = carry_folder(args.source, args.root)
        else:
            from hydra import initialize_config_dir

            from experiments.app.errors import CONF_DIR

            whole = Whole(args.whole_seeds, split(args.whole_cells), split(args.whole_variants))
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="carry"):
                done = carry(args.source, args.root, args.seeds_below, whole)
    except OSError as exc:  # the machine's fault, not the user's: exit 1
        fault(fault_line(exc, str(args.root)))
    print(f"carried {done.written} runs into {args.root / 'runs'} ({done.present} already there)")
    for line in done.kept:
        print(f"set aside: {line}")
    for line in done.left:
        print(f"not carried: {line}", file=sys.stderr)
    return 1 if done.left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
