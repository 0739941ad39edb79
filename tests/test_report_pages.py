"""The reference's summary form: REPORT.md short, its long tables on pages beside it, nothing lost;
the clause table's groupby gives every verdict; the README's answer is the reference's, fresh."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

from experiments.analysis.render import clause_table
from experiments.analysis.render.markdown import MAX_ROWS, Pages
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
NUM = re.compile(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def test_every_number_of_the_long_report_is_still_in_the_folder():
    gold = [ln for ln in (ROOT / "tests/golden/reference_report_numbers.txt").read_text().splitlines()
            if ln and not ln.startswith("#")]
    have = set()
    for f in [REFERENCE / "REPORT.md", *sorted((REFERENCE / "tables").glob("*"))]:
        have |= set(NUM.findall(f.read_text()))
    missing = [g for g in gold if g not in have]
    assert not missing, f"{len(missing)} numbers of the long report are in no file: {missing[:20]}"


def test_the_reference_report_summarises():
    text = (REFERENCE / "REPORT.md").read_text()
    assert len(text.splitlines()) <= 600
    tables = re.findall(r"(?:^\|.*\n)+", text, re.M)
    assert max(len(t.splitlines()) for t in tables) <= MAX_ROWS + 2  # header and rule


def test_a_long_table_goes_to_its_page_and_a_short_one_stays():
    pages = Pages()
    short = pages.block("Short one", pd.DataFrame({"a": range(MAX_ROWS)}))
    long = pages.block("Long one", pd.DataFrame({"a": range(MAX_ROWS + 1)}))
    assert "| 14 |" in short and not pages.files.keys() - {"tables/long-one.md", "tables/long-one.csv"}
    assert "tables/long-one.md" in long and "| 15 |" in pages.files["tables/long-one.md"]
    assert pd.read_csv(pd.io.common.StringIO(pages.files["tables/long-one.csv"]))["a"].tolist() == list(range(16))


@pytest.fixture(scope="module")
def reference():
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={REFERENCE}"]))
    return res, verdict_sections.all_sections(res)


def test_verdicts_are_a_groupby_over_the_clause_table(reference):
    res, sections = reference
    clauses = clause_table.table(sections, res.primary)
    committed = pd.read_parquet(REFERENCE / "clauses.parquet")
    pd.testing.assert_frame_equal(clauses.reset_index(drop=True), committed, check_dtype=False)
    grouped = clause_table.verdicts(clauses)
    own = clauses.drop_duplicates(["cell", "sub_claim"]).set_index(["cell", "sub_claim"])["verdict"]
    for key, verdict in own.items():
        if key[1] == "6" and verdict == "not observed in this setting":
            continue  # read beyond its clauses: whether the setting can show the effect
        assert grouped.get(key, "not measured") == verdict, key
    quality = next(s for s in sections if s.cells)
    assert {c.name: c.verdict.value for c in quality.cells} == {
        k[0]: v for k, v in grouped.items() if k[1] == quality.number}


def test_the_readme_answer_is_the_references(reference):
    spec = importlib.util.spec_from_file_location("readme_answer", ROOT / "scripts" / "readme_answer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    readme = (ROOT / "README.md").read_text()
    assert mod.with_answer(readme, mod.answer_block()) == readme, (
        "README.md's answer is stale: rewrite it with `python scripts/readme_answer.py`")
    block = readme.split(mod.START)[1].split(mod.END)[0]
    prose = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("|")][:-1]  # the link after
    assert len(prose) <= 8
    header = next(ln for ln in block.splitlines() if ln.startswith("|"))
    assert header.count("|") - 1 <= 4  # four columns at most
