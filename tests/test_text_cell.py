"""The text cell beside the synthetic ones (issue 43): its own alike margin, its bits per character
beside the baselines of the plays its runs name, the side-by-side read off the clauses, and
figure 13 (the largest logit through training). Asserted on the analysis' structures."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.render.markdown import Pages

from fixtures_results import write_synthetic_results

from experiments.analysis import results as analysis_results
from experiments.analysis.figures import instability, style
from experiments.analysis.figures.style import Skip
from experiments.analysis.render import dashboard, report, transfer as render_transfer
from experiments.analysis.tables import load, text
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import transfer as tr
from experiments.analysis.verdicts.sections import all_sections
from experiments.tasks import plays

TEXT = ("charlm", "adam")
PLAYS = {"train-a": "**A**\nTo be or not to be.\n", "train-b": "**B**\nWhat light through yonder window.\n",
         "val-play": "**C**\nNow is the winter of our discontent.\n",
         "test-play": "**D**\nFriends, Romans, countrymen.\n"}


def _corpus(root) -> str:
    folder = root / "plays"
    folder.mkdir()
    for name, body in PLAYS.items():
        (folder / f"{name}.md").write_text(body)
    return str(folder)


def _with_text_cell(root, corpus_dir: str, bpc_offset: dict | None = None) -> None:
    """The synthetic folder plus a charlm/adam cell: a copy of assoc_recall/adam's runs, with
    bits per character (additive 0.1 bits better than the others unless `bpc_offset` says) and
    the plays its runs name."""
    s, h = (pd.read_parquet(root / f"{t}.parquet") for t in ("summary", "history"))
    cond = (s["task"] == "assoc_recall") & (s["optimizer"] == "adam")
    ts = s[cond].assign(task="charlm", run_id=lambda d: d["run_id"].str.replace("assoc_recall", "charlm"))
    offset = ts["attention"].map(bpc_offset or {"additive": -0.1}).fillna(0.0)
    ts = ts.assign(final_val_bpc=3.0 - ts["accuracy_auc"] + offset + 0.001 * ts["seed"],
                   test_bpc=3.05 - ts["accuracy_auc"] + offset,
                   **{"task.val_plays": json.dumps(["val-play"]), "task.test_plays": json.dumps(["test-play"]),
                      "task.corpus_dir": corpus_dir})
    th = h[(h["task"] == "assoc_recall") & (h["optimizer"] == "adam")]
    th = th.assign(task="charlm", run_id=th["run_id"].str.replace("assoc_recall", "charlm"))
    pd.concat([s, ts], ignore_index=True).to_parquet(root / "summary.parquet", index=False)
    pd.concat([h, th], ignore_index=True).to_parquet(root / "history.parquet", index=False)


def _load(root, **tasks) -> load.Results:
    res = analysis_results.load_results(root, primary_task="assoc_recall")
    return dataclasses.replace(res, declared={"alike_margin": 0.05, "tasks": tasks})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    write_synthetic_results(root)
    _with_text_cell(root, _corpus(root))
    return root


@pytest.fixture(scope="module")
def sections(folder):
    res = _load(folder, charlm={"alike_margin": 0.2})
    return res, all_sections(res)


def _quality(sections):
    return next(s for s in sections[1] if s.key == "quality")


def test_a_cell_reads_its_tasks_margin_and_the_others_the_global_one(folder, sections):
    undeclared = vq.quality(_load(folder, charlm={"alike_margin": None}))
    for own, fix_from, quality in ((0.2, 64, _quality(sections)), (None, 32, undeclared)):  # sections: 0.2
        cells = {c.name: c for c in quality.cells}
        text_cell, toy = cells["charlm/adam"], cells["assoc_recall/adam"]
        assert text_cell.margin == (own or 0.05) and toy.margin == 0.05
        equivalent = next(p for p in text_cell.parts if p.test.name == "TOST")
        assert equivalent.question.margin == text_cell.margin and text_cell.fix_from == fix_from
        profile = next(t for t in quality.tables if t.kind == "profile")
        assert {(r["task"], r["margin"]) for r in profile.rows} == {
            ("assoc_recall", 0.05), ("mqar", 0.05), ("charlm", own or 0.05)}


def test_the_profile_figure_draws_each_cells_own_band(sections):
    res, _ = sections
    from experiments.analysis.figures import profile as figures_profile

    (_, fig), = figures_profile.profile(res)
    try:
        bands = {}
        for ax in fig.axes:
            if ax.get_visible() and ax.get_title():
                band = ax.patches[0]  # the alike band, drawn first
                corners = ax.transData.inverted().transform(band.get_transform().transform(band.get_path().vertices))
                bands[ax.get_title().split(" (")[0]] = round(float(corners[:, 1].max()), 6)
        assert bands == {"assoc_recall, adam": 0.05, "charlm, adam": 0.2, "mqar, sgd": 0.05}
    finally:
        style.close(fig)


def test_bits_per_character_beside_the_baselines_of_the_plays_the_runs_name(folder, sections):
    q = _quality(sections)
    by_cond = {(c.task, c.optimizer): c for c in q.variants}
    corpus = plays.load_corpus(("val-play",), ("test-play",), str(folder / "plays"))
    b = by_cond[TEXT].baselines
    assert b.plays == {"val": ("val-play",), "test": ("test-play",)}
    for split in ("val", "test"):
        want = plays.baselines(corpus, split)
        assert (b.unigram[split], b.bigram[split]) == (want["unigram_bpc"], want["bigram_bpc"])
    assert b.uniform == plays.uniform_bits(corpus)
    # each variant's bits at its chosen rate, over its seeds
    s = pd.read_parquet(folder / "summary.parquet")
    row = next(r for r in by_cond[TEXT].rows if (r.variant, r.d_k) == ("additive", 64))
    runs = s[(s["task"] == "charlm") & (s["attention"] == "additive") & (s["d_k"] == 64)]
    assert row.val_bpc[0] == pytest.approx(runs["final_val_bpc"].mean())
    assert row.test_bpc[0] == pytest.approx(runs["test_bpc"].mean()) and row.val_bpc[1] < row.val_bpc[0]
    # the retrieval tasks have none; section 4 carries one bits table, the text cell's
    assert by_cond[("assoc_recall", "adam")].baselines is None
    assert all(math.isnan(r.val_bpc[0]) for r in by_cond[("assoc_recall", "adam")].rows)
    bits = [t for t in q.tables if t.kind == "bits"]
    assert [(t.at["task"], t.at["optimizer"]) for t in bits] == [TEXT]
    assert bits[0].rows[2]["bits"]["additive"] == row.val_bpc


def test_baselines_follow_the_runs_config(folder):
    runs = pd.DataFrame({"task.val_plays": [json.dumps(["train-b"])], "task.test_plays": [json.dumps(["val-play"])],
                         "task.corpus_dir": [str(folder / "plays")]})
    b = text.baselines_of(runs)
    corpus = plays.load_corpus(("train-b",), ("val-play",), str(folder / "plays"))
    assert b.bigram["val"] == plays.baselines(corpus, "val")["bigram_bpc"]
    assert text.baselines_of(runs.drop(columns="task.val_plays")) is text.NoBaselines.NO_PLAYS
    gone = runs.assign(**{"task.corpus_dir": str(folder / "no-such-folder")})
    assert text.baselines_of(gone) is text.NoBaselines.NO_CORPUS


def test_the_side_by_side_is_read_off_each_cells_clauses(sections):
    q = _quality(sections)
    side = q.detail.side_by_side
    assert side.missing is None
    sides = {s.name: s for s in side.sides}
    assert [s.name for s in side.sides if s.is_text] == ["charlm/adam"]
    for c in q.cells:
        s = sides[c.name]
        ahead = c.parts[0]
        assert s.crossover == c.crossover and s.scaled_from_margin == c.fix_from
        assert s.additive_from == ahead.d_ks[0] and s.additive_delta == ahead.ci
        d_ks, diffs = c.dk_profile.entered(qp.FIX_PAIR)
        from experiments.analysis.stats import profile
        assert s.scaled_from == profile.from_which(d_ks, profile.step_down(diffs))  # the answer's "falls behind"
    # the text cell's own margin moves (b)'s range, not the null-0 one
    assert (sides["charlm/adam"].scaled_from_margin, sides["assoc_recall/adam"].scaled_from_margin) == (64, 32)
    reading, = side.readings
    assert reading.outcome is tr.Outcome.SAME
    assert {p.measure: p.place for p in reading.placed} == {m: tr.Place.WITHIN for m in tr.Measure}
    table = render_transfer.table(side)
    assert list(table["cell"]) == ["assoc_recall/adam", "mqar/sgd", "charlm/adam"]


def _side(name, is_text, d_star, verdict=tr.Verdict.HOLDS, additive_from=32, scaled_from=16):
    from experiments.analysis.stats.profile import Crossover
    return tr.Side(name, name, "adam", is_text, verdict, 0, 0.05, Crossover(d_star, None, None), additive_from,
                   scaled_from, scaled_from)


def test_the_text_cell_is_placed_against_the_synthetic_range():
    toy = [_side("a", False, 7.4), _side("b", False, 8.8, additive_from=64)]
    shifted = tr.transfer([*toy, _side("t", True, 40.0, additive_from=16)])
    placed = {p.measure: p for p in shifted.readings[0].placed}
    assert placed[tr.Measure.D_STAR].place is tr.Place.ABOVE
    assert (placed[tr.Measure.D_STAR].lo, placed[tr.Measure.D_STAR].hi) == (7.4, 8.8)
    assert placed[tr.Measure.ADDITIVE_FROM].place is tr.Place.BELOW
    assert placed[tr.Measure.SCALED_FROM].place is tr.Place.WITHIN
    assert shifted.readings[0].outcome is tr.Outcome.SHIFTED
    assert tr.transfer([*toy, _side("t", True, 8.0)]).readings[0].outcome is tr.Outcome.SAME
    assert tr.transfer([*toy, _side("t", True, None)]).readings[0].placed[0].place is tr.Place.TEXT_NONE
    assert tr.transfer([*toy, _side("t", True, 8.0, tr.Verdict.FAILS)]).readings[0].outcome is tr.Outcome.DIFFERENT
    mixed = [toy[0], _side("b", False, 8.8, tr.Verdict.UNSURE), _side("t", True, 8.0)]
    assert tr.transfer(mixed).readings[0].outcome is tr.Outcome.MIXED
    assert tr.transfer(toy).missing is tr.Outcome.NO_TEXT and not tr.transfer(toy).readings
    assert tr.transfer([_side("t", True, 8.0)]).missing is tr.Outcome.NO_SYNTHETIC


def test_report_and_dashboard_carry_the_side_by_side(sections):
    res, secs = sections
    side = _quality(sections).detail.side_by_side
    pages = Pages()
    md = report.answer_md(res, secs, pages)
    assert report.md_table(render_transfer.table(side)) in md
    full = pages.files["tables/answer-by-cell.md"]
    assert len([l for l in full.splitlines() if l.startswith("- ")]) == len(_quality(sections).cells) + 1  # a sentence per cell, then the text's
    assert "id='side-by-side'" in dashboard.answer_html(secs)


def test_without_a_text_cell_one_line_and_no_table(tmp_path):
    res = _load(write_synthetic_results(tmp_path))
    secs = all_sections(res)
    side = _quality((res, secs)).detail.side_by_side
    assert side.missing is tr.Outcome.NO_TEXT and render_transfer.table(side) is None
    pages = Pages()
    md = report.answer_md(res, secs, pages)
    full = pages.files["tables/answer-by-cell.md"]
    assert len([l for l in full.splitlines() if l.startswith("- ")]) == len(_quality((res, secs)).cells) + 1
    assert not any(part.startswith("*Toy tasks and text") for part in md)  # no table
    assert "id='side-by-side'" not in dashboard.answer_html(secs)


def test_figure_13_draws_the_largest_logit_from_history(sections):
    res, _ = sections
    built = instability.largest_logit(res)
    try:
        names = [n for n, _ in built]
        assert sorted(names) == sorted(f"largest_logit_{t}_{o}" for t, o in
                                       (("assoc-recall", "adam"), ("charlm", "adam"), ("mqar", "sgd")))
        fig = dict(built)["largest_logit_mqar_sgd"]
        panel = next(ax for ax in fig.axes if ax.get_title() == style.label("unscaled"))
        line = next(ln for ln in panel.get_lines() if ln.get_label() == "d_k = 128")
        h = res.history
        runs = h[(h["task"] == "mqar") & (h["attention"] == "unscaled") & (h["d_k"] == 128)]
        want = runs.groupby("step")["logit_absmax"].median()
        assert np.allclose(line.get_ydata(), want.to_numpy()) and np.allclose(line.get_xdata(), want.index)
    finally:
        for _, fig in built:
            style.close(fig)


def test_figure_13_skips_cleanly_without_its_column(sections, monkeypatch):
    res, _ = sections
    for history in (None, res.history.drop(columns="logit_absmax")):
        with pytest.raises(Skip):
            instability.largest_logit(dataclasses.replace(res, history=history))
    from experiments.analysis.figures import catalog
    # the catalog renders it, and turns its skip into a note (the other figures: tests/test_analysis.py)
    monkeypatch.setattr(catalog, "FIGURES", [f for f in catalog.FIGURES if f.key == "largest_logit"])
    assert len(catalog.FIGURES) == 1
    no_column = dataclasses.replace(res, history=res.history.drop(columns="logit_absmax"), summary=None,
                                    probe=None, cost=None)
    rendered, notes = catalog.render(no_column, formats=("png",))
    assert not rendered and [n.split(":")[0] for n in notes] == ["skipped figure largest_logit"]
