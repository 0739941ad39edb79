"""Verdicts as values, and one clause of a rule: a per-seed sample, a question, an answer.

A clause asks one question of the interval over seeds of one quantity ("is
unscaled's slope within 1 ± 0.15?") and answers YES, NO, UNCLEAR or FEW
(fewer than MIN_SEEDS seeds: no interval to ask). Clauses combine into a
Verdict: HOLDS if every answer is YES, FAILS if any is NO, UNMEASURED if no
clause had a single value, FEW if a clause lacked seeds (`fewest` says how
many it had), UNSURE otherwise. Words are written from these at the edge
(`words`, analysis/render). Each clause states its power: the smallest true distance from its
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
    POWER,
    Interval,
    above,
    below,
    count,
    detectable,
    fmt_ci,
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
POWER_NOTE = (f"'detectable' is the smallest true distance from the threshold that the interval would "
              f"clear with {POWER:.0%} probability, (t_0.975 + t_{POWER}) sd / √n over the seed spread")


def words(verdict: Verdict, seeds: int = 0) -> str:
    """The verdict in words; FEW names the fewest seeds a clause had (`seeds`)."""
    return f"{UNSURE.value} (too few seeds: n = {seeds} < {MIN_SEEDS})" if verdict is FEW else verdict.value


@dataclass(frozen=True)
class Part:
    """One clause: `label` asked `question` of its interval `ci` over `n` seeds, by `test`; a clause
    over several d_k also says where it found its effect (`d_ks`) and at which d_k `ci` is."""
    label: str
    question: str
    answer: Answer
    ci: Interval
    n: int
    detectable: float
    digits: int = 2
    reading: str = ""  # what a clause over several d_k read, in words, in place of the one interval
    test: Method = Method.INTERVAL
    d_ks: tuple[int, ...] = ()  # where the effect was found: ahead (step-down), equivalent (TOST)
    at_d_k: int | None = None  # the d_k whose interval `ci` is

    def text(self) -> str:
        if self.n == 0:
            return f"{self.label}: not measured" + (f" ({self.reading})" if self.reading else "")
        if self.reading:
            return f"{self.label}: {self.reading} ({self.question}: {self.answer.value}; n = {self.n})"
        power = f"{self.detectable:.2g}" if math.isfinite(self.detectable) else "n/a"
        return (f"{self.label} {fmt_ci(self.ci, self.digits)} ({self.question}: {self.answer.value}; "
                f"n = {self.n}, detectable {power})")


def judge(label: str, question: str, values, kind: str, lo: float, hi: float | None = None,
          digits: int = 2) -> Part:
    """The clause "interval of mean(values) is within [lo, hi] / above lo / below lo"."""
    values = np.asarray([] if values is None else values, dtype=float).ravel()
    n = count(values)
    ci = mean_ci(values) if n else NAN_INTERVAL
    if kind not in ("within", "above", "below"):
        raise ValueError(f"judge: kind must be within, above or below, got {kind!r}")
    if n < MIN_SEEDS:
        answer = Answer.FEW
    elif kind == "within":
        answer = Answer(within(ci, lo, hi))
    else:
        answer = Answer((above if kind == "above" else below)(ci, lo))
    return Part(label, question, answer, ci, n, detectable(values) if n else math.nan, digits)


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
    few = [p.n for p in parts if isinstance(p, Part) and p.answer is Answer.FEW]
    return min(few) if few and min(few) > 0 else 0


def reason(parts: list[Part]) -> str:
    return "; ".join(p.text() for p in parts)
