"""The synthetic cells beside the text cell in words (verdicts.transfer): one table, one row per
(task, optimizer), and the plain sentence that answers "does what the toy tasks found hold on
text?" in numbers. Where no text cell was run, one line says so instead of the table."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.render.clauses import delta_text, signed_ci
from experiments.analysis.verdicts import transfer as tr
from experiments.analysis.verdicts.rules import words

TITLE = "Toy tasks and text"
CAPTION = ("Each (task, optimizer) read off its own clauses of sub-claim 4, at each variant's chosen rate: "
           "d* = where additive − unscaled crosses 0 [95% interval]; \"from d_k\" = the step-down from the "
           "largest d_k (family-wise 5%), for scaled − unscaled at null 0 and, in brackets, at the cell's "
           "margin (clause (b)); Δ AUC at the largest d_k measured [95% t-interval over seeds]; lr slope = "
           "log2(best lr) per doubling of d_k [95% interval] (predicted: unscaled −1, scaled −0.5, mup 0)")
NOT_MEASURED = "Text: not measured (no text cell, task=charlm, in this folder)."
NO_SYNTHETIC = "Text beside the toy tasks: no synthetic cell in this folder to compare the text cell with."
MEASURE = {tr.Measure.D_STAR: "d*", tr.Measure.ADDITIVE_FROM: "additive ahead from d_k",
           tr.Measure.SCALED_FROM: "scaled ahead of unscaled from d_k"}
ANSWER = {tr.Outcome.SAME: "yes: the same verdict, with d* and the d_k from which additive and scaled pull ahead "
                           "within the toy tasks' range",
          tr.Outcome.SHIFTED: "in its verdict yes, in its numbers no: the same verdict, with d* or a 'from d_k' "
                              "outside the toy tasks' range",
          tr.Outcome.DIFFERENT: "no: the verdict differs",
          tr.Outcome.MIXED: "the toy tasks disagree among themselves, so only the numbers compare"}


def of(sections) -> tr.Transfer | None:
    """The side-by-side of whichever section reads cells (the quality section); None without one."""
    return next((s.detail.side_by_side for s in sections if getattr(s.detail, "side_by_side", None)), None)


def _from(d: int | None) -> str:
    return "none" if d is None else str(d)


def _at(ci, at: int | None, largest: int | None) -> str:
    if at is None:
        return "not measured"
    return delta_text(ci) + ("" if at == largest else f" (at d_k = {at})")


def _row(s: tr.Side) -> dict:
    slopes = ", ".join(f"{v} {signed_ci(ci)}" for v, ci in s.slopes) or "no lr grid"
    return {"cell": s.name, "kind": "text" if s.is_text else "synthetic", "verdict": words(s.verdict, s.seeds),
            "margin": f"±{s.margin:g}", "d*": "not measured" if s.crossover is None else s.crossover.text(),
            "additive ahead from d_k": _from(s.additive_from),
            "scaled ahead of unscaled from d_k (> margin)": f"{_from(s.scaled_from)} ({_from(s.scaled_from_margin)})",
            f"Δ additive − unscaled at the largest d_k": _at(s.additive_delta, s.additive_at, s.largest),
            f"Δ scaled − unscaled at the largest d_k": _at(s.scaled_delta, s.scaled_at, s.largest),
            "lr slopes": slopes}


def table(t: tr.Transfer) -> pd.DataFrame | None:
    """The side-by-side, text cells last; None where there is no text cell or no synthetic one."""
    if t.missing is not None:
        return None
    return pd.DataFrame([_row(s) for s in sorted(t.sides, key=lambda s: s.is_text)])


def _number(x: float | None) -> str:
    return "none" if x is None else f"{x:.3g}"


def _placed(p: tr.Placed) -> str:
    """'d* = 12.1 (toy tasks 7.4–8.8: above)'."""
    where = "none found" if p.lo is None else f"{_number(p.lo)}–{_number(p.hi)}"
    return f"{MEASURE[p.measure]} {_number(p.value)} (toy tasks: {where}; {p.place.value})"


def sentence(t: tr.Transfer) -> str:
    """One plain sentence per text cell: does what the toy tasks found hold on text, in numbers."""
    if t.missing is tr.Outcome.NO_TEXT:
        return NOT_MEASURED
    if t.missing is tr.Outcome.NO_SYNTHETIC:
        return NO_SYNTHETIC
    sides = {s.name: s for s in t.sides}
    out = []
    for r in t.readings:
        text = sides[r.name]
        toy = ", ".join(sorted({words(v) for v in r.synthetic_verdicts}))
        out.append(f"Does what the toy tasks found hold on text? {ANSWER[r.outcome]}: {r.name} "
                   f"{words(text.verdict, text.seeds)} (toy tasks: {toy}); "
                   + "; ".join(_placed(p) for p in r.placed) + ".")
    return " ".join(out)
