"""The committed reference's answer, number by number: every clause's estimate and interval, its
answer and its cell's verdict, and each cell's d*, as tests/golden/reference_answer.csv holds them.
A refactor of the analysis must leave them where they are (to 1e-9); a change of a rule shows up
here first, and is then written down (the golden file rewritten, the change said in the commit)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from experiments.analysis.render import clause_table, short_answer
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "reference_answer.csv"
KEYS = ["cell", "sub_claim", "clause", "d_k", "n_seeds", "answer", "verdict"]
NUMBERS = ["estimate", "lo", "hi"]


def answer_numbers(folder: Path) -> pd.DataFrame:
    """The clause table's numbers and each cell's d* (the short answer's facts)."""
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={folder}"]))
    sections = verdict_sections.all_sections(res)
    clauses = clause_table.table(sections, res.primary)
    rows = clauses[KEYS[:5] + NUMBERS + KEYS[5:]]
    d_star = [{"cell": c["name"], "sub_claim": "4", "clause": "d*", "answer": c["verdict"], "verdict": c["verdict"],
               **({"estimate": c["d_star"]["est"], "lo": c["d_star"]["lo"], "hi": c["d_star"]["hi"]} if c["d_star"] else {})}
              for c in short_answer.facts(sections, clauses)["cells"]]
    return pd.concat([rows, pd.DataFrame(d_star)], ignore_index=True)


def test_reference_answer_is_the_golden_one():
    got = answer_numbers(ROOT / "results" / "reference")
    want = pd.read_csv(GOLDEN, dtype={k: str for k in KEYS})
    keys = lambda df: df[KEYS].astype(object).where(df[KEYS].notna(), "").astype(str).to_numpy()  # noqa: E731
    assert len(got) == len(want) and (keys(got) == keys(want)).all()
    a, b = got[NUMBERS].astype(float).to_numpy(), want[NUMBERS].astype(float).to_numpy()
    assert np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True), np.argwhere(~np.isclose(a, b, equal_nan=True))
