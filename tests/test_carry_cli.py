"""scripts/carry_runs.py as a user types it: what it leaves in the destination, and what it says.

A run already in TO is a run that ended and whose files read; any other folder of that run id
(failed, unfinished, unreadable) is replaced by the finished run carried, an unreadable one set
aside whole first. A user mistake is one line `error: <argument>: ...` on stderr, exit 2, and
TO byte for byte as it was; a fault while copying is one line naming the file, exit 1, TO as it
was; runs that could not be carried are `not carried:` lines on stderr, exit 1.
"""
from __future__ import annotations

from functools import partial

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import initialize_config_dir
from test_bad_input import write_run, write_table
from test_data_safety import contents, one_line
from test_reuse_job import _tables

from experiments.app.errors import CONF_DIR
from experiments.store import claim
from experiments.store.collect import finished_run

pytestmark = pytest.mark.slow  # they start commands: in make test, not make test-quick

REPO = Path(__file__).resolve().parents[1]
TWO_STAGE = {"cells": [], "two_stage": {"adam_charlm": {"n": 1}}}  # a cell whose confirmation ended


def carry_runs(*args: str | Path, cwd: Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `PYTHONPATH=src python scripts/carry_runs.py ARGS`."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "carry_runs.py"), *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, proc.stdout, proc.stderr


SUBPROCESS_MISTAKES = ("folder-from-missing", "folder-from-is-to", "seeds-below-0", "what-unknown")


def carry_runs_here(*args: str | Path, cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    """carry_runs, its main called in this process (the command's own code, without the interpreter
    start): for the cases whose line the subprocess cases already show reaches the user as is."""
    import runpy

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["carry_runs.py", *map(str, args)])
    capsys.readouterr()
    try:
        runpy.run_path(str(REPO / "scripts" / "carry_runs.py"), run_name="__main__")
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err[-3000:]
    return code, out, err


def run_in(study: Path, rid: str, **kwargs) -> Path:
    """test_bad_input.write_run's run folder (config, history, summary) in `study`/runs/<rid>;
    `study` is named res, as write_run wants it."""
    assert study.name == "res"
    write_run(study.parent, rid, **kwargs)
    return study / "runs" / rid


def cell_folder(tmp: Path, *finished: str, confirm: dict | None = TWO_STAGE) -> Path:
    """A cell trained in a folder of its own: `finished` runs completed, its confirm.json."""
    source = tmp / "text" / "res"
    for rid in finished:
        run_in(source, rid)
    source.mkdir(parents=True, exist_ok=True)
    if confirm is not None:
        (source / "confirm.json").write_text(json.dumps(confirm))
    return source


def study_in_progress(tmp: Path) -> Path:
    """A new study's folder that already holds one finished run ("kept") and a confirm.json."""
    root = tmp / "answer" / "res"
    run_in(root, "kept", summary=json.dumps({"status": "completed", "accuracy_auc": 0.25}))
    (root / "confirm.json").write_text(json.dumps({"cells": [], "two_stage": {"adam_mqar": {"n": 2}}}))
    return root


def files(folder: Path) -> dict:
    return contents(folder)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    """A committed study's tables in small (test_reuse_job: one job's 8 selection lanes)."""
    source = tmp_path_factory.mktemp("reference") / "res"
    source.mkdir()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        summary, history = _tables(tmp_path_factory.mktemp("elsewhere"))
    summary.to_parquet(source / "summary.parquet")
    history.to_parquet(source / "history.parquet")
    return source


# --- what is "already there" -------------------------------------------------------------

def test_a_failed_or_unfinished_run_in_to_is_replaced_and_a_finished_one_kept(tmp_path):
    source = cell_folder(tmp_path, "kept", "failed", "open")
    root = study_in_progress(tmp_path)
    run_in(root, "failed", status="failed", history="missing")
    run_in(root, "open", summary="missing")  # a train killed before its summary
    kept = files(root / "runs" / "kept")
    code, out, err = carry_runs("folder", source, root, cwd=tmp_path)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [f"carried 2 runs into {root / 'runs'} (1 already there)"]
    assert files(root / "runs" / "kept") == kept  # the finished run there is left as it was
    for rid in ("failed", "open"):
        assert files(root / "runs" / rid) == files(source / "runs" / rid)
    assert not (root / claim.STAGING).exists()
    assert set(json.loads((root / "confirm.json").read_text())["two_stage"]) == {"adam_mqar", "adam_charlm"}


def test_an_unreadable_run_in_to_is_set_aside_whole_then_replaced(tmp_path):
    source = cell_folder(tmp_path, "broken")
    root = tmp_path / "answer" / "res"
    run_in(root, "broken", history="garbage")  # says completed, its history cannot be read
    before = files(root / "runs" / "broken")
    code, out, err = carry_runs("folder", source, root, cwd=tmp_path)
    assert (code, err) == (0, ""), err
    lines = out.splitlines()
    assert lines[0] == f"carried 1 runs into {root / 'runs'} (0 already there)"
    assert len(lines) == 2 and lines[1].startswith("set aside: broken: history.parquet is not readable")
    [aside] = (root / claim.UNREADABLE).iterdir()
    assert aside.name.startswith("broken-") and files(aside) == before  # never deleted, not changed
    assert files(root / "runs" / "broken") == files(source / "runs" / "broken")
    assert finished_run(root / "runs" / "broken")


def test_selection_replaces_a_failed_run_and_keeps_a_finished_one(tables, tmp_path):
    root = tmp_path / "answer" / "res"
    code, out, err = carry_runs("selection", tables, root, cwd=tmp_path)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [f"carried 8 runs into {root / 'runs'} (0 already there)"]
    first, second = sorted((root / "runs").iterdir())[:2]
    carried = files(first)
    shutil.rmtree(second)
    run_in(root, second.name, status="failed", history="missing")  # a retrain that failed
    code, out, err = carry_runs("selection", tables, root, cwd=tmp_path)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [f"carried 1 runs into {root / 'runs'} (7 already there)"]
    assert files(first) == carried
    assert finished_run(second)["status"] in ("completed", "pruned")


def test_a_run_claimed_by_another_process_is_named_not_written(tmp_path):
    source = cell_folder(tmp_path, "busy")
    root = tmp_path / "answer" / "res"
    run_in(root, "busy", status="failed", history="missing")
    before = files(root / "runs")
    with claim.claim(root, "busy") as mine:  # this process trains it now
        assert mine
        code, out, err = carry_runs("folder", source, root, cwd=tmp_path)
    assert code == 1
    assert out.splitlines() == [f"carried 0 runs into {root / 'runs'} (0 already there)"]
    one_line(err.splitlines(), f"not carried: busy: being written or trained by another process (pid {os.getpid()})")
    assert files(root / "runs") == before


# --- what it says ---------------------------------------------------------------------------

def test_runs_not_finished_in_from_are_named_on_stderr_with_exit_1(tmp_path):
    source = cell_folder(tmp_path, "done")
    run_in(source, "open", status="running")
    root = tmp_path / "answer" / "res"
    code, out, err = carry_runs("folder", source, root, cwd=tmp_path)
    assert code == 1
    assert out.splitlines() == [f"carried 1 runs into {root / 'runs'} (0 already there)"]
    one_line(err.splitlines(), f"not carried: open: not finished in {source}")
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["done"]


def test_a_file_that_cannot_be_copied_is_one_line_exit_1_and_to_is_as_it_was(tmp_path):
    source = cell_folder(tmp_path, "lost")
    (source / "runs" / "lost" / "notes.txt").symlink_to(tmp_path / "gone")  # a file gone mid-copy
    root = study_in_progress(tmp_path)
    run_in(root, "lost", status="failed", history="missing")
    before = files(tmp_path / "answer")
    code, out, err = carry_runs("folder", source, root, cwd=tmp_path)
    assert (code, out) == (1, "")
    one_line(err.splitlines(), f"error: {source / 'runs' / 'lost' / 'notes.txt'}: No such file or directory")
    assert files(tmp_path / "answer") == before  # the failed run as it was, nothing staged left


MISTAKES = {  # id: (what, from, to, options, the line's start, a fragment of what is allowed)
    "folder-from-missing": ("folder", "missing", "to", (), "error: from:", "does not exist"),
    "folder-from-without-runs": ("folder", "empty", "to", (), "error: from:", "no run folders"),
    "folder-from-is-to": ("folder", "cell", "cell", (), "error: to:", "another folder than from"),
    "folder-to-is-a-file": ("folder", "cell", "afile", (), "error: to:", "is a file"),
    "folder-to-in-from-runs": ("folder", "cell", "cell/runs/kept", (), "error: to:", "runs/"),
    "folder-to-confirm-garbage": ("folder", "cell", "to-bad-confirm", (), "error: to:", "confirm.json"),
    "selection-from-missing": ("selection", "missing", "to", (), "error: from:", "summary.parquet"),
    "selection-from-unreadable": ("selection", "garbage", "to", (), "error: from:", "not a readable parquet"),
    "selection-from-is-to": ("selection", "tables", "tables", (), "error: to:", "another folder than from"),
    "seeds-below-0": ("selection", "tables", "to", ("--seeds-below", "0"), "error: --seeds-below:", ">= 1"),
    "seeds-below-text": ("selection", "tables", "to", ("--seeds-below", "x"), "error: --seeds-below:",
                         "invalid int value"),
    "whole-cells-unknown": ("selection", "tables", "to", ("--whole-cells", "adam_nope"),
                            "error: --whole-cells:", "adam_assoc_recall"),
    "what-unknown": ("carry", "tables", "to", (), "error: what:", "'selection', 'folder'"),
}


@pytest.mark.parametrize("case", list(MISTAKES), ids=list(MISTAKES))
def test_a_user_mistake_is_one_line_exit_2_and_writes_nothing(case, tables, tmp_path, capsys, monkeypatch):
    what, source, root, options, start, allowed = MISTAKES[case]
    cell_folder(tmp_path, "kept")
    shutil.move(tmp_path / "text" / "res", tmp_path / "cell")
    shutil.copytree(tables, tmp_path / "tables")
    (tmp_path / "empty").mkdir()
    (tmp_path / "garbage").mkdir()
    write_table(tmp_path / "garbage" / "summary.parquet", pd.DataFrame({"a": [1]}), "garbage")
    shutil.copy(tables / "history.parquet", tmp_path / "garbage")
    (tmp_path / "afile").write_text("not a folder\n")
    shutil.move(study_in_progress(tmp_path), tmp_path / "to")
    shutil.copytree(tmp_path / "to", tmp_path / "to-bad-confirm")
    (tmp_path / "to-bad-confirm" / "confirm.json").write_text("{ truncated")
    before = files(tmp_path)
    run = carry_runs if case in SUBPROCESS_MISTAKES else partial(carry_runs_here, capsys=capsys, monkeypatch=monkeypatch)
    code, out, err = run(what, source, root, *options, cwd=tmp_path)
    assert code == 2, err
    line = one_line(err.splitlines(), start)
    assert allowed in line, line
    assert out == ""
    assert files(tmp_path) == before  # TO, FROM and the working folder byte for byte as they were
