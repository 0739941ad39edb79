"""Sub-claims 1-3 at initialisation: variance, saturation, small gradients (3a Jacobian, 3b W_q/W_k).

Each section has a pure rule (`*_rule`: per-seed numbers in, clauses out)
that the tests drive near its thresholds, and a builder that cuts the per-seed
numbers out of the results folder and states the rule.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import attention
from experiments.analysis.tables import load
from experiments.analysis.verdicts.rules import (
    FAILS,
    HOLDS,
    UNMEASURED,
    UNSURE,
    Part,
    Verdict,
    fewest,
    judge,
    reason,
    verdict_of,
    words,
)
from experiments.analysis.stats.intervals import per_seed_slopes
from experiments.analysis.verdicts.section import (
    INTERVALS,
    Section,
    all_slopes,
    end_source,
    init_source,
    mean_at,
    estimates,
    no_data,
    num,
    slope_text,
)

TOL_SLOPE = 0.15  # band half-width for a log-log slope ("slope 1" means 0.85..1.15)
TOL_ENTROPY = 0.02  # normalised entropy change per doubling of d_k counted as "flat"
TOL_SHARE = 0.02  # saturated-share change per doubling of d_k counted as "flat"
GRAD_AGGREGATES = (("median", "grad_qk_row_median"), ("RMS", "grad_qk_row_rms"))


def _get(slopes: dict, v: str):
    return slopes.get(v, np.array([]))


def variance_rule(slopes: dict) -> list[Part]:
    """Log-log slopes of logit variance: unscaled ~ d_k (slope 1), scaled flat (slope 0)."""
    return [judge("unscaled slope", f"within 1 ± {TOL_SLOPE}", _get(slopes, "unscaled"), "within",
                  1 - TOL_SLOPE, 1 + TOL_SLOPE),
            judge("scaled slope", f"within 0 ± {TOL_SLOPE}", _get(slopes, "scaled"), "within",
                  -TOL_SLOPE, TOL_SLOPE)]


def saturation_rule(per_doubling: dict) -> list[Part]:
    """Normalised entropy per doubling of d_k: unscaled falls, scaled flat."""
    return [judge("unscaled entropy change per doubling", f"below -{TOL_ENTROPY}",
                  _get(per_doubling, "unscaled"), "below", -TOL_ENTROPY, digits=3),
            judge("scaled", f"within ±{TOL_ENTROPY}", _get(per_doubling, "scaled"), "within",
                  -TOL_ENTROPY, TOL_ENTROPY, digits=3)]


def jacobian_rule(jac_slopes: dict, share_per_doubling: dict) -> list[Part]:
    """3a: the median row's ‖J‖_F collapses and the saturated share grows for unscaled; neither
    moves for scaled."""
    return [judge("unscaled median ‖J‖_F slope", f"below -{TOL_SLOPE}", _get(jac_slopes, "unscaled"),
                  "below", -TOL_SLOPE),
            judge("scaled median ‖J‖_F slope", f"within 0 ± {TOL_SLOPE}", _get(jac_slopes, "scaled"),
                  "within", -TOL_SLOPE, TOL_SLOPE),
            judge("unscaled saturated share per doubling", f"above +{TOL_SHARE}",
                  _get(share_per_doubling, "unscaled"), "above", TOL_SHARE, digits=3),
            judge("scaled saturated share per doubling", f"within ±{TOL_SHARE}",
                  _get(share_per_doubling, "scaled"), "within", -TOL_SHARE, TOL_SHARE, digits=3)]


def gradient_rule(ratio_slopes: dict) -> dict[str, Part]:
    """3b, one clause per aggregate: the per-seed log-log slope of unscaled/scaled shrinks."""
    return {agg: judge(f"{agg} ratio unscaled/scaled slope", f"below -{TOL_SLOPE}",
                       ratio_slopes.get(agg, np.array([])), "below", -TOL_SLOPE)
            for agg, _ in GRAD_AGGREGATES}


def gradient_verdict(parts: dict[str, Part]) -> Verdict:
    """Both aggregates measured and agreeing (too few seeds: as few): their verdict; neither
    measured: not measured. Otherwise inconclusive: where they disagree the report says why,
    and neither is picked."""
    if all(p.n == 0 for p in parts.values()):
        return UNMEASURED
    each = {(verdict_of([p]), fewest([p])) for p in parts.values()}
    measured = all(p.n > 0 for p in parts.values())
    return each.pop()[0] if measured and len(each) == 1 else UNSURE


def predicted_slopes(d_k: int = 64) -> dict[str, str]:
    """Log-log slope of Var(c q.k) = d_k c^2 against d_k, for the variants whose
    factor c is fixed by d_k alone: 1 + 2 log2(c(2 d_k) / c(d_k))."""
    return {name: f"{round(1 + 2 * math.log2(v.logit_scale(2 * d_k, 2) / v.logit_scale(d_k, 2)), 6) + 0.0:g}"
            for name, v in attention.VARIANTS.items() if v.bilinear and v.logit_scale is not None}


def variance(res: load.Results) -> Section:
    title, claim = "1. Variance", ("q·k of unit-variance components has variance d_k; dividing by "
                                   "√d_k brings it back to 1 for every d_k.")
    rule = (f"Log-log slope of logit variance vs d_k at init, fitted per seed; {INTERVALS}. Holds if "
            f"unscaled's interval lies within 1 ± {TOL_SLOPE} and scaled's within 0 ± {TOL_SLOPE}; does "
            "not hold if either lies wholly outside its band; inconclusive otherwise.")
    brief = (f"The log-log slope of logit variance against d_k at init is 1 ± {TOL_SLOPE} for unscaled "
             f"and 0 ± {TOL_SLOPE} for scaled.")
    src, df, cond_text = init_source(res)
    if df is None or "logit_var" not in df:
        return no_data("variance", title, claim, ["logit_variance"], rule, "no probe.parquet or history.parquet",
                       brief)
    s = all_slopes(df, "logit_var")
    end, _ = end_source(res)
    s_end = all_slopes(end, "logit_var")
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    predicted = predicted_slopes()
    rows = [{"variant": v, f"slope at init ({src})": slope_text(x), "predicted": predicted.get(v, "—"),
             f"Var at d_k={d_min}": num(mean_at(df, "logit_var", v, d_min)),
             f"Var at d_k={d_max}": num(mean_at(df, "logit_var", v, d_max)),
             "slope at end of training": slope_text(s_end.get(v, []))} for v, x in s.items()]
    parts = variance_rule(s)
    return Section("variance", title, claim, ["logit_variance"], rule, verdict_of(parts), reason(parts),
                   cond_text, [("Logit variance vs d_k", pd.DataFrame(rows))],
                   headline="log-log slope " + estimates(parts, ["unscaled", "scaled"]), rule_brief=brief,
                   seeds=fewest(parts), parts=parts)


def saturation(res: load.Results) -> Section:
    title, claim = "2. Saturation", ("Large logits push softmax towards one-hot: attention entropy falls "
                                     "as d_k grows (unscaled) and stays put (scaled).")
    rule = (f"Change of normalised entropy (H / log n) per doubling of d_k at init, fitted per seed; "
            f"{INTERVALS}. Holds if unscaled's interval lies below -{TOL_ENTROPY} (falls) and scaled's "
            f"within ±{TOL_ENTROPY} (flat); does not hold if unscaled's lies at or above -{TOL_ENTROPY} "
            f"or scaled's wholly outside ±{TOL_ENTROPY}; inconclusive otherwise.")
    brief = (f"Normalised entropy at init falls by more than {TOL_ENTROPY} per doubling of d_k for "
             f"unscaled and stays within ±{TOL_ENTROPY} for scaled.")
    src, df, cond_text = init_source(res)
    if df is None or "entropy_norm" not in df:
        return no_data("saturation", title, claim, ["entropy", "saturation"], rule, "no entropy measured", brief)
    s = all_slopes(df, "entropy_norm", log_y=False)
    end, _ = end_source(res)
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    rows = [{"variant": v, f"Δ entropy_norm per doubling ({src})": slope_text(x, 3),
             f"entropy_norm at d_k={d_min}": num(mean_at(df, "entropy_norm", v, d_min)),
             f"entropy_norm at d_k={d_max}": num(mean_at(df, "entropy_norm", v, d_max)),
             f"saturated share at d_k={d_max}": num(mean_at(df, "saturation", v, d_max)),
             f"end of training entropy_norm at d_k={d_max}": num(mean_at(end, "entropy_norm", v, d_max))}
            for v, x in s.items()]
    parts = saturation_rule(s)
    return Section("saturation", title, claim, ["entropy", "saturation"], rule, verdict_of(parts),
                   reason(parts), cond_text, [("Normalised entropy and saturated share", pd.DataFrame(rows))],
                   headline="entropy per doubling of d_k " + estimates(parts, ["unscaled", "scaled"], 3),
                   rule_brief=brief, seeds=fewest(parts), parts=parts)


def jacobian(res: load.Results) -> Section:
    title, claim = "3a. Small gradients: the softmax Jacobian", (
        "Where unscaled logits are large the softmax is pushed into regions where it has extremely "
        "small gradients: a saturated row has J = diag(s) - s sᵀ ≈ 0.")
    rule = (f"At init, fitted per seed; {INTERVALS}. Holds if unscaled's log-log slope of the median "
            f"row's ‖J‖_F lies below -{TOL_SLOPE} and its saturated share (max weight > 0.99) grows by "
            f"more than {TOL_SHARE} per doubling of d_k, while scaled's ‖J‖_F slope lies within "
            f"0 ± {TOL_SLOPE} and its share within ±{TOL_SHARE}; does not hold if any of the four lies "
            "wholly on the wrong side; inconclusive otherwise. The median, not the mean: the mean of "
            "‖J‖_F over rows falls only like 1/σ and is not monotone in σ (docs/CLAIM.md).")
    brief = ("At init, unscaled's median-row softmax Jacobian shrinks with d_k and its saturated share "
             "grows, while scaled's stay flat.")
    src, df, cond_text = init_source(res)
    if df is None or "jacobian_norm_median" not in df or "saturation" not in df:
        return no_data("jacobian", title, claim, ["gradients", "saturation"], rule,
                       "no Jacobian norms or saturated share measured", brief)
    s_j, s_sat = all_slopes(df, "jacobian_norm_median"), all_slopes(df, "saturation", log_y=False)
    d_max = df["d_k"].max()
    rows = [{"variant": v, f"median ‖J‖_F slope ({src})": slope_text(x),
             "saturated share per doubling": slope_text(s_sat.get(v, []), 3),
             f"median ‖J‖_F at d_k={d_max}": num(mean_at(df, "jacobian_norm_median", v, d_max)),
             f"mean ‖J‖_F at d_k={d_max}": num(mean_at(df, "jacobian_norm_mean", v, d_max)),
             f"saturated share at d_k={d_max}": num(mean_at(df, "saturation", v, d_max))}
            for v, x in s_j.items()]
    parts = jacobian_rule(s_j, s_sat)
    return Section("jacobian", title, claim, ["gradients", "saturation"], rule, verdict_of(parts),
                   reason(parts), cond_text, [("Softmax Jacobian and saturated share", pd.DataFrame(rows))],
                   headline="median ‖J‖_F log-log slope " + estimates(parts[:2], ["unscaled", "scaled"]),
                   rule_brief=brief, seeds=fewest(parts), parts=parts)


def ratio_slopes(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """{aggregate: per-seed log-log slope of the per-row gradient ratio unscaled / scaled}.
    Seeds pair: at one seed and d_k both variants see the same q, k draws."""
    out = {}
    for agg, column in GRAD_AGGREGATES:
        if column in df and df[column].notna().any():
            d_ks, a, b = load.paired_seeds(df, column, "unscaled", "scaled")
            with np.errstate(invalid="ignore", divide="ignore"):
                out[agg] = per_seed_slopes(d_ks, a / b)
    return out


def _disagreement(df: pd.DataFrame, verdicts: dict[str, str]) -> str:
    """Why the median and the RMS tell different stories, from the measured saturated share."""
    d_max = df["d_k"].max()
    share = mean_at(df, "saturation", "unscaled", d_max)
    rms, med = (mean_at(df, c, "unscaled", d_max) for c in ("grad_qk_row_rms", "grad_qk_row_median"))
    typical = "a saturated row" if share > 0.5 else "an unsaturated row"
    shrinks = {agg: "shrinks" if v == HOLDS else "does not shrink" for agg, v in verdicts.items()}
    return (f"The two aggregates disagree. At d_k={d_max}, {num(100 * share, 2)}% of unscaled rows are "
            f"saturated (max weight > 0.99), so the median row is {typical}; a saturated row's gradient "
            f"is ~0 (3a). The RMS, a mean of squares, is carried by the largest per-row gradients, those "
            f"of the {num(100 * (1 - share), 2)}% unsaturated rows, whose logit is not divided by √d_k "
            f"(unscaled RMS/median = {num(rms / med)}). So the typical row's gradient {shrinks['median']} "
            f"relative to scaled, and the total reaching W_q, W_k {shrinks['RMS']}: both are reported, "
            "neither is picked.")


def gradients(res: load.Results) -> Section:
    title, claim = "3b. Small gradients: what reaches W_q and W_k", (
        "The gradient reaching the query and key projections becomes small (unscaled, large d_k). "
        "Caveat (docs/CLAIM.md): the unscaled logit is not divided, which puts an extra ~√d_k into that "
        "gradient and can offset the Jacobian's shrinkage.")
    rule = (f"Per-row gradient norms at init from the probe, aggregated over rows by the median and by "
            f"the RMS; per seed, the log-log slope vs d_k of unscaled/scaled (seeds paired); {INTERVALS}. "
            f"For each aggregate: holds if the interval lies below -{TOL_SLOPE} (shrinks), does not hold "
            f"if at or above it, inconclusive otherwise (+0.5 would be the bare √d_k). The section holds "
            "or fails when both aggregates agree; where they disagree it is inconclusive and says why.")
    brief = ("The per-row gradient reaching W_q, W_k, unscaled over scaled, shrinks with d_k, by its "
             "median and by its RMS over rows.")
    p = load.probe_rows(res.probe) if res.probe is not None else None
    if p is None or "grad_qk_row_rms" not in p:
        return no_data("gradients", title, claim, ["gradients"], rule,
                       "needs probe.parquet with gradient norms (python -m experiments.probe)", brief)
    wrt = p["grad_wrt"].iloc[0] if "grad_wrt" in p else "W_q,W_k"
    label = f"‖∂l/∂({wrt.replace(',', ', ')})‖ per row"
    slopes = ratio_slopes(p)
    parts = gradient_rule(slopes)
    verdicts = {agg: verdict_of([part]) for agg, part in parts.items()}
    d_max = p["d_k"].max()
    rows = [{"variant": v, **{f"{label}, {agg}: slope": slope_text(all_slopes(p, c).get(v, []))
                              for agg, c in GRAD_AGGREGATES},
             **{f"{agg} at d_k={d_max}": num(mean_at(p, c, v, d_max)) for agg, c in GRAD_AGGREGATES},
             f"saturated share at d_k={d_max}": num(mean_at(p, "saturation", v, d_max))}
            for v in load.variant_order(p["attention"].unique())]
    notes = [f"By the {agg}: {words(verdicts[agg], fewest([parts[agg]]))}. {parts[agg].text()}" for agg in verdicts]
    if "grad_qk_row_median" not in res.probe:
        notes.append("probe.parquet predates the per-row columns: no median, and the RMS is "
                     "hypot(grad_norm_q, grad_norm_k) (exact for q, in expectation for k); rerun "
                     "python -m experiments.probe")
    verdict = gradient_verdict(parts)
    if len({v for v in verdicts.values() if v in (HOLDS, FAILS)}) == 2:
        notes.append(_disagreement(p, verdicts))
    n_seeds = p["seed"].nunique() if "seed" in p else 1
    conds = (f"init-time probe, input_model {', '.join(sorted(p['input_model'].astype(str).unique()))} "
             f"(gradients w.r.t. {wrt}); {n_seeds} seed(s)") if "input_model" in p else "init-time probe"
    return Section("gradients", title, claim, ["gradients"], rule, verdict, reason(list(parts.values())),
                   conds, [(f"Per-row gradient norms {label}", pd.DataFrame(rows))], notes,
                   headline="unscaled/scaled log-log slope " + estimates(list(parts.values()), list(parts)),
                   rule_brief=brief, seeds=fewest(list(parts.values())), parts=list(parts.values()))

