"""`python -m experiments.report results_dir=…`: ${results_dir}/REPORT.md, one section per sub-claim.

Each section: figure link, the numbers behind it, the rule, the verdict it
computes, and the conditions measured under. Reads the results folder alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.analysis.tables import load
from experiments.analysis.render import report as report_md
from experiments.analysis.render import clause_table, short_answer
from experiments.analysis.render.markdown import TABLES
from experiments.analysis.render.words import verdict_words
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli
from experiments.store.results import atomic_write_parquet, atomic_write_text


def run(res: load.Results) -> None:
    sections = verdict_sections.all_sections(res)
    clauses = clause_table.table(sections, res.primary)
    text, pages = report_md.render_pages(res, sections, clauses=clauses)
    atomic_write_text(res.root / "REPORT.md", text)  # first: where it cannot be written, nothing is
    write_pages(res.root, pages)
    atomic_write_parquet(res.root / "clauses.parquet", clauses)
    atomic_write_text(res.root / "clauses.csv", clauses.to_csv(index=False))
    answer = short_answer.render(sections, clauses)
    if answer:
        atomic_write_text(res.root / "ANSWER.md", answer)
    for s in sections:
        print(f"{s.title}: {verdict_words(s)}")
    print(f"wrote {res.root / 'REPORT.md'}")


def write_pages(root: Path, pages: dict[str, str]) -> None:
    """The report's pages (its long tables), each written atomically; a page an earlier report
    wrote and this one does not is removed, so that no link points at a stale table."""
    folder = root / TABLES
    for old in folder.glob("*") if folder.is_dir() else ():
        if old.suffix in (".md", ".csv") and f"{TABLES}/{old.name}" not in pages:
            old.unlink()
    for rel, text in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(root / rel, text)


def main(argv: list[str] | None = None) -> int:
    return analysis_cli.entry("report", run, argv)


if __name__ == "__main__":
    sys.exit(main())
