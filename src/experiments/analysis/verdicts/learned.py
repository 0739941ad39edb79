"""Which d_k of a cell measure attention: where scaled learned there (its seed-mean AUC covered
`fraction` of the way from chance to its best in the cell), and, for a pair, where one of its two
variants learned too. That second bar is declared in conf/analysis.yaml (comparator_learned):
"final_accuracy" reads the seed-mean final validation accuracy, `fraction` of the way from chance to
scaled's best final accuracy (learning, not speed: the AUC bar shut out a variant that learned
slowly); "auc", the rule before, reads scaled's AUC bar."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

LEARNED_FRACTION = 0.25  # of the way from chance to scaled's best: a d_k where scaled learned
COMPARATOR_GATES = ("final_accuracy", "auc")
GATE = "scaled"  # the variant whose learning decides which d_k enter


@dataclass(frozen=True)
class Gate:
    """A d_k enters where scaled's seed-mean score reaches `bar`: chance plus `fraction` of the way
    to its best, `top`."""
    bar: float
    chance: float
    fraction: float
    top: float


@dataclass(frozen=True)
class LearnedRule:
    """`fraction` for both bars; `comparator`, the pair's bar (COMPARATOR_GATES)."""
    fraction: float = LEARNED_FRACTION
    comparator: str = COMPARATOR_GATES[0]


def as_rule(rule: "LearnedRule | float") -> LearnedRule:
    """A bare fraction is the rule with the declared comparator gate's default."""
    return rule if isinstance(rule, LearnedRule) else LearnedRule(float(rule))


def learned(best: pd.DataFrame, d_ks, fraction: float, score: str = "val_auc") -> tuple[dict[str, list[bool]], Gate | None]:
    """({variant: per d_k, did its seed-mean `score` at its best lr (diverged runs at chance) cover
    `fraction` of the way from chance to scaled's best seed-mean `score` in this cell}, the bar).
    Every d_k counts as learned where scaled was not run (no bar: None)."""
    means = best.groupby(["attention", "d_k"])[score].mean()
    variants = sorted(set(best["attention"]))
    if GATE not in variants:
        return {v: [True] * len(d_ks) for v in variants}, None
    sc = best[best["attention"] == GATE]
    chance = float(sc["chance"].mean()) if sc["chance"].notna().any() else 0.0
    top = float(means[GATE].max())
    bar = chance + fraction * (top - chance)
    out = {v: [bool((v, d) in means.index and means[(v, d)] >= bar) for d in d_ks] for v in variants}
    return out, Gate(bar, chance, fraction, top)
