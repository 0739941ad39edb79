"""The verdict by alike margin: one row per (task, optimizer), its sub-claim-4 verdict as coloured
stretches over margins 0.02-0.08 (exact: the verdict changes only at a TOST interval's end), the
declared margin marked, and the flip points nearest it. The numbers are the quality section's
(verdicts.sensitivity on the section's own clause assembly)."""

from __future__ import annotations

from experiments.analysis.figures import style
from experiments.analysis.figures.style import Skip
from experiments.analysis.lr import views as lr_views
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import sensitivity as vs
from experiments.analysis.verdicts.rules import Verdict

SHADE = {Verdict.HOLDS: "#4daf4a", Verdict.FAILS: "#e41a1c", Verdict.UNSURE: "#bdbdbd", Verdict.FEW: "#969696",
         Verdict.UNMEASURED: "#f0f0f0", Verdict.UNSEEN: "#f0f0f0"}


def readings(res) -> list[vs.Sensitivity]:
    """Each condition's verdict by margin, at its declared margin and alike rule."""
    if res.summary is None:
        raise Skip("no summary.parquet")
    fraction = qp.declared(res)[1]
    out = []
    for cond in load.conditions(res.summary):
        p = qp.cell_profile(load.at_condition(res.summary, cond), res.history, fraction, lr_views.label(cond))
        if qp.CLAIM_PAIR not in p.diffs and qp.FIX_PAIR not in p.diffs:
            continue
        margin, alike = qp.margin_of(res, cond[0]), qp.alike_rule_of(res, cond[0])
        out.append(vs.sensitivity(p, margin, lambda m, p=p, alike=alike: vq.profile_parts(p, m, alike)[0]))
    if not out:
        raise Skip("no cell with additive or scaled beside unscaled")
    return out


def margin_sensitivity(res):
    found = readings(res)
    fig, axes = style.new_figure(1, 1, width=7.0, height=0.6 + 0.55 * len(found))
    ax = axes[0][0]
    for row, s in enumerate(found):
        y = len(found) - 1 - row
        for lo, hi, verdict in s.segments:
            ax.broken_barh([(lo, hi - lo)], (y - 0.3, 0.6), color=SHADE[verdict], lw=0)
        ax.plot([s.declared] * 2, [y - 0.4, y + 0.4], color="k", lw=1.6)
        for flip, edge, align in ((s.below, vs.SPAN[0], "left"), (s.above, vs.SPAN[1], "right")):
            if flip is not None and vs.SPAN[0] <= flip.margin <= vs.SPAN[1]:
                ax.plot([flip.margin] * 2, [y - 0.4, y + 0.4], color="k", lw=0.8, ls=":")
            elif flip is not None:  # beyond the drawn range: named at its edge
                ax.text(edge, y + 0.32, f"{flip.verdict.value} {'below' if align == 'left' else 'above'} "
                        f"{flip.margin:.3f}", ha=align, va="bottom", fontsize=6.5)
    ax.set_yticks([])  # the cells are named beside their rows, not as tick labels (the ticks read as numbers)
    for y, s in enumerate(reversed(found)):
        ax.text(-0.01, y, s.name, transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=8)
    ax.set_xlim(*vs.SPAN)
    ax.set_xlabel("alike margin (± accuracy AUC)")
    for verdict in (Verdict.HOLDS, Verdict.FAILS, Verdict.UNSURE):
        ax.plot([], [], color=SHADE[verdict], lw=6, label=verdict.value)
    ax.plot([], [], color="k", lw=1.6, label="declared margin")
    ax.plot([], [], color="k", lw=0.8, ls=":", label="verdict flips")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=5, fontsize=7, frameon=False)
    style.suptitle(fig, "Sub-claim 4's verdict per cell by the alike margin")
    return [("margin_sensitivity", fig)]
