"""Plots, report and dashboard on a synthetic results folder (tests/fixtures_results.py)."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from fixtures_results import JUDGED_SMALL, assert_self_contained, judged_at_small, write_synthetic_results

from experiments import dashboard, plot, report
from experiments.analysis import results as analysis_results
from experiments.analysis.tables import load
from experiments.analysis.verdicts import rules
from experiments.analysis.figures import style
from experiments.analysis.verdicts import quality as verdicts_quality
from experiments.analysis.verdicts import sections as verdict_sections
from experiments.analysis.figures.train import cost as cost_figure
from experiments.app import analysis_cli

FIGURES = {"profile", "margin_sensitivity", "mechanism", "logit_variance", "entropy", "saturation", "gradients",
           "quality", "cost", "logit_growth",
           "learning_curves_assoc-recall_adam", "learning_curves_mqar_sgd",
           "steps_survival_assoc-recall_adam", "steps_survival_mqar_sgd",
           "largest_logit_assoc-recall_adam", "largest_logit_mqar_sgd"}
SECTIONS = ["variance", "saturation", "jacobian", "gradients", "quality", "cost", "extra"]
VERDICT = re.compile(r"^\*\*Verdict: (holds|does not hold|not observed in this setting|not measured"
                     r"|inconclusive(?: \(too few seeds: n = \d+ < \d+\))?)\.\*\*", re.M)
FEW = rules.FEW


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The synthetic folder, plotted and reported once for the whole module."""
    root = write_synthetic_results(tmp_path_factory.mktemp("results"))
    assert plot.main([f"results_dir={root}", JUDGED_SMALL]) == 0
    assert report.main([f"results_dir={root}", JUDGED_SMALL]) == 0
    return root


# --- plot ---------------------------------------------------------------------------

def test_plot_writes_every_figure_as_png_and_svg(results):
    files = {p.name for p in (results / "figures").iterdir()}
    assert files == {f"{n}.{ext}" for n in FIGURES for ext in ("png", "svg")}
    for name in FIGURES:
        assert (results / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (results / "figures" / f"{name}.svg").read_bytes()[:2000]


def test_svg_is_deterministic(results):
    res = analysis_results.load_results(results)
    (_, a), = cost_figure(res)
    (_, b), = cost_figure(res)
    try:
        assert style.to_bytes(a, "svg") == style.to_bytes(b, "svg")
    finally:
        style.close(a), style.close(b)


def test_missing_tables_skip_figures_without_crashing(results, tmp_path, capsys):
    shutil.copy(results / "summary.parquet", tmp_path / "summary.parquet")
    assert plot.main([f"results_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    for name in ("logit_variance", "gradients", "learning_curves", "cost", "logit_growth"):
        assert re.search(rf"^skipped figure {name}: .+$", out, re.M), out
    assert (tmp_path / "figures" / "quality.png").exists()
    assert report.main([f"results_dir={tmp_path}"]) == 0
    assert dashboard.main([f"results_dir={tmp_path}"]) == 0
    text = (tmp_path / "REPORT.md").read_text()
    assert len(VERDICT.findall(text)) == len(SECTIONS) and "no data" in text
    # no probe, history or cost: nothing to judge reads "not measured", never "inconclusive"
    unmeasured = rules.UNMEASURED.value
    assert VERDICT.findall(text) == [unmeasured] * 4 + [VERDICT.findall(text)[4]] + [unmeasured] * 2


def test_missing_results_dir_is_one_line_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert plot.main([f"results_dir={missing}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(missing) in err and "results_dir" in err
    assert report.main(["resutls_dir=x"]) == 2  # a typo in a key fails, naming it
    assert "resutls_dir" in capsys.readouterr().err


def test_a_results_folder_names_its_own_primary_condition(tmp_path, capsys):
    """<results_dir>/analysis.yaml sets the primary condition; the command line wins over it;
    a key it may not set is one line and exit 2."""
    folder = str(tmp_path)
    assert analysis_cli.compose_config([f"results_dir={folder}"]).primary_task is None
    (tmp_path / "analysis.yaml").write_text("primary_task: mqar\n")
    assert analysis_cli.compose_config([f"results_dir={folder}"]).primary_task == "mqar"
    got = analysis_cli.compose_config([f"results_dir={folder}", "primary_task=assoc_recall"])
    assert got.primary_task == "assoc_recall"
    (tmp_path / "analysis.yaml").write_text("results_dir: elsewhere\n")
    assert report.main([f"results_dir={folder}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "analysis.yaml" in err and "primary_task" in err
    assert not (tmp_path / "REPORT.md").exists()


# --- report -------------------------------------------------------------------------

def _sections(text: str) -> list[str]:
    """The sub-claims' sections (their titles start with their number)."""
    return [s for s in re.split(r"^## ", text, flags=re.M)[1:] if s[:1].isdigit()]


def test_verdict_pattern_finds_nothing_in_a_section_without_one():
    assert VERDICT.findall("3. Something\n\n**Rule.** a rule, no verdict\n") == []
    few = rules.words(FEW, 2)
    assert VERDICT.findall(f"**Verdict: {few}.** reason") == [few]


def test_report_has_a_section_per_sub_claim_each_with_one_verdict(results):
    text = (results / "REPORT.md").read_text()
    sections = _sections(text)
    assert len(sections) == len(SECTIONS)
    for body in sections:
        assert len(VERDICT.findall(body)) == 1, body[:200]
        assert "**Rule.**" in body and "**Conditions" in body and "| --- |" not in body
        for link in re.findall(r"\]\((figures/[^)]+\.png)\)", body):
            assert (results / link).exists(), link
    assert "18.22 ± 0.03" in text  # Britz et al. beside the measured pattern
    assert VERDICT.findall(text) == ["holds"] * len(SECTIONS)
    assert "**Primary condition** (conf/analysis.yaml: primary_optimizer, primary_task): task " \
        "`assoc_recall`, optimizer `adam`" in text


def test_report_is_deterministic(results):
    before = (results / "REPORT.md").read_bytes()
    assert report.main([f"results_dir={results}", JUDGED_SMALL]) == 0
    assert (results / "REPORT.md").read_bytes() == before


FAILS, HOLDS, UNSURE, UNSEEN = rules.FAILS, rules.HOLDS, rules.UNSURE, rules.UNSEEN
SEEDED = set(SECTIONS) - {"cost"}  # every section judged over seeds


@pytest.mark.parametrize("flip, flipped", [
    (dict(unscaled_saturates=False), dict.fromkeys(["variance", "saturation", "jacobian", "gradients"], FAILS)),
    (dict(scaled_flat=False), dict.fromkeys(["variance", "saturation", "jacobian"], FAILS)),
    (dict(rms_shrinks=False), {"gradients": UNSURE}),  # median and RMS disagree
    (dict(additive_wins=False), {"quality": FAILS}),
    (dict(alike_small=False), {"quality": FAILS}),
    (dict(additive_costly=False), {"cost": FAILS}),
    (dict(additive_memory=False), {"cost": FAILS}),  # slower, but no memory to save
    (dict(mup_flat=False), {"extra": FAILS}),
    (dict(width="fixed"), {"extra": UNSEEN}),
    (dict(n_seeds=2), dict.fromkeys(SEEDED, FEW)),
])
def test_verdicts_follow_the_data(tmp_path, flip, flipped):
    root = write_synthetic_results(tmp_path, **flip)
    sections = verdict_sections.all_sections(judged_at_small(analysis_results.load_results(root)))
    got = {s.key: s.verdict for s in sections}
    assert set(got) == set(SECTIONS)
    assert got == {key: flipped.get(key, HOLDS) for key in SECTIONS}
    assert all(s.seeds == (2 if s.verdict is FEW else 0) for s in sections)  # FEW names its seeds


def test_width_setting_beside_a_study_is_kept_apart(tmp_path):
    """A folder holding a fixed-width study and sub-claim 6's width setting (model.width=
    proportional): the width runs judge section 6 and enter no other section's cells."""
    fixed = write_synthetic_results(tmp_path / "fixed", additive_wins=False, width="fixed")
    width = write_synthetic_results(tmp_path / "width", mup_flat=True)
    both = tmp_path / "both"
    shutil.copytree(fixed, both)
    for name in ("summary", "history"):
        tables = [pd.read_parquet(fixed / f"{name}.parquet"),
                  pd.read_parquet(width / f"{name}.parquet").assign(run_id=lambda d: d["run_id"] + "-wide")]
        pd.concat(tables, ignore_index=True).to_parquet(both / f"{name}.parquet", index=False)
    res = analysis_results.load_results(both)
    assert set(res.summary["model.width"]) == {"fixed"} and set(res.history["run_id"]) == set(
        pd.read_parquet(fixed / "history.parquet")["run_id"])
    assert set(res.for_width().summary["model.width"]) == {"proportional"}
    got = {s.key: s.verdict for s in verdict_sections.all_sections(res)}
    alone = {s.key: s.verdict for s in verdict_sections.all_sections(analysis_results.load_results(fixed))}
    assert got == dict(alone, extra=HOLDS) and alone["quality"] is FAILS
    assert alone["extra"] is UNSEEN


def test_gradient_disagreement_is_explained(tmp_path):
    res = analysis_results.load_results(write_synthetic_results(tmp_path, rms_shrinks=False))
    section = {s.key: s for s in verdict_sections.all_sections(res)}["gradients"]
    assert [p.label.split()[0] for p in section.parts] == ["median", "RMS"]
    assert [rules.verdict_of([p]) for p in section.parts] == [HOLDS, FAILS] and section.verdict is UNSURE
    why = section.detail.disagreement  # the numbers that explain it: most unscaled rows saturate
    assert why is not None and why.saturated_share > 0.5 and why.rms_over_median > 1
    assert section.detail.by_aggregate == {"median": (HOLDS, 0), "RMS": (FAILS, 0)}
    assert section.tables[0].at["wrt"] == "q,k"  # iid probe: the gradient w.r.t. q and k


def test_saturation_verdict_flips_in_the_written_report(tmp_path):
    root = write_synthetic_results(tmp_path, unscaled_saturates=False)
    assert report.main([f"results_dir={root}"]) == 0
    body = next(b for b in _sections((root / "REPORT.md").read_text()) if b.startswith("2. Saturation"))
    assert VERDICT.findall(body) == ["does not hold"]


def test_primary_condition_is_named_not_counted(tmp_path):
    root = write_synthetic_results(tmp_path)  # assoc_recall/adam has more runs than mqar/sgd
    assert analysis_results.load_results(root).primary == ("assoc_recall", "adam")
    assert analysis_results.load_results(root, primary_optimizer="sgd").primary == ("mqar", "sgd")
    with pytest.raises(load.ConditionError, match=r"^primary_optimizer: 'rmsprop' has no runs .* adam, sgd\)"):
        analysis_results.load_results(root, primary_optimizer="rmsprop")
    with pytest.raises(load.ConditionError, match="primary_task: 'mqar' has no runs with optimizer adam"):
        analysis_results.load_results(root, primary_task="mqar")


def test_no_step_difference_when_neither_reached():
    rows = [dict(attention=v, d_k=8, seed=s, steps_to_threshold=None, steps=500)
            for v in ("additive", "unscaled") for s in range(3)]
    steps = verdicts_quality.steps_to_threshold(pd.DataFrame(rows), 8, [0, 1, 2])
    assert steps["steps_delta"] is None  # no difference where neither reached the threshold
    for km in steps["km"].values():
        assert (km.restricted_mean, km.reached, km.n) == (500, 0, 3) and math.isnan(km.median)


# --- dashboard (the full page is checked, and opened in Chromium, in test_dashboard_browser.py) ---

def test_dashboard_is_self_contained(results, tmp_path):
    shutil.copy(results / "summary.parquet", tmp_path / "summary.parquet")
    shutil.copy(results / "cost.parquet", tmp_path / "cost.parquet")
    assert dashboard.main([f"results_dir={tmp_path}", JUDGED_SMALL]) == 0
    # the profile, the verdict by margin, quality, cost and the steps survival of each of the two conditions
    page = (tmp_path / "dashboard.html").read_text()
    assert_self_contained(page, n_figures=6)
    assert page.index("<h2>The answer</h2>") < page.index("<h2>Sub-claims</h2>")


def test_primary_condition_from_the_command_line(tmp_path, capsys):
    root = write_synthetic_results(tmp_path)
    assert report.main([f"results_dir={root}", "primary_optimizer=sgd"]) == 0
    assert "task `mqar`, optimizer `sgd`" in (root / "REPORT.md").read_text()
    before = (root / "REPORT.md").read_bytes()
    assert report.main([f"results_dir={root}", "primary_optimizer=rmsprop"]) == 2  # nothing written
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: primary_optimizer: 'rmsprop' has no runs")
    assert (root / "REPORT.md").read_bytes() == before
