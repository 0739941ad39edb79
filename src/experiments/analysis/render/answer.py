"""The answer in plain words: per (task, optimizer), one or two sentences written from its
reading (verdicts.quality.Cell) on the d_k profile. From which d_k on unscaled falls behind scaled, and by how much at the largest d_k;
where additive crosses unscaled; where the variants are alike; whether muP's rate transfers.
REPORT.md and the dashboard open with them. Every number comes from the clauses' own
functions (stats.profile, quality_rules), so the sentences cannot disagree with the verdict.
"""

from __future__ import annotations

import numpy as np

from experiments.analysis.render.clauses import d_k_list, delta_text, question_words, reading
from experiments.analysis.render import controls as controls_words
from experiments.analysis.render import quality_robust
from experiments.analysis.render.quality import OUT
from experiments.analysis.stats import profile
from experiments.analysis.stats.intervals import mean_ci
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts.quality import Cell
from experiments.analysis.verdicts.rules import Answer, Part, words


def _alike_at(d_ks: list[int], margin: float) -> str:
    return f"alike within ±{margin:g} at {d_k_list(d_ks) if d_ks else 'no d_k'}"


def _fix(p: qp.CellProfile, fix_from: int | None, margin: float) -> str:
    if qp.FIX_PAIR not in p.diffs:
        return "Scaled was not run, so when unscaled falls behind it is not measured."
    d_ks, diffs = p.entered(qp.FIX_PAIR)
    if not d_ks:
        return "Scaled learned at no d_k, so when unscaled falls behind it is not measured."
    at = delta_text(mean_ci(diffs[:, -1]))
    behind = profile.from_which(d_ks, profile.step_down(diffs))
    head = (f"Unscaled falls behind scaled from d_k = {behind} on" if behind is not None
            else "Unscaled falls behind scaled at no d_k measured")
    beyond = (f"by more than {margin:g} AUC from d_k = {fix_from} on" if fix_from is not None
              else f"by more than {margin:g} AUC at none")
    return f"{head} ({beyond}), by {at} at d_k = {d_ks[-1]}."


def _alike_declared(c: Cell) -> str:
    """'alike within ±0.05 at d_k = 8 of the declared d_k = 4, 8 (needed: every one)'."""
    q = next((x.question for x in c.parts if isinstance(x.question, qr.Equivalent)), None)
    if q is None:
        return ""
    alike = next(x.d_ks for x in c.parts if x.question is q)
    need = "every one" if q.share >= 1 else f"{q.share:.0%}"
    judged = "" if q.judged == q.declared else f", {quality_robust.judged_words(q)}"
    return f"{_alike_at(list(alike), q.margin)} of the declared {d_k_list(q.declared)} (needed: {need}{judged})"


def _additive(c: Cell) -> str:
    p, cross = c.dk_profile, c.crossover
    if cross is None:
        return "Additive was not run."
    d_ks, diffs = p.entered(qp.CLAIM_PAIR)
    if not d_ks:
        return "Additive against unscaled: not measured (neither learned at a d_k where scaled did)."
    ahead = profile.from_which(d_ks, profile.step_down(diffs)) if d_ks else None
    where = (f"crosses unscaled at d* = {cross.text()}" if cross.d_star is not None
             else "never crosses unscaled from below")
    ahead_words = f"ahead from d_k = {ahead} on" if ahead is not None else "ahead at no d_k"
    return f"Additive {where}: {ahead_words}, {_alike_declared(c)}."


def _wide(p: qp.CellProfile, margin: float) -> str:
    """Additive with 64 hidden units beside unscaled, where it ran: whether additive's deficit
    at small d_k is its hidden width (d_hidden = d_k) or its compatibility function."""
    if qp.WIDE_PAIR not in p.diffs:
        return ""
    d_ks, diffs = p.entered(qp.WIDE_PAIR)
    ran = [j for j in range(len(d_ks)) if np.isfinite(diffs[:, j]).any()]
    if not ran:
        return ""
    j = ran[0]
    alike = [d_ks[i] for i in ran if Answer(profile.equivalent(diffs[:, i], margin)) is Answer.YES]
    where = _alike_at(alike, margin)
    return (f" With 64 hidden units (not judged), additive − unscaled is {delta_text(mean_ci(diffs[:, j]))} "
            f"at d_k = {d_ks[j]}, {where}.")


def _mup(lr_parts: dict[str, Part]) -> str:
    q = lr_parts.get("mup")
    if q is None:
        return "Whether muP's rate transfers: not measured (no mup runs)."
    if q.n == 0:
        over = f" at d_k ≥ {q.question.from_d_k}, its base width" if q.question.from_d_k else ""
        return f"Whether muP's rate transfers: not measured (no seed's slope could be fitted{over})."
    word = {Answer.YES: "transfers", Answer.NO: "does not transfer"}.get(q.answer, "may or may not transfer (unclear)")
    over = f" over d_k ≥ {q.question.from_d_k}, its base width" if q.question.from_d_k else ""
    return f"muP's rate {word}: its optimum moves {reading(q)}{over} ({question_words(q.question)})."


def _seeds(c: Cell) -> str:
    """'on 10 seeds' (the judged seeds per compared pair; 'on 8-24 seeds' where the tests differ).
    Every test behind a clause counts, not only the one its interval is read at: a stage-2 top-up
    at one alike d_k would otherwise go unsaid where the clause is read at another."""
    ns = sorted({x.n for x in c.parts if x.n} | {k.n for ks in c.checks.values() for k in ks if k.n})
    if not ns:
        return ""
    return f" on {ns[0]} seeds" if len(ns) == 1 else f" on {ns[0]}-{ns[-1]} seeds"


def _measured(c: Cell) -> bool:
    return c.controls is not None and bool(c.controls.init.rows)


def _cause(c: Cell) -> str:
    """The controls' cause, where unscaled_init ran in the cell (the Controls section says where not)."""
    return f" Why unscaled falls behind: {controls_words.cause_words(c.controls)}." if _measured(c) else ""


def cell_answer(c: Cell) -> str:
    """'**task/opt** (verdict on n seeds; its flip margins): sentences' for one (task, optimizer),
    ending with the cause the controls read."""
    p = c.dk_profile
    gap = "".join(f" Not measured at {d_k_list(d_ks)}: {OUT[why]}."
                  for why, d_ks in p.why_unmeasured().items())
    flips = f"; {quality_robust.flip_words(c.sensitivity)}" if c.sensitivity else ""
    return (f"**{p.name}** ({words(c.verdict, c.seeds)}{_seeds(c)}{flips}): {_fix(p, c.fix_from, c.margin)} "
            f"{_additive(c)}{_wide(p, c.margin)} {_mup(c.lr_parts)}{gap}{_cause(c)}")


def answer_lines(sections) -> list[str]:
    """The answer sentences of whichever section reads cells (the quality section), one per cell."""
    return [cell_answer(c) for s in sections for c in s.cells]

