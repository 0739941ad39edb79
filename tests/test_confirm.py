"""experiments.confirm: rates chosen on the selection seeds, fresh seeds trained at them only."""
from __future__ import annotations

import json
import subprocess
import sys

from hydra import initialize_config_dir
from omegaconf import OmegaConf
from test_lanes import compose_train

from experiments import train
from experiments.app import confirm_job
from experiments.app.errors import CONF_DIR
from experiments.store import collect, results

SELECTION = ["cell=adam_assoc_recall", "train.n_seeds=2", "optimizer.lr_grid=[1e-6,3e-3]"]


def _confirm(root, **keys):
    cfg = OmegaConf.create({"results_dir": str(root), "for_cell": "adam_assoc_recall", "n_seeds": 2,
                            "seed_from": 2, "train": [], **keys})
    confirm_job.validate(cfg)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return confirm_job.run(cfg)


def test_confirmation_trains_fresh_seeds_at_the_chosen_rate_only(tmp_path):
    selected = train.run(compose_train(*SELECTION, "attention=scaled", f"results_dir={tmp_path}"))
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
    summary, _ = collect.collect(tmp_path)
    assert len(summary) == 6 and set(summary.loc[summary["seed"] >= 2, "lr"]) == {chosen}


def test_bad_confirm_command_lines_are_one_line(tmp_path):
    for args, expected in (
            (["for_cell=nope"], "error: for_cell: must be one of adam_assoc_recall"),
            ([f"results_dir={tmp_path}", "for_cell=adam_mqar"], "error: results_dir: ")):
        proc = subprocess.run([sys.executable, "-m", "experiments.confirm", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.strip().startswith(expected), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
