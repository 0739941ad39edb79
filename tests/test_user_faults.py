"""User mistakes and odd folders, as a user meets them: each command run as typed (a subprocess),
its exit code, its stderr's lines (one `error:` line, never a traceback) and the folder's files
before and after. A mistake: exit 2, nothing written; a folder the analysis can read: exit 0."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # they start commands and train tiny runs: in make test

REPO = Path(__file__).resolve().parents[1]
TINY = ["logger=none", "train.steps=20", "train.eval_every=10", "train.n_val=64", "train.n_test=64",
        "progress=false"]
PLAYS = {"a": 40, "b": 25, "c": 25}  # a trains, b validates, c tests
TEXT = ["task=charlm", "d_k=4", "task.seq_len=8", "task.n_queries=2", "task.min_context=2",
        "task.val_plays=[b]", "task.test_plays=[c]"]


def command(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m experiments.<args>` (or a script path), as a user types it."""
    head = (["bash", str(REPO / args[0]), *args[1:]] if args[0].endswith(".sh")
            else [sys.executable, "-m", f"experiments.{args[0]}", *args[1:]])
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the script's `python`
    return subprocess.run(head, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PATH": path, **(env or {})})


def one_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    """The one stderr line of a refusal (its exit code checked, no traceback)."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == code, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_plays(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, lines in PLAYS.items():
        verse = [f"**Speaker {i % 3}**\nto be or not the king {name} {i}\n" for i in range(lines)]
        (folder / f"{name}.md").write_text("\n".join(verse))
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """Three assoc_recall runs at d_k 4: scaled and unscaled at 20 steps, scaled seed 1 at 30."""
    root = tmp_path_factory.mktemp("trained")
    assert command("train", "-m", "attention=scaled,unscaled", "d_k=4", *TINY, f"results_dir={root}").returncode == 0
    assert command("train", "attention=scaled", "d_k=4", "seed=1", *TINY, "train.steps=30",
                   f"results_dir={root}").returncode == 0
    return root


@pytest.fixture
def folder(trained, tmp_path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(trained, copy, ignore=shutil.ignore_patterns("hydra", ".staging"))
    return copy


def test_text_on_a_corpus_of_ones_own_is_analysed_after_the_corpus_moves(tmp_path):
    corpus, root = write_plays(tmp_path / "plays"), tmp_path / "results"
    proc = command("train", "-m", "attention=scaled,unscaled", *TEXT, *TINY, f"task.corpus_dir={corpus}",
                   f"results_dir={root}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(next((root / "runs").glob("scaled-*/summary.json")).read_text())
    assert summary["chance_accuracy"] > 0 and summary["val_bigram_bpc"] < summary["uniform_bpc"]
    corpus.rename(tmp_path / "gone")
    for step in ("collect", "report"):  # plot and the dashboard read the runs the way report does
        proc = command(step, f"results_dir={root}")
        assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr[-2000:]
    report = (root / "REPORT.md").read_text()
    assert f"{summary['val_bigram_bpc']:.2f}" in report  # the recorded baseline, not a recount


def test_a_run_without_its_config_is_named_and_kept_out(folder):
    odd = next((folder / "runs").glob("scaled-*-s1-*"))
    (odd / "config.yaml").unlink()
    proc = command("collect", f"results_dir={folder}")
    assert proc.returncode == 0 and f"{odd.name} (no config.yaml)" in proc.stdout + proc.stderr
    proc = command("report", f"results_dir={folder}")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr[-2000:]
    assert odd.name not in set(pd.read_parquet(folder / "summary.parquet")["run_id"])
    assert (odd / "summary.json").is_file()  # kept as it was


def test_the_unlike_runs_rule_reads_the_budget_the_summary_records(folder):
    from experiments.analysis.tables.consistency import unlike_runs
    from experiments.store.collect import collect_runs

    summary, _, _ = collect_runs(folder)
    summary["train.steps"] = None  # as if no config had said it
    assert "train.steps (20, 30)" in unlike_runs(summary)


@pytest.mark.parametrize("case", ["other cell", "stage 2 first", "truncated record", "stage 1 open"])
def test_confirm_refuses_in_one_line_and_writes_nothing(folder, case):
    args = ["confirm", f"results_dir={folder}", "for_cell=adam_assoc_recall", "n_seeds=2"]
    record = folder / "confirm.json"
    if case == "other cell":
        args[2] = "for_cell=adam_mqar"
    if case == "stage 2 first":
        args.append("stage=2")
    if case == "truncated record":
        record.write_text('{"cells": [')
    if case == "stage 1 open":  # stage 1 recorded for the cell, its runs never trained
        record.write_text(json.dumps({"confirm_seeds_from": 8, "cells": [
            {"task": "assoc_recall", "optimizer": "adam", "attention": "scaled", "d_k": 4, "lr": 0.001,
             "confirm_seeds": [8, 9]}]}))
        args.append("stage=2")
    before = files(folder)
    line = one_error(command(*args))
    assert line.split(":")[1].strip() in {"for_cell", "stage", str(record)}, line
    assert files(folder) == before and not (folder / "hydra").exists()


def test_regenerate_checks_the_primary_condition_before_collecting(folder):
    before = files(folder)
    line = one_error(command("scripts/regenerate.sh", "primary_task=assoc_recal", env={"RESULTS": str(folder)}))
    assert line.startswith("error: primary_task: 'assoc_recal' has no runs") and "assoc_recall" in line
    assert files(folder) == before and not (folder / "hydra").exists()


def test_regenerate_takes_any_folder_name(folder):
    """The path reaches every step as typed: the line that names it (a refusal that reads the
    folder's runs, so that no step need run) holds it whole."""
    root = folder.parent / "é ü 日本 it's [here], {x}"
    folder.rename(root)
    line = one_error(command("scripts/regenerate.sh", "primary_task=mqar", env={"RESULTS": str(root)}))
    assert line == f"error: primary_task: 'mqar' has no runs with optimizer adam in the runs of {root} " \
                   "(tasks there: assoc_recall)"


def test_an_analysis_yaml_that_is_a_folder_is_refused(folder):
    shutil.rmtree(next((folder / "runs").glob("scaled-*-s1-*")))
    assert command("collect", f"results_dir={folder}").returncode == 0
    (folder / "analysis.yaml").mkdir()
    before = files(folder)
    line = one_error(command("report", f"results_dir={folder}"))
    assert line.startswith(f"error: {folder / 'analysis.yaml'}: must be a YAML file")
    assert files(folder) == before


@pytest.mark.parametrize("arg, expected", [
    ("attenton=scaled", "error: attenton: unknown key (did you mean attention?); allowed keys here: attention,"),
    ("attention=scaeld", "error: attention: unknown option 'scaeld' (did you mean scaled?); allowed: "),
    ("train.steps=1e3", "error: train.steps: expected integer, got '1e3'"),
])
def test_a_near_miss_is_named_and_a_value_echoed_as_typed(tmp_path, arg, expected):
    line = one_error(command("train", arg, f"results_dir={tmp_path / 'r'}"))
    assert line.startswith(expected), line
    assert not (tmp_path / "r").exists()
