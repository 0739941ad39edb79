"""Every committed REPORT.md is what the report command writes from the committed tables.

A report is rebuilt from its folder's parquet files alone, so a stale one (code
changed, tables changed, report not rewritten) is caught here, with the command
that refreshes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.analysis.render import report as report_md
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli

ROOT = Path(__file__).resolve().parents[1]


def committed_reports(study: bool = False) -> list[Path]:
    """The committed REPORT.md files: the sub-claim reports, or (study=True) the temperature study's."""
    from experiments.regenerate import temperature_study

    out = subprocess.run(["git", "ls-files", "results/*/REPORT.md"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [ROOT / p for p in out if temperature_study((ROOT / p).parent) == study]


def test_there_is_a_committed_report():
    assert ROOT / "results/reference/REPORT.md" in committed_reports()


@pytest.mark.parametrize("path", committed_reports(), ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_committed_report_is_fresh(path):
    folder = path.parent.relative_to(ROOT)
    # the command's own config (conf/analysis.yaml defaults), as `experiments.report` reads it
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={path.parent}"]))
    fresh = report_md.render(res, verdict_sections.all_sections(res))
    assert path.read_text() == fresh, (
        f"{path.relative_to(ROOT)} is stale: rewrite it with "
        f"`python -m experiments.report results_dir={folder}` (and the figures with "
        f"`python -m experiments.plot results_dir={folder}`)")


@pytest.mark.parametrize("path", committed_reports(study=True), ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_committed_temperature_report_is_fresh(path, tmp_path):
    """The temperature study's README, REPORT and clauses are what its report writes from its tables."""
    import shutil

    for name in ("summary.parquet", "history.parquet", "temperature_confirm.json"):
        shutil.copy(path.parent / name, tmp_path / name)
    folder = path.parent.relative_to(ROOT)
    subprocess.run([sys.executable, "-m", "experiments.temperature_report", f"results_dir={tmp_path}"],
                   check=True, capture_output=True, cwd=ROOT)
    for name in ("README.md", "REPORT.md", "clauses.csv"):
        assert (tmp_path / name).read_text() == (path.parent / name).read_text(), (
            f"{folder / name} is stale: rewrite it with RESULTS={folder} bash scripts/regenerate.sh")
