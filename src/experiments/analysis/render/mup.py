"""Sub-claim 6 (muP and the extra variants) in words, written from verdicts.mup's reading: the
clauses, and why the runs could not show muP's prediction where they could not."""

from __future__ import annotations

from experiments.analysis.render.clauses import INTERVALS, estimates, reason
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
    claim=("muP: after training q and k are correlated, so the logit scale grows with d_k under 1/√d_k "
           "and stays flat under 1/d_k, when the width grows with d_k. QK-norm, cosine and ssmax bound or "
           "re-scale the logits."),
    rule=(f"Log-log slope of logit std at the end of training vs d_k, fitted per seed; {INTERVALS}. "
          f"First, can the runs show it: the width must grow with d_k, scaled's saturated share at the "
          f"largest d_k must stay at or below {SATURATED} at the end, and a clause left unclear must "
          f"have been able to detect {TOL_SLOPE}; otherwise \"{UNSEEN.value}\", with the reason. Then: holds "
          f"if scaled's interval lies above {TOL_SLOPE} (grows) and mup's within 0 ± {TOL_SLOPE} (flat); "
          "does not hold if scaled's lies at or below the threshold or mup's wholly outside its band; "
          "inconclusive otherwise. The other variants are reported, not judged."),
    brief=(f"Where the width grows with d_k and attention is not saturated, scaled's trained logit std "
           f"grows with d_k (log-log slope above {TOL_SLOPE}) and mup's stays flat."),
    reason=_reason,
    headline=lambda s: "trained logit std log-log slope " + estimates(s.parts, ["scaled", "mup"]),
    tables=lambda s: [("Logit scale before and after training", frame(s.tables[0], COLUMNS))])
