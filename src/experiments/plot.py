"""`python -m experiments.plot results_dir=…`: every figure as PNG and SVG under ${results_dir}/figures/.

Reads the results folder alone. A figure whose data are missing (no cost.parquet,
no probe.parquet, no history) is skipped with a one-line note.
"""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.analysis import figures, load
from experiments.app import analysis_cli


def run(results_dir: Path) -> None:
    paths, notes = figures.write(load.load_results(results_dir), results_dir / "figures")
    for note in notes:
        print(note)
    print(f"wrote {len(paths)} files under {results_dir / 'figures'}")


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("plot", run, argv)


if __name__ == "__main__":
    sys.exit(main())
