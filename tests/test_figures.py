"""Figures read on a small sweep: every title inside its figure; an empty panel says why.
On a sweep with a task and a variant of a user's own: no line joins two conditions, every
line keeps its legend entry, and tick labels are short."""

from __future__ import annotations

import dataclasses
import html
import re

import pytest
from fixtures_mixed import OTHER_D_K, PRIMARY, short_label, write_mixed_results
from fixtures_results import write_synthetic_results

from experiments.analysis import results as analysis_results
from experiments.analysis.figures import catalog, style
from experiments.analysis.figures import train as figures_train
from experiments.analysis.render import dashboard
from experiments.analysis.tables import load


@pytest.fixture(scope="module")
def res(tmp_path_factory) -> load.Results:
    return analysis_results.load_results(write_synthetic_results(tmp_path_factory.mktemp("results")), lr="all")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> load.Results:
    return analysis_results.load_results(write_mixed_results(tmp_path_factory.mktemp("mixed")),
                                         primary_task=PRIMARY[0])


@pytest.fixture(scope="module")
def mixed_figures(mixed):
    """(name, figure) of every figure of the catalog, each drawn, on fixtures_mixed's folder."""
    figures = [built for spec in catalog.FIGURES for built in spec.build(mixed)]
    for _, fig in figures:
        fig.canvas.draw()  # lays out the titles and formats the tick labels
    yield figures
    for _, fig in figures:
        style.close(fig)


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("build", [figures_train.learning_curves, figures_train.steps_survival])
def test_every_title_lies_inside_its_figure(res, build):
    # 3 d_k columns, as in `make run`'s sweep: the narrowest figure a title must fit
    narrow = dataclasses.replace(res, summary=res.summary[res.summary["d_k"] <= 64],
                                 history=res.history[res.history["d_k"] <= 64])
    assert narrow.summary["d_k"].nunique() == 3
    for name, fig in build(narrow):
        try:
            fig.canvas.draw()
            _assert_titles_inside(name, fig)
        finally:
            style.close(fig)


def _assert_titles_inside(name: str, fig) -> None:
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for title in filter(None, [fig._suptitle] + [ax.title for ax in fig.axes]):
        box = title.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, (name, title.get_text())
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, (name, title.get_text())


def test_every_figure_of_a_mixed_sweep_keeps_its_titles_inside(mixed_figures):
    # conditions of one d_k beside one of three, a long variant list: narrow and tall figures
    assert {name for name, _ in mixed_figures} >= {spec.key for spec in catalog.FIGURES} - {
        "steps_survival", "learning_curves", "lr_accuracy", "largest_logit"}  # these: <key>_<task>_<optimizer>
    for name, fig in mixed_figures:
        _assert_titles_inside(name, fig)


def test_no_line_joins_two_conditions(mixed_figures):
    # each other condition ran at a d_k of its own: a line through it and any other x joins two
    others = set(map(float, OTHER_D_K.values()))
    lines = 0
    for name, fig in mixed_figures:
        if name == "cost":  # against n, and no task: the benchmark's n overlaps those d_ks
            continue
        for ax in fig.axes:
            for line in ax.lines:
                xs = set(map(float, line.get_xdata()))
                lines += 1
                assert not xs & others or len(xs) == 1, (name, ax.get_title(), line.get_label(), xs)
    assert lines > 100


def _legend_texts(fig) -> set[str]:
    legends = [ax.get_legend() for ax in fig.axes] + fig.legends
    return {t.get_text() for lg in legends if lg is not None for t in lg.get_texts()}


def test_every_labelled_line_has_a_legend_entry(mixed_figures):
    # additive ran in the first panel of the profile alone, its legend beside the second
    for name, fig in mixed_figures:
        drawn = {line.get_label() for ax in fig.axes for line in ax.lines} - {""}
        named = {label for label in drawn if not label.startswith("_")}
        assert named <= _legend_texts(fig), (name, named - _legend_texts(fig))
    profile = dict(mixed_figures)["profile"]
    assert "additive − unscaled" in _legend_texts(profile)


def test_quality_legend_names_the_variants_of_every_row(mixed):
    # the first row (most runs) without muP, which the other rows have
    s = mixed.summary
    first = (s["task"] == PRIMARY[0]) & (s["optimizer"] == PRIMARY[1])
    without = dataclasses.replace(mixed, summary=s[~(first & (s["attention"] == "mup"))])
    assert load.conditions(without.summary)[0] == PRIMARY
    (_, fig), = figures_train.quality(without)
    style.close(fig)
    assert style.label("mup") in _legend_texts(fig)


def _tick_labels(fig):
    """(value, label) of every labelled tick, major and minor, of every axis of the figure."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for minor in (False, True):
                for value, text in zip(axis.get_ticklocs(minor=minor), axis.get_ticklabels(minor=minor)):
                    if text.get_text():
                        yield float(value), text.get_text()


def test_tick_labels_are_short_plain_numbers(mixed_figures):
    # 0.001 to 10,000 as plain numbers, at most three significant figures after a point
    seen = 0
    for name, fig in mixed_figures:
        for value, text in _tick_labels(fig):
            if 1e-3 <= abs(value) < 1e4:
                seen += 1
                assert short_label(text), (name, value, text)
    assert seen > 100


def _steps_panels(res) -> list:
    (_, fig), = figures_train.quality(res)
    style.close(fig)
    columns = [c for c, _ in figures_train.QUALITY_PANELS]
    return fig.axes[columns.index("steps_to_threshold")::len(columns)]  # axes are row-major


def test_steps_panel_says_so_when_no_run_reached_the_threshold(res):
    never = res.summary.assign(steps_to_threshold=float("nan"))
    for ax in _steps_panels(dataclasses.replace(res, summary=never)):
        assert _texts(ax) == ["no run reached 0.9"]
        assert not ax.lines  # no flat line at the budget


def test_steps_panel_draws_the_means_when_a_run_reached_it(res):
    assert res.summary["steps_to_threshold"].notna().any()
    for ax in _steps_panels(res):
        assert "no run reached 0.9" not in _texts(ax)
        assert ax.lines


def test_a_dashboard_caption_is_its_figure_title_then_its_file():
    spec = catalog.FIGURES[0]
    caption = dashboard.figure_html(catalog.Rendered(spec.key, spec.title, {"svg": b"<svg/>"}), "f")
    title, rest = re.search(r"<figcaption>(.*?) <small>(.*?)</small></figcaption>", caption).groups()
    assert html.unescape(title) == spec.title and rest == f"(figures/{spec.key}.png)"
