"""Sub-claims 1-3 at initialisation in words: claims, rules, reasons, key numbers, notes and
tables, written from verdicts.at_init's readings."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.render.clauses import INTERVALS, estimates, part_text, reason
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
    claim="q·k of unit-variance components has variance d_k; dividing by √d_k brings it back to 1 for every d_k.",
    rule=(f"Log-log slope of logit variance vs d_k at init, fitted per seed; {INTERVALS}. Holds if "
          f"unscaled's interval lies within 1 ± {TOL_SLOPE} and scaled's within 0 ± {TOL_SLOPE}; does "
          "not hold if either lies wholly outside its band; inconclusive otherwise."),
    brief=(f"The log-log slope of logit variance against d_k at init is 1 ± {TOL_SLOPE} for unscaled "
           f"and 0 ± {TOL_SLOPE} for scaled."),
    key_number="log-log slope", caption="Logit variance vs d_k", columns=VARIANCE_COLUMNS)

SATURATION_COLUMNS = [VARIANT, ("entropy_slope", "Δ entropy_norm per doubling ({src})", ci3),
                      ("entropy_min", "entropy_norm at d_k={d_min}", num),
                      ("entropy_max", "entropy_norm at d_k={d_max}", num), SHARE_AT_MAX,
                      ("end_entropy_max", "end of training entropy_norm at d_k={d_max}", num)]
SATURATION = _on_two_clauses(
    claim=("Large logits push softmax towards one-hot: attention entropy falls as d_k grows (unscaled) and "
           "stays put (scaled)."),
    rule=(f"Change of normalised entropy (H / log n) per doubling of d_k at init, fitted per seed; "
          f"{INTERVALS}. Holds if unscaled's interval lies below -{TOL_ENTROPY} (falls) and scaled's "
          f"within ±{TOL_ENTROPY} (flat); does not hold if unscaled's lies at or above -{TOL_ENTROPY} "
          f"or scaled's wholly outside ±{TOL_ENTROPY}; inconclusive otherwise."),
    brief=(f"Normalised entropy at init falls by more than {TOL_ENTROPY} per doubling of d_k for "
           f"unscaled and stays within ±{TOL_ENTROPY} for scaled."),
    key_number="entropy per doubling of d_k", caption="Normalised entropy and saturated share",
    columns=SATURATION_COLUMNS, digits=3)

JACOBIAN_COLUMNS = [VARIANT, ("jacobian_slope", "median ‖J‖_F slope ({src})", ci2),
                    ("share_slope", "saturated share per doubling", ci3),
                    ("jacobian_median_max", "median ‖J‖_F at d_k={d_max}", num),
                    ("jacobian_mean_max", "mean ‖J‖_F at d_k={d_max}", num), SHARE_AT_MAX]
JACOBIAN = _on_two_clauses(
    claim=("Where unscaled logits are large the softmax is pushed into regions where it has extremely "
           "small gradients: a saturated row has J = diag(s) - s sᵀ ≈ 0."),
    rule=(f"At init, fitted per seed; {INTERVALS}. Holds if unscaled's log-log slope of the median "
          f"row's ‖J‖_F lies below -{TOL_SLOPE} and its saturated share (max weight > 0.99) grows by "
          f"more than {TOL_SHARE} per doubling of d_k, while scaled's ‖J‖_F slope lies within "
          f"0 ± {TOL_SLOPE} and its share within ±{TOL_SHARE}; does not hold if any of the four lies "
          "wholly on the wrong side; inconclusive otherwise. The median, not the mean: the mean of "
          "‖J‖_F over rows falls only like 1/σ and is not monotone in σ (docs/CLAIM.md)."),
    brief=("At init, unscaled's median-row softmax Jacobian shrinks with d_k and its saturated share "
           "grows, while scaled's stay flat."),
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
    claim=("The gradient reaching the query and key projections becomes small (unscaled, large d_k). "
           "Caveat (docs/CLAIM.md): the unscaled logit is not divided, which puts an extra ~√d_k into that "
           "gradient and can offset the Jacobian's shrinkage."),
    rule=(f"Per-row gradient norms at init from the probe, aggregated over rows by the median and by "
          f"the RMS; per seed, the log-log slope vs d_k of unscaled/scaled (seeds paired); {INTERVALS}. "
          f"For each aggregate: holds if the interval lies below -{TOL_SLOPE} (shrinks), does not hold "
          f"if at or above it, inconclusive otherwise (+0.5 would be the bare √d_k). The section holds "
          "or fails when both aggregates agree; where they disagree it is inconclusive and says why."),
    brief=("The per-row gradient reaching W_q, W_k, unscaled over scaled, shrinks with d_k, by its "
           "median and by its RMS over rows."),
    reason=_parts_reason,
    headline=lambda s: "unscaled/scaled log-log slope " + estimates(s.parts, [a for a, _ in GRAD_AGGREGATES]),
    tables=_gradient_table,
    notes=_gradient_notes)

WORDS = {"variance": VARIANCE, "saturation": SATURATION, "jacobian": JACOBIAN, "gradients": GRADIENTS}
