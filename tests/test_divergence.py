"""Diverged runs: a sweep goes on past one; the summary records the step; the
report, figures and dashboard show diverged runs as such (counted, marked and
left out of the means), neither as zeros nor silently dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures_results import write_synthetic_results
from omegaconf import OmegaConf

from experiments import collect, report
from experiments.analysis.render import dashboard as dashboard_html
from experiments.analysis.figures import attn as figures_attn
from experiments.analysis.figures import train as figures_train
from experiments.analysis import results as analysis_results
from experiments.analysis.figures import style
from experiments.analysis.verdicts import sections as verdict_sections

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

EVAL_EVERY = 10
TINY = ["attention=scaled", "d_k=8", "seed=0", "optimizer=sgd", "train.steps=40",
        f"train.eval_every={EVAL_EVERY}", "train.n_val=32", "train.n_test=64", "train.batch_size=8",
        "logger=none", "progress=false"]


# --- a real sweep in which the first run diverges ------------------------------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cwd")
    results = cwd / "results"

    proc = subprocess.run([sys.executable, "-m", "experiments.train", "-m", *TINY, "optimizer.lr=1e6,0.1",
                           f"results_dir={results}"],  # the suite's compile cache (conftest)
                          cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # collected in this process (test_train_e2e starts the collect command itself)
    collect.run(OmegaConf.create({"results_dir": str(results), "keep_tabled": None}))
    assert report.main([f"results_dir={results}", "primary_optimizer=sgd"]) == 0  # the sweep ran SGD only
    return {"results": results, "summary": pd.read_parquet(results / "summary.parquet"),
            "history": pd.read_parquet(results / "history.parquet")}


def test_sweep_goes_on_after_a_divergence(sweep):
    # the sweep's first job (lr=1e6) diverged, and the second was still trained and recorded
    summary = sweep["summary"].set_index("optimizer.lr")
    assert summary.loc[1e6, "status"] == "diverged" and summary.loc[0.1, "status"] == "completed"
    step = summary.loc[1e6, "diverged_at_step"]
    assert step == int(step) and 0 <= step <= 40 and pd.isna(summary.loc[1e6, "test_accuracy"])
    assert pd.isna(summary.loc[0.1, "diverged_at_step"])
    written = {lr: (sweep["results"] / "runs" / summary.loc[lr, "run_id"] / "summary.json").stat().st_mtime_ns
               for lr in (1e6, 0.1)}
    assert written[1e6] < written[0.1]  # the diverged job came first, and the sweep went on
    # the run's own files say the same; its history stops at the evaluation
    # that saw the divergence, or at the last one before the chunk it came in
    rid = summary.loc[1e6, "run_id"]
    stored = json.loads((sweep["results"] / "runs" / rid / "summary.json").read_text())
    assert stored["status"] == "diverged" and stored["diverged_at_step"] == step
    hist = sweep["history"][sweep["history"]["run_id"] == rid]
    last = hist.loc[hist["step"].idxmax()]
    measured = last[["loss", "train_loss", "grad_norm"]].to_numpy(float)
    if last["step"] == step:
        assert not np.isfinite(measured).all() or (measured[:2] > 1e4).any()
    else:  # inside the chunk after the last row: exact step, row itself finite
        assert last["step"] < step < last["step"] + EVAL_EVERY
        assert np.isfinite(measured).all()


def test_report_lists_the_diverged_run_with_its_step(sweep):
    text = (sweep["results"] / "REPORT.md").read_text()
    summary = sweep["summary"].set_index("optimizer.lr")
    assert "**Runs.** 2 fixed-width training runs in `summary.parquet`: 1 completed, 1 diverged." in text
    row = next(line for line in text.splitlines() if summary.loc[1e6, "run_id"] in line)
    assert row.rstrip(" |").endswith(f"| {int(summary.loc[1e6, 'diverged_at_step'])}")
    assert "of which 1 diverged" in text  # in the conditions of the sections


# --- plots, report and dashboard on a synthetic folder with diverged runs -------------

BROKEN = {("unscaled", 128): (0, 1), ("additive", 16): (2,)}  # (variant, d_k): seeds that diverged
AT_STEP = 100


def _break(root: Path) -> Path:
    """Mark some runs of assoc_recall/adam diverged at step 100: history stops there with a
    NaN loss; the summary keeps an AUC over the short run (a misleading 0.0) and no test accuracy."""
    summary = pd.read_parquet(root / "summary.parquet")
    history = pd.read_parquet(root / "history.parquet")
    for (variant, d_k), seeds in BROKEN.items():
        for seed in seeds:
            rid = f"synthetic-assoc_recall-adam-{variant}-dk{d_k}-s{seed}"
            history = history[(history["run_id"] != rid) | (history["step"] <= AT_STEP)]
            history.loc[(history["run_id"] == rid) & (history["step"] == AT_STEP), "loss"] = np.nan
            at = summary["run_id"] == rid
            summary.loc[at, ["status", "test_accuracy", "accuracy_auc"]] = ["diverged", np.nan, 0.0]
            summary.loc[at, "diverged_at_step"] = AT_STEP
    summary.to_parquet(root / "summary.parquet", index=False)
    history.to_parquet(root / "history.parquet", index=False)
    return root


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    root = _break(write_synthetic_results(tmp_path_factory.mktemp("broken")))
    assert report.main([f"results_dir={root}"]) == 0
    return root


def test_report_counts_diverged_runs_per_cell(broken):
    text = (broken / "REPORT.md").read_text()
    assert "3 diverged" in text and "## Diverged runs (3)" in text
    for (variant, d_k), seeds in BROKEN.items():
        for seed in seeds:
            rid = f"synthetic-assoc_recall-adam-{variant}-dk{d_k}-s{seed}"
            assert any(rid in line and line.endswith(f"| {AT_STEP} |") for line in text.splitlines())
    quality = [line for line in text.splitlines() if line.startswith("| assoc_recall | adam |")]
    cells = {line.split(" | ")[2]: line.split(" | ")[-1].rstrip(" |") for line in quality}
    assert cells == {"16": "1 / 0 / 0", "32": "0 / 0 / 0", "64": "0 / 0 / 0", "128": "0 / 2 / 0"}


def test_verdicts_leave_diverged_runs_out(broken, tmp_path):
    clean = analysis_results.load_results(write_synthetic_results(tmp_path))
    with_broken = analysis_results.load_results(broken)
    quality = {s.key: s for s in verdict_sections.all_sections(with_broken)}["quality"]
    rows = next(t.rows for t in quality.tables if t.kind == "quality")
    row = next(r for r in rows if r["task"] == "assoc_recall" and r["d_k"] == 128)
    expected = clean.summary[(clean.summary["task"] == "assoc_recall") & (clean.summary["d_k"] == 128)
                             & (clean.summary["attention"] == "unscaled") & (clean.summary["seed"] == 2)]
    assert row["auc"]["unscaled"] == pytest.approx(expected["accuracy_auc"].iloc[0])  # seed 2 alone
    assert sum(c.diverged for c in quality.cells) == 3


def _markers(fig, marker="x"):
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_marker() == marker]


def test_figures_mark_diverged_runs(broken):
    res = analysis_results.load_results(broken)
    (_, fig), = figures_train.quality(res)
    try:
        assert len(_markers(fig)) >= 3 * 2  # two cells, in each of the three panels
        legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("diverged: 3 runs") for t in legend), legend
    finally:
        style.close(fig)
    curves = dict(figures_train.learning_curves(res))
    try:
        fig = curves["learning_curves_assoc-recall_adam"]
        assert len(_markers(fig)) == 3  # where each diverged run stopped
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert sorted(texts) == ["1 diverged", "2 diverged"]
    finally:
        for f in curves.values():
            style.close(f)
    titles = [title for title, _ in figures_attn.sources(res)]
    assert titles[-1].endswith("(3 diverged runs left out)")


def test_dashboard_lists_status_and_step(broken):
    res = analysis_results.load_results(broken)  # figures left out: they are tested above
    page = dashboard_html.render(res, verdict_sections.all_sections(res), [], [])
    data = json.loads(page.split('id="dashboard-data">')[1].split("</script>")[0])
    assert "status" in data["columns"] and "diverged_at_step" in data["columns"]
    runs = [r for r in data["runs"] if r["status"] == "diverged"]
    assert len(runs) == 3 and {r["diverged_at_step"] for r in runs} == {AT_STEP}
    assert '"status"];' in page and "tr.diverged" in page  # a status filter; highlighted rows
