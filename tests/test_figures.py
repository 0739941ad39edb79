"""Figures read on a small sweep: every title inside its figure; an empty panel says why."""

from __future__ import annotations

import dataclasses

import pytest
from fixtures_results import write_synthetic_results

from experiments.analysis.figures import style
from experiments.analysis.figures import train as figures_train
from experiments.analysis.tables import load


@pytest.fixture(scope="module")
def res(tmp_path_factory) -> load.Results:
    return load.load_results(write_synthetic_results(tmp_path_factory.mktemp("results")))


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("build", [figures_train.learning_curves, figures_train.steps_survival])
def test_every_title_lies_inside_its_figure(res, build):
    # 3 d_k columns, as in `make run`'s sweep: a figure narrower than its title was
    narrow = dataclasses.replace(res, summary=res.summary[res.summary["d_k"] <= 64],
                                 history=res.history[res.history["d_k"] <= 64])
    assert narrow.summary["d_k"].nunique() == 3
    for name, fig in build(narrow):
        try:
            renderer = fig.canvas.get_renderer()
            fig.canvas.draw()
            page = fig.bbox
            titles = [fig._suptitle] + [ax.title for ax in fig.axes]
            for title in filter(None, titles):
                box = title.get_window_extent(renderer)
                assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, (name, title.get_text())
                assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, (name, title.get_text())
        finally:
            style.close(fig)


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
