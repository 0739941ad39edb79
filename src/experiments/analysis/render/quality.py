"""Sub-claim 4's rule in words: the full rule (REPORT.md's folded rule, the dashboard's rules
table) and its one-sentence brief. The clauses it states are verdicts.quality_rules."""

from __future__ import annotations

from experiments.analysis.lr import select as lr_select
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts.section import INTERVALS

RULE = (
    "Per task and optimizer, each variant at its own best learning rate per d_k: the lr whose seed-mean "
    "validation accuracy AUC is highest (test accuracy never used; a diverged run counts at chance, "
    "1/n_classes from the task config, else the accuracy at the first evaluation; a best lr at an end of "
    "its grid is flagged edge: low/high). At that lr, on the completed runs (diverged ones are counted, "
    f"not averaged), seed by seed; {INTERVALS}. The d_k profile: at each d_k the paired Δ AUC of "
    "additive − unscaled, scaled − unscaled, qk_norm − scaled and mup − scaled. A d_k enters only where "
    "scaled learned there: its seed-mean AUC covered at least the declared fraction (conf/analysis.yaml: "
    "learned_fraction) of the way from chance to its best AUC in that cell; elsewhere it reads not measured. "
    "(a) Additive − unscaled: ahead = a fixed-sequence step-down from the largest d_k (one-sided t-tests "
    f"at {quality_rules.ALPHA:g}, family-wise {quality_rules.ALPHA:g}); the crossover d* = where the mean "
    "profile, linear in log2 d_k, last crosses 0 from below, its interval from inverting the pointwise "
    "t-test; alike = TOST (two one-sided tests at 0.05) against the margin declared before the data "
    "(conf/analysis.yaml: alike_margin) at each d_k below d*, with its power at the measured paired sd. "
    "(b) The fix: the smallest d_k from which scaled − unscaled exceeds the margin, by the same "
    "step-down with the margin as null. A (task, optimizer) holds where additive is ahead over a range "
    "that includes the largest d_k, alike at some d_k at or below d* (every d_k where the profile never "
    "crosses), and scaled ahead of unscaled (null 0) at the largest d_k; does not hold where additive or "
    "scaled is behind or alike (TOST) at the largest d_k, or the interval lies wholly outside ±margin at "
    "every d_k at or below d*; inconclusive otherwise (a largest d_k "
    "not measured included). (c) The lr view, its own verdict: per variant, the per-seed slope of "
    "log2(best lr) per doubling of d_k (argmax of that seed's val AUC over the grid; none on a tie, nor "
    f"where no rate took it past {lr_select.LEARNED_OVER_CHANCE:g} x chance) beside the Adam-step "
    "prediction (lr.theory: −1 unscaled, −0.5 scaled, 0 mup, none for additive and qk_norm); a drifting "
    "optimum of scaled is the prediction, not a refutation. Judged on mup alone: holds if its interval "
    "lies within ±band (the optimum moves by less than half a grid step over the sweep), does not hold "
    "if wholly outside; not measured without mup runs. Overall: holds if every (task, optimizer) holds, "
    "does not hold if every one does not, inconclusive otherwise; each is named. Steps to threshold "
    "(at the best lr) are censored at the budget: Kaplan-Meier over seeds, restricted mean with the "
    "seeds that reached the threshold. Where a cell has confirmation seeds (conf/analysis.yaml: "
    "confirm_seeds_from; python -m experiments.confirm), the rate is chosen on the seeds below them and "
    "every clause is judged on the confirmation seeds alone; the optimism table gives selection − "
    "confirmation AUC at the chosen rate. Without them, the AUC judged is the one the lr was chosen on, "
    "so each variant's best is optimistic by a winner's curse of about the same size for variants on the "
    "same grid.")
RULE_BRIEF = ("Per task and optimizer, each variant at its best learning rate, read on the d_k profile: "
              "additive ahead of unscaled from the largest d_k down, alike (TOST at the declared margin) at "
              "some d_k at or below the crossover d*, and scaled ahead of unscaled at the largest d_k.")
