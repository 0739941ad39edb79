"""`python -m experiments.dashboard results_dir=…`: one self-contained ${results_dir}/dashboard.html.

Figures (linked from figures/ where the folder has them, else inline SVG), a sortable and filterable
table of runs, an interactive metric-vs-d_k chart, the report's verdicts and every clause of them
(sortable and filterable too); opens from file:// with no server and no network.
"""

from __future__ import annotations

import sys

from experiments.analysis.render import clause_table
from experiments.analysis.render import dashboard as dashboard_html
from experiments.analysis.figures import catalog
from experiments.analysis.tables import load
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli
from experiments.store.results import atomic_write_text


def run(res: load.Results) -> None:
    rendered, notes = catalog.render(res, formats=("svg",))
    sections = verdict_sections.all_sections(res)
    page = dashboard_html.render(res, sections, rendered, notes, clauses=clause_table.table(sections, res.primary))
    atomic_write_text(res.root / "dashboard.html", page)
    for note in notes:
        print(note)
    print(f"wrote {res.root / 'dashboard.html'} ({len(rendered)} figures)")


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("dashboard", run, argv)


if __name__ == "__main__":
    sys.exit(main())
