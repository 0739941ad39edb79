"""The report's "Controls" section in words, written from verdicts.controls' reading: where
unscaled_init sits between unscaled and scaled (one sentence per cell on the cause, and a table by
d_k), and additive at 64 hidden units beside Britz's tied additive (crossover, alike, ahead)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.render.clauses import d_k_list, delta_text, part_text
from experiments.analysis.stats.intervals import fmt_ci
from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts.controls import HALFWAY, Cause, CellControls, Controls, InitAt, Lack, PairReading
from experiments.analysis.verdicts.rules import Part

TITLE = "Controls"
INTRO = (
    "Two controls that say why, reported, not judged. **unscaled_init** is unscaled's score q.k with "
    "W_q's init shrunk by 1/√d_k: its logits at init follow scaled's law, while under Adam its W_q step "
    "moves the logits as unscaled's does and its W_k step as scaled's does (tests/test_controls_init.py). "
    "Each variant at its own chosen rate, on the judged seeds, paired seed by seed: f = mean(unscaled_init − "
    "unscaled) / mean(scaled − unscaled) is the fraction of the way from unscaled (0) to scaled (1), with "
    "Fieller's 95% interval, defined where scaled − unscaled is itself nonzero. Near scaled (f's interval "
    f"above {HALFWAY:g}) says the saturated start was the harm; near unscaled (below {HALFWAY:g}) says it is "
    "what training does to the logits, Adam's W_q step growing like d_k · lr. It cannot separate W_k's "
    "share (its W_k step is scaled's, so what that step alone does reads as the start), and each rate "
    "choice can absorb part of either cause (a smaller rate also shrinks the W_q step). "
    "**additive_wide** is additive with 64 hidden units at every d_k, read by section 4's own clauses "
    "(crossover d*, alike on the declared d_ks, ahead) with its paired differences against unscaled in "
    "place of the tied additive's (d_hidden = d_k, Britz et al.'s setting): the crossover and alike "
    "without the capacity confound of a 2-unit scorer at d_k = 2.")
CAUSE_WORDS = {
    Cause.START: "unscaled_init sits near scaled: the saturated start was the harm, not training's logit step",
    Cause.TRAINING: ("unscaled_init sits near unscaled: the harm is what training does to the logits (Adam's "
                     "W_q step growing like d_k · lr), not the saturated start"),
    Cause.BETWEEN: "unscaled_init sits between the two: the saturated start and training's logit step both count",
    Cause.NO_GAP: "scaled and unscaled do not differ at any d_k measured: no fall to explain",
}
LACK_WORDS = {Lack.SUMMARY: "no summary.parquet", Lack.NOT_RUN: "no runs in this cell",
              Lack.NEIGHBOURS: "no unscaled or scaled runs in this cell"}


def _fraction(r: InitAt) -> str:
    return "undefined (no gap)" if r.fraction is None else fmt_ci(r.fraction, 2)


def init_sentence(c: CellControls) -> str:
    """One plain sentence on the cause of unscaled's fall in a cell."""
    return f"**{c.name}**: {cause_words(c)}."


def cause_words(c: CellControls) -> str:
    """The cause of unscaled's fall in a cell, as the unscaled_init control reads it."""
    init = c.init
    if init.lacks or not init.rows:
        why = LACK_WORDS[init.lacks] if init.lacks else "no d_k where scaled learned"
        return f"unscaled_init not measured ({why})"
    by_d = "; ".join(f"{d_k_list(d_ks)}: {cause_name(k)}" for k, d_ks in init.causes().items())
    return f"{CAUSE_WORDS[init.cause()]} ({by_d})"


def cause_name(c: Cause) -> str:
    return {Cause.START: "near scaled", Cause.TRAINING: "near unscaled"}.get(c, c.value)


def init_table(c: CellControls) -> pd.DataFrame:
    return pd.DataFrame([{"d_k": r.d_k, "Δ AUC − unscaled": delta_text(r.vs_unscaled),
                          "Δ AUC − scaled": delta_text(r.vs_scaled), "scaled − unscaled": delta_text(r.gap),
                          "f (0 unscaled, 1 scaled)": _fraction(r), "reading": cause_name(r.cause)}
                         for r in c.init.rows])


def _crossing(r: PairReading) -> str:
    return "none (the mean Δ never crosses 0 from below)" if r.crossover.d_star is None else r.crossover.text()


def _clause(p: Part) -> str:
    """A clause's answer with where it found its effect and the interval it shows."""
    if p.n == 0:
        return part_text(p).split(": ", 1)[1]
    found = (f"TOST holds at {', '.join(map(str, p.d_ks)) or 'none'}" if isinstance(p.question, qr.Equivalent)
             else f"from d_k = {p.d_ks[0]} on" if p.d_ks else "at no d_k")
    return f"{p.answer.value} ({found}; at d_k = {p.at_d_k}: {delta_text(p.ci)}, n = {p.n})"


def wide_rows(c: CellControls) -> list[dict]:
    """additive_wide's reading beside the tied additive's in one cell, a row each."""
    w = c.wide
    if w.lacks:
        return [{"cell": c.name, "additive": "d_hidden 64", "d_k run": f"not measured ({LACK_WORDS[w.lacks]})"}]
    out = []
    for form, r, unrun in (("d_hidden 64", w.wide, w.never_run), ("tied, d_hidden = d_k", w.tied, ())):
        if r is None or not r.d_ks:
            out.append({"cell": c.name, "additive": form, "d_k run": "not measured"})
            continue
        run = ", ".join(map(str, r.d_ks)) + (f" (not run at {', '.join(map(str, unrun))})" if unrun else "")
        out.append({"cell": c.name, "additive": form, "d_k run": run,
                    "Δ AUC − unscaled at its smallest d_k": f"{r.d_ks[0]}: {delta_text(r.smallest)}",
                    "crossover d*": _crossing(r), "alike (declared d_k)": _clause(r.alike),
                    "ahead": _clause(r.ahead)})
    return out


def blocks(reading: Controls) -> list:
    """The section body: paragraphs (str) and (caption, table) pairs, in order."""
    if reading.lacks:
        return [f"Not measured: {LACK_WORDS[reading.lacks]}."]
    out: list = ["*unscaled_init: the cause of unscaled's fall, per cell.*",
                 "\n".join(f"- {init_sentence(c)}" for c in reading.cells)]
    out += [(f"unscaled_init by d_k, {c.name}: paired Δ AUC [95% CI] at each variant's chosen rate", init_table(c))
            for c in reading.cells if c.init.rows]
    wide = pd.DataFrame([row for c in reading.cells for row in wide_rows(c)]).fillna("")
    out.append(("additive at a fixed hidden width (64) beside the tied additive (Britz et al.'s setting): "
                "section 4's clauses on each form's paired Δ AUC against unscaled", wide))
    return out
