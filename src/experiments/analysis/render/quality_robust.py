"""Sub-claim 4's robustness readings in words (verdicts.sensitivity, verdicts.robust): the verdict
by margin with its flip points, each t-test with the sign-flip test and the powers beside it, and
d*'s interval both ways; the tables and the phrases the cell lines and the answer quote."""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.render.clauses import d_k_list
from experiments.analysis.stats import robust as robust_stats
from experiments.analysis.stats.crossing import FAR_D_K
from experiments.analysis.verdicts import robust
from experiments.analysis.verdicts.rules import Answer
from experiments.analysis.verdicts.sensitivity import FARTHEST, Sensitivity

ANSWER_MARK = {Answer.YES: "y", Answer.NO: "n", Answer.UNCLEAR: "?", Answer.FEW: "f", Answer.REPORTED: "r"}
SIGN_FLIP = (f"sign-flip permutation test on the paired seed differences (scipy.stats.permutation_test, "
             f"permutation_type='samples'): exact up to {robust_stats.EXACT_SEEDS} seeds, beyond that "
             f"{robust_stats.MONTE_CARLO:,} random sign patterns from seed {robust_stats.MC_SEED}")


def flip_words(s: Sensitivity) -> str:
    """'at every margin from 0.017 to 0.051; does not hold below, holds above': where the verdict flips."""
    lo = f"{s.below.margin:.3f}" if s.below else "0"
    hi = f"{s.above.margin:.3f}" if s.above else f"{FARTHEST:g}"
    sides = [f"{s.below.verdict.value} below" if s.below else "", f"{s.above.verdict.value} above" if s.above else ""]
    sides = [x for x in sides if x]
    return f"at every margin from {lo} to {hi}" + (f"; {', '.join(sides)}" if sides else "")


def _at_margin(s: Sensitivity, i: int) -> str:
    marks = "".join(ANSWER_MARK[a] for a in s.answers[i])
    return f"{s.verdicts[i].value} ({marks})"


def sensitivity_frame(rows) -> pd.DataFrame:
    out = []
    for r in rows:
        s: Sensitivity = r["cell"]
        cols = {(f"±{m:.2f} (declared)" if math.isclose(m, s.declared) else f"±{m:.2f}"): _at_margin(s, i)
                for i, m in enumerate(s.margins)}
        out.append({"cell": s.name, "declared": f"±{s.declared:g}", **cols,
                    "flips below": "none" if s.below is None else f"{s.below.margin:.3f} → {s.below.verdict.value}",
                    "flips above": "none" if s.above is None else f"{s.above.margin:.3f} → {s.above.verdict.value}"})
    return pd.DataFrame(out).fillna("—")


def sensitivity_caption(rows) -> str:
    labels = rows[0]["cell"].labels if rows else ()
    key = ", ".join(f"{i + 1}. {label}" for i, label in enumerate(labels))
    return ("The verdict by alike margin: each cell's (a) + (b) recomputed at margins 0.02-0.08, its clauses' "
            f"answers in brackets (y yes, n no, ? unclear, f too few seeds; in order: {key}); the flip points are "
            "exact, the ends of a TOST's 90% interval nearest the declared margin at which the verdict changes "
            f"(searched up to {FARTHEST:g})")


def _p(x: float) -> str:
    return "n/a" if not math.isfinite(x) else ("<0.0001" if x < 1e-4 else f"{x:.4f}")


def _seeds(n: int | None, power: float) -> str:
    if n is not None:
        return str(n)
    return "—" if not math.isfinite(power) else f"> {robust_stats.MOST_SEEDS} or Δ on the null's side"


def checks_frame(rows) -> pd.DataFrame:
    out = []
    for r in rows:
        k: robust.Check = r["check"]
        test = f"Δ > {k.null:g}" if k.kind is robust.Kind.AHEAD else f"TOST ±{k.null:g}"
        out.append({"cell": r["cell"], "clause": k.clause, "d_k": k.d_k, "test": test, "n": k.n,
                    "Δ": f"{k.delta:+.3f}", "t p": _p(k.t_p),
                    "sign-flip p": _p(k.flip_p) + ("" if k.exact else " (MC)"),
                    "agree at 0.05": "no" if k.disagree else "yes",
                    "power at Δ observed": _pct(k.power), "seeds for 80% at Δ observed": _seeds(k.seeds_80, k.power),
                    "TOST power if Δ = 0": "—" if k.power_if_equal is None else _pct(k.power_if_equal),
                    "seeds for 80% if Δ = 0": ("—" if k.kind is robust.Kind.AHEAD
                                               else _seeds(k.seeds_80_if_equal, 1.0))})
    return pd.DataFrame(out)


def _pct(x: float) -> str:
    return f"{x:.0%}" if math.isfinite(x) else "n/a"


def checks_caption() -> str:
    return ("Every t-test behind a clause (the step-down's one-sided tests from the largest d_k down to the first "
            "not rejected; the ahead test at the largest d_k; TOST at each declared alike d_k, and at the largest "
            f"where the answer is not 'yes'), with the {SIGN_FLIP} beside it; the t-test decides. Power at the "
            "observed mean Δ and paired sd at the seeds used, and the seeds that would give 80% there; for TOST "
            "also at Δ = 0")


def stretches(zero_set) -> str:
    """'[6.58, 10.8] ∪ [43.3, 206]' (an open end: 'open')."""
    end = lambda v: "open" if v is None else f"{v:.3g}"  # noqa: E731
    return " ∪ ".join(f"[{end(s.lo)}, {end(s.hi)}]" for s in zero_set) or "nowhere"


def boot_words(b) -> str:
    if b is None:
        return "bootstrap: too few whole seeds"
    ci = (f"[{b.lo:.3g}, {b.hi:.3g}]" if b.lo is not None else "no interval (fewer than half the resamples cross)")
    return (f"bootstrap over seeds {ci}, no crossing in {b.no_crossing:.0%} of {b.resamples:,} resamples, "
            f"last crossing above {b.far:g} in {b.beyond:.0%}")


def crossing_words(both) -> str:
    """'0 within the pointwise interval at [..] ∪ [..]; bootstrap over seeds [..], …'."""
    if both is None:
        return ""
    return f"pointwise interval holds 0 at d_k in {stretches(both.zero_set)}; {boot_words(both.boot)}"


def crossing_frame(rows) -> pd.DataFrame:
    out = []
    for r in rows:
        both, b = r["both ways"], r["both ways"].boot if r["both ways"] else None
        out.append({"cell": r["cell"], "d* [local interval]": r["d*"].text(),
                    "pointwise 95% interval holds 0 at d_k": stretches(both.zero_set) if both else "—",
                    "bootstrap 95% (percentile)": "—" if b is None or b.lo is None else f"[{b.lo:.3g}, {b.hi:.3g}]",
                    "no crossing": "—" if b is None else f"{b.no_crossing:.0%}",
                    f"last crossing above {FAR_D_K}": "—" if b is None else f"{b.beyond:.0%}"})
    return pd.DataFrame(out).fillna("—")


def crossing_caption(rows) -> str:
    b = next((r["both ways"].boot for r in rows if r["both ways"] and r["both ways"].boot), None)
    boot = (f"{b.resamples:,} resamples of whole seeds (numpy default_rng({b.seed})), d* recomputed on each "
            "resample's mean profile" if b else "resamples of whole seeds")
    return ("d* (additive − unscaled) both ways: beside the local interval (the stretch around d* where the "
            "pointwise 95% t-interval of the interpolated profile holds 0), every stretch where it does, and a "
            f"bootstrap: {boot}")


def disagreements(checks: dict) -> str:
    """'t and sign-flip disagree at 0.05: (a) … at d_k = 4 (TOST: t 0.04, sign-flip 0.07)'; '' where none."""
    found = [k for ks in checks.values() for k in ks if k.disagree]
    if not found:
        return ""
    return "t and sign-flip disagree at 0.05: " + "; ".join(
        f"{k.clause} at d_k = {k.d_k} ({k.kind.value}: t p {_p(k.t_p)}, sign-flip p {_p(k.flip_p)})" for k in found)


def tost_power_words(checks: dict, label: str) -> str:
    """'TOST power at the observed Δ: 4: 49% (80% at 22 seeds), 8: 99% (6)' of the alike clause."""
    ks = [k for k in checks.get(label, ()) if k.kind is robust.Kind.TOST]
    if not ks:
        return ""
    each = ", ".join(f"{k.d_k}: {_pct(k.power)} (80% at {k.seeds_80 if k.seeds_80 else 'no n: Δ outside'})"
                     for k in ks)
    return f"TOST power at the observed Δ: {each}"


def judged_words(question) -> str:
    """'judged at d_k = 8; d_k = 4 not swept or not entered' where some declared d_k was not swept or
    did not enter."""
    if tuple(question.judged) == tuple(question.declared):
        return f"judged at {d_k_list(question.judged)}"
    left = [d for d in question.declared if d not in question.judged]
    judged = d_k_list(question.judged) if question.judged else "no d_k"
    return f"judged at {judged}; {d_k_list(left)} not swept or not entered"
