"""Sub-claims 1-3 at initialisation: variance, saturation, small gradients (3a Jacobian, 3b W_q/W_k).

Each section has a pure rule (`*_rule`: per-seed numbers in, clauses out)
that the tests drive near its thresholds, and a builder that cuts the per-seed
numbers out of the results folder; render/at_init.py states the rules in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

import attention
from experiments.analysis.tables import load
from experiments.analysis.verdicts.rules import (
    FAILS,
    HOLDS,
    UNMEASURED,
    UNSURE,
    Band,
    Part,
    Side,
    Verdict,
    fewest,
    judge,
    verdict_of,
)
from experiments.analysis.stats.intervals import per_seed_slopes
from experiments.analysis.verdicts.section import (
    GradientProbe,
    Lacks,
    Section,
    Table,
    all_slopes,
    end_source,
    init_source,
    mean_at,
    no_data,
    slope_ci,
)

TOL_SLOPE = 0.15  # band half-width for a log-log slope ("slope 1" means 0.85..1.15)
TOL_ENTROPY = 0.02  # normalised entropy change per doubling of d_k counted as "flat"
TOL_SHARE = 0.02  # saturated-share change per doubling of d_k counted as "flat"
GRAD_AGGREGATES = (("median", "grad_qk_row_median"), ("RMS", "grad_qk_row_rms"))


def _get(slopes: dict, v: str):
    return slopes.get(v, np.array([]))


def _within(centre: float, half: float, signed: bool = False) -> Band:
    return Band(Side.WITHIN, centre - half, centre + half, signed)


def variance_rule(slopes: dict) -> list[Part]:
    """Log-log slopes of logit variance: unscaled ~ d_k (slope 1), scaled flat (slope 0)."""
    return [judge("unscaled slope", _get(slopes, "unscaled"), _within(1, TOL_SLOPE)),
            judge("scaled slope", _get(slopes, "scaled"), _within(0, TOL_SLOPE))]


def saturation_rule(per_doubling: dict) -> list[Part]:
    """Normalised entropy per doubling of d_k: unscaled falls, scaled flat."""
    return [judge("unscaled entropy change per doubling", _get(per_doubling, "unscaled"),
                  Band(Side.BELOW, -TOL_ENTROPY, signed=True), digits=3),
            judge("scaled", _get(per_doubling, "scaled"), _within(0, TOL_ENTROPY, True), digits=3)]


def jacobian_rule(jac_slopes: dict, share_per_doubling: dict) -> list[Part]:
    """3a: the median row's ‖J‖_F collapses and the saturated share grows for unscaled; neither
    moves for scaled."""
    return [judge("unscaled median ‖J‖_F slope", _get(jac_slopes, "unscaled"), Band(Side.BELOW, -TOL_SLOPE)),
            judge("scaled median ‖J‖_F slope", _get(jac_slopes, "scaled"), _within(0, TOL_SLOPE)),
            judge("unscaled saturated share per doubling", _get(share_per_doubling, "unscaled"),
                  Band(Side.ABOVE, TOL_SHARE, signed=True), digits=3),
            judge("scaled saturated share per doubling", _get(share_per_doubling, "scaled"),
                  _within(0, TOL_SHARE, True), digits=3)]


def gradient_rule(ratio_slopes: dict) -> dict[str, Part]:
    """3b, one clause per aggregate: the per-seed log-log slope of unscaled/scaled shrinks."""
    return {agg: judge(f"{agg} ratio unscaled/scaled slope", ratio_slopes.get(agg, np.array([])),
                       Band(Side.BELOW, -TOL_SLOPE))
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


def predicted_slopes(d_k: int = 64) -> dict[str, float]:
    """Log-log slope of Var(c q.k) = d_k c^2 against d_k, for the variants whose
    factor c is fixed by d_k alone: 1 + 2 log2(c(2 d_k) / c(d_k))."""
    return {name: round(1 + 2 * math.log2(v.init_logit_scale(2 * d_k, 2) / v.init_logit_scale(d_k, 2)), 6) + 0.0
            for name, v in attention.VARIANTS.items() if v.bilinear and v.logit_scale is not None}


def _judged(key: str, number: str, name: str, figures: list[str], parts: list[Part], source,
            table: Table, detail=None) -> Section:
    return Section(key, number, name, figures, verdict_of(parts), (source,), [table], fewest(parts), parts,
                   detail=detail)


def variance(res: load.Results) -> Section:
    df, source = init_source(res)
    if df is None or "logit_var" not in df:
        return no_data("variance", "1", "Variance", ["logit_variance"], Lacks.INIT_ROWS)
    s = all_slopes(df, "logit_var")
    end, _ = end_source(res)
    s_end = all_slopes(end, "logit_var")
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    predicted = predicted_slopes()
    rows = tuple({"variant": v, "slope_init": slope_ci(x), "predicted": predicted.get(v),
                  "var_min": mean_at(df, "logit_var", v, d_min), "var_max": mean_at(df, "logit_var", v, d_max),
                  "slope_end": slope_ci(s_end.get(v, []))} for v, x in s.items())
    table = Table("variance", rows, {"d_min": d_min, "d_max": d_max})
    return _judged("variance", "1", "Variance", ["logit_variance"], variance_rule(s), source, table)


def saturation(res: load.Results) -> Section:
    df, source = init_source(res)
    if df is None or "entropy_norm" not in df:
        return no_data("saturation", "2", "Saturation", ["entropy", "saturation"], Lacks.ENTROPY)
    s = all_slopes(df, "entropy_norm", log_y=False)
    end, _ = end_source(res)
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    rows = tuple({"variant": v, "entropy_slope": slope_ci(x),
                  "entropy_min": mean_at(df, "entropy_norm", v, d_min),
                  "entropy_max": mean_at(df, "entropy_norm", v, d_max),
                  "share_max": mean_at(df, "saturation", v, d_max),
                  "end_entropy_max": mean_at(end, "entropy_norm", v, d_max)} for v, x in s.items())
    table = Table("saturation", rows, {"d_min": d_min, "d_max": d_max})
    return _judged("saturation", "2", "Saturation", ["entropy", "saturation"], saturation_rule(s), source, table)


def jacobian(res: load.Results) -> Section:
    name, figures = "Small gradients: the softmax Jacobian", ["gradients", "saturation"]
    df, source = init_source(res)
    if df is None or "jacobian_norm_median" not in df or "saturation" not in df:
        return no_data("jacobian", "3a", name, figures, Lacks.JACOBIAN)
    s_j, s_sat = all_slopes(df, "jacobian_norm_median"), all_slopes(df, "saturation", log_y=False)
    d_max = df["d_k"].max()
    rows = tuple({"variant": v, "jacobian_slope": slope_ci(x), "share_slope": slope_ci(s_sat.get(v, [])),
                  "jacobian_median_max": mean_at(df, "jacobian_norm_median", v, d_max),
                  "jacobian_mean_max": mean_at(df, "jacobian_norm_mean", v, d_max),
                  "share_max": mean_at(df, "saturation", v, d_max)} for v, x in s_j.items())
    table = Table("jacobian", rows, {"d_max": d_max})
    return _judged("jacobian", "3a", name, figures, jacobian_rule(s_j, s_sat), source, table)


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


@dataclass(frozen=True)
class Disagreement:
    """Why the median and the RMS tell different stories: at d_k, the share of unscaled's rows
    saturated, and unscaled's RMS over its median per-row gradient."""
    d_k: int
    saturated_share: float
    rms_over_median: float


@dataclass(frozen=True)
class GradientReading:
    """3b beyond its clauses: each aggregate's verdict (with its fewest seeds), whether the probe
    lacks the per-row columns (no median; the RMS from whole-matrix norms), and why they disagree."""
    by_aggregate: dict[str, tuple[Verdict, int]]
    legacy_probe: bool
    disagreement: Disagreement | None


def _disagreement(df: pd.DataFrame, verdicts: dict[str, Verdict]) -> Disagreement | None:
    """Where one aggregate holds and the other fails: the numbers that say why."""
    if len({v for v in verdicts.values() if v in (HOLDS, FAILS)}) != 2:
        return None
    d_max = df["d_k"].max()
    rms, med = (mean_at(df, c, "unscaled", d_max) for c in ("grad_qk_row_rms", "grad_qk_row_median"))
    return Disagreement(int(d_max), mean_at(df, "saturation", "unscaled", d_max), rms / med)


def _gradient_rows(p: pd.DataFrame) -> tuple[dict, ...]:
    d_max = p["d_k"].max()
    return tuple({"variant": v, **{f"slope_{agg}": slope_ci(all_slopes(p, c).get(v, [])) for agg, c in GRAD_AGGREGATES},
                  **{f"{agg}_max": mean_at(p, c, v, d_max) for agg, c in GRAD_AGGREGATES},
                  "share_max": mean_at(p, "saturation", v, d_max)}
                 for v in load.variant_order(p["attention"].unique()))


def gradients(res: load.Results) -> Section:
    name = "Small gradients: what reaches W_q and W_k"
    p = load.probe_rows(res.probe) if res.probe is not None else None
    if p is None or "grad_qk_row_rms" not in p:
        return no_data("gradients", "3b", name, ["gradients"], Lacks.GRADIENT_PROBE)
    wrt = p["grad_wrt"].iloc[0] if "grad_wrt" in p else "W_q,W_k"
    parts = gradient_rule(ratio_slopes(p))
    verdicts = {agg: verdict_of([part]) for agg, part in parts.items()}
    detail = GradientReading({agg: (verdicts[agg], fewest([parts[agg]])) for agg in parts},
                             "grad_qk_row_median" not in res.probe, _disagreement(p, verdicts))
    models = tuple(sorted(p["input_model"].astype(str).unique())) if "input_model" in p else None
    source = GradientProbe(models, wrt, int(p["seed"].nunique()) if "seed" in p else 1)
    table = Table("gradients", _gradient_rows(p), {"wrt": wrt, "d_max": p["d_k"].max()})
    clauses = list(parts.values())
    return Section("gradients", "3b", name, ["gradients"], gradient_verdict(parts), (source,), [table],
                   fewest(clauses), clauses, detail=detail)
