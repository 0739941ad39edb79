"""Verdicts for the attention-statistics sub-claims (variance, saturation, gradients, extra variants).

Every verdict is computed from a table built here from the results folder;
the rule that decides it is stated in the Section it returns. Sub-verdicts
are three-way ('yes' / 'no' / 'unclear', see stats.within/above/below) and
combine as: holds if every part is 'yes', does not hold if any is 'no',
inconclusive otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import load, status
from .stats import LEVEL, N_BOOT, above, below, bootstrap_slope_ci, fmt_ci, within

HOLDS, FAILS, UNSURE = "holds", "does not hold", "inconclusive"
TOL_SLOPE = 0.15  # band half-width for a log-log slope ("slope 1" means 0.85..1.15)
TOL_ENTROPY = 0.02  # normalised entropy change per doubling of d_k counted as "flat"
BOOT = f"{LEVEL:.0%} percentile bootstrap CI over seeds ({N_BOOT} resamples, fixed seed)"


@dataclass
class Section:
    key: str
    title: str
    claim: str
    figures: list[str]
    rule: str
    verdict: str
    reason: str
    conditions: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


def combine(parts: list[str]) -> str:
    if parts and all(p == "yes" for p in parts):
        return HOLDS
    return FAILS if "no" in parts else UNSURE


def no_data(key: str, title: str, claim: str, figures: list[str], rule: str, what: str) -> Section:
    return Section(key, title, claim, figures, rule, UNSURE, f"no data: {what}", "not measured")


def _num(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}g}"


def _mean_at(df: pd.DataFrame, column: str, variant: str, d_k) -> float:
    sub = df[(df["attention"] == variant) & (df["d_k"] == d_k)]
    return float(sub[column].mean()) if column in sub and len(sub) else math.nan


def slopes(df: pd.DataFrame, column: str, log_y: bool = True) -> dict[str, tuple]:
    """{variant: slope interval} of column against d_k; per doubling when not log-log."""
    out = {}
    for v in load.variant_order(df["attention"].unique()):
        ci = bootstrap_slope_ci(load.seed_groups(df, column, v), log_y=log_y)
        out[v] = ci if log_y else tuple(x * np.log(2) for x in ci)
    return out


def describe_runs(summary: pd.DataFrame | None, cond) -> str:
    """Task, optimizer, steps, seeds and constant config columns of the runs behind a section."""
    if summary is None:
        return f"task {cond[0]}, optimizer {cond[1]} (no summary.parquet for details)"
    s = load.at_condition(summary, cond)
    seeds = sorted(int(x) for x in s["seed"].unique())
    steps = ", ".join(str(int(x)) for x in sorted(s["steps"].dropna().unique())) if "steps" in s else "?"
    n_div = len(status.diverged(s))
    runs = f"{len(s)} runs" + (f", of which {n_div} diverged (left out after init)" if n_div else "")
    parts = [f"task `{cond[0]}`", f"optimizer `{cond[1]}`", f"{steps} steps",
             f"{len(seeds)} seeds ({', '.join(map(str, seeds))})", runs]
    if "experiment" in s:
        parts.append("experiment " + ", ".join(f"`{e}`" for e in sorted(s["experiment"].astype(str).unique())))
    # what shapes the numbers; logger.* and the variants' own knobs do not belong here
    shaping = ("task.", "train.", "model.", "optimizer.")
    for col in sorted(c for c in s.columns if c.startswith(shaping)):
        vals = s[col].dropna().astype(str).unique()
        if len(vals) == 1 and len(parts) < 24:
            parts.append(f"`{col}`={vals[0]}")
    return "; ".join(parts)


def init_source(res: load.Results):
    """(label, rows, conditions) at init: the probe when it has 2+ seeds, else step 0 of history."""
    p = load.probe_rows(res.probe) if res.probe is not None else None
    if p is not None and ("seed" in p and p["seed"].nunique() >= 2 or res.history is None):
        desc = ", ".join(f"{c} {', '.join(str(v) for v in sorted(p[c].astype(str).unique()))}"
                         for c in ("input_model", "init", "n_keys", "n_rows") if c in p)
        return "probe", p, f"init-time probe: {desc}; {p['seed'].nunique() if 'seed' in p else 1} seed(s)"
    if res.history is not None:
        cond = load.primary_condition(res.history)
        rows = load.init_rows(load.at_condition(res.history, cond))
        return "history step 0", rows, "step 0 of training: " + describe_runs(res.summary, cond)
    return None, None, None


def end_source(res: load.Results):
    """End-of-training rows of the primary condition, diverged runs left out."""
    if res.history is None:
        return None, None
    cond = load.primary_condition(res.history)
    trained = status.without_diverged(load.at_condition(res.history, cond), res.summary)
    return load.end_rows(trained), cond


def variance(res: load.Results) -> Section:
    title, claim = "1. Variance", ("q·k of unit-variance components has variance d_k; dividing by "
                                   "√d_k brings it back to 1 for every d_k.")
    rule = (f"Log-log slope of logit variance vs d_k, {BOOT}. Holds if unscaled's CI lies within "
            f"1 ± {TOL_SLOPE} and scaled's within 0 ± {TOL_SLOPE}; does not hold if either CI lies "
            "wholly outside its band; inconclusive otherwise (or with fewer than 2 seeds).")
    src, df, cond_text = init_source(res)
    if df is None or "logit_var" not in df:
        return no_data("variance", title, claim, ["logit_variance"], rule, "no probe.parquet or history.parquet")
    s = slopes(df, "logit_var")
    end, _ = end_source(res)
    s_end = slopes(end, "logit_var") if end is not None else {}
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    predicted = {"unscaled": "1", "scaled": "0", "mup": "-1"}
    rows = [{"variant": v, f"slope at init ({src})": fmt_ci(ci), "predicted": predicted.get(v, "—"),
             f"Var at d_k={d_min}": _num(_mean_at(df, "logit_var", v, d_min)),
             f"Var at d_k={d_max}": _num(_mean_at(df, "logit_var", v, d_max)),
             "slope at end of training": fmt_ci(s_end.get(v, (math.nan,) * 3))} for v, ci in s.items()]
    parts = [within(s.get("unscaled", (math.nan,) * 3), 1 - TOL_SLOPE, 1 + TOL_SLOPE),
             within(s.get("scaled", (math.nan,) * 3), -TOL_SLOPE, TOL_SLOPE)]
    reason = (f"unscaled slope {fmt_ci(s.get('unscaled', (math.nan,) * 3))} (within 1±{TOL_SLOPE}: {parts[0]}), "
              f"scaled slope {fmt_ci(s.get('scaled', (math.nan,) * 3))} (within 0±{TOL_SLOPE}: {parts[1]})")
    return Section("variance", title, claim, ["logit_variance"], rule, combine(parts), reason, cond_text,
                   [("Logit variance vs d_k", pd.DataFrame(rows))])


def saturation(res: load.Results) -> Section:
    title, claim = "2. Saturation", ("Large logits push softmax towards one-hot: attention entropy falls "
                                     "as d_k grows (unscaled) and stays put (scaled).")
    rule = (f"Change of normalised entropy (H / log n) per doubling of d_k at init, {BOOT}. Holds if "
            f"unscaled's CI lies below -{TOL_ENTROPY} (falls) and scaled's within ±{TOL_ENTROPY} (flat); "
            f"does not hold if unscaled's CI lies at or above -{TOL_ENTROPY} or scaled's wholly outside "
            f"±{TOL_ENTROPY}; inconclusive otherwise.")
    src, df, cond_text = init_source(res)
    if df is None or "entropy_norm" not in df:
        return no_data("saturation", title, claim, ["entropy", "saturation"], rule, "no entropy measured")
    s = slopes(df, "entropy_norm", log_y=False)
    end, _ = end_source(res)
    d_min, d_max = df["d_k"].min(), df["d_k"].max()
    rows = [{"variant": v, f"Δ entropy_norm per doubling ({src})": fmt_ci(ci, 3),
             f"entropy_norm at d_k={d_min}": _num(_mean_at(df, "entropy_norm", v, d_min)),
             f"entropy_norm at d_k={d_max}": _num(_mean_at(df, "entropy_norm", v, d_max)),
             f"saturated share at d_k={d_max}": _num(_mean_at(df, "saturation", v, d_max)),
             f"end of training entropy_norm at d_k={d_max}":
                 _num(_mean_at(end, "entropy_norm", v, d_max)) if end is not None else "n/a"}
            for v, ci in s.items()]
    nan3 = (math.nan,) * 3
    parts = [below(s.get("unscaled", nan3), -TOL_ENTROPY), within(s.get("scaled", nan3), -TOL_ENTROPY, TOL_ENTROPY)]
    reason = (f"unscaled entropy change per doubling {fmt_ci(s.get('unscaled', nan3), 3)} (falls: {parts[0]}), "
              f"scaled {fmt_ci(s.get('scaled', nan3), 3)} (flat: {parts[1]})")
    return Section("saturation", title, claim, ["entropy", "saturation"], rule, combine(parts), reason,
                   cond_text, [("Normalised entropy and saturated share", pd.DataFrame(rows))])


def _qk_ratio_groups(df: pd.DataFrame) -> dict[float, list[float]]:
    """{d_k: per-seed ratio ‖∇W_q,W_k‖ unscaled / scaled}, seeds paired by number."""
    if not {"grad_norm_q", "grad_norm_k"} <= set(df.columns):
        return {}
    qk = df.assign(qk=np.hypot(df["grad_norm_q"], df["grad_norm_k"]))
    wide = load.per_seed(qk, "qk").pivot_table(index=["d_k", "seed"], columns="attention", values="qk")
    if not {"unscaled", "scaled"} <= set(wide.columns):
        return {}
    ratio = (wide["unscaled"] / wide["scaled"]).dropna()
    return {float(d): g.tolist() for d, g in ratio.groupby(level="d_k")}


def gradients(res: load.Results) -> Section:
    title, claim = "3. Small gradients", (
        "Saturated softmax rows have a Jacobian near 0, so gradients become extremely small (unscaled, "
        "large d_k). Caveat: the gradient reaching W_q, W_k in the unscaled case carries an extra ~√d_k.")
    rule = (f"Two log-log slopes vs d_k at init, {BOOT}. (a) Jacobian collapse: unscaled's median "
            f"‖J‖_F slope CI below -{TOL_SLOPE} and scaled's within 0 ± {TOL_SLOPE}. (b) Parameter "
            f"gradients: slope of the per-seed ratio ‖∇W_q,W_k‖ unscaled/scaled below -{TOL_SLOPE}. "
            "Holds if (a) and (b) both hold; does not hold if either is contradicted (CI wholly on the "
            "wrong side of its threshold or band); inconclusive otherwise.")
    src, df, cond_text = init_source(res)
    if df is None or "jacobian_norm_median" not in df:
        return no_data("gradients", title, claim, ["gradients"], rule, "no Jacobian norms measured")
    nan3 = (math.nan,) * 3
    s_j = slopes(df, "jacobian_norm_median")
    qk = df.assign(qk=np.hypot(df["grad_norm_q"], df["grad_norm_k"])) if "grad_norm_q" in df else None
    s_g = slopes(qk, "qk") if qk is not None else {}
    ratio = bootstrap_slope_ci(_qk_ratio_groups(df))
    d_max = df["d_k"].max()
    rows = [{"variant": v, f"median ‖J‖_F slope ({src})": fmt_ci(ci),
             "‖∇W_q,W_k‖ slope": fmt_ci(s_g.get(v, nan3)),
             f"median ‖J‖_F at d_k={d_max}": _num(_mean_at(df, "jacobian_norm_median", v, d_max)),
             f"mean ‖J‖_F at d_k={d_max}": _num(_mean_at(df, "jacobian_norm_mean", v, d_max)),
             f"saturated share at d_k={d_max}": _num(_mean_at(df, "saturation", v, d_max))}
            for v, ci in s_j.items()]
    parts = [below(s_j.get("unscaled", nan3), -TOL_SLOPE), within(s_j.get("scaled", nan3), -TOL_SLOPE, TOL_SLOPE),
             below(ratio, -TOL_SLOPE)]
    reason = (f"unscaled median Jacobian slope {fmt_ci(s_j.get('unscaled', nan3))} (collapses: {parts[0]}), "
              f"scaled {fmt_ci(s_j.get('scaled', nan3))} (flat: {parts[1]}); Q/K gradient ratio "
              f"unscaled/scaled slope {fmt_ci(ratio)} (shrinks: {parts[2]}; +0.5 would be the bare √d_k factor)")
    return Section("gradients", title, claim, ["gradients", "saturation"], rule, combine(parts), reason,
                   cond_text, [("Softmax Jacobian and Q/K gradient norms", pd.DataFrame(rows))])


def extra(res: load.Results) -> Section:
    title, claim = "6. Extra variants (muP, QK-LayerNorm, cosine, scalable softmax)", (
        "muP: after training q and k are correlated, so the logit scale grows with d_k under 1/√d_k "
        "and stays flat under 1/d_k. QK-norm, cosine and ssmax bound or re-scale the logits.")
    rule = (f"Log-log slope of logit std at the end of training vs d_k, {BOOT}. Holds if scaled's CI "
            f"lies above {TOL_SLOPE} (grows) and mup's within 0 ± {TOL_SLOPE} (flat); does not hold if "
            "scaled's CI lies at or below the threshold or mup's wholly outside its band; inconclusive "
            "otherwise. The other variants are reported, not judged.")
    end, cond = end_source(res)
    if end is None or "logit_std" not in end:
        return no_data("extra", title, claim, ["logit_growth"], rule, "no history.parquet")
    hist = load.at_condition(res.history, cond)
    init = load.init_rows(hist)
    s_end, s_init = slopes(end, "logit_std"), slopes(init, "logit_std")
    d_max = end["d_k"].max()
    summ = load.at_condition(status.completed(res.summary), cond) if res.summary is not None else None
    auc = (lambda v: _mean_at(summ, "accuracy_auc", v, d_max)) if summ is not None else (lambda v: math.nan)
    rows = [{"variant": v, "logit std slope at init": fmt_ci(s_init.get(v, (math.nan,) * 3)),
             "logit std slope at end": fmt_ci(ci),
             f"std growth end/init at d_k={d_max}":
                 _num(_mean_at(end, "logit_std", v, d_max) / _mean_at(init, "logit_std", v, d_max)),
             f"end entropy_norm at d_k={d_max}": _num(_mean_at(end, "entropy_norm", v, d_max)),
             f"accuracy AUC at d_k={d_max}": _num(auc(v))}
            for v, ci in s_end.items() if v in ("scaled", "unscaled") + load.EXTRA_VARIANTS]
    nan3 = (math.nan,) * 3
    parts = [above(s_end.get("scaled", nan3), TOL_SLOPE), within(s_end.get("mup", nan3), -TOL_SLOPE, TOL_SLOPE)]
    reason = (f"trained logit std slope: scaled {fmt_ci(s_end.get('scaled', nan3))} (grows: {parts[0]}), "
              f"mup {fmt_ci(s_end.get('mup', nan3))} (flat: {parts[1]})")
    return Section("extra", title, claim, ["logit_growth"], rule, combine(parts), reason,
                   describe_runs(res.summary, cond), [("Logit scale before and after training", pd.DataFrame(rows))])
