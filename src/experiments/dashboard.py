"""`python -m experiments.dashboard results_dir=…`: one self-contained ${results_dir}/dashboard.html.

Figures inline (SVG data), a sortable and filterable table of runs, an
interactive metric-vs-d_k chart and the report's verdicts; opens from file://
with no server and no network.
"""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.analysis import dashboard_html, figures, load, verdicts_train
from experiments.app import analysis_cli


def run(results_dir: Path) -> None:
    res = load.load_results(results_dir)
    rendered, notes = figures.render(res, formats=("svg",))
    page = dashboard_html.render(res, verdicts_train.all_sections(res), rendered, notes)
    load.atomic_write_text(results_dir / "dashboard.html", page)
    for note in notes:
        print(note)
    print(f"wrote {results_dir / 'dashboard.html'} ({len(rendered)} figures)")


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("dashboard", run, argv)


if __name__ == "__main__":
    sys.exit(main())
