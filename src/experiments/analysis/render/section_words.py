"""What render/ writes for every section: the words of one sub-claim (SectionWords), the words
of a section that measured nothing, and the helpers its tables are written with."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from experiments.analysis.stats.intervals import fmt_ci
from experiments.analysis.verdicts.section import Lacks, Section, Table

LACKS = {Lacks.INIT_ROWS: "no probe.parquet or history.parquet", Lacks.ENTROPY: "no entropy measured",
         Lacks.JACOBIAN: "no Jacobian norms or saturated share measured",
         Lacks.GRADIENT_PROBE: "needs probe.parquet with gradient norms (python -m experiments.probe)",
         Lacks.COST_TABLE: "no cost.parquet", Lacks.COST_PAIR: "no additive and scaled pair measured",
         Lacks.HISTORY: "no history.parquet", Lacks.SUMMARY: "no summary.parquet"}


def _nothing(s: Section) -> list:
    return []


@dataclass(frozen=True)
class SectionWords:
    """One sub-claim in words: its claim and rule (in full and in one sentence), and, from its
    reading, the verdict's reason, the key number, notes and tables (caption, table)."""
    claim: str
    rule: str
    brief: str
    reason: Callable[[Section], str]
    headline: Callable[[Section], str]
    tables: Callable[[Section], list[tuple[str, pd.DataFrame]]]
    notes: Callable[[Section], list[str]] = _nothing


def num(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}g}"


def ci2(ci) -> str:
    return fmt_ci(ci, 2)


def ci3(ci) -> str:
    return fmt_ci(ci, 3)


def frame(table: Table, columns, **names) -> pd.DataFrame:
    """The table's rows in words: `columns` are (key, header, write), each header filled from
    the table's `at` (the d_k it names) and `names`."""
    at = {**table.at, **names}
    return pd.DataFrame([{header.format(**at): write(row[key]) for key, header, write in columns}
                         for row in table.rows])
