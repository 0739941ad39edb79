"""Sub-claims 1-3 at initialisation in words: claims, rules, reasons, key numbers, notes and
tables, written from verdicts.at_init's readings."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.render.clauses import INTERVALS, estimates, part_text, reason
from experiments.analysis.render.markdown import section_text
from experiments.analysis.render.section_words import SectionWords, ci2, ci3, frame, num
from experiments.analysis.verdicts.at_init import GRAD_AGGREGATES, TOL_ENTROPY, TOL_SHARE, TOL_SLOPE
from experiments.analysis.verdicts.rules import HOLDS, words
from experiments.analysis.verdicts.section import Probe, Section


def _at_init_table(s: Section, columns) -> pd.DataFrame:
    """The section's table, its headers naming where the numbers at init come from."""
    return frame(s.tables[0], columns, src="probe" if isinstance(s.sources[0], Probe) else "history step 0")


def _parts_reason(s: Section) -> str:
    return reason(s.parts)


def _on_two_clauses(claim: str, rule: str, brief: str, key_number: str, caption: str, columns,
                    digits: int = 2) -> SectionWords:
    """A section whose key number is unscaled's and scaled's estimate (its first two clauses) and
    whose one table is per variant."""
    return SectionWords(claim, rule, brief, _parts_reason,
                        lambda s: f"{key_number} " + estimates(s.parts[:2], ["unscaled", "scaled"], digits),
                        lambda s: [(caption, _at_init_table(s, columns))])


def _predicted(x) -> str:
    return "—" if x is None else f"{x:g}"


VARIANT = ("variant", "variant", str)
SHARE_AT_MAX = ("share_max", "saturated share at d_k={d_max}", num)
VARIANCE_COLUMNS = [VARIANT, ("slope_init", "slope at init ({src})", ci2),
                    ("predicted", "predicted", _predicted), ("var_min", "Var at d_k={d_min}", num),
                    ("var_max", "Var at d_k={d_max}", num), ("slope_end", "slope at end of training", ci2)]
VARIANCE = _on_two_clauses(
    **section_text("variance", intervals=INTERVALS, tol_slope=TOL_SLOPE),
    key_number="log-log slope", caption="Logit variance vs d_k", columns=VARIANCE_COLUMNS)

SATURATION_COLUMNS = [VARIANT, ("entropy_slope", "Δ entropy_norm per doubling ({src})", ci3),
                      ("entropy_min", "entropy_norm at d_k={d_min}", num),
                      ("entropy_max", "entropy_norm at d_k={d_max}", num), SHARE_AT_MAX,
                      ("end_entropy_max", "end of training entropy_norm at d_k={d_max}", num)]
SATURATION = _on_two_clauses(
    **section_text("saturation", intervals=INTERVALS, tol_entropy=TOL_ENTROPY),
    key_number="entropy per doubling of d_k", caption="Normalised entropy and saturated share",
    columns=SATURATION_COLUMNS, digits=3)

JACOBIAN_COLUMNS = [VARIANT, ("jacobian_slope", "median ‖J‖_F slope ({src})", ci2),
                    ("share_slope", "saturated share per doubling", ci3),
                    ("jacobian_median_max", "median ‖J‖_F at d_k={d_max}", num),
                    ("jacobian_mean_max", "mean ‖J‖_F at d_k={d_max}", num), SHARE_AT_MAX]
JACOBIAN = _on_two_clauses(
    **section_text("jacobian", intervals=INTERVALS, tol_slope=TOL_SLOPE, tol_share=TOL_SHARE),
    key_number="median ‖J‖_F log-log slope", caption="Softmax Jacobian and saturated share",
    columns=JACOBIAN_COLUMNS)


def _disagreement(s: Section) -> str:
    """Why the median and the RMS tell different stories, from the measured saturated share."""
    d, by = s.detail.disagreement, s.detail.by_aggregate
    share = d.saturated_share
    typical = "a saturated row" if share > 0.5 else "an unsaturated row"
    shrinks = {agg: "shrinks" if v == HOLDS else "does not shrink" for agg, (v, _) in by.items()}
    return (f"The two aggregates disagree. At d_k={d.d_k}, {num(100 * share, 2)}% of unscaled rows are "
            f"saturated (max weight > 0.99), so the median row is {typical}; a saturated row's gradient "
            f"is ~0 (3a). The RMS, a mean of squares, is carried by the largest per-row gradients, those "
            f"of the {num(100 * (1 - share), 2)}% unsaturated rows, whose logit is not divided by √d_k "
            f"(unscaled RMS/median = {num(d.rms_over_median)}). So the typical row's gradient {shrinks['median']} "
            f"relative to scaled, and the total reaching W_q, W_k {shrinks['RMS']}: both are reported, "
            "neither is picked.")


def _gradient_notes(s: Section) -> list[str]:
    by = s.detail.by_aggregate
    notes = [f"By the {agg}: {words(*by[agg])}. {part_text(p)}" for agg, p in zip(by, s.parts)]
    if s.detail.legacy_probe:
        notes.append("probe.parquet predates the per-row columns: no median, and the RMS is "
                     "hypot(grad_norm_q, grad_norm_k) (exact for q, in expectation for k); rerun "
                     "python -m experiments.probe")
    return notes + ([_disagreement(s)] if s.detail.disagreement else [])


def _gradient_table(s: Section) -> list:
    table = s.tables[0]
    label = f"‖∂l/∂({table.at['wrt'].replace(',', ', ')})‖ per row"
    columns = [VARIANT,
               *((f"slope_{agg}", f"{label}, {agg}: slope", ci2) for agg, _ in GRAD_AGGREGATES),
               *((f"{agg}_max", f"{agg} at d_k={{d_max}}", num) for agg, _ in GRAD_AGGREGATES),
               SHARE_AT_MAX]
    return [(f"Per-row gradient norms {label}", frame(table, columns))]


GRADIENTS = SectionWords(
    **section_text("gradients", intervals=INTERVALS, tol_slope=TOL_SLOPE),
    reason=_parts_reason,
    headline=lambda s: "unscaled/scaled log-log slope " + estimates(s.parts, [a for a, _ in GRAD_AGGREGATES]),
    tables=_gradient_table,
    notes=_gradient_notes)

WORDS = {"variance": VARIANCE, "saturation": SATURATION, "jacobian": JACOBIAN, "gradients": GRADIENTS}
