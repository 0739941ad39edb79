"""A user's own study, end to end: in a temporary copy of the project, the variant and the task
of docs/EXTENDING.md's recipes train beside the built-in variants (a few steps each), one more
run at another budget is refused by the analysis, and `scripts/regenerate.sh` (with primary_task, which it hands to every analysis step) turns
the folder into tables, figures, REPORT.md and the dashboard. Checked on the analysis' own
structures (read in the copy, where the user's modules are registered): the variant's quality
rows, the unmixed conditions of every figure line and of the runs explorer, and "never run"
(not "did not learn", not "inconclusive") where nothing was measured."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_extending import COMMANDS, copy_with_doc_files

pytestmark = pytest.mark.slow  # trains (one process) and regenerates: a minute

TINY = ["train.steps=40", "train.eval_every=20", "train.n_val=32", "train.n_test=32", "train.batch_size=16",
        "train.n_seeds=2", "logger=none", "progress=false"]
OWN_VARIANT, OWN_TASK = "toy_temp", "toy_copy"
SHARED_D_K = 8  # the user's variant beside scaled and unscaled
VARIANT_ONLY_D_K = 32  # only the user's variant runs there: scaled was never run at it
TASK_D_K = 64  # only the user's task runs there

# Run inside the copy (its src/ first on the path): the structures a reader's tables come from.
PROBE = textwrap.dedent('''
    import json, sys
    from experiments.analysis import results
    from experiments.analysis.figures import catalog, style
    from experiments.analysis.render import dashboard
    from experiments.analysis.verdicts import every_variant, quality_profile, rules, sections
    res = results.load_results(sys.argv[1], primary_task="assoc_recall")
    cond = res.summary[(res.summary["task"] == "assoc_recall")]
    rows = every_variant.condition(cond, res.history, "scaled").rows
    lines = []
    for spec in catalog.FIGURES:
        try:
            built = spec.build(res)
        except style.Skip:  # a figure whose table this folder lacks (cost, probe)
            continue
        for name, fig in built:
            lines += [[name, sorted(map(float, line.get_xdata()))] for ax in fig.axes for line in ax.lines
                      if len(line.get_xdata()) > 1]
            style.close(fig)
    profile = quality_profile.cell_profile(cond, res.history)
    print(json.dumps({
        "rows": [[r.variant, r.d_k, r.seeds, r.auc[0], r.delta[0]] for r in rows],  # (mean, lo, hi)
        "lines": lines,
        "unrun": [int(d) for d in profile.unrun],
        "verdicts": {s.key: str(s.verdict) for s in sections.all_sections(res)},
        "unmeasured": str(rules.UNMEASURED),
    }))
''')


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The copy, its results folder trained, a folder that adds one run at another budget, and a
    command runner. The four sweeps share one process (test_extending's COMMANDS)."""
    root, env = copy_with_doc_files(tmp_path_factory, "own_study")

    def cli(*args, ok=True):
        proc = subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
                              timeout=600)
        assert (proc.returncode == 0) is ok, proc.stderr[-3000:]
        return proc

    results, odd = root / "results", root / "odd"
    train = ["experiments.train", "-m", f"results_dir={results}", *TINY]
    cli("-c", COMMANDS, json.dumps([
        [*train, f"attention=scaled,unscaled,{OWN_VARIANT}", f"d_k={SHARED_D_K}"],
        [*train, f"attention={OWN_VARIANT}", f"d_k={VARIANT_ONLY_D_K}"],
        [*train, f"task={OWN_TASK}", "attention=scaled", f"d_k={TASK_D_K}"],
        ["experiments.train", f"results_dir={odd}", *TINY, f"attention={OWN_VARIANT}", "d_k=8", "train.steps=20"],
    ]))
    shutil.copytree(results / "runs", odd / "runs", dirs_exist_ok=True)  # the study's runs beside the odd one
    return root, results, odd, cli, env


def test_a_variant_at_another_budget_is_refused_and_nothing_is_written(study):
    _, _, odd, cli, _ = study
    proc = cli("-m", "experiments.regenerate", f"results_dir={odd}", "primary_task=assoc_recall", ok=False)
    [line] = proc.stderr.strip().splitlines()[-1:]
    assert proc.returncode == 2 and "train.steps" in line and OWN_VARIANT in line and "Traceback" not in proc.stderr
    assert not any((odd / name).exists() for name in ("REPORT.md", "dashboard.html", "figures"))


@pytest.fixture(scope="module")
def regenerated(study):
    root, results, _, cli, env = study
    subprocess.run(["bash", "scripts/regenerate.sh", "primary_task=assoc_recall"], cwd=root,  # the README's command
                   env={**env, "RESULTS": str(results), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"},
                   check=True, capture_output=True, timeout=600)
    probe = cli("-c", PROBE, str(results))
    return results, json.loads(probe.stdout.strip().splitlines()[-1])


def test_the_users_variant_gets_quality_rows_and_a_paired_delta(regenerated):
    _, read = regenerated
    own = {d_k: (seeds, auc, delta) for variant, d_k, seeds, auc, delta in read["rows"] if variant == OWN_VARIANT}
    assert set(own) == {SHARED_D_K, VARIANT_ONLY_D_K}
    seeds, auc, delta = own[SHARED_D_K]
    assert seeds == 2 and 0 <= auc <= 1 and delta == delta  # paired with scaled: a number
    assert own[VARIANT_ONLY_D_K][2] != own[VARIANT_ONLY_D_K][2]  # scaled never ran there: no Δ (NaN)


def test_no_figure_line_joins_two_tasks(regenerated):
    _, read = regenerated
    assert read["lines"]
    for name, xs in read["lines"]:
        assert TASK_D_K not in xs, (name, xs)  # the user's task ran at a d_k of its own


def test_the_explorer_shows_one_condition_at_a_time_primary_first(regenerated):
    results, _ = regenerated
    page = (results / "dashboard.html").read_text()
    payload = json.loads(re.search(r'id="dashboard-data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</"))
    assert payload["conditions"][0] == ["assoc_recall", "adam"]
    assert ["toy_copy", "adam"] in payload["conditions"]
    assert {run["task"] for run in payload["runs"]} == {"assoc_recall", OWN_TASK}


def test_never_run_and_nothing_measured_say_so(regenerated):
    results, read = regenerated
    assert VARIANT_ONLY_D_K in read["unrun"]  # scaled never ran there: not "did not learn"
    assert read["verdicts"]["cost"] == read["unmeasured"]  # no cost table: not "inconclusive"
    assert (results / "REPORT.md").is_file() and any((results / "figures").glob("*.png"))
