"""Verdicts as values, and one clause of a rule: a per-seed sample, a question, an answer.

A clause asks one question of the interval over seeds of one quantity ("is
unscaled's slope within 1 ± 0.15?") and answers YES, NO, UNCLEAR or FEW
(fewer than MIN_SEEDS seeds: no interval to ask). Clauses combine into a
Verdict: HOLDS if every answer is YES, FAILS if any is NO, UNMEASURED if no
clause had a single value, FEW if a clause lacked seeds (`fewest` says how
many it had), UNSURE otherwise. Words are written from these at the edge
(analysis/render). Each clause states its power: the smallest true distance from its
threshold that the interval would clear with 80% probability, from the seed
spread (stats.detectable), so that "unclear" with a wide spread reads as no
power and not as no effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from experiments.analysis.stats.intervals import (
    MIN_SEEDS,
    NAN_INTERVAL,
    Interval,
    above,
    below,
    count,
    detectable,
    mean_ci,
    within,
)



class Verdict(Enum):
    """A sub-claim's (or one condition's) verdict; the value is its words."""
    HOLDS = "holds"
    FAILS = "does not hold"
    UNSURE = "inconclusive"
    FEW = "inconclusive (too few seeds)"  # a clause had fewer than MIN_SEEDS seeds (`fewest`: how many)
    UNSEEN = "not observed in this setting"  # the setting cannot show the effect (reason given)
    UNMEASURED = "not measured"  # nothing to judge: no table, no runs, or no clause with a value


class Answer(Enum):
    """One clause's answer to its question."""
    YES = "yes"
    NO = "no"
    UNCLEAR = "unclear"
    FEW = "few"  # fewer than MIN_SEEDS seeds (n = 0: not measured)
    REPORTED = "reported"  # shown beside its prediction, not judged


class Method(Enum):
    """The test behind a clause's answer."""
    INTERVAL = "t-interval over seeds"  # the two-sided interval against a band or threshold
    STEP_DOWN = "fixed-sequence step-down"  # one-sided t-tests from the largest d_k down (stats.profile)
    TOST = "TOST"  # two one-sided tests against ±margin (stats.profile.equivalent)


HOLDS, FAILS, UNSURE, FEW = Verdict.HOLDS, Verdict.FAILS, Verdict.UNSURE, Verdict.FEW
UNSEEN, UNMEASURED = Verdict.UNSEEN, Verdict.UNMEASURED

def words(verdict: Verdict, seeds: int = 0) -> str:
    """The verdict in words; FEW names the fewest seeds a clause had (`seeds`)."""
    return f"{UNSURE.value} (too few seeds: n = {seeds} < {MIN_SEEDS})" if verdict is FEW else verdict.value


class Side(Enum):
    WITHIN = "within"
    ABOVE = "above"
    BELOW = "below"


@dataclass(frozen=True)
class Band:
    """What a clause asks of its interval: within [lo, hi], above lo or below lo. `signed`: the
    quantity is a change per doubling of d_k, centred on 0 (its band reads ±x, +x)."""
    side: Side
    lo: float
    hi: float = math.nan
    signed: bool = False


@dataclass(frozen=True)
class Part:
    """One clause: `label` asked `question` (a Band, or a question of the d_k profile: quality_rules)
    of its interval `ci` over `n` seeds, by `test`; a clause over several d_k also says where it
    found its effect (`d_ks`), at which d_k `ci` is, TOST's power per d_k, and why it measured nothing."""
    label: str
    question: object
    answer: Answer
    ci: Interval
    n: int
    detectable: float
    digits: int = 2
    test: Method = Method.INTERVAL
    d_ks: tuple[int, ...] = ()  # where the effect was found: ahead (step-down), equivalent (TOST)
    at_d_k: int | None = None  # the d_k whose interval `ci` is
    power: tuple[tuple[int, float], ...] = ()  # (d_k, TOST's power there if truly equal)
    missing: Enum | None = None  # why nothing was measured (quality_rules.Missing)


def judge(label: str, values, band: Band, digits: int = 2) -> Part:
    """The clause "interval of mean(values) is within [lo, hi] / above lo / below lo"."""
    values = np.asarray([] if values is None else values, dtype=float).ravel()
    n = count(values)
    ci = mean_ci(values) if n else NAN_INTERVAL
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif band.side is Side.WITHIN:
        answer = Answer(within(ci, band.lo, band.hi))
    else:
        answer = Answer((above if band.side is Side.ABOVE else below)(ci, band.lo))
    return Part(label, band, answer, ci, n, detectable(values) if n else math.nan, digits)


def verdict_of(parts: list[Part] | list[Answer]) -> Verdict:
    """Combine clause answers (Parts or plain answers) into a verdict."""
    answers = [p.answer if isinstance(p, Part) else p for p in parts]
    if answers and all(a is Answer.YES for a in answers):
        return HOLDS
    if Answer.NO in answers:
        return FAILS
    if parts and all(isinstance(p, Part) and p.n == 0 for p in parts):
        return UNMEASURED
    return FEW if fewest(parts) else UNSURE


def fewest(parts: list[Part] | list[Answer]) -> int:
    """The fewest seeds of a clause that had too few (n = 0 is "not measured", not "too few");
    0 where none had too few."""
    few = [p.n for p in parts if isinstance(p, Part) and p.answer is Answer.FEW and p.n > 0]
    return min(few) if few else 0

