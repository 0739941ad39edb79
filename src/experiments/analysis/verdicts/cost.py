"""The verdict of sub-claim 5 (cost): additive slower and larger than scaled (docs/CLAIM.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables.cost import cost_pairs
from experiments.analysis.verdicts.rules import FAILS, HOLDS, UNSURE, Answer
from experiments.analysis.verdicts.section import CostBench, Lacks, Section, Table, no_data

COST_FACTOR = 1.5  # "much faster / more space-efficient" means at least this ratio
NAME, FIGURES = "Cost", ["cost"]


def cost_rule(time_ratio: float, add_fastest: float, scaled_slowest: float, memory_ratio: float) -> Answer:
    """One d_k at the largest n: YES if additive is slower by COST_FACTOR beyond the repeats'
    spread and needs COST_FACTOR times the memory, NO if either ratio is at most 1."""
    if time_ratio <= 1 or memory_ratio <= 1:
        return Answer.NO
    if time_ratio >= COST_FACTOR and add_fastest > scaled_slowest and memory_ratio >= COST_FACTOR:
        return Answer.YES
    return Answer.UNCLEAR


@dataclass(frozen=True)
class AtLargestN:
    """One d_k at the largest n measured: additive over scaled, and the rule's answer."""
    d_k: int
    n: int
    time_ratio: float
    fastest_over_slowest: float  # additive's fastest repeat / scaled's slowest
    memory_ratio: float
    answer: Answer


@dataclass(frozen=True)
class CostReading:
    mode: str
    at_largest_n: tuple[AtLargestN, ...]
    skipped: int  # settings where additive was skipped
    skipped_note: str  # the benchmark's note on the first of them


def _pairs(c: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Additive's rows beside scaled's timings and the reference's time ratio, in one mode."""
    add, sca, ref = cost_pairs(c, "additive"), c[c["impl"] == "scaled"], cost_pairs(c, "reference")
    key = ["mode", "n", "d_k"]
    both = add.merge(sca[key + ["time_min_s", "time_max_s"]], on=key, suffixes=("", "_scaled"))
    both = both.merge(ref[key + ["time_ratio"]], on=key, how="left", suffixes=("", "_reference"))
    return both[both["mode"] == mode].sort_values(["d_k", "n"])


def _at_largest_n(d, g: pd.DataFrame) -> AtLargestN:
    top = g[g["n"] == g["n"].max()].iloc[0]
    answer = cost_rule(top["time_ratio"], top["time_min_s"], top["time_max_s_scaled"], top["memory_ratio"])
    return AtLargestN(int(d), int(top["n"]), top["time_ratio"], top["time_min_s"] / top["time_max_s_scaled"],
                      top["memory_ratio"], answer)


def _ratio_rows(mode: str, g: pd.DataFrame) -> list[dict]:
    return [{"mode": mode, "d_k": int(r["d_k"]), "n": int(r["n"]), "time": r["time_ratio"],
             "memory": r["memory_ratio"], "predicted_memory": r.get("predicted_memory_ratio", math.nan),
             "reference_time": r["time_ratio_reference"]} for _, r in g.iterrows()]


def _bench(c: pd.DataFrame) -> CostBench:
    ints = lambda col: tuple(int(x) for x in sorted(c[col].unique()))  # noqa: E731
    return CostBench(tuple(sorted(c["impl"].unique())), tuple(sorted(c["mode"].unique())), ints("n"),
                     ints("d_k"), ints("batch") if "batch" in c else None)


def cost(res: load.Results) -> Section:
    if res.cost is None:
        return no_data("cost", "5", NAME, FIGURES, Lacks.COST_TABLE)
    c = res.cost
    mode = "forward_backward" if (c["mode"] == "forward_backward").any() else c["mode"].iloc[0]
    both = _pairs(c, mode)
    if both.empty:
        return no_data("cost", "5", NAME, FIGURES, Lacks.COST_PAIR)
    groups = list(both.groupby("d_k"))
    tops = tuple(_at_largest_n(d, g) for d, g in groups)
    answers = [t.answer for t in tops]
    verdict = (HOLDS if all(a is Answer.YES for a in answers) else FAILS if all(a is Answer.NO for a in answers)
               else UNSURE)
    skipped = c[c["impl"] == "additive"]
    skipped = skipped[skipped["skipped"].fillna(False).astype(bool)] if "skipped" in skipped else skipped.iloc[:0]
    detail = CostReading(mode, tops, len(skipped), str(skipped["note"].astype(str).iloc[0]) if len(skipped) else "")
    table = Table("cost", tuple(r for _, g in groups for r in _ratio_rows(mode, g)), {"mode": mode})
    return Section("cost", "5", NAME, FIGURES, verdict, (_bench(c),), [table], detail=detail)
