"""Data safety: no fault on the train/collect path loses or hides a finished run.

overwrite=true keeps the old run until the new one has finished (a stopped,
failed or killed overwrite leaves it as it was); collect drops no tabled run
unasked; a run whose files cannot be read is trained again, not skipped
forever; a run claimed by another process is skipped, and a claim dies with
its process; a corrupted run folder, a full disk or a foreign summary.parquet
end in one line, nothing lost. Trainings are tiny (20 steps at d_k = 8).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from test_bad_input import snapshot, write_run

from experiments import collect, train
from experiments.app import config, preflight  # noqa: F401 - config registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.store import claim

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

TINY = ["d_k=8", "train.steps=20", "train.eval_every=10", "train.n_val=64", "train.n_test=64",
        "train.batch_size=8", "logger=none", "progress=false", "runtime.compile_cache=false"]


def compose_train(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=[*TINY, *overrides])


def contents(root: Path) -> dict:
    """Every path under root but Hydra's logs, with its bytes (None for a folder): a lost,
    changed or added file shows."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*")) if p.relative_to(root).parts[0] != "hydra"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "res"
    [summary] = train.run(compose_train(f"results_dir={out}"))
    assert summary["status"] == "completed"
    return out, summary["run_id"]


@pytest.fixture
def res(trained, tmp_path):
    """A results folder holding one completed run: (folder, run id)."""
    shutil.copytree(trained[0], tmp_path / "res")
    return tmp_path / "res", trained[1]


def cli(module: str, *args: str, cwd: Path, prelude: str = "",
        clean: bool = True) -> tuple[int, list[str]]:
    """Run `python -m experiments.<module>` (after `prelude`, which may patch it):
    (exit code, stderr lines); when clean, no traceback and nothing on stdout."""
    script = f"import sys\n{prelude}\nsys.argv = ['{module}', *sys.argv[1:]]\n" \
             f"from experiments.{module} import main\nmain()\n"
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert not clean or (proc.stdout == "" and "Traceback" not in proc.stderr), proc.stderr[-3000:]
    return proc.returncode, proc.stderr.splitlines()


def one_line(lines: list[str], start: str) -> str:
    assert len(lines) == 1 and lines[0].startswith(start), lines
    return lines[0]


# --- 1. overwrite -------------------------------------------------------------------------

STOP_IN_TRAINING = """
import os, signal, time
import experiments.app.train_job as job
def stopped(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the new run trains
    time.sleep(10)
job.train_lanes = stopped
"""
FAIL_IN_TRAINING = """
import experiments.app.train_job as job
def fails(*args, **kwargs):
    raise RuntimeError("Unable to initialize backend 'cuda'")
job.train_lanes = fails
"""


def test_stopped_overwrite_keeps_the_old_run(res):
    root, rid = res
    before = contents(root)
    code, lines = cli("train", *TINY, f"results_dir={root}", "overwrite=true", cwd=root.parent,
                      prelude=STOP_IN_TRAINING)
    assert code == 130
    one_line(lines, "interrupted (SIGINT)")
    assert contents(root) == before  # the completed run as it was, nothing staged left


def test_failed_overwrite_in_a_sweep_keeps_the_old_run(res):
    root, rid = res
    before = contents(root)
    code, lines = cli("train", "-m", *TINY, f"results_dir={root}", "overwrite=true",
                      cwd=root.parent, prelude=FAIL_IN_TRAINING, clean=False)
    assert code == 0  # a failed job does not stop a sweep (its error is printed, as before)
    assert f"overwrite of {rid} failed: its earlier run is kept" in lines
    assert contents(root) == before


def test_finished_overwrite_replaces_the_run(res):
    root, rid = res
    old = json.loads((root / "runs" / rid / "summary.json").read_text())
    paths = sorted(contents(root))
    [new] = train.run(compose_train(f"results_dir={root}", "overwrite=true"))
    assert new["status"] == "completed" and new["test_accuracy"] == old["test_accuracy"]
    assert json.loads((root / "runs" / rid / "summary.json").read_text())["wall_time_s"] \
        == new["wall_time_s"] != old["wall_time_s"]
    assert sorted(contents(root)) == paths  # the same files, no staging left


def _killed_between_renames(root: Path, rid: str, staged_finished: bool) -> None:
    """What a process killed between swap_in's two renames leaves."""
    staged = claim.staged(root, rid)
    shutil.copytree(root / "runs" / rid, staged)
    if staged_finished:
        summary = json.loads((staged / "summary.json").read_text())
        (staged / "summary.json").write_text(json.dumps({**summary, "wall_time_s": -1.0}))
    else:
        (staged / "summary.json").unlink()
    os.replace(root / "runs" / rid, root / claim.STAGING / f"{rid}.old")


@pytest.mark.parametrize("staged_finished", [False, True], ids=["rolled back", "rolled forward"])
@pytest.mark.parametrize("relaunch", ["train", "collect"])
def test_swap_killed_between_renames_is_settled(res, capsys, relaunch, staged_finished):
    root, rid = res
    before = json.loads((root / "runs" / rid / "summary.json").read_text())
    _killed_between_renames(root, rid, staged_finished)
    if relaunch == "train":
        train.run(compose_train(f"results_dir={root}"))
        assert f"skip {rid}: already completed" in capsys.readouterr().err
    else:
        collect.run(OmegaConf.create({"results_dir": str(root), "keep_tabled": None}))
        assert pd.read_parquet(root / "summary.parquet").run_id.tolist() == [rid]
    after = json.loads((root / "runs" / rid / "summary.json").read_text())
    assert after["wall_time_s"] == (-1.0 if staged_finished else before["wall_time_s"])
    assert not (root / claim.STAGING).exists()


# --- 2. collect drops no tabled run unasked; 7. a foreign summary.parquet ----------------------

def _collect_preflight(tmp: Path, *args: str, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        preflight.check_command_line("collect", ["results_dir=res", *args], collect.validate)
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    return one_line(err.splitlines(), "error: keep_tabled:")


def test_collect_refuses_to_drop_tabled_runs_whose_folders_are_gone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for rid in ("r1", "r2", "r3"):
        write_run(tmp_path, rid)
    collect.run(OmegaConf.create({"results_dir": "res", "keep_tabled": None}))
    shutil.rmtree(tmp_path / "res" / "runs" / "r2")
    shutil.rmtree(tmp_path / "res" / "runs" / "r3")
    capsys.readouterr()
    before = snapshot(tmp_path)
    line = _collect_preflight(tmp_path, capsys=capsys)
    assert "2 runs of" in line and "keep_tabled=true keeps them" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("table", ["summary", "history"])
def test_keep_tabled_over_a_foreign_table_names_it(tmp_path, monkeypatch, capsys, table):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path, "r1")
    write_run(tmp_path, "r2")
    collect.run(OmegaConf.create({"results_dir": "res", "keep_tabled": None}))
    shutil.rmtree(tmp_path / "res" / "runs" / "r2")
    (tmp_path / "res" / f"{table}.parquet").write_bytes(b"PAR1 not parquet\n")
    capsys.readouterr()
    before = snapshot(tmp_path)
    line = _collect_preflight(tmp_path, "keep_tabled=true", capsys=capsys)
    assert f"'res/{table}.parquet' is not a parquet table" in line
    assert snapshot(tmp_path) == before


# --- 3 and 5. a run whose files cannot be read is trained again, or named ------------------

@pytest.mark.parametrize("damage, why", [
    ("history.parquet", "history.parquet is not readable"),
    ("summary.json", "summary.json is not JSON"),           # not UTF-8
    ("list", "summary.json is not a JSON object"),
])
def test_unreadable_finished_run_is_trained_again(res, capsys, damage, why):
    root, rid = res
    folder = root / "runs" / rid
    if damage == "list":
        (folder / "summary.json").write_text("[1, 2]\n")
    else:
        (folder / damage).write_bytes(b"\xff\xfe not what it should be")
    [again] = train.run(compose_train(f"results_dir={root}"))
    assert f"retrain {rid}: {why}" in capsys.readouterr().err
    assert again["status"] == "completed"
    summary, history, incomplete = collect.collect_runs(root)
    assert not incomplete and summary.run_id.tolist() == [rid] and len(history) == 3


@pytest.mark.parametrize("where", ["summary.json is a folder", "run folder is a file"])
def test_corrupted_run_folder_is_named_in_one_line(res, where):
    root, rid = res
    folder = root / "runs" / rid
    if where == "run folder is a file":
        shutil.rmtree(folder)
        folder.write_text("someone's notes\n")
        path = folder
    else:
        (folder / "summary.json").unlink()
        (folder / "summary.json").mkdir()
        (folder / "summary.json" / "keep.txt").write_text("x\n")
        path = folder / "summary.json"
    before = contents(root)
    code, lines = cli("train", *TINY, f"results_dir={root}", cwd=root.parent)
    assert code == 1
    assert "move it away and re-run" in one_line(lines, f"error: {path}: ")
    assert contents(root) == before
