"""Open dashboard.html in a real headless Chromium (file://, no server, no network).

The page runs a self-test when its URL ends in #selftest and writes the result
into <pre id="selftest-result">; Chromium's --dump-dom returns that DOM, and
--enable-logging=stderr reports every console message. The window is 1400 x 900:
the answer's figure and the verdict lines must sit in that first screen, and
the page must not scroll sideways; a screenshot of it is kept in the test's
folder (its path printed, `pytest -s`) for review. On a folder with a task and a
variant of a user's own, the runs explorer opens on the primary condition and
draws one condition at a time, whichever a reader picks. Needs Debian's chromium
package (`apt-get install chromium`); skips without it, except under CI=true,
where a missing browser is a failure (.ci/run installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures_mixed import NEW_VARIANT, OTHER_D_K, PRIMARY, PRIMARY_D_KS, short_label, write_mixed_results
from fixtures_results import assert_self_contained, write_synthetic_results

from experiments import dashboard
from experiments.analysis.figures import catalog

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


WIDTH, FOLD = 1400, 900  # a laptop's window: the first screen


def _flags(tmp_path) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},{FOLD}", "--hide-scrollbars"]


def _browser() -> str:
    browser = _chromium()
    if browser is None:
        message = "Chromium not found: install it with `apt-get install chromium` to run this test"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run should have installed it)")
        pytest.skip(message)
    return browser


def _self_test(browser: str, root, tmp_path) -> dict:
    """The page's self-test result, read from the DOM after it ran (#selftest)."""
    url = (root / "dashboard.html").resolve().as_uri() + "#selftest"
    proc = subprocess.run(
        [browser, *_flags(tmp_path), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
         "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console  # the page logs nothing; any line is an error or a stray log
    found = re.search(r'<pre id="selftest-result">(.*?)</pre>', proc.stdout, re.S)
    assert found and found.group(1).strip(), "the self-test did not run"
    result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert result["errors"] == []
    return result


def test_dashboard_in_headless_chromium(tmp_path):
    root = write_synthetic_results(tmp_path / "results")
    assert dashboard.main([f"results_dir={root}"]) == 0
    # the profile and the verdict by margin included, figures 6, 7 and 13 once per condition (two)
    assert_self_contained((root / "dashboard.html").read_text(), n_figures=16)
    browser = _browser()
    result = _self_test(browser, root, tmp_path)
    assert result["figures"] >= 9 and result["figures_drawn"] == result["figures"]
    assert result["chart_points"] > 0
    assert result["rows_filtered"] < result["rows_before"] == result["rows_restored"]
    _assert_first_screen(result["layout"])
    _assert_clause_table(proc_dom(browser, root, tmp_path), root)
    shot = tmp_path / "dashboard_first_screen.png"
    proc = subprocess.run([browser, *_flags(tmp_path), "--virtual-time-budget=5000", f"--screenshot={shot}",
                           (root / "dashboard.html").resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", proc.stderr[-2000:]
    print(f"first screen at {WIDTH}x{FOLD}: {shot}")


def proc_dom(browser: str, root, tmp_path) -> str:
    url = (root / "dashboard.html").resolve().as_uri() + "#selftest"
    proc = subprocess.run([browser, *_flags(tmp_path), "--virtual-time-budget=5000", "--dump-dom", url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _assert_clause_table(dom: str, root) -> None:
    """Every clause of clauses.csv in the page; filtering by a cell and by a variant's name narrows
    it to that cell's and that variant's rows; a click on estimate's head sorts it, a second click
    reverses it; the rows come back."""
    import pandas as pd

    found = re.search(r'<pre id="clause-selftest">(.*?)</pre>', dom, re.S)
    assert found and found.group(1).strip(), "the clause table's self-test did not run"
    got = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    from experiments import report

    assert report.main([f"results_dir={root}"]) == 0  # clauses.csv: the table the page must show
    clauses = pd.read_csv(root / "clauses.csv")
    assert got["rows"] == got["total"] == got["restored"] == len(clauses)
    assert got["rows_cell"] == int((clauses["cell"].astype(str) == got["cell"]).sum()) < len(clauses)
    assert got["rows_additive"] == int(clauses["clause"].str.lower().str.contains("additive").sum()) > 0
    assert got["ascending"] is True
    top = clauses["estimate"].max()
    assert float(got["first_descending"]) == pytest.approx(top, rel=1e-2)


def _assert_first_screen(layout: dict) -> None:
    """The answer's figure and every verdict line end above the fold (the viewport's height: the
    window's 900 px less what headless Chromium keeps, ~760 px); nothing scrolls sideways."""
    fold = layout["inner_height"]
    assert layout["inner_width"] == WIDTH and 0.75 * FOLD <= fold <= FOLD, layout
    for part in ("answer_figure", "verdict_lines"):
        box = layout[part]
        assert box is not None and 0 <= box["top"] < box["bottom"] <= fold, (part, layout)
        assert box["right"] <= WIDTH, (part, layout)
    assert layout["scroll_width"] <= WIDTH and layout["scroll_width_after"] <= WIDTH, layout


def test_runs_explorer_shows_one_condition_at_a_time(tmp_path, monkeypatch):
    root = write_mixed_results(tmp_path / "results")
    # the explorer draws from the runs table, not from the figures (drawn in the page by the test
    # above, built from this folder by test_figures): the page without them, rendered in a fifth of the time
    monkeypatch.setattr(catalog, "FIGURES", [])
    assert dashboard.main([f"results_dir={root}"]) == 0
    result = _self_test(_browser(), root, tmp_path)
    d_ks = {PRIMARY: set(PRIMARY_D_KS)} | {c: {d} for c, d in OTHER_D_K.items()}
    first, *others = map(tuple, result["conditions"])
    assert first == PRIMARY and set(others) == set(OTHER_D_K)
    assert result["opened"] == result["charts"][0]  # opens on the primary condition
    for condition, chart in zip(result["conditions"], result["charts"]):
        assert chart["series"], condition
        for line in chart["series"]:  # each line: one task and optimizer, the chosen ones
            assert (line["tasks"], line["optimizers"]) == ([condition[0]], [condition[1]]), line
            assert set(line["d_ks"]) <= d_ks[tuple(condition)], line
        assert all(short_label(t) for t in chart["y_ticks"]), chart["y_ticks"]
    assert NEW_VARIANT in {line["attention"] for line in result["opened"]["series"]}
    best, every = result["rate_charts"]
    assert best == result["opened"]  # each cell at its best rate, as the figures draw it
    assert all(len(line["lrs"]) == 1 for line in every["series"])  # a line per rate
    assert len(every["series"]) == 2 * len(best["series"])


HOSTILE = "<!--<script>\u2028</script><b>&amp;"  # each would end or hide the page's own script


def test_a_hostile_string_in_a_run_leaves_the_page_working(tmp_path, monkeypatch):
    """A run's field that holds markup reaches the page as the same text, and the page's own
    script still runs: every run is in the table, the self-test reports."""
    import pandas as pd

    root = write_synthetic_results(tmp_path / "results")
    summary = pd.read_parquet(root / "summary.parquet")
    summary["experiment"] = HOSTILE
    summary.to_parquet(root / "summary.parquet")
    monkeypatch.setattr(catalog, "FIGURES", [])  # the payload is under test, not the figures
    assert dashboard.main([f"results_dir={root}"]) == 0
    page = (root / "dashboard.html").read_text()
    data = re.search(r'<script type="application/json" id="dashboard-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data and "&" not in data
    assert HOSTILE in json.dumps(json.loads(data), ensure_ascii=False)  # the same text, escaped
    result = _self_test(_browser(), root, tmp_path)
    assert result["rows_before"] > 0 and result["rows_before"] == result["rows_restored"]
