"""One clause (verdicts.rules.Part) in words: its question, what it read, and the line that
states both with its interval, answer and power; the note on intervals every rule cites."""

from __future__ import annotations

import math

from experiments.analysis.stats.intervals import METHOD, POWER, fmt_ci
from experiments.analysis.verdicts import quality_rules as qr
from experiments.analysis.verdicts.rules import Band, Part, Side

POWER_NOTE = (f"'detectable' is the smallest true distance from the threshold that the interval would "
              f"clear with {POWER:.0%} probability, (t_0.975 + t_{POWER}) sd / √n over the seed spread")
INTERVALS = f"{METHOD}; {POWER_NOTE}"
MISSING = {qr.Missing.NONE_ENTERED: "no d_k where scaled and one of the two variants learned",
           qr.Missing.NONE_DECLARED: "none of the declared alike d_ks was swept and entered",
           qr.Missing.NO_ADDITIVE: "no additive runs in this condition"}


def d_k_list(d_ks) -> str:
    """'d_k = 4, 8, 16': a set of swept d_k in words."""
    return "d_k = " + ", ".join(map(str, d_ks))


def signed_ci(ci) -> str:
    """'+0.120 [+0.050, +0.190]': an AUC difference with its interval."""
    est, lo, hi = ci
    if not math.isfinite(est):
        return "n/a"
    return f"{est:+.3f} [{lo:+.3f}, {hi:+.3f}]" if math.isfinite(lo) else f"{est:+.3f}"


def delta_text(ci) -> str:
    """'+0.120 [+0.050, +0.190]': a paired Δ with its interval, the bounds left out where either is open."""
    est, lo, hi = ci
    if not math.isfinite(est):
        return "n/a"
    bounds = f" [{lo:+.3f}, {hi:+.3f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{est:+.3f}{bounds}"


def band_words(b: Band) -> str:
    """'within 1 ± 0.15', 'within ±0.02', 'above +0.02', 'below -0.15'."""
    if b.side is Side.WITHIN:
        half = (b.hi - b.lo) / 2
        return f"within ±{half:g}" if b.signed else f"within {(b.lo + b.hi) / 2:g} ± {half:g}"
    return f"{b.side.value} {b.lo:+g}" if b.signed else f"{b.side.value} {b.lo:g}"


def question_words(q) -> str:
    if isinstance(q, Band):
        return band_words(q)
    if isinstance(q, qr.AheadOver):
        return f"ahead over a range including d_k = {q.d_k}"
    if isinstance(q, qr.AheadAt):
        return f"ahead at d_k = {q.d_k}"
    if isinstance(q, qr.Equivalent):
        share = "every one" if q.share >= 1 else f"{q.share:.0%}"
        judged = d_k_list(q.judged) if q.judged else "none"
        return (f"equivalent within ±{q.margin:g} at {share} of the declared {d_k_list(q.declared)} "
                f"(judged: {judged})")
    if q.predicted == 0:
        return f"flat: within ±{q.band:.2f}"
    return "predicted " + ("none" if q.predicted is None else f"{q.predicted:+.1f}")


def _found(p: Part) -> str:
    """What a step-down found: the range where the variant is ahead (by more than (b)'s margin)."""
    q = p.question
    if isinstance(q, qr.AheadOver):
        return (f"ahead from d_k = {p.d_ks[0]} on (step-down, family-wise {qr.ALPHA:.0%})" if p.d_ks
                else "ahead at no d_k")
    head = f"ahead by more than {q.margin:g}"
    return (f"{head} from d_k = {p.d_ks[0]} on" if p.d_ks else f"{head} at no d_k") + " (step-down)"


def _power(power) -> str:
    return ", ".join(f"{d}: {p:.0%}" if math.isfinite(p) else f"{d}: n/a" for d, p in power)


def reading(p: Part) -> str:
    """What a clause over the d_k profile (or the lr view) read, in place of one interval."""
    if isinstance(p.question, qr.LrSlope):
        return f"{signed_ci(p.ci)} per doubling"
    at = f"; at d_k = {p.at_d_k}: {signed_ci(p.ci)}"
    if isinstance(p.question, qr.Equivalent):
        found = f"equivalent (TOST) at {d_k_list(p.d_ks)}" if p.d_ks else "equivalent at no d_k"
        return f"{found}{at}; power if truly equal at the paired sd: {_power(p.power)}"
    largest = p.question.d_k
    return _found(p) + at + ("" if p.at_d_k == largest else f"; the largest d_k, {largest}, not measured")


def part_text(p: Part) -> str:
    """'unscaled slope 1.00 [0.98, 1.02] (within 1 ± 0.15: yes; n = 3, detectable 0.05)'."""
    if p.n == 0:
        why = MISSING[p.missing] if p.missing else "" if isinstance(p.question, Band) else reading(p)
        return f"{p.label}: not measured" + (f" ({why})" if why else "")
    question = f"{question_words(p.question)}: {p.answer.value}"
    if not isinstance(p.question, Band):
        return f"{p.label}: {reading(p)} ({question}; n = {p.n})"
    power = f"{p.detectable:.2g}" if math.isfinite(p.detectable) else "n/a"
    return f"{p.label} {fmt_ci(p.ci, p.digits)} ({question}; n = {p.n}, detectable {power})"


def reason(parts: list[Part]) -> str:
    return "; ".join(part_text(p) for p in parts)


def estimates(parts: list[Part], names: list[str] | None = None, digits: int = 2) -> str:
    """'unscaled 1.00, scaled -0.00': the mean of each clause's interval, by label (or by `names`,
    one per clause), for a section's key number."""
    names = names or [p.label for p in parts]
    return ", ".join(f"{name} {round(p.ci[0], digits) + 0.0:.{digits}f}" if p.n and math.isfinite(p.ci[0])
                     else f"{name} n/a" for name, p in zip(names, parts))
