"""How a cell's sub-claim-4 verdict moves with the alike margin: data, read from the cell's d_k
profile with the section's own clause assembly at each margin.

The margin enters the clauses only through TOST (alike; "not ahead" at the largest d_k), and a
TOST decision at one d_k changes only where the margin crosses an end of that d_k's 90%
t-interval: 'yes' (equivalent) for m > max(−lo, hi), 'no' (wholly outside) for m <= max(lo, −hi).
So the verdict is constant between those ends, and the flip points are found exactly: the ends
of every entered d_k's interval (of both pairs) are the candidates, and the verdict is read just
past each, nearest to the declared margin first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import MIN_SEEDS, count, mean_ci
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts.rules import Answer, Part, Verdict, verdict_of

MARGINS = tuple(round(0.02 + 0.01 * i, 2) for i in range(7))  # the table's columns: 0.02 .. 0.08
SPAN = (MARGINS[0], MARGINS[-1])  # the figure's range
FARTHEST = 0.25  # flip points are searched for within (0, FARTHEST] AUC
STEP = 1e-7  # just past a candidate end (far below any interval's width)


@dataclass(frozen=True)
class Flip:
    """The verdict changes where the margin passes `margin` (an interval's end), to `verdict`."""
    margin: float
    verdict: Verdict


@dataclass(frozen=True)
class Sensitivity:
    """One cell's verdict and clause answers at each of `margins`, the verdict over SPAN as
    constant segments (lo, hi, verdict), and the flip points nearest the declared margin below and
    above it (None: none within (0, FARTHEST])."""
    name: str
    declared: float
    labels: tuple[str, ...]
    margins: tuple[float, ...]
    verdicts: tuple[Verdict, ...]
    answers: tuple[tuple[Answer, ...], ...]
    segments: tuple[tuple[float, float, Verdict], ...]
    below: Flip | None
    above: Flip | None


def candidate_ends(p: qp.CellProfile, alpha: float = profile.ALPHA) -> np.ndarray:
    """Every margin at which a TOST decision of the claim's or the fix's pair can change: the ends
    of each entered d_k's (1 − 2 alpha) t-interval, as |end| on either side, sorted."""
    ends = []
    for pair in (qp.CLAIM_PAIR, qp.FIX_PAIR):
        if pair not in p.diffs:
            continue
        _, diffs = p.entered(pair)
        for j in range(diffs.shape[1]):
            if count(diffs[:, j]) >= MIN_SEEDS:
                _, lo, hi = mean_ci(diffs[:, j], 1 - 2 * alpha)
                ends += [max(-lo, hi), max(lo, -hi)]
    ends = np.asarray(ends, dtype=float)
    return np.unique(ends[np.isfinite(ends) & (ends > 0) & (ends <= FARTHEST)])


def _nearest_flip(judge, ends, declared: float, upward: bool) -> Flip | None:
    first = judge(declared)
    for end in (ends[ends > declared] if upward else ends[ends < declared][::-1]):
        now = judge(end + STEP if upward else end - STEP)
        if now is not first:
            return Flip(float(end), now)
    return None


def _segments(judge, ends) -> tuple[tuple[float, float, Verdict], ...]:
    cuts = [SPAN[0], *[e for e in ends if SPAN[0] < e < SPAN[1]], SPAN[1]]
    out: list[tuple[float, float, Verdict]] = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        v = judge((lo + hi) / 2)
        if out and out[-1][2] is v:
            out[-1] = (out[-1][0], hi, v)
        else:
            out.append((lo, hi, v))
    return tuple(out)


def sensitivity(p: qp.CellProfile, declared: float, parts_at: Callable[[float], list[Part]],
                ends: np.ndarray | None = None) -> Sensitivity:
    """The cell's verdict by margin; `parts_at(m)`: its judged clauses at margin m (the section's
    own assembly, as the verdict reads them: quality.profile_parts, or both looks of a two-stage
    cell); `ends`: the margins where a clause can flip (candidate_ends at the alphas parts_at
    tests at; None: p's at the profile's alpha)."""
    judge = lambda m: verdict_of(parts_at(m))  # noqa: E731
    at = [parts_at(m) for m in MARGINS]
    ends = candidate_ends(p) if ends is None else ends
    return Sensitivity(p.name, declared, tuple(q.label for q in at[0]), MARGINS,
                       tuple(verdict_of(q) for q in at), tuple(tuple(q.answer for q in parts) for parts in at),
                       _segments(judge, ends), _nearest_flip(judge, ends, declared, False),
                       _nearest_flip(judge, ends, declared, True))
