"""Does what the toy tasks found hold on text? The synthetic cells and the text cell side by side.

Each (task, optimizer) of sub-claim 4 is read off its own reading (quality.Cell), nothing
recomputed: its verdict, the crossover d* of additive − unscaled with its interval, from which
d_k on additive is ahead of unscaled ((a)'s step-down), from which d_k on scaled is ahead of
unscaled (the profile's marks: the step-down at null 0, and (b)'s at the cell's margin), the
paired Δ at the largest d_k measured ((a)'s and (b)'s intervals) and the lr slopes ((c)).
A text cell (tables.text) is then placed against the range of the synthetic cells' values:
within it, above or below it, or not comparable where either side measured nothing.
render/transfer.py writes the table and the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from experiments.analysis.stats.intervals import NAN_INTERVAL, Interval
from experiments.analysis.stats.profile import Crossover
from experiments.analysis.tables import text
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts.rules import Part, Verdict

SLOPE_VARIANTS = ("unscaled", "scaled", "mup")  # the lr slopes the Adam step predicts (lr.theory)
AHEAD = (qp.Mark.AHEAD, qp.Mark.AHEAD_BY_MARGIN)


class Measure(Enum):
    """A number the side-by-side places the text cell by."""
    D_STAR = "d*"
    ADDITIVE_FROM = "additive ahead from d_k"
    SCALED_FROM = "scaled ahead of unscaled from d_k"


class Place(Enum):
    """Where the text cell's number sits against the synthetic cells' range."""
    WITHIN = "within"
    ABOVE = "above"
    BELOW = "below"
    TEXT_NONE = "not found on text"  # the text cell has no such d_k (no crossing, never ahead)
    NO_RANGE = "no synthetic value"  # no synthetic cell found one


class Outcome(Enum):
    """The answer to "does it hold on text?"."""
    SAME = "same verdict, numbers within the synthetic range"
    SHIFTED = "same verdict, numbers outside the synthetic range"
    DIFFERENT = "a different verdict"
    MIXED = "the synthetic cells disagree among themselves"
    NO_TEXT = "no text cell"
    NO_SYNTHETIC = "no synthetic cell"


@dataclass(frozen=True)
class Side:
    """One cell's readings, as its clauses read them."""
    name: str
    task: str
    optimizer: str
    is_text: bool
    verdict: Verdict
    seeds: int  # Verdict.FEW's fewest seeds
    margin: float
    crossover: Crossover | None
    additive_from: int | None  # (a): the step-down's first d_k
    scaled_from: int | None  # scaled − unscaled: the step-down at null 0 (the profile's marks)
    scaled_from_margin: int | None  # (b): the step-down at null margin
    additive_delta: Interval = NAN_INTERVAL  # (a)'s interval, at `additive_at`
    additive_at: int | None = None
    scaled_delta: Interval = NAN_INTERVAL  # (b)'s interval, at `scaled_at`
    scaled_at: int | None = None
    largest: int | None = None  # the largest d_k swept
    slopes: tuple[tuple[str, Interval], ...] = ()  # (variant, slope of log2 best lr per doubling)

    def value(self, m: Measure) -> float | None:
        if m is Measure.D_STAR:
            return None if self.crossover is None else self.crossover.d_star
        return self.additive_from if m is Measure.ADDITIVE_FROM else self.scaled_from


@dataclass(frozen=True)
class Placed:
    """One measure of a text cell against the synthetic range [lo, hi] (None: no synthetic value)."""
    measure: Measure
    value: float | None
    lo: float | None
    hi: float | None
    place: Place


@dataclass(frozen=True)
class TextReading:
    """One text cell against the synthetic cells: each measure placed, and the outcome."""
    name: str
    outcome: Outcome
    placed: tuple[Placed, ...]
    synthetic_verdicts: tuple[Verdict, ...]


@dataclass(frozen=True)
class Transfer:
    """The side-by-side: every cell's readings, and a reading per text cell; `missing` (NO_TEXT,
    NO_SYNTHETIC) where there is nothing to compare."""
    sides: tuple[Side, ...]
    readings: tuple[TextReading, ...] = ()
    missing: Outcome | None = None


def _part(parts: list[Part], question: type) -> Part | None:
    return next((p for p in parts if isinstance(p.question, question)), None)


def _ahead_from(rows: list[qp.ProfileRow], pair) -> int | None:
    """The smallest d_k of the run of 'ahead' marks from the largest d_k that entered for `pair`
    down: where its step-down (null 0) stopped."""
    out = None
    for row in reversed(rows):
        at = row.pairs.get(pair)
        if at is None or not row.entered or at.neither_learned or at.ci is None:
            continue
        if not any(m in AHEAD for m in at.marks):
            break
        out = row.d_k
    return out


def side_of(cell, task: str, optimizer: str) -> Side:
    """A quality.Cell's readings for the side-by-side."""
    rows = qp.profile_rows(cell.dk_profile, cell.margin)
    ahead, fix = _part(cell.parts, qr.AheadOver), _part(cell.parts, qr.AheadAt)
    slopes = tuple((v, cell.lr_parts[v].ci) for v in SLOPE_VARIANTS if v in cell.lr_parts and cell.lr_parts[v].n)
    return Side(cell.name, task, optimizer, text.is_text(task), cell.verdict, cell.seeds, cell.margin,
                cell.crossover, ahead.d_ks[0] if ahead and ahead.d_ks else None,
                _ahead_from(rows, qp.FIX_PAIR) if qp.FIX_PAIR in cell.dk_profile.diffs else None, cell.fix_from,
                ahead.ci if ahead and ahead.n else NAN_INTERVAL, ahead.at_d_k if ahead and ahead.n else None,
                fix.ci if fix and fix.n else NAN_INTERVAL, fix.at_d_k if fix and fix.n else None,
                cell.dk_profile.d_ks[-1] if cell.dk_profile.d_ks else None, slopes)


def place(m: Measure, t: Side, synthetic: list[Side]) -> Placed:
    values = [v for v in (s.value(m) for s in synthetic) if v is not None]
    lo, hi = (min(values), max(values)) if values else (None, None)
    x = t.value(m)
    if x is None:
        where = Place.TEXT_NONE
    elif not values:
        where = Place.NO_RANGE
    else:
        where = Place.BELOW if x < lo else Place.ABOVE if x > hi else Place.WITHIN
    return Placed(m, x, lo, hi, where)


def _outcome(t: Side, synthetic: list[Side], placed: list[Placed]) -> Outcome:
    verdicts = {s.verdict for s in synthetic}
    if len(verdicts) > 1:
        return Outcome.MIXED
    if t.verdict not in verdicts:
        return Outcome.DIFFERENT
    moved = any(p.place in (Place.ABOVE, Place.BELOW, Place.TEXT_NONE) for p in placed)
    return Outcome.SHIFTED if moved else Outcome.SAME


def transfer(sides: list[Side]) -> Transfer:
    synthetic = [s for s in sides if not s.is_text]
    texts = [s for s in sides if s.is_text]
    if not texts or not synthetic:
        return Transfer(tuple(sides), missing=Outcome.NO_TEXT if not texts else Outcome.NO_SYNTHETIC)
    readings = []
    for t in texts:
        placed = [place(m, t, synthetic) for m in Measure]
        readings.append(TextReading(t.name, _outcome(t, synthetic, placed), tuple(placed),
                                    tuple(s.verdict for s in synthetic)))
    return Transfer(tuple(sides), tuple(readings))
