"""Nothing unlike is compared in silence: within a (task, optimizer) condition every run agrees
on its identity but seed, lr and its variant's own options (attention.*); the analysis refuses
in one line (exit 2, nothing written) where they differ, and says how to name the primary task
where a folder holds several."""
from __future__ import annotations

import pandas as pd
import pytest
from fixtures_results import write_synthetic_results

from experiments import dashboard, plot, report
from experiments.analysis.results import load_results
from experiments.analysis.tables import load

CONDITION = ("assoc_recall", "adam")
OUTPUTS = ("REPORT.md", "dashboard.html", "figures")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_synthetic_results(tmp_path_factory.mktemp("synthetic"), width="fixed")


@pytest.fixture
def root(synthetic, tmp_path):
    for path in synthetic.glob("*.parquet"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    return tmp_path


def _set(root, where, **values):
    """Give the summary's runs that `where(summary)` selects these config values (others keep
    the first value named for them)."""
    summary = pd.read_parquet(root / "summary.parquet")
    chosen = where(summary)
    for key, (mine, others) in values.items():
        summary[key] = others
        summary.loc[chosen, key] = mine
    summary.to_parquet(root / "summary.parquet", index=False)


def _variant(name, cond=CONDITION):
    return lambda s: (s.attention == name) & (s.task == cond[0]) & (s.optimizer == cond[1])


@pytest.mark.parametrize("command", [report, plot, dashboard])
def test_a_variant_at_another_budget_is_refused_naming_key_values_and_variants(root, capsys, command):
    _set(root, _variant("cosine"), **{"train.steps": (300, 1000)})
    assert command.main([f"results_dir={root}"]) == 2
    lines, where = capsys.readouterr().err.splitlines(), f"error: {root / 'summary.parquet'}: "
    assert len(lines) == 1 and lines[0].startswith(where)
    line = lines[0][len(where):]
    assert "train.steps" in line and "300" in line and "1000" in line and CONDITION[0] in line
    # the variants holding 1000 are named with it, cosine alone with 300
    assert line.index("300") < line.index("cosine") and line.index("1000") < line.index("scaled")
    assert not any((root / name).exists() for name in OUTPUTS)


def test_another_condition_may_have_its_own_budget(root):
    _set(root, lambda s: s.task == "mqar", **{"train.steps": (300, 1000)})
    assert load_results(root, lr="all").primary == CONDITION


def test_a_variant_keeps_its_own_options(root):
    _set(root, _variant("additive"), **{"attention.d_hidden": (64, None)})
    load_results(root, lr="all")
    _set(root, _variant("additive"), **{"model.init": ("xavier", "lecun_normal")})
    with pytest.raises(load.ResultsFileError, match="model.init"):
        load_results(root, lr="all")


def test_model_reassociate_counts_only_where_it_changes_the_variant(root):
    _set(root, _variant("cosine"), **{"model.reassociate": (False, True)})  # cosine: not reassociable
    load_results(root, lr="all")
    _set(root, _variant("unscaled"), **{"model.reassociate": (False, True)})
    with pytest.raises(load.ResultsFileError, match="model.reassociate"):
        load_results(root, lr="all")


def test_within_a_cell_the_cell_is_named(root):
    first = pd.read_parquet(root / "summary.parquet").iloc[0]
    _set(root, lambda s: s.run_id == first.run_id, **{"task.n_keys": (8, 16)})
    with pytest.raises(load.ResultsFileError, match=f"{first.attention} d_k={first.d_k} ") as raised:
        load_results(root, lr="all")
    assert "seeds of one cell" in str(raised.value)


def test_the_width_setting_is_read_apart_at_its_own_budget(root):
    """experiment=mup_width's runs (model.width=proportional) are split off before the rule:
    their budget and stop rule differ from the fixed-width runs' and load."""
    _set(root, _variant("mup"), **{"model.width": ("proportional", "fixed"), "train.steps": (2000, 1000),
                                   "train.stop_at_threshold": (True, False)})
    res = load_results(root, lr="all")
    assert set(res.width_summary.attention) == {"mup"} and "mup" not in set(res.summary.attention)
    assert report.main([f"results_dir={root}"]) == 0


def test_several_tasks_name_both_fixes_and_each_works(tmp_path, capsys):
    root = write_synthetic_results(tmp_path, width="fixed")
    summary, history = (pd.read_parquet(root / f"{t}.parquet") for t in ("summary", "history"))
    for table, frame in (("summary", summary), ("history", history)):
        frame.loc[frame.task == "mqar", "optimizer"] = "adam"  # mqar now beside assoc_recall under adam
        frame.to_parquet(root / f"{table}.parquet", index=False)
    assert report.main([f"results_dir={root}"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: primary_task: ") and "primary_task=assoc_recall" in line
    assert str(root / "analysis.yaml") in line and not (root / "REPORT.md").exists()
    assert report.main([f"results_dir={root}", "primary_task=mqar"]) == 0  # the command-line fix
    (root / "analysis.yaml").write_text("primary_task: mqar\n")  # the folder's own fix
    assert report.main([f"results_dir={root}"]) == 0
