"""`python -m experiments.plot results_dir=…`: every figure as PNG and SVG under ${results_dir}/figures/.

Reads the results folder alone. A figure whose data are missing (no cost.parquet,
no probe.parquet, no history) is skipped with a one-line note.
"""

from __future__ import annotations

import sys

from experiments.analysis.figures import catalog
from experiments.analysis.tables import load
from experiments.app import analysis_cli


def run(res: load.Results) -> None:
    paths, notes = catalog.write(res, res.root / "figures")
    for note in notes:
        print(note)
    print(f"wrote {len(paths)} files under {res.root / 'figures'}")


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("plot", run, argv)


if __name__ == "__main__":
    sys.exit(main())
