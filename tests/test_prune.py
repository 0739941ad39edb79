"""train.prune: the rule on synthetic curves (it prunes a loser, keeps a climber and the leader),
the replay command end to end on a SYNTHETIC results folder, and a tiny lr-grid job trained with
pruning on (some lanes end pruned, their summaries say so, a relaunch skips them)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.lr import prune_replay
from experiments.analysis.lr import select as lr_select
from experiments.app import preflight, replay_job
from experiments.training import prune

ON = prune.PruneRule(enabled=True, min_frac=0.1, slack=0.1, window=2, keep_below=0)
N = 11  # evaluations of the whole budget


def _curves(*per_rate, k=5):
    """[rates, seeds=2, k]: each rate's seed curves rise linearly from 0 to its given level at k."""
    return np.array([[np.linspace(0, top, k)] * 2 for top in per_rate])


def test_a_rate_far_behind_is_stopped_and_the_leader_never():
    stop = prune.to_stop(_curves(0.9, 0.05, 0.04), np.ones(3, bool), N, ON)
    assert stop.tolist() == [False, True, True]


def test_a_rate_still_climbing_is_kept():
    flat = _curves(0.6, 0.05)
    climbing = flat.copy()
    climbing[1, :, -2:] = [0.3, 0.6]  # the same sum so far nearly, but rising fast
    assert prune.to_stop(flat, np.ones(2, bool), N, ON).tolist() == [False, True]
    assert prune.to_stop(climbing, np.ones(2, bool), N, ON).tolist() == [False, False]


def test_nothing_stops_when_off_too_early_or_at_the_end():
    c = _curves(0.9, 0.05)
    assert not prune.to_stop(c, np.ones(2, bool), N, prune.PruneRule()).any()  # off by default
    assert not prune.to_stop(c, np.ones(2, bool), N, prune.PruneRule(True, min_frac=0.9, slack=0.1)).any()
    assert not prune.to_stop(_curves(0.9, 0.05, k=N), np.ones(2, bool), N, ON).any()


def test_the_rate_below_the_leader_is_kept_with_keep_below():
    c = _curves(0.05, 0.9, 0.04)
    kept = prune.PruneRule(**{**ON.__dict__, "keep_below": 1})
    assert prune.to_stop(c, np.ones(3, bool), N, ON).tolist() == [True, False, True]
    assert prune.to_stop(c, np.ones(3, bool), N, kept).tolist() == [False, False, True]


def test_a_diverged_lane_counts_at_its_first_accuracy():
    acc = np.array([[0.1, 0.5, 0.8, 0.9]])
    assert prune.held_curves(acc, np.array([2]), np.array([True]), 4).tolist() == [[0.1] * 4]
    assert prune.held_curves(acc, np.array([2]), np.array([False]), 4).tolist() == [[0.1, 0.5, 0.5, 0.5]]


def test_lanes_to_stop_names_the_active_lanes_of_stopped_rates():
    accs = [list(np.linspace(0, 0.9, 5))] * 2 + [[0.0, 0.01, 0.02, 0.03, 0.05]] * 2
    out: set = set()
    stop = prune.lanes_to_stop(accs, [1e-3, 1e-3, 1e-5, 1e-5], [False] * 4, [0, 1, 3], out, N, ON)
    assert stop == [3] and out == {1e-5}


# --- the replay, end to end on a SYNTHETIC folder -------------------------------------------------

def synthetic_study(root, steps=500, every=50):
    """SYNTHETIC (not data): one job, 3 rates x 3 seeds; 1e-3 learns, 1e-4 learns slowly, 1e-1 never."""
    grid = list(range(0, steps + 1, every))
    tops = {1e-4: 0.4, 1e-3: 0.95, 1e-1: 0.03}
    summ, hist = [], []
    for lr, top in tops.items():
        for seed in range(3):
            rid = f"scaled-{lr}-{seed}"
            acc = np.minimum(top, 0.03 + top * np.arange(len(grid)) / 4) + 0.002 * seed
            keys = dict(run_id=rid, attention="scaled", d_k=16, seed=seed, task="assoc_recall",
                        optimizer="adam", lr=lr, experiment="x")
            hist += [dict(keys, step=s, accuracy=a) for s, a in zip(grid, acc)]
            summ.append(dict(keys, status="completed", steps=steps, steps_done=steps, threshold=0.99,
                             steps_to_threshold=np.nan, test_accuracy=acc[-1], final_val_accuracy=acc[-1],
                             accuracy_auc=float(acc.mean()), **{"train.eval_every": every}))
    pd.DataFrame(summ).to_parquet(root / "summary.parquet", index=False)
    pd.DataFrame(hist).to_parquet(root / "history.parquet", index=False)
    return pd.DataFrame(summ), pd.DataFrame(hist)


def test_replay_prunes_the_losers_and_keeps_the_choice(tmp_path):
    summary, history = synthetic_study(tmp_path)
    pruned, cut = prune_replay.replay(summary, history, ON)
    lost = pruned[pruned["status"] == "pruned"]
    assert set(lost["lr"]) == {1e-1, 1e-4} and (lost["pruned_at_step"] < 500).all()
    assert (lost["steps_done"] == lost["pruned_at_step"]).all() and lost["test_accuracy"].isna().all()
    assert (lost["accuracy_auc_bound"] >= lost["accuracy_auc"]).all()  # the bound over the held AUC
    last = cut.groupby("run_id")["step"].max()
    assert (last[lost["run_id"]].to_numpy() == lost["pruned_at_step"].to_numpy()).all()
    choose = lambda s, h: lr_select.best_lrs(lr_select.scored(s, h))["best_lr"].tolist()  # noqa: E731
    assert choose(pruned, cut) == choose(summary, history) == [1e-3]


def test_replay_of_a_study_with_one_rate_prunes_nothing(tmp_path):
    """Nothing to prune (one rate per job): the study is replayed as it was, no pandas TypeError."""
    summary, history = synthetic_study(tmp_path)
    one = summary["lr"] == 1e-3
    pruned, cut = prune_replay.replay(summary[one], history[history["run_id"].isin(summary[one]["run_id"])], ON)
    assert (pruned["status"] == "completed").all() and pruned["pruned_at_step"].isna().all()
    assert len(cut) == one.sum() * 11


def test_lr_select_never_picks_a_pruned_rate():
    summary = pd.DataFrame([dict(run_id=f"r{lr}{s}", attention="scaled", d_k=16, seed=s, task="assoc_recall",
                                 optimizer="adam", lr=lr, accuracy_auc=auc, final_val_accuracy=auc,
                                 status=st) for lr, auc, st in [(1e-3, 0.5, "completed"), (1e-2, 0.9, "pruned")]
                            for s in range(2)])
    assert lr_select.best_lrs(lr_select.scored(summary))["best_lr"].tolist() == [1e-3]
    assert lr_select.seed_best_lr(lr_select.scored(summary))["best_lr"].tolist() == [1e-3, 1e-3]


def test_replay_command_writes_its_figures(tmp_path):
    synthetic_study(tmp_path)
    cmd = [sys.executable, "-m", "experiments.replay", f"results_dir={tmp_path}", "prune.slack=0.1",
           "prune.keep_below=0", "prune.window=2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "pruning_replay.json").read_text())
    for key in ("lane_steps_saved", "best_lr_agreement", "auc_loss_at_choice", "verdicts_changed",
                "lr_sensitivity_error"):
        assert key in out and key in out["cells"]["adam_assoc_recall"]
    assert out["lane_steps_saved"] > 0.3 and out["best_lr_agreement"] == 1.0
    bad = subprocess.run([*cmd[:3], "results_dir=/nonexistent/folder"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: results_dir")
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("setup, args, names", [
    (None, ["tuning_cell=nope"], "tuning_cell"),
    ("foreign", [], "summary.parquet"),
    ("pruned", [], "train.prune on"),
])
def test_replay_refuses_in_one_line(tmp_path, setup, args, names, monkeypatch, capsys):
    """Through the command's pre-flight in this process (the command itself refuses a missing
    folder in test_replay_command_writes_its_figures)."""
    synthetic_study(tmp_path)
    if setup == "foreign":  # a parquet file, but not a study's summary
        pd.DataFrame({"name": ["a", "b"]}).to_parquet(tmp_path / "summary.parquet")
    if setup == "pruned":  # trained with the rule on: a losing lane's curve stops where it was cut
        summary = pd.read_parquet(tmp_path / "summary.parquet")
        summary.loc[summary["lr"] == 1e-1, "status"] = "pruned"
        summary.to_parquet(tmp_path / "summary.parquet", index=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        preflight.check_command_line("replay", [f"results_dir={tmp_path}", *args], replay_job.validate)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert stop.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0]
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == before


# --- in training --------------------------------------------------------------------------------

def test_a_pruned_job_records_its_pruned_lanes_and_a_relaunch_skips_them(tmp_path):
    from test_lanes import compose_train

    from experiments import train
    from experiments.store import collect

    args = ["train.n_seeds=2", "optimizer.lr_grid=[1e-6,3e-3]", "train.prune.enabled=true",
            "train.prune.min_frac=0", "train.prune.slack=0", "train.prune.keep_below=0",
            f"results_dir={tmp_path}"]
    first = train.run(compose_train(*args))
    pruned = [s for s in first if s["status"] == "pruned"]  # in 60 steps both rates sit near chance:
    assert len(pruned) == 2 and len({s["lr"] for s in pruned}) == 1  # one rate goes, with both seeds
    assert all(s["steps_done"] == s["pruned_at_step"] < s["steps"] and s["test_accuracy"] is None
               and s["accuracy_auc_bound"] >= s["accuracy_auc"] for s in pruned)
    assert all(s["status"] == "completed" and s["pruned_at_step"] is None for s in first if s not in pruned)
    again = train.run(compose_train(*args))
    assert [s["wall_time_s"] for s in again] == [s["wall_time_s"] for s in first]  # all skipped
    summary, history, _ = collect.collect_runs(tmp_path)  # a pruned run is collected, and never chosen
    assert (summary["status"] == "pruned").sum() == 2
    kept = {s["lr"] for s in first if s not in pruned}
    assert set(lr_select.best_lrs(lr_select.scored(summary, history))["best_lr"]) == kept
    off = train.run(compose_train(*args, "train.prune.enabled=false"))  # same run ids: prune is no identity
    assert [s["run_id"] for s in off] == [s["run_id"] for s in first]
    gone = {s["run_id"] for s in pruned}
    retrained = [s for s in off if s["run_id"] in gone]  # trained again, the whole budget
    assert len(retrained) == 2 and all(s["status"] == "completed" and s["steps_done"] == s["steps"]
                                       for s in retrained)
    assert [s for s in off if s["run_id"] not in gone] == [s for s in first if s not in pruned]  # skipped


def test_replay_reads_every_cell_and_clause_of_the_verdicts(tmp_path):
    """The readings the replay compares cover each cell's verdict and each clause's answer: a
    change of text format that hid them would make 'verdicts_changed' empty by construction."""
    from fixtures_results import judged_at_small, write_synthetic_results

    from experiments.analysis import results
    from experiments.analysis.verdicts import replay

    from experiments.analysis.verdicts.rules import FEW, HOLDS, Answer, Verdict

    r = replay.readings(judged_at_small(results.load_results(write_synthetic_results(tmp_path))))
    assert {"quality assoc_recall/adam: verdict", "quality mqar/sgd: verdict"} <= set(r)
    assert r["quality assoc_recall/adam: verdict"] == (HOLDS, 0)
    for key in ("variance: unscaled slope", "saturation: scaled", "jacobian: unscaled median ‖J‖_F slope",
                "quality assoc_recall/adam: (a) additive ahead of unscaled",
                "quality mqar/sgd: (b) scaled ahead of unscaled"):
        assert r[key] is Answer.YES, key
    assert all(isinstance(v, Answer) or (isinstance(v[0], Verdict) and isinstance(v[1], int)) for v in r.values())
    assert replay._text((FEW, 2)) == "inconclusive (too few seeds: n = 2 < 3)" and replay._text(None) == "absent"
