"""Sub-claim 6 (muP and the extra variants) in words, written from verdicts.mup's reading: the
clauses, and why the runs could not show muP's prediction where they could not."""

from __future__ import annotations

from experiments.analysis.lr import views as lr_views
from experiments.analysis.lr import whole
from experiments.analysis.render.clauses import INTERVALS, estimates, reason
from experiments.analysis.render.markdown import section_text
from experiments.analysis.render.section_words import SectionWords, ci2, frame, num
from experiments.analysis.verdicts.at_init import TOL_SLOPE
from experiments.analysis.verdicts.mup import SATURATED, Blind, BlindSpot
from experiments.analysis.verdicts.rules import UNSEEN
from experiments.analysis.verdicts.section import Section

COLUMNS = [("variant", "variant", str), ("slope_init", "logit std slope at init", ci2),
           ("slope_end", "logit std slope at end", ci2), ("growth_max", "std growth end/init at d_k={d_max}", num),
           ("end_entropy_max", "end entropy_norm at d_k={d_max}", num),
           ("end_share_max", "end saturated share at d_k={d_max}", num),
           ("auc_max", "accuracy AUC at d_k={d_max}", num)]


def drift_words(d: whole.Drift) -> str:
    """A refined slope from lr.whole: its interval and seeds, or why there is none."""
    return lr_views.drift_text(d) if d.n_seeds else lr_views.WHOLE_NOT_MEASURED


LR_COLUMNS = [("condition", "condition", str), ("base_width", "base width (m²)", lambda x: f"{x:g}"),
              ("judged", "per-seed slope from the base width [95% t]", ci2),
              ("all", "per-seed slope over every d_k [95% t]", ci2),
              ("whole", "refined, whole curves, from the base width [bootstrap]", drift_words),
              ("bound", "refined, pruned rates at their bound, from the base width [bootstrap]", drift_words)]
LR_CAPTION = ("muP's best learning rate against d_k (log2 lr per doubling of d_k; predicted flat under Adam): "
              "clause (c) of the quality section judges it from muP's base width on, the d_k where its m/d_k "
              "equals scaled's 1/√d_k (m², 64 for mup8). Below it muP's logits at init have variance m²/d_k "
              "(32 at d_k = 2 for mup8), above scaled's 1: its multiplier overshoots there, and a best rate "
              "that moves there is that overshoot, not a failure of muP's prediction. Every d_k beside it. "
              "Refined: the optimum of the seed-mean AUC curve off the grid (lr.whole); whole curves = the "
              "seeds trained at every rate to the end (train.prune.spare_seeds); at their bound = every "
              "seed, a pruned rate entered at its bound on the final AUC")


def blind_spot(b: BlindSpot) -> str:
    """One reason the runs cannot show muP's prediction."""
    if b.why is Blind.FIXED_WIDTH:
        return (f"the width is fixed (model.d_model = {b.d_models} at every d_k), so d_k grows inside "
                "a model of constant width; muP's prediction is about d_k growing with the width "
                "(model.width=proportional; muP's authors, github.com/microsoft/mup thread #17)")
    if b.why is Blind.SATURATED:
        return (f"the task saturates attention: at the largest d_k {num(100 * b.share, 2)}% of "
                "scaled's rows end one-hot (max weight > 0.99), so the trained logit scale is set by "
                "the task, not by the growing correlation of q and k")
    return ("no power: " + ", ".join(f"{p.label}'s seed spread detects only shifts of {num(p.detectable)} or more"
                                     for p in b.weak) + f" (the rule needs {TOL_SLOPE})")


def _reason(s: Section) -> str:
    blind = s.detail
    if not blind:
        return reason(s.parts)
    return f"{reason(s.parts)}. Not observed here because " + "; and ".join(blind_spot(b) for b in blind)


WORDS = SectionWords(
    **section_text("mup", intervals=INTERVALS, saturated=SATURATED, tol_slope=TOL_SLOPE, unseen=UNSEEN.value),
    reason=_reason,
    headline=lambda s: "trained logit std log-log slope " + estimates(s.parts, ["scaled", "mup"]),
    tables=lambda s: [("Logit scale before and after training", frame(s.tables[0], COLUMNS))]
    + [(LR_CAPTION, frame(t, LR_COLUMNS)) for t in s.tables if t.kind == "mup_lr"])
