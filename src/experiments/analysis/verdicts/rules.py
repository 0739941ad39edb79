"""The words of a verdict, and one clause of a rule: a per-seed sample, a question, an answer.

A clause asks one question of the interval over seeds of one quantity ("is
unscaled's slope within 1 ± 0.15?") and answers 'yes', 'no', 'unclear' or
'few' (fewer than MIN_SEEDS seeds: no interval to ask). Clauses combine into
a verdict: holds if every answer is 'yes', does not hold if any is 'no',
"not measured" if no clause had a single value, "inconclusive (too few
seeds ...)" if a clause lacked seeds, inconclusive otherwise. Each clause states its power: the smallest true distance from its
threshold that the interval would clear with 80% probability, from the seed
spread (stats.detectable), so that "unclear" with a wide spread reads as no
power and not as no effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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

HOLDS, FAILS, UNSURE = "holds", "does not hold", "inconclusive"
UNSEEN = "not observed in this setting"  # the setting cannot show the effect (reason given)
UNMEASURED = "not measured"  # nothing to judge: no table, no runs, or no clause with a value
VERDICTS = (HOLDS, FAILS, UNSURE, UNSEEN, UNMEASURED)
POWER_NOTE = (f"'detectable' is the smallest true distance from the threshold that the interval would "
              f"clear with {POWER:.0%} probability, (t_0.975 + t_{POWER}) sd / √n over the seed spread")


def too_few(n: int) -> str:
    return f"{UNSURE} (too few seeds: n = {n} < {MIN_SEEDS})"


@dataclass(frozen=True)
class Part:
    """One clause: `label` asked `question` of its interval `ci` over `n` seeds."""
    label: str
    question: str
    answer: str  # yes | no | unclear | few
    ci: Interval
    n: int
    detectable: float
    digits: int = 2
    reading: str = ""  # what a clause over several d_k read, in words, in place of the one interval

    def text(self) -> str:
        if self.n == 0:
            return f"{self.label}: not measured" + (f" ({self.reading})" if self.reading else "")
        if self.reading:
            return f"{self.label}: {self.reading} ({self.question}: {self.answer}; n = {self.n})"
        power = f"{self.detectable:.2g}" if math.isfinite(self.detectable) else "n/a"
        return (f"{self.label} {fmt_ci(self.ci, self.digits)} ({self.question}: {self.answer}; "
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
        answer = "few"
    elif kind == "within":
        answer = within(ci, lo, hi)
    else:
        answer = (above if kind == "above" else below)(ci, lo)
    return Part(label, question, answer, ci, n, detectable(values) if n else math.nan, digits)


def verdict_of(parts: list[Part] | list[str]) -> str:
    """Combine clause answers (Parts or plain answers) into a verdict."""
    answers = [p.answer if isinstance(p, Part) else p for p in parts]
    if answers and all(a == "yes" for a in answers):
        return HOLDS
    if "no" in answers:
        return FAILS
    if parts and all(isinstance(p, Part) and p.n == 0 for p in parts):
        return UNMEASURED
    few = [p.n for p in parts if isinstance(p, Part) and p.answer == "few"]
    if few and min(few) > 0:  # n = 0 is "not measured", not "too few"
        return too_few(min(few))
    return UNSURE


def reason(parts: list[Part]) -> str:
    return "; ".join(p.text() for p in parts)
