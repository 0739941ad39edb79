"""Sub-claim 6: muP's 1/d scaling, judged only where its prediction can show.

muP (Yang et al. 2022) predicts that after training q and k are correlated,
so q.k grows like d: the trained logit scale grows with d_k under 1/√d_k and
stays flat under 1/d_k. That is a statement about width scaling, d_k growing
with the model; at a fixed width 1/√d_head is fine (muP's authors, github.com/microsoft/mup thread #17).
So the section first asks whether the runs can show it at all: the width
must grow with d_k (model.width=proportional), the task must not saturate
attention (a task whose solution is one-hot sets the logit scale itself), and
the seed spread must leave power to see a slope of TOL_SLOPE where a clause
is left unclear. Where one of
these fails the verdict is "not observed in this setting", with the reason,
and the measured slopes are still shown.

Beside it, muP's other prediction, a best learning rate that stays put as d_k
grows (clause (c) of the quality section, judged there): its slope from muP's
base width on, the range (c) judges (lr.views.JUDGED_FROM_BASE_WIDTH says why),
and over every d_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.tables import load
from experiments.analysis.tables import diverged
from experiments.analysis.verdicts.rules import UNSEEN, Answer, Band, Part, Side, Verdict, fewest, judge, verdict_of
from experiments.analysis.verdicts.section import Lacks, Section, Table, all_slopes, mean_at, no_data, runs_of, slope_ci
from experiments.analysis.verdicts.at_init import TOL_SLOPE

FIGURES = ["logit_growth", "largest_logit"]  # the trained logit scale, and the largest logit through training
SATURATED = 0.5  # scaled's saturated share at the end above this: the task sets the logit scale
JUDGED = ("scaled", "unscaled") + load.EXTRA_VARIANTS
NAME = "Extra variants (muP, QK-LayerNorm, cosine, scalable softmax)"


def mup_rule(end_slopes: dict) -> list[Part]:
    return [judge("scaled trained logit std slope", end_slopes.get("scaled", []), Band(Side.ABOVE, TOL_SLOPE)),
            judge("mup", end_slopes.get("mup", []), Band(Side.WITHIN, -TOL_SLOPE, TOL_SLOPE))]


class Blind(Enum):
    """Why the runs cannot show muP's prediction."""
    FIXED_WIDTH = "fixed width"  # d_k grows inside a model of constant width
    SATURATED = "saturated"  # the task sets the trained logit scale
    NO_POWER = "no power"  # a clause left unclear could not have seen TOL_SLOPE


@dataclass(frozen=True)
class BlindSpot:
    """One reason, with what shows it: model.d_model's values (FIXED_WIDTH), scaled's share of
    one-hot rows at the largest d_k (SATURATED), the clauses without power (NO_POWER)."""
    why: Blind
    d_models: str = ""
    share: float = math.nan
    weak: tuple[Part, ...] = ()


def blind_spots(width: str, d_models: str, scaled_end_share: float, parts: list[Part]) -> list[BlindSpot]:
    """Why these runs cannot show muP's prediction; empty when they can."""
    out = []
    if width != "proportional":
        out.append(BlindSpot(Blind.FIXED_WIDTH, d_models=d_models))
    if math.isfinite(scaled_end_share) and scaled_end_share > SATURATED:
        out.append(BlindSpot(Blind.SATURATED, share=scaled_end_share))
    # a clause the interval answered either way had the power it needed; an unclear one may not
    weak = tuple(p for p in parts if p.answer is Answer.UNCLEAR and not p.detectable <= TOL_SLOPE)
    if weak:
        out.append(BlindSpot(Blind.NO_POWER, weak=weak))
    return out


def mup_verdict(parts: list[Part], blind: list[BlindSpot]) -> Verdict:
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


def _rows(init: pd.DataFrame, end: pd.DataFrame, summ, s_end: dict, s_init: dict, d_max) -> tuple[dict, ...]:
    return tuple({"variant": v, "slope_init": slope_ci(s_init.get(v, [])), "slope_end": slope_ci(x),
                  "growth_max": mean_at(end, "logit_std", v, d_max) / mean_at(init, "logit_std", v, d_max),
                  "end_entropy_max": mean_at(end, "entropy_norm", v, d_max),
                  "end_share_max": mean_at(end, "saturation", v, d_max),
                  "auc_max": mean_at(summ, "accuracy_auc", v, d_max)}
                 for v, x in s_end.items() if v in JUDGED)


def lr_tables(res: load.Results) -> list[Table]:
    """muP's lr slope (clause (c) of the quality section) from its base width and over every d_k,
    per condition of the main runs with an lr grid (lr.views.base_width_rows); none without."""
    if res.summary is None or not lr_select.has_grid(res.summary):
        return []
    rows = lr_views.base_width_rows(res.summary, res.history)
    return [Table("mup_lr", rows)] if rows else []


def extra(res: load.Results) -> Section:
    lr = lr_tables(res)
    res = res.for_width()
    if res.history is None or "logit_std" not in res.history:
        return no_data("extra", "6", NAME, FIGURES, Lacks.HISTORY)
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
    parts = mup_rule(s_end)
    blind = blind_spots(width, d_models, mean_at(end, "saturation", "scaled", d_max), parts)
    table = Table("extra", _rows(init, end, summ, s_end, s_init, d_max), {"d_max": d_max})
    return Section("extra", "6", NAME, FIGURES, mup_verdict(parts, blind),
                   (runs_of(res.summary, res.primary, run_ids),), [table, *lr], 0 if blind else fewest(parts),
                   parts, detail=tuple(blind))
