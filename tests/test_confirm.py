"""experiments.confirm: rates chosen on the selection seeds, fresh seeds trained at them only."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hydra import initialize_config_dir
from omegaconf import OmegaConf
from test_lanes import compose_train

from experiments import confirm, train
from experiments.analysis import results as analysis_results
from experiments.analysis.lr import select
from experiments.analysis.verdicts import top_up
from experiments.app import confirm_job, preflight, top_up_job
from experiments.app.errors import CONF_DIR, ConfigError
from experiments.store import collect, results

SELECTION = ["cell=adam_assoc_recall", "train.n_seeds=2", "optimizer.lr_grid=[1e-6,3e-3]"]


def _confirm(root, **keys):
    cfg = OmegaConf.create({"results_dir": str(root), "for_cell": "adam_assoc_recall", "n_seeds": 2,
                            "seed_from": 2, "train": [], "stage": 1, **keys})
    confirm_job.validate(cfg)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return confirm.run(cfg)


def test_confirmation_trains_fresh_seeds_at_the_chosen_rate_only_then_stage_two_the_extra(tmp_path, monkeypatch):
    """Stage 1 at the chosen rate; then stage 2 (after refusing before stage 1, writing nothing)
    trains the extra seeds seeds_per_run asks for (forced here: a scaled-only cell has no clause
    to size), at stage 1's rate, records both stages, and a relaunch trains nothing."""
    design = top_up.TwoStage(first_seeds=3, max_seeds=5)
    monkeypatch.setattr(top_up_job, "declared", lambda root, own=top_up_job.declared: (design, own(root)[1]))
    monkeypatch.setattr(top_up, "seeds_per_run", lambda ups: {("scaled", 16): 5})
    selected = train.run(compose_train(*SELECTION, "attention=scaled", f"results_dir={tmp_path}"))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigError, match=r"^stage: stage 2 needs stage 1 first"):
        _confirm(tmp_path, stage=2)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    by_lr = {lr: sum(s["accuracy_auc"] for s in selected if s["lr"] == lr) for lr in (1e-6, 3e-3)}
    chosen = max(by_lr, key=by_lr.get)  # what validation AUC picks; 1e-6 barely moves in 60 steps
    confirmed = _confirm(tmp_path)
    assert [(s["seed"], s["lr"]) for s in confirmed] == [(2, chosen), (3, chosen)]
    for s in confirmed:  # the selection run's config but for its seed: same identity otherwise
        cfg = OmegaConf.load(results.run_dir(tmp_path, s["run_id"]) / "config.yaml")
        source = OmegaConf.load(results.run_dir(tmp_path, selected[0]["run_id"]) / "config.yaml")
        assert results.run_id(cfg) == s["run_id"]
        for key in ("attention", "task", "model", "d_k"):
            assert cfg[key] == source[key]
        assert cfg.train.steps == source.train.steps and cfg.seed == s["seed"]
    record = json.loads((tmp_path / confirm_job.OUTPUT).read_text())
    assert record["confirm_seeds_from"] == 2
    [entry] = record["cells"]
    assert (entry["attention"], entry["d_k"], entry["lr"]) == ("scaled", 16, chosen)
    assert (entry["selection_seeds"], entry["confirm_seeds"]) == ([0, 1], [2, 3])
    again = _confirm(tmp_path)  # a relaunch skips what is done
    assert [s["wall_time_s"] for s in again] == [s["wall_time_s"] for s in confirmed]
    summary, history, _ = collect.collect_runs(tmp_path)
    assert len(summary) == 6 and set(summary.loc[summary["seed"] >= 2, "lr"]) == {chosen}
    res = analysis_results.load_results(tmp_path, confirm_seeds_from=2, tables={  # no mixed-cell error
        "summary": summary, "history": history, "probe": None, "cost": None})
    assert set(res.history["run_id"]) == {s["run_id"] for s in confirmed}  # the judged runs
    [gain] = select.optimism(select.at_chosen(res.summary, res.history_all)).to_dict("records")
    assert (gain["lr"], gain["n_selection"], gain["n_confirmation"]) == (chosen, 2, 2)
    _confirm(tmp_path, n_seeds=3)  # stage 1 complete: seed 4
    extra = _confirm(tmp_path, stage=2)
    assert [(s["seed"], s["lr"]) for s in extra] == [(5, chosen), (6, chosen)]
    record = json.loads((tmp_path / confirm_job.OUTPUT).read_text())
    [entry] = record["cells"]
    assert (entry["stage_1_seeds"], entry["stage_2_seeds"], entry["confirm_seeds"]) == ([2, 3, 4], [5, 6],
                                                                                        [2, 3, 4, 5, 6])
    [(cond, stage)] = top_up.stages_of(record, design).items()  # what the analysis reads
    assert (cond, stage.stage_one, stage.top_ups) == (("assoc_recall", "adam"), (2, 3, 4), ())
    again = _confirm(tmp_path, stage=2)
    assert [s["wall_time_s"] for s in again] == [s["wall_time_s"] for s in extra]
    assert len(collect.collect_runs(tmp_path)[0]) == 4 + 3 + 2


def test_bad_confirm_command_lines_are_one_line(tmp_path, monkeypatch, capsys):
    """The command itself once; the second line through its pre-flight in this process."""
    proc = subprocess.run([sys.executable, "-m", "experiments.confirm", "for_cell=nope"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("error: for_cell: must be one of adam_assoc_recall")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        preflight.check_command_line("confirm", [f"results_dir={tmp_path}", "for_cell=adam_mqar"],
                                     confirm_job.validate)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: results_dir: ") and len(err.splitlines()) == 1, err


def test_the_analysis_chooses_on_selection_seeds_and_judges_on_confirmation_seeds():
    """lr.select on a summary with phases: the confirmation seeds never choose the rate, are the
    only runs judged where a cell has them, and give the optimism of the choice."""
    import pandas as pd

    from experiments.analysis.lr import select
    from experiments.analysis.tables import load

    rows = []
    for seed in range(4):  # selection: 1e-2 is the best rate on seeds 0-3
        for lr, auc in ((1e-3, 0.50), (1e-2, 0.80)):
            rows.append(dict(seed=seed, lr=lr, accuracy_auc=auc + 0.01 * seed))
    for seed in (4, 5):  # confirmation at 1e-2, lower than the selection seeds; a 1e-3 run that
        rows.append(dict(seed=seed, lr=1e-2, accuracy_auc=0.70))  # would win the choice if it counted
    rows.append(dict(seed=6, lr=1e-3, accuracy_auc=0.99))
    summary = pd.DataFrame(rows).assign(run_id=lambda d: [f"r{i}" for i in range(len(d))], task="assoc_recall",
                                        optimizer="adam", attention="scaled", d_k=16, status="completed",
                                        final_val_accuracy=0.9)
    marked = load.with_phase(summary, 4)
    assert select.best_lrs(select.scored(marked))["best_lr"].tolist() == [1e-2]
    judged = select.at_best(marked)
    assert sorted(judged["seed"]) == [4, 5]
    [gain] = select.optimism(select.at_chosen(marked)).to_dict("records")
    assert gain["n_selection"] == 4 and gain["n_confirmation"] == 2
    assert abs(gain["optimism"] - (0.815 - 0.70)) < 1e-9
    # without phases every seed chooses (seed 6's 0.99 pulls 1e-3 up but not past 1e-2) and is judged
    plain = load.with_phase(summary, None)
    assert sorted(select.at_best(plain)["seed"]) == [0, 1, 2, 3, 4, 5] and select.optimism(select.at_chosen(plain)).empty
    flipped = load.with_phase(summary.assign(accuracy_auc=summary["accuracy_auc"].where(summary["seed"] != 6, 9.0)), None)
    assert select.best_lrs(select.scored(flipped))["best_lr"].tolist() == [1e-3]  # the test can fail
    assert select.best_lrs(select.scored(load.with_phase(flipped, 4)))["best_lr"].tolist() == [1e-2]


def test_the_report_says_which_seeds_chose_and_which_were_judged():
    import pandas as pd

    from experiments.analysis.tables import load
    from experiments.analysis.verdicts import quality_profile

    rows = [dict(seed=s, lr=lr, accuracy_auc=0.5 + lr) for s in range(3) for lr in (1e-3, 1e-2)]
    summary = pd.DataFrame(rows).assign(run_id=lambda d: [f"r{i}" for i in range(len(d))], task="assoc_recall",
                                        optimizer="adam", attention="scaled", d_k=16, status="completed",
                                        final_val_accuracy=0.9)
    assert quality_profile.phases(*_chosen(load.with_phase(summary, 8))) == []  # no confirmation anywhere: no note
    fresh = pd.concat([summary, summary.iloc[[1]].assign(seed=3, run_id="c3"),
                       summary.iloc[[1]].assign(seed=4, run_id="c4", attention="unscaled")])
    other = summary.assign(attention="unscaled", run_id=lambda d: "u" + d["run_id"])
    lines = quality_profile.phases(*_chosen(load.with_phase(pd.concat([fresh, other]), 3)))
    assert lines == [quality_profile.Phases("assoc_recall/adam", (0, 1, 2), (3, 4), 2, 2)]


def _chosen(summary):
    return summary, select.at_chosen(summary)


def test_a_stage_out_of_range_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        preflight.check_command_line("confirm", [f"results_dir={tmp_path}", "for_cell=adam_mqar", "stage=3"],
                                     confirm_job.validate)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: stage: must be 1") and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_stage_two_refuses_while_stage_one_is_short():
    """One stage-1 run missing, one at another rate, one not ended: each stops stage 2."""
    import pandas as pd

    entries = {("scaled", 16): {"lr": 3e-3}, ("unscaled", 16): {"lr": 1e-3}}
    runs = pd.DataFrame([dict(attention=v, d_k=16, seed=s, lr=entries[(v, 16)]["lr"], status="completed")
                         for v, _ in entries for s in (2, 3, 4)])
    assert len(top_up_job.stage_one_runs(runs, entries, [2, 3, 4], "c")) == 6
    for short in (runs.iloc[1:], runs.assign(lr=runs["lr"].where(runs.index != 4, 1e-2)),
                  runs.assign(status=runs["status"].where(runs.index != 0, "running"))):
        with pytest.raises(ConfigError, match=r"^stage: stage 1 is not complete: 1 of 6 runs"):
            top_up_job.stage_one_runs(short, entries, [2, 3, 4], "c")


def test_selection_matches_a_task_with_list_and_null_fields_as_the_tables_hold_them():
    """The text task declares lists (its plays) and a null (corpus_dir): the tables hold a list as
    JSON text and a null as missing, and the cell's runs must still be found; another split is not."""
    import pandas as pd

    task = dict(name="charlm", seq_len=64, val_plays=["a", "b"], corpus_dir=None)
    row = lambda plays, seed: {**collect.flatten({"task": {**task, "val_plays": plays}}), "seed": seed,
                               "optimizer": "adam", "model.width": "fixed", "run_id": f"r{seed}-{len(plays)}"}
    summary = pd.DataFrame([row(["a", "b"], 0), row(["a", "b"], 9), row(["a"], 1)])
    picked = confirm_job.selection(summary, task, "adam", seed_from=8)
    assert list(picked["run_id"]) == ["r0-2"]
