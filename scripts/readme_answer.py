"""Rewrite the README's answer (between its answer markers) from the committed reference's clause
table: `python scripts/readme_answer.py`. tests/test_report_pages.py checks it is fresh."""
from __future__ import annotations

import sys
from pathlib import Path

from experiments.analysis.render import short_answer
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli
from experiments.store.results import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- answer: scripts/readme_answer.py writes this from results/reference -->", "<!-- /answer -->"


def answer_block(folder: str = "results/reference") -> str:
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={ROOT / folder}"]))
    return short_answer.render(verdict_sections.all_sections(res), report_link=f"{folder}/REPORT.md").strip()


def with_answer(readme: str, block: str) -> str:
    head, rest = readme.split(START, 1)
    return f"{head}{START}\n{block}\n{END}{rest.split(END, 1)[1]}"


def main() -> int:
    path = ROOT / "README.md"
    atomic_write_text(path, with_answer(path.read_text(), answer_block()))
    print(f"wrote the answer into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
