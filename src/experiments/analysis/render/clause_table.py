"""Every clause reading as one long table (clauses.parquet beside REPORT.md): a row per clause of
each sub-claim, and for sub-claim 4 a row per t-test behind it (the step-down's, the ahead test's,
TOST's at each declared d_k), with its sign-flip permutation p, its power and whether the test
at that d_k rejected its null (`shown`: ahead there, or equivalent there). The verdicts are a
groupby over it (`verdicts`); the README's answer, the report and the dashboard read it."""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.render.clauses import question_words
from experiments.analysis.verdicts.rules import Answer, Part, Verdict, verdict_of
from experiments.analysis.verdicts.section import Section

COLUMNS = ["cell", "sub_claim", "clause", "d_k", "n_seeds", "estimate", "lo", "hi", "test", "question",
           "p", "permutation_p", "power", "detectable", "shown", "answer", "look", "decides", "verdict"]
# how a sub-claim's deciding clauses combine into its verdict: "all" (every yes holds, any no does
# not hold, else inconclusive) or "agree" (3b: median and RMS must give one verdict, else inconclusive)
COMBINE = {"3b": "agree"}
LR_DECIDES = "mup"  # the lr view (4c) is judged on muP's clause; the other variants' are reported
ALL = "all"  # the cell of a clause read over every condition, or at init


def _row(cell: str, sub_claim: str, part: Part, look: int, verdict, **measured) -> dict:
    est, lo, hi = part.ci
    row = dict(cell=cell, sub_claim=sub_claim, clause=part.label, d_k=part.at_d_k, n_seeds=part.n,
               estimate=est, lo=lo, hi=hi, test=part.test.value,
               question="" if part.question is None else question_words(part.question),
               p=math.nan, permutation_p=math.nan, power=math.nan, detectable=part.detectable, shown=pd.NA,
               answer=part.answer.value, look=look, decides=True, verdict=verdict.value)
    row.update(measured)
    return row


def _cell_rows(number: str, cell) -> list[dict]:
    rows = []
    for i, part in enumerate(cell.parts):
        look = cell.looks[i] if cell.looks else 1
        checks = cell.checks.get(part.label, ())
        if not checks:
            rows.append(_row(cell.name, number, part, look, cell.verdict))
            continue
        for k in checks:
            at = k.d_k == part.at_d_k
            rows.append(_row(cell.name, number, part, look, cell.verdict, d_k=k.d_k, n_seeds=k.n, estimate=k.delta,
                             lo=part.ci[1] if at else math.nan, hi=part.ci[2] if at else math.nan,
                             test=f"{part.test.value}: {k.kind.value}", p=k.t_p, permutation_p=k.flip_p,
                             power=k.power, shown=k.d_k in part.d_ks, decides=at))
    for variant, part in cell.lr_parts.items() if cell.lr_verdict is not None else ():
        rows.append(_row(cell.name, f"{number}c", part, 1, cell.lr_verdict, decides=variant == LR_DECIDES))
    return rows


def table(sections: list[Section], primary: tuple[str, str] | None = None) -> pd.DataFrame:
    """The clause table of a report's sections (COLUMNS, one row per clause reading)."""
    where = "/".join(primary) if primary else ALL
    rows = []
    for s in sections:
        if s.cells:
            rows += [r for cell in s.cells for r in _cell_rows(s.number, cell)]
        else:
            rows += [_row(where if s.key == "extra" else ALL, s.number, part, 1, s.verdict) for part in s.parts]
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({"d_k": "Int64", "n_seeds": "Int64", "look": "Int64", "decides": bool, "shown": "boolean"})


def _combined(sub_claim: str, answers) -> str:
    if COMBINE.get(sub_claim) == "agree":
        each = {verdict_of([Answer(a)]) for a in answers}
        return each.pop().value if len(each) == 1 else Verdict.UNSURE.value
    return verdict_of([Answer(a) for a in answers]).value


def verdicts(clauses: pd.DataFrame) -> pd.Series:
    """The verdict (its words) per (cell, sub_claim), a groupby over the rows that decide their
    clause, combined as COMBINE declares. Sub-claim 6 also reads whether the setting can show its
    effect at all (verdicts.mup: "not observed"), which the `verdict` column carries."""
    deciding = clauses[clauses["decides"]].drop_duplicates(["cell", "sub_claim", "clause"])
    return pd.Series({key: _combined(key[1], g["answer"]) for key, g in deciding.groupby(["cell", "sub_claim"])},
                     name="verdict")
