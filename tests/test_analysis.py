"""Plots, report and dashboard on a synthetic results folder (tests/fixtures_results.py)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_results import assert_self_contained, write_synthetic_results

from experiments import dashboard, plot, report
from experiments.analysis import load, stats, style, verdicts_train
from experiments.analysis.figures_train import cost as cost_figure

FIGURES = {"logit_variance", "entropy", "saturation", "gradients", "quality", "cost", "logit_growth",
           "learning_curves_assoc-recall_adam", "learning_curves_mqar_sgd"}
SECTIONS = ["variance", "saturation", "gradients", "quality", "cost", "extra"]
VERDICT = re.compile(r"^\*\*Verdict: (holds|does not hold|inconclusive)\.\*\*", re.M)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The synthetic folder, plotted and reported once for the whole module."""
    root = write_synthetic_results(tmp_path_factory.mktemp("results"))
    assert plot.main([f"results_dir={root}"]) == 0
    assert report.main([f"results_dir={root}"]) == 0
    return root


# --- statistics (pure) --------------------------------------------------------------

def test_bootstrap_mean_ci_brackets_the_mean_and_is_deterministic():
    values = [1.0, 1.2, 0.9, 1.1, 1.05]
    est, lo, hi = stats.bootstrap_mean_ci(values)
    assert lo <= est <= hi and est == pytest.approx(1.05)
    assert stats.bootstrap_mean_ci(values) == (est, lo, hi)
    assert math.isnan(stats.bootstrap_mean_ci([1.0])[1])  # one seed: no interval


def test_bootstrap_slope_ci_recovers_power_laws():
    groups = {d: [d * f for f in (0.9, 1.0, 1.1)] for d in (8, 16, 32, 64)}  # y ∝ d: slope 1
    est, lo, hi = stats.bootstrap_slope_ci(groups)
    assert est == pytest.approx(1.0) and lo <= 1.0 <= hi
    flat = stats.bootstrap_slope_ci({d: [1.0, 1.1, 0.9] for d in (8, 16, 32)})
    assert flat[0] == pytest.approx(0.0, abs=1e-12)
    assert stats.within(flat, -0.15, 0.15) == "yes"


def test_three_way_tests():
    assert stats.within((1.0, 0.9, 1.1), 0.85, 1.15) == "yes"
    assert stats.within((0.0, -0.1, 0.1), 0.85, 1.15) == "no"
    assert stats.within((0.9, 0.5, 1.3), 0.85, 1.15) == "unclear"
    assert stats.above((0.5, 0.2, 0.8), 0.15) == "yes" and stats.above((0.0, -0.1, 0.1), 0.15) == "no"
    assert stats.below((-0.5, -0.8, -0.2), -0.1) == "yes" and stats.below((0.0, -0.05, 0.1), -0.1) == "no"
    assert stats.within((1.0, math.nan, math.nan), 0, 2) == "unclear"


# --- plot ---------------------------------------------------------------------------

def test_plot_writes_every_figure_as_png_and_svg(results):
    files = {p.name for p in (results / "figures").iterdir()}
    assert files == {f"{n}.{ext}" for n in FIGURES for ext in ("png", "svg")}
    for name in FIGURES:
        assert (results / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (results / "figures" / f"{name}.svg").read_bytes()[:2000]


def test_svg_is_deterministic(results):
    res = load.load_results(results)
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
    assert len(VERDICT.findall(text)) == 6 and "no data" in text


def test_missing_results_dir_is_one_line_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert plot.main([f"results_dir={missing}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(missing) in err and "results_dir" in err
    assert report.main(["resutls_dir=x"]) == 2  # a typo in a key fails, naming it
    assert "resutls_dir" in capsys.readouterr().err


def test_entry_point_from_the_command_line_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.dashboard", f"results_dir={tmp_path / 'none'}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# --- report -------------------------------------------------------------------------

def _sections(text: str) -> list[str]:
    return re.split(r"^## ", text, flags=re.M)[1:]


def test_report_has_six_sections_each_with_a_verdict(results):
    text = (results / "REPORT.md").read_text()
    sections = _sections(text)
    assert len(sections) == 6
    for body in sections:
        assert len(VERDICT.findall(body)) == 1, body[:200]
        assert "**Rule.**" in body and "**Conditions.**" in body and "| --- |" not in body
        for link in re.findall(r"\]\((figures/[^)]+\.png)\)", body):
            assert (results / link).exists(), link
    assert "18.22 ± 0.03" in text  # Britz et al. beside the measured pattern
    assert [v for v in VERDICT.findall(text)] == ["holds"] * 6


def test_report_is_deterministic(results):
    before = (results / "REPORT.md").read_bytes()
    assert report.main([f"results_dir={results}"]) == 0
    assert (results / "REPORT.md").read_bytes() == before


@pytest.mark.parametrize("flip, flipped", [
    (dict(unscaled_saturates=False), {"variance", "saturation", "gradients"}),
    (dict(additive_wins=False), {"quality"}),
    (dict(additive_costly=False), {"cost"}),
    (dict(mup_flat=False), {"extra"}),
])
def test_verdicts_follow_the_data(tmp_path, flip, flipped):
    root = write_synthetic_results(tmp_path, **flip)
    got = {s.key: s.verdict for s in verdicts_train.all_sections(load.load_results(root))}
    assert set(got) == set(SECTIONS)
    for key in SECTIONS:
        assert got[key] == ("does not hold" if key in flipped else "holds"), (key, got)


def test_saturation_verdict_flips_in_the_written_report(tmp_path):
    root = write_synthetic_results(tmp_path, unscaled_saturates=False)
    assert report.main([f"results_dir={root}"]) == 0
    body = next(b for b in _sections((root / "REPORT.md").read_text()) if b.startswith("2. Saturation"))
    assert VERDICT.findall(body) != ["holds"]


# --- dashboard (the full page is checked, and opened in Chromium, in test_dashboard_browser.py) ---

def test_dashboard_is_self_contained(results, tmp_path):
    shutil.copy(results / "summary.parquet", tmp_path / "summary.parquet")
    shutil.copy(results / "cost.parquet", tmp_path / "cost.parquet")
    assert dashboard.main([f"results_dir={tmp_path}"]) == 0
    assert_self_contained((tmp_path / "dashboard.html").read_text(), n_figures=2)
