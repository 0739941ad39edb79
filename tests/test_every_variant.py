"""Every trained variant first-class (its quality rows and its paired Δ against the
reference variant), "not measured" apart from "inconclusive", why a d_k did not enter (never
run or did not learn), and the profile table marking the cells the answer's step-down reads."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from experiments import report
from experiments.analysis.render import dashboard as dashboard_html
from experiments.analysis.render.answer import answer_lines
from experiments.analysis.render import every_variant as ev_words
from experiments.analysis.render import words
from experiments.analysis.render.clauses import d_k_list
from experiments.analysis.render.quality import OUT
from experiments.analysis.stats import profile as sp
from experiments.analysis.stats.intervals import mean_ci, paired_diff_ci
from experiments.analysis.tables import load
from experiments.analysis.verdicts import at_init, every_variant, quality, quality_rules, rules
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.app import analysis_cli

D_KS = [4, 8, 16, 32]
SEEDS = 4
BUDGET = 1000
# SYNTHETIC (not data): AUC offset of each variant from a seed's shared base, per d_k index
OFFSETS = {"scaled": lambda j: 0.0, "unscaled": lambda j: -0.08 * j, "additive": lambda j: -0.01,
           "relu": lambda j: -0.03}


def synthetic(offsets=OFFSETS, d_ks=D_KS, rng=0) -> pd.DataFrame:
    """SYNTHETIC summary (not data), one task and optimizer. relu, a user's own variant, also ran
    at a second rate that is worse by 0.2, so its chosen rate is 1e-3; steps to threshold fall
    with AUC, and a run below 0.6 never reaches it."""
    rng = np.random.default_rng(rng)
    base = 0.75 + rng.normal(0, 0.02, SEEDS)
    rows = []
    for v, offset in offsets.items():
        for j, d in enumerate(d_ks):
            for lr, worse in ((1e-3, 0.0), (1e-2, 0.2)) if v == "relu" else ((1e-3, 0.0),):
                for s in range(SEEDS):
                    auc = base[s] + offset(j) - worse + rng.normal(0, 0.005)
                    rows.append(dict(run_id=f"{v}-{d}-{lr}-{s}", attention=v, d_k=d, seed=s, task="assoc_recall",
                                     optimizer="adam", lr=lr, status="completed", accuracy_auc=auc,
                                     final_val_accuracy=auc + 0.1, test_accuracy=auc + 0.05,
                                     steps_to_threshold=round(2000 * (1 - auc)) if auc >= 0.6 else np.nan,
                                     steps=BUDGET, threshold=0.9))
    return pd.DataFrame(rows)


def results_of(summary: pd.DataFrame, **declared) -> load.Results:
    return load.Results(None, summary, None, None, None, declared=declared)


def _seed_values(s: pd.DataFrame, variant: str, d_k: int, column: str = "accuracy_auc") -> np.ndarray:
    cell = s[(s["attention"] == variant) & (s["d_k"] == d_k) & (s["lr"] == 1e-3)]
    return cell.sort_values("seed")[column].to_numpy(dtype=float)


# --- every variant as data ----------------------------------------------------------------------

def test_every_variant_has_its_rows_at_its_chosen_rate_with_intervals_and_delta():
    s = synthetic()
    c = every_variant.condition(s)
    assert (c.task, c.optimizer, c.reference) == ("assoc_recall", "adam", "scaled") and c.has_reference
    assert [(r.variant, r.d_k) for r in c.rows] == [(v, d) for v in ("scaled", "unscaled", "additive", "relu")
                                                    for d in D_KS]
    for r in c.rows:
        auc, ref = _seed_values(s, r.variant, r.d_k), _seed_values(s, "scaled", r.d_k)
        assert r.lr == 1e-3 and r.seeds == SEEDS and r.diverged == 0
        np.testing.assert_allclose(r.auc, mean_ci(auc))
        np.testing.assert_allclose(r.test_accuracy, mean_ci(_seed_values(s, r.variant, r.d_k, "test_accuracy")))
        steps = _seed_values(s, r.variant, r.d_k, "steps_to_threshold")
        np.testing.assert_allclose(r.steps.restricted_mean, mean_ci(np.where(np.isnan(steps), BUDGET, steps)))
        assert (r.steps.reached, r.steps.n) == (int(np.isfinite(steps).sum()), SEEDS)
        if r.variant == "scaled":
            assert all(math.isnan(x) for x in r.delta)
        else:
            np.testing.assert_allclose(r.delta, paired_diff_ci(auc, ref))
    relu = [r for r in c.rows if r.variant == "relu"]
    assert all(r.delta[2] < 0 for r in relu)  # 0.03 behind scaled at every d_k, seeds paired
    unscaled = [r for r in c.rows if r.variant == "unscaled"]
    assert [r.steps.reached for r in unscaled][-1] < SEEDS  # below 0.6 at d_k = 32: censored


def test_the_reference_variant_is_declared_and_the_claim_stays_put():
    s = synthetic()
    by_scaled = quality.quality(results_of(s))
    by_additive = quality.quality(results_of(s, reference_variant="additive"))
    (c,) = by_additive.variants
    assert c.reference == "additive"
    for r in c.rows:
        if r.variant != "additive":
            np.testing.assert_allclose(r.delta, paired_diff_ci(_seed_values(s, r.variant, r.d_k),
                                                               _seed_values(s, "additive", r.d_k)))
    assert (by_scaled.verdict, words.reason(by_scaled), answer_lines([by_scaled])) == \
        (by_additive.verdict, words.reason(by_additive), answer_lines([by_additive]))
    assert [(c.verdict, [p.answer for p in c.parts]) for c in by_scaled.cells] == \
        [(c.verdict, [p.answer for p in c.parts]) for c in by_additive.cells]
    for (_, a), (_, b) in zip(words.tables(by_scaled), words.tables(by_additive)):
        pd.testing.assert_frame_equal(a, b)


def test_a_reference_variant_absent_from_the_folder_is_said_not_crashed():
    (c,) = quality.quality(results_of(synthetic(), reference_variant="mup")).variants
    assert not c.has_reference and len(c.rows) == len(OFFSETS) * len(D_KS)
    assert all(math.isnan(r.delta[0]) for r in c.rows)
    assert len(ev_words.notes(c)) == 1 and c.reference in ev_words.notes(c)[0]


def test_never_run_d_ks_are_listed_per_variant():
    s = synthetic()
    s = s[~((s["attention"] == "relu") & (s["d_k"] == 4))]
    c = every_variant.condition(s)
    assert c.never_run == {"relu": [4]}
    assert [r.d_k for r in c.rows if r.variant == "relu"] == D_KS[1:]


# --- the report, the dashboard and the command line ---------------------------------------------

def _section(text: str, title: str) -> str:
    return text.split(f"## {title}")[1].split("\n## ")[0]


def test_report_and_dashboard_give_every_variant_its_rows(tmp_path):
    s = synthetic()
    s.to_parquet(tmp_path / "summary.parquet", index=False)
    assert report.main([f"results_dir={tmp_path}"]) == 0
    text = (tmp_path / "REPORT.md").read_text()
    every = _section(text, ev_words.TITLE) + "".join(p.read_text() for p in sorted((tmp_path / "tables").glob("*.md")))
    assert text.index("## 4. Quality") < text.index(f"## {ev_words.TITLE}") < text.index("## 5. Cost")
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={tmp_path}"]))
    sections = verdict_sections.all_sections(res)  # judged once: the table and the page read the same
    (c,) = next(x for x in sections if x.key == "quality").variants
    table = ev_words.table(c)
    relu = table[table["variant"] == "relu"]
    assert list(relu["d_k"]) == D_KS
    for row in relu.itertuples(index=False):  # every relu row of the data is a row of the report
        assert "| " + " | ".join(map(str, row)) + " |" in every
    page = dashboard_html.render(res, sections, [], [])
    block = page.split("<section id='every-variant'>")[1].split("</section>")[0]
    assert block.count("<td>relu</td>") == len(D_KS)
    quality_before = _section(text, "4. Quality")
    assert report.main([f"results_dir={tmp_path}", "reference_variant=unscaled"]) == 0
    after = (tmp_path / "REPORT.md").read_text()
    assert _section(after, "4. Quality") == quality_before and _section(after, ev_words.TITLE) != every


@pytest.mark.parametrize("name", ["relux", "Scaled", ""])
def test_an_unknown_reference_variant_is_one_line_and_exit_2(tmp_path, capsys, name):
    synthetic().to_parquet(tmp_path / "summary.parquet", index=False)
    assert report.main([f"results_dir={tmp_path}", f"reference_variant={name}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: reference_variant:") and len(err.splitlines()) == 1
    assert all(v in err for v in load.VARIANTS)
    assert not (tmp_path / "REPORT.md").exists()


# --- "not measured" is not "inconclusive" ---------------------------------------------------------

def test_nothing_to_judge_reads_not_measured():
    nothing = quality_rules.not_measured("x", None, quality_rules.Missing.NONE_ENTERED)
    above = rules.Band(rules.Side.ABOVE, 0)
    assert rules.verdict_of([nothing, nothing]) is rules.UNMEASURED
    assert rules.verdict_of([nothing, rules.judge("y", [1.0, 1.1, 0.9], above)]) is rules.UNSURE
    few = [rules.judge("y", [1.0, 1.1], above)]
    assert rules.verdict_of(few) is rules.FEW and rules.fewest(few) == 2
    assert rules.fewest([nothing]) == 0  # n = 0 is not measured, not too few
    assert at_init.gradient_verdict(at_init.gradient_rule({})) is rules.UNMEASURED
    assert quality.overall([(rules.UNMEASURED, 0)] * 2) == (rules.UNMEASURED, 0)
    assert quality.overall([(rules.UNMEASURED, 0), (rules.HOLDS, 0)]) == (rules.UNSURE, 0)


def test_a_condition_without_the_claims_variants_is_not_measured():
    s = synthetic({"relu": OFFSETS["relu"], "additive": OFFSETS["additive"]})
    section = quality.quality(results_of(s))
    assert section.verdict is rules.UNMEASURED
    (c,) = section.variants  # its variants still have their rows, against no reference
    assert {r.variant for r in c.rows} == {"relu", "additive"} and not c.has_reference


def test_the_dashboard_shows_not_measured_apart_from_inconclusive(tmp_path):
    synthetic().to_parquet(tmp_path / "summary.parquet", index=False)
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={tmp_path}"]))
    sections = verdict_sections.all_sections(res)
    verdicts = {s.key: s.verdict for s in sections}
    assert verdicts["gradients"] is verdicts["cost"] is rules.UNMEASURED  # no probe, no cost table
    page = dashboard_html.render(res, sections, [], []).replace("&#x27;", "'")
    lines = dict(re.findall(r"<li><span class='claim'>([^<]+)</span> <span class='verdict ([^']+)'>", page))
    for s in sections:
        assert (lines[s.title] == "v-not") == (s.verdict is rules.UNMEASURED), s.key


# --- why a d_k did not enter ---------------------------------------------------------------------

def test_never_run_is_told_apart_from_did_not_learn():
    s = synthetic()
    s = s[~((s["attention"] == "scaled") & (s["d_k"] == 32))]  # other variants put 32 on the axis
    s.loc[(s["attention"] == "scaled") & (s["d_k"] == 4), "accuracy_auc"] = 0.05  # ran, did not learn
    p = qp.cell_profile(s)
    assert p.unmeasured() == [4, 32]
    assert p.why_unmeasured() == {qp.NOT_LEARNED: [4], qp.NEVER_RUN: [32]}
    rows = {r.d_k: (r.entered, r.out) for r in qp.profile_rows(p, qp.ALIKE_MARGIN)}
    assert rows == {4: (False, qp.NOT_LEARNED), 8: (True, None), 16: (True, None), 32: (False, qp.NEVER_RUN)}
    section = quality.quality(results_of(s))
    (cell,) = section.cells
    assert cell.dk_profile.why_unmeasured() == {qp.NOT_LEARNED: [4], qp.NEVER_RUN: [32]}
    (said,) = answer_lines([section])
    assert f"{d_k_list([4])}: {OUT[qp.NOT_LEARNED]}" in said
    assert f"{d_k_list([32])}: {OUT[qp.NEVER_RUN]}" in said


# --- the table marks what the text says ----------------------------------------------------------

def test_profile_marks_the_cells_of_the_answers_step_down():
    """At d_k = 8 the one-sided step-down rejects while the two-sided 95% interval still reaches
    0 (t = 2.1 on 8 seeds: one-sided p < 0.05, two-sided p > 0.05): the answer says "from d_k = 8
    on", so the table must mark 8 as well as the d_ks above it."""
    d_ks, n = [4, 8, 16, 32], 8
    z = np.array([-1.5, -1.0, -0.5, -0.1, 0.1, 0.5, 1.0, 1.5])
    z = (z - z.mean()) / z.std(ddof=1)
    sd = 0.05
    fix = np.stack([sd * z, 2.1 * sd / math.sqrt(n) + sd * z, 0.2 + sd * z, 0.3 + sd * z], axis=1)
    p = qp.CellProfile("sim", d_ks, [True] * 4, None, {qp.FIX_PAIR: fix}, n)
    entered, diffs = p.entered(qp.FIX_PAIR)
    behind = sp.from_which(entered, sp.step_down(diffs))  # the answer's "from d_k = … on"
    assert behind == 8 and mean_ci(fix[:, 1])[1] < 0 and sp.one_sided_p(fix[:, 1]) < sp.ALPHA
    rows = qp.profile_rows(p, qp.ALIKE_MARGIN)
    marked = [r.d_k for r in rows if r.pairs[qp.FIX_PAIR].marks]
    assert marked == [d for d in d_ks if d >= behind]
