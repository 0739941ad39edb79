"""Sub-claim 6: muP's 1/d scaling, judged only where its prediction can show.

muP (Yang et al. 2022) predicts that after training q and k are correlated,
so q.k grows like d: the trained logit scale grows with d_k under 1/√d_k and
stays flat under 1/d_k. That is a statement about width scaling, d_k growing
with the model; at a fixed width 1/√d_head is fine (microsoft/mup issue 17).
So the section first asks whether the runs can show it at all: the width
must grow with d_k (model.width=proportional), the task must not saturate
attention (a task whose solution is one-hot sets the logit scale itself), and
the seed spread must leave power to see a slope of TOL_SLOPE where a clause
is left unclear. Where one of
these fails the verdict is "not observed in this setting", with the reason,
and the measured slopes are still shown.
"""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import UNSEEN, Answer, Part, Verdict, fewest, judge, reason, verdict_of
from experiments.analysis.verdicts.section import (
    INTERVALS,
    Section,
    all_slopes,
    describe_runs,
    estimates,
    mean_at,
    no_data,
    num,
    slope_text,
)
from experiments.analysis.verdicts.at_init import TOL_SLOPE

SATURATED = 0.5  # scaled's saturated share at the end above this: the task sets the logit scale
JUDGED = ("scaled", "unscaled") + load.EXTRA_VARIANTS


def mup_rule(end_slopes: dict) -> list[Part]:
    return [judge("scaled trained logit std slope", f"above {TOL_SLOPE}", end_slopes.get("scaled", []),
                  "above", TOL_SLOPE),
            judge("mup", f"within 0 ± {TOL_SLOPE}", end_slopes.get("mup", []), "within",
                  -TOL_SLOPE, TOL_SLOPE)]


def blind_spots(width: str, d_models: str, scaled_end_share: float, parts: list[Part]) -> list[str]:
    """Why these runs cannot show muP's prediction; empty when they can."""
    out = []
    if width != "proportional":
        out.append(f"the width is fixed (model.d_model = {d_models} at every d_k), so d_k grows inside "
                   "a model of constant width; muP's prediction is about d_k growing with the width "
                   "(model.width=proportional; microsoft/mup issue 17)")
    if math.isfinite(scaled_end_share) and scaled_end_share > SATURATED:
        out.append(f"the task saturates attention: at the largest d_k {num(100 * scaled_end_share, 2)}% of "
                   "scaled's rows end one-hot (max weight > 0.99), so the trained logit scale is set by "
                   "the task, not by the growing correlation of q and k")
    # a clause the interval answered either way had the power it needed; an unclear one may not
    weak = [p for p in parts if p.answer is Answer.UNCLEAR and not p.detectable <= TOL_SLOPE]
    if weak:
        out.append("no power: " + ", ".join(f"{p.label}'s seed spread detects only shifts of "
                                            f"{num(p.detectable)} or more" for p in weak)
                   + f" (the rule needs {TOL_SLOPE})")
    return out


def mup_verdict(parts: list[Part], blind: list[str]) -> Verdict:
    return UNSEEN if blind else verdict_of(parts)


def _width_runs(res: load.Results) -> tuple[str, set | None, str]:
    """(width, run_ids or None for all, d_model text) of the primary condition's runs: the
    width-proportional ones where any exist (runs older than model.width had a fixed width)."""
    s = load.at_condition(res.summary, res.primary) if res.summary is not None else None
    if s is None or s.empty:
        return "fixed", None, "?"
    width = s["model.width"].fillna("fixed").astype(str) if "model.width" in s else pd.Series("fixed", s.index)
    if (width == "proportional").any():
        s = s[width == "proportional"]
        return "proportional", set(s["run_id"]), "d_k × n_heads"
    d_models = ", ".join(sorted(s["model.d_model"].astype(str).unique())) if "model.d_model" in s else "?"
    return "fixed", None, d_models


def extra(res: load.Results) -> Section:
    title, claim = "6. Extra variants (muP, QK-LayerNorm, cosine, scalable softmax)", (
        "muP: after training q and k are correlated, so the logit scale grows with d_k under 1/√d_k "
        "and stays flat under 1/d_k, when the width grows with d_k. QK-norm, cosine and ssmax bound or "
        "re-scale the logits.")
    rule = (f"Log-log slope of logit std at the end of training vs d_k, fitted per seed; {INTERVALS}. "
            f"First, can the runs show it: the width must grow with d_k, scaled's saturated share at the "
            f"largest d_k must stay at or below {SATURATED} at the end, and a clause left unclear must "
            f"have been able to detect {TOL_SLOPE}; otherwise \"{UNSEEN.value}\", with the reason. Then: holds if scaled's interval lies "
            f"above {TOL_SLOPE} (grows) and mup's within 0 ± {TOL_SLOPE} (flat); does not hold if scaled's "
            "lies at or below the threshold or mup's wholly outside its band; inconclusive otherwise. The "
            "other variants are reported, not judged.")
    brief = (f"Where the width grows with d_k and attention is not saturated, scaled's trained logit std "
             f"grows with d_k (log-log slope above {TOL_SLOPE}) and mup's stays flat.")
    res = res.for_width()
    if res.history is None or "logit_std" not in res.history:
        return no_data("extra", title, claim, ["logit_growth"], rule, "no history.parquet", brief)
    width, run_ids, d_models = _width_runs(res)
    hist = load.at_condition(res.history, res.primary)
    if run_ids is not None:
        hist = hist[hist["run_id"].isin(run_ids)]
    init = load.init_rows(hist)
    end = load.end_rows(diverged.without_diverged(hist, res.summary))
    s_end, s_init = all_slopes(end, "logit_std"), all_slopes(init, "logit_std")
    d_max = end["d_k"].max()
    summ = diverged.completed(res.summary)
    summ = load.at_condition(summ, res.primary) if summ is not None else None
    rows = [{"variant": v, "logit std slope at init": slope_text(s_init.get(v, [])),
             "logit std slope at end": slope_text(x),
             f"std growth end/init at d_k={d_max}":
                 num(mean_at(end, "logit_std", v, d_max) / mean_at(init, "logit_std", v, d_max)),
             f"end entropy_norm at d_k={d_max}": num(mean_at(end, "entropy_norm", v, d_max)),
             f"end saturated share at d_k={d_max}": num(mean_at(end, "saturation", v, d_max)),
             f"accuracy AUC at d_k={d_max}": num(mean_at(summ, "accuracy_auc", v, d_max))}
            for v, x in s_end.items() if v in JUDGED]
    parts = mup_rule(s_end)
    blind = blind_spots(width, d_models, mean_at(end, "saturation", "scaled", d_max), parts)
    verdict = mup_verdict(parts, blind)
    text = (f"{reason(parts)}. Not observed here because " + "; and ".join(blind)) if blind else reason(parts)
    return Section("extra", title, claim, ["logit_growth"], rule, verdict, text,
                   describe_runs(res.summary, res.primary, run_ids),
                   [("Logit scale before and after training", pd.DataFrame(rows))],
                   headline="trained logit std log-log slope " + estimates(parts, ["scaled", "mup"]),
                   rule_brief=brief, seeds=0 if blind else fewest(parts), parts=parts)
