"""Sub-claim 4's tables in words: the d_k profile with its marks (each cell at its own margin), the
measured rows per d_k, the robustness tables (render.quality_robust: the verdict by margin, the
sign-flip tests, d* both ways), a text cell's bits per character beside its baselines, the
optimism of the selection seeds, the lr views and Britz et al.'s published numbers."""

from __future__ import annotations

import math

import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.render import every_variant
from experiments.analysis.render import quality_robust
from experiments.analysis.render.clauses import delta_text
from experiments.analysis.stats.intervals import fmt_ci
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import quality_rules
from experiments.analysis.verdicts.section import Section, Table

# Britz et al. 2017, Table 6: newstest2013 BLEU, mean ± sd (mul: unscaled multiplicative).
BRITZ = pd.DataFrame({
    "dim": [128, 256, 512, 1024],
    "mul (unscaled)": ["22.03 ± 0.08", "22.33 ± 0.28", "21.78 ± 0.05", "18.22 ± 0.03"],
    "add": ["22.23 ± 0.11", "22.33 ± 0.04", "22.47 ± 0.27", "22.10 ± 0.18"],
    "Δ add − mul (BLEU)": ["+0.20", "+0.00", "+0.69", "+3.88"],
})
SCALED_OUT = {qp.NOT_LEARNED: "no: not measured", qp.NEVER_RUN: "never run: not measured"}
PAIR = ("additive", "unscaled")
CAPTIONS = {
    "quality": "Measured at each variant's best lr: additive vs unscaled (and scaled) per d_k",
    "optimism": ("Optimism of the selection seeds: seed-mean val AUC at the chosen rate on the seeds "
                 "that chose it, on the fresh confirmation seeds of stage 1 (a two-stage cell's top-up seeds, "
                 "trained for the clauses stage 1 left unclear, left out), and the difference (> 0: the "
                 "choice flattered the rate)"),
    "optimal_lr": "Optimal lr (chosen on validation AUC) per variant × d_k × task",
    "drift": "Drift of the per-seed optimal lr with d_k, beside the Adam-step prediction",
    "sensitivity": ("LR sensitivity (Wortsman et al. 2023): mean of best − achieved val AUC over the "
                    "condition's common grid (the rates most cells ran; a widened cell counts only those, "
                    "a narrowed one gets none), diverged runs at chance"),
    "britz": "Britz et al. 2017, Table 6 (newstest2013 BLEU, mean ± sd)",
}


def margin_text(margins: dict) -> tuple[str, str]:
    """(the margin as the profile's caption and headers write it, its key): the number where every
    cell has the same, else 'm' and which m each cell declared (a task's own: tasks.<task>.alike_margin)."""
    values = sorted(set(margins.values()))
    if len(values) == 1:
        return f"{values[0]:g}", ""
    each = ", ".join(f"{lr_views.label(c)} {m:g}" for c, m in margins.items())
    return "m", f"; m = the cell's declared alike margin: {each}"


def profile_caption(margins: dict) -> str:
    """The profile table's legend: the interval shown, and the one-sided tests behind its marks."""
    alpha = quality_rules.ALPHA
    m, key = margin_text(margins)
    return (f"The d_k profile: paired Δ AUC at each variant's best lr [two-sided 95% t-interval over seeds]. "
            f"The marks are one-sided tests, not the interval, so a marked Δ's interval may reach 0: "
            f"ahead = the step-down from the largest d_k (one-sided t-tests at {alpha:g}, family-wise "
            f"{alpha:g}, null 0), the test behind the answer's \"from d_k = … on\"; ahead by > {m} = the "
            f"same step-down with null {m} (scaled − unscaled); alike = TOST within ±{m} (two "
            f"one-sided tests at {alpha:g}); TOST power = probability of 'alike' if truly equal, at the paired sd"
            + key)


def _pct(x: float) -> str:
    return f"{x:.0%}" if math.isfinite(x) else "n/a"


def pair_text(at: qp.PairAt, margin: float) -> str:
    """'+0.120 [+0.050, +0.190] alike ahead': a pair's Δ at one d_k with the marks the answer reads."""
    text = "—" if at.ci is None else delta_text(at.ci)
    if at.neither_learned:
        return text + " (neither learned)"
    marks = {qp.Mark.ALIKE: "alike", qp.Mark.AHEAD: "ahead", qp.Mark.AHEAD_BY_MARGIN: f"ahead by > {margin:g}"}
    return text + "".join(f" {marks[m]}" for m in at.marks)


def profile_row(row: qp.ProfileRow, margin: float, header: str | None = None) -> dict:
    """One d_k of the profile; `header`: the margin as the TOST power column names it (margin_text)."""
    out = {"d_k": row.d_k, "scaled learned": "yes" if row.entered else SCALED_OUT[row.out]}
    for pair, at in row.pairs.items():
        if at.tost_power is not None:
            out[f"TOST power ±{header or f'{margin:g}'}"] = _pct(at.tost_power)
        out[qp.pair_name(pair)] = pair_text(at, margin)
    return out


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The profile table's columns in reading order; a cell that lacks one reads —."""
    first = ["task", "optimizer", "d_k", "scaled learned"]
    pairs = [qp.pair_name(pr) for pr in qp.PAIRS if qp.pair_name(pr) in df]
    rest = [c for c in df.columns if c not in first + pairs]
    return df[first + pairs[:1] + rest + pairs[1:]].fillna("—") if len(df) else df


def mean_text(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def _steps(r: dict) -> dict:
    km = r["km"]
    mean = ["n/a" if k is None else f"{k.restricted_mean:.0f} ({k.reached_text})" for k in km.values()]
    med = ["n/a" if k is None else ("never" if math.isnan(k.median) else f"{k.median:.0f}") for k in km.values()]
    delta = r["steps_delta"]
    return {"restricted mean steps to threshold add / unscaled (reached)": " / ".join(mean),
            "KM median steps add / unscaled": " / ".join(med),
            "Δ restricted steps add − unscaled": "— (neither reached)" if delta is None else fmt_ci(delta, 0)}


def quality_row(r: dict) -> dict:
    lrs = ["—" if x is None else lr_select.lr_text(*x) for x in r["lrs"].values()]
    return {"task": r["task"], "optimizer": r["optimizer"], "d_k": r["d_k"],
            "best lr add / unscaled / scaled": " / ".join(lrs),
            **{f"AUC {v}": mean_text(x) for v, x in r["auc"].items()},
            "test acc add / unscaled": " / ".join(mean_text(x) for x in r["test_accuracy"].values()),
            **_steps(r), "diverged add / unscaled / scaled": " / ".join(str(n) for n in r["diverged"].values())}


def optimism_table(gain: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"task": gain["task"], "optimizer": gain["optimizer"], "variant": gain["attention"],
                         "d_k": gain["d_k"].astype(int), "lr": [lr_select.lr_text(x) for x in gain["lr"]],
                         "selection AUC": gain["selection_auc"].map("{:.3f}".format),
                         "confirmation AUC": gain["confirmation_auc"].map("{:.3f}".format),
                         "optimism": gain["optimism"].map("{:+.3f}".format),
                         "seeds (selection / confirmation)": [f"{a} / {b}" for a, b in
                                                              zip(gain["n_selection"], gain["n_confirmation"])]})


def bits_caption(t: Table) -> str:
    return (f"{t.at['task']}, {t.at['optimizer']}: validation bits per character at the end of training, each "
            f"variant at its chosen rate [95% CI over seeds] (test bits: Every variant); "
            + every_variant.baseline_words(t.at["baselines"]))


def bits_frame(t: Table) -> pd.DataFrame:
    variants = load.variant_order({v for r in t.rows for v in r["bits"]})
    return pd.DataFrame([{"d_k": r["d_k"], **{v: fmt_ci(r["bits"][v], 3) if v in r["bits"] else "—"
                                             for v in variants}} for r in t.rows])


def table(t: Table) -> tuple[str, pd.DataFrame]:
    """(caption, table) of one of sub-claim 4's tables."""
    if t.kind == "bits":
        return bits_caption(t), bits_frame(t)
    if t.kind == "profile":
        header = margin_text(t.at["margins"])[0]
        rows = [{"task": r["task"], "optimizer": r["optimizer"], **profile_row(r["row"], r["margin"], header)}
                for r in t.rows]
        return profile_caption(t.at["margins"]), _ordered(pd.DataFrame(rows))
    if t.kind == "quality":
        return CAPTIONS["quality"], pd.DataFrame([quality_row(r) for r in t.rows])
    if t.kind == "optimism":
        return CAPTIONS["optimism"], optimism_table(t.frame)
    if t.kind == "margin_sensitivity":
        return quality_robust.sensitivity_caption(t.rows), quality_robust.sensitivity_frame(t.rows)
    if t.kind == "robust_tests":
        return quality_robust.checks_caption(), quality_robust.checks_frame(t.rows)
    if t.kind == "crossing":
        return quality_robust.crossing_caption(t.rows), quality_robust.crossing_frame(t.rows)
    return CAPTIONS[t.kind], BRITZ if t.kind == "britz" else t.frame


def tables(s: Section) -> list[tuple[str, pd.DataFrame]]:
    return [table(t) for t in s.tables]
