"""`python -m experiments.report results_dir=…`: ${results_dir}/REPORT.md, one section per sub-claim.

Each section: figure link, the numbers behind it, the rule, the verdict it
computes, and the conditions measured under. Reads the results folder alone.
"""

from __future__ import annotations

import sys

from experiments.analysis.tables import load
from experiments.analysis.render import report as report_md
from experiments.analysis.render.words import verdict_words
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli
from experiments.store.results import atomic_write_text


def run(res: load.Results) -> None:
    sections = verdict_sections.all_sections(res)
    atomic_write_text(res.root / "REPORT.md", report_md.render(res, sections))
    for s in sections:
        print(f"{s.title}: {verdict_words(s)}")
    print(f"wrote {res.root / 'REPORT.md'}")


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("report", run, argv)


if __name__ == "__main__":
    sys.exit(main())
