"""More bad input, in test_bad_input's terms (one line naming the key, exit 2, nothing
written): range checks of seeds, runtime.* and the launchers' keys, paths the file system
refuses, ATTN_MEMORY_LIMIT_GB, tables with NaN keys, analysis.yaml files that do not parse,
and keys set together that contradict each other. Then the faults of the environment (exit 1,
one line, nothing lost) and the silent hazards that must now speak: stale tables, runs of
different budgets pooled into one cell, and a compile cache that cannot be created."""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures_results import write_synthetic_results
from test_bad_input import FULL_ROWS, SUBPROCESS, Case, a_file, case_id, check_case, group_options, write_table

from experiments import report
from experiments.analysis.results import load_results
from experiments.analysis.tables import load
from experiments.app import analysis_cli, errors, ranges, runtime
from experiments.tasks.common import SEED_MAX
from experiments.training import memory

LONG_NAME = "a" * 300
LONG_PATH = "/".join(["b" * 250] * 20)  # each name allowed, 5000 bytes in all


def runs_is_a_file(root: Path) -> None:
    (root / "res").mkdir()
    (root / "res" / "runs").write_text("not a folder\n")


def folder_yaml(text: str):
    def setup(root: Path) -> None:
        (root / "res").mkdir(exist_ok=True)
        (root / "res" / "analysis.yaml").write_text(text)
    return setup


def nan_in(name: str, column: str):
    """A full table of `name` whose second row has no value in `column`."""
    def setup(root: Path) -> None:
        row = FULL_ROWS[name]
        write_table(root / "res" / f"{name}.parquet", pd.DataFrame([row, {**row, column: None}]))
    return setup


JOBLIB, SLURM, LOCAL = ("-m", "launcher=joblib"), ("-m", "launcher=submitit_slurm"), ("-m", "launcher=submitit_local")

CASES = [
    # keys that were never range-checked
    Case("train", ("runtime.lane_block=-1",), "runtime.lane_block", ">= 0 or null", **SUBPROCESS),
    Case("train", ("runtime.threads=0",), "runtime.threads", ">= 1 or null"),
    Case("train", ("runtime.compile_cache_dir=",), "runtime.compile_cache_dir", "non-empty path or null"),
    Case("train", (f"seed={SEED_MAX + 1}",), "seed", f"[0, {SEED_MAX}]"),
    # a run's evaluation steps are held in memory: 1e15 steps once filled it, killed by the OOM killer
    Case("train", ("train.steps=1000000000000000",), "train.steps", f"[1, {ranges.STEPS_MAX}]"),
    Case("train", ("train.steps=2000000000",), "train.eval_every", "at most 1000000 evaluations"),
    Case("train", (f"seed={SEED_MAX}", "train.n_seeds=2"), "seed", f"[0, {SEED_MAX - 1}]"),
    Case("train", (f"train.n_seeds={SEED_MAX + 1}",), "train.n_seeds", f"<= {SEED_MAX}"),
    Case("probe", (f"seed={SEED_MAX + 1}",), "seed", f"[0, {SEED_MAX}]"),
    Case("probe", ("seeds=[0,-1]",), "seeds", f"[0, {SEED_MAX}]"),
    Case("cost", ("seed=-1",), "seed", f"[0, {SEED_MAX}]"),
    Case("train", (*JOBLIB, "hydra.launcher.n_jobs=0"), "hydra.launcher.n_jobs", "-1 for one per core",
         **SUBPROCESS),
    Case("train", (*JOBLIB, "hydra.launcher.prefer=gpus"), "hydra.launcher.prefer", "processes, threads"),
    Case("train", (*SLURM, "hydra.launcher.timeout_min=0"), "hydra.launcher.timeout_min", ">= 1"),
    Case("train", (*SLURM, "hydra.launcher.cpus_per_task=-2"), "hydra.launcher.cpus_per_task", ">= 1 or null"),
    Case("train", (*SLURM, "hydra.launcher.mem_gb=0"), "hydra.launcher.mem_gb", ">= 1 or null"),
    Case("train", (*SLURM, "hydra.launcher.array_parallelism=0"), "hydra.launcher.array_parallelism", ">= 1"),
    Case("train", (*LOCAL, "hydra.sweeper.max_batch_size=0"), "hydra.sweeper.max_batch_size", ">= 1 or null"),
    # paths the file system refuses
    Case("train", (f"results_dir={{tmp}}/{LONG_NAME}",), "results_dir", "longer than this file system allows"),
    Case("probe", (f"results_dir={{tmp}}/{LONG_NAME}/x",), "results_dir", "longer than this file system allows"),
    Case("train", (f"results_dir={{tmp}}/{LONG_PATH}",), "results_dir", "leaves room for the files"),
    Case("report", (f"results_dir={{tmp}}/{LONG_NAME}",), "results_dir", "longer than this file system allows"),
    Case("train", ("results_dir={tmp}/res",), "results_dir", "runs' is a file, not a folder", runs_is_a_file),
    # a comma in a value of a single run
    Case("train", ("results_dir={tmp}/a,b",), "results_dir", "quote it: \"results_dir='", **SUBPROCESS),
    Case("dashboard", ("results_dir={tmp}/a,b",), "results_dir", "quote it: \"results_dir='"),
    Case("report", ("results_dir={tmp}/res", "+x=1"), "x", "unknown key; allowed: results_dir",
         nan_in("summary", "d_k")),
    # the memory limit's variable
    Case("train", (), memory.LIMIT_ENV, "finite number of GB > 0", env={memory.LIMIT_ENV: "inf"},
         **SUBPROCESS),
    Case("train", (), memory.LIMIT_ENV, "finite number of GB > 0", env={memory.LIMIT_ENV: "-1"}),
    Case("train", (), memory.LIMIT_ENV, "finite number of GB > 0", env={memory.LIMIT_ENV: "nan"}),
    # keys set together that contradict each other
    Case("train", ("optimizer.lr=0.01", "optimizer.lr_grid=[1e-3,3e-3]"), "optimizer.lr",
         "not used when optimizer.lr_grid is set"),
    Case("train", ("-m", "seed=0,1", "train.n_seeds=2"), "seed", "overlap with train.n_seeds=2"),
    Case("train", ("-m", "seed=0,3,5", "train.n_seeds=3"), "seed", "swept seeds 3 and 5 overlap"),
    # tables with NaN where a whole number belongs
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/summary.parquet", "column d_k must hold whole numbers >= 1; 1 of 2 rows hold 'nan'",
         nan_in("summary", "d_k")),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/history.parquet", "column step must hold whole numbers >= 0",
         nan_in("history", "step")),
    Case("dashboard", ("results_dir={tmp}/res",), "{tmp}/res/probe.parquet", "column seed must hold whole numbers >= 0",
         nan_in("probe", "seed")),
    # a results folder's own analysis.yaml
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/analysis.yaml", "not readable as YAML",
         folder_yaml("primary_task: [a\n")),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/analysis.yaml",
         "primary_task: must be a name or null", folder_yaml("primary_task: {a: 1}\n")),
    Case("dashboard", ("results_dir={tmp}/res",), "{tmp}/res/analysis.yaml", "may set only",
         folder_yaml("primary_tsk: mqar\n")),
    # found beyond the list
    Case("bench", ("min_time_s=nan",), "min_time_s", "finite number > 0"),
    Case("bench", ("d_k=99999999",), "d_k", "train.n_val: this configuration needs about"),
    Case("bench", ("heavy=['d_k=0']",), "heavy", "d_k: must be >= 1"),
    Case("bench", ("lane_counts=[1,10000000]",), "lane_counts", "lanes need about"),
    Case("bench", ("matmul_sizes=[10000000]",), "matmul_sizes", "GB, "),
    Case("bench", ("heavy=[d_k=0]",), "heavy=[d_k=0]", "quote each element: \"heavy=['d_k=0']\""),
    Case("train", ("results_dir=res(1)",), "results_dir=res(1)", "quote the value: \"results_dir='res(1)'\""),
    Case("probe", ("seeds=[1,1]",), "seeds", "must not repeat a seed"),
    Case("probe", ("n_keys=100000000",), "n_keys", "GB (estimated)"),
    Case("train", ("experiment=",), "experiment", "needs an option name; allowed: " + group_options("experiment")),
    Case("train", ("hydra.run.dir=/proc/nope",), "hydra.run.dir", "cannot be created: /proc", **SUBPROCESS),
    Case("probe", ("hydra.run.dir={tmp}/afile/x",), "hydra.run.dir", "is a file, not a folder", a_file),
    Case("train", ("-m", "seed=0,1", "hydra.sweep.dir=/proc/nope"), "hydra.sweep.dir", "cannot be created: /proc"),
    Case("train", ("hydra.job.chdir=true",), "hydra.job.chdir", "must be false"),
    Case("probe", ("d_ks=[10000000]",), "d_ks", "lower n_keys, n_rows or d_ks"),
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/summary.parquet", "run_id 'r' appears more than once",
         lambda root: write_table(root / "res" / "summary.parquet", pd.DataFrame([FULL_ROWS["summary"]] * 2))),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/history.parquet", "(str column)",
         lambda root: write_table(root / "res" / "history.parquet",
                                  pd.DataFrame([{**FULL_ROWS["history"], "d_k": "8"}]))),
    Case("dashboard", ("results_dir={tmp}/res",), "{tmp}/res/probe.parquet", "d_k must hold whole numbers >= 1",
         lambda root: write_table(root / "res" / "probe.parquet", pd.DataFrame([{**FULL_ROWS["probe"], "d_k": -8}]))),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_more_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, monkeypatch, capsys):
    check_case(case, tmp_path, monkeypatch, capsys)


def test_a_broken_conf_analysis_yaml_is_named(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "analysis.yaml").write_text("defaults:\n  - analysis_schema\n  - _self_\nprimary_task: [a\n")
    monkeypatch.setattr(analysis_cli, "CONF_DIR", str(conf))
    assert report.main([f"results_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {conf / 'analysis.yaml'}: ") and len(err.splitlines()) == 1, err


# --- faults of the environment: exit 1, one line, no run folder ----------------------------

@pytest.mark.skipif(importlib.util.find_spec("libtpu") is not None, reason="this machine has a TPU platform")
@pytest.mark.parametrize("command", ["train", "probe"])
def test_an_absent_platform_is_one_line_and_leaves_no_run(command, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env.update(JAX_PLATFORMS="tpu", WANDB_MODE="offline")
    proc = subprocess.run([sys.executable, "-m", f"experiments.{command}", "results_dir=res"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == errors.EXIT_ENVIRONMENT, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: JAX_PLATFORMS='tpu': "), proc.stderr
    assert not (tmp_path / "res" / "runs").exists() and not (tmp_path / "res" / "probe.parquet").exists()


@pytest.mark.parametrize("where", ["proc", "file"])
def test_a_compile_cache_that_cannot_be_created_is_one_warning(where, tmp_path, caplog):
    import jax

    (tmp_path / "afile").write_text("")
    path = Path("/proc/nope/jax") if where == "proc" else tmp_path / "afile" / "jax"
    before, enabled = runtime._cache_setting, jax.config.jax_enable_compilation_cache
    try:
        with caplog.at_level(logging.WARNING, logger=runtime.__name__):
            runtime.configure_cache(True, path)
        assert [r.getMessage() for r in caplog.records] == [
            f"runtime.compile_cache_dir: cannot create {path} (Not a directory); running without the "
            "compilation cache" if where == "file" else
            f"runtime.compile_cache_dir: cannot create {path} (No such file or directory); running "
            "without the compilation cache"]
        assert not jax.config.jax_enable_compilation_cache
    finally:
        runtime._cache_setting = None
        if before is not None:
            runtime.configure_cache(before[0], before[1] and Path(before[1]))
        else:
            jax.config.update("jax_enable_compilation_cache", enabled)
            runtime._cache_setting = None


# --- silent hazards -----------------------------------------------------------------------

def _finished_run(root: Path, rid: str) -> None:
    folder = root / "runs" / rid
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("d_k: 8\n")
    pd.DataFrame({"run_id": [rid], "step": [0]}).to_parquet(folder / "history.parquet")
    (folder / "summary.json").write_text(json.dumps({"run_id": rid, "status": "completed"}))


def test_stale_tables_are_named_with_the_command_that_fixes_them(tmp_path, capsys):
    root = write_synthetic_results(tmp_path / "res")
    tabled = pd.read_parquet(root / "summary.parquet")["run_id"].iloc[0]
    os.utime(root / "summary.parquet", (1e9, 1e9))  # written long before the folders below
    _finished_run(root, tabled)  # re-run since: newer than the table
    for rid in ("new-1", "new-2"):
        _finished_run(root, rid)
    (root / "runs" / "running").mkdir()  # no summary yet: collect would not add it
    assert analysis_cli.untabled_runs(root) == 3
    assert report.main([f"results_dir={root}"]) == 0
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning:")]
    assert warnings == [f"warning: 3 finished run folders under {root / 'runs'} are not in the tables (or "
                        "changed since); these results leave them out: run `python -m experiments.collect "
                        f"results_dir={root}` first"]


def test_fresh_tables_say_nothing(tmp_path):
    root = write_synthetic_results(tmp_path / "res")
    tabled = pd.read_parquet(root / "summary.parquet")["run_id"].iloc[0]
    _finished_run(root, tabled)
    os.utime(root / "runs" / tabled / "summary.json", (1e9, 1e9))  # finished before the table
    assert analysis_cli.untabled_runs(root) == 0


def test_runs_of_other_budgets_are_not_pooled_into_one_cell(tmp_path, capsys):
    root = write_synthetic_results(tmp_path / "res")
    summary = pd.read_parquet(root / "summary.parquet").assign(**{"train.steps": 300, "logger.mode": "offline",
                                                                  "train.prune.enabled": True})
    summary.loc[summary.index[1:], "logger.mode"] = "online"  # not part of a run's identity
    summary.loc[summary.index[1:], "train.prune.enabled"] = False  # scheduling: a confirmation seed's
    summary.to_parquet(root / "summary.parquet")
    summary.loc[summary.index[2], "train.steps"] = None  # recorded before the key existed
    summary.to_parquet(root / "summary.parquet")
    load_results(root, lr="all")  # one budget: loads
    first = summary.iloc[0]
    summary.loc[summary.index[0], "train.steps"] = 100
    summary.to_parquet(root / "summary.parquet")
    with pytest.raises(load.ResultsFileError, match="differ in train.steps"):
        load_results(root, lr="all")
    assert report.main([f"results_dir={root}"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {root / 'summary.parquet'}: the runs of {first.attention} d_k={first.d_k} "
                   f"{first.task}/{first.optimizer} differ in train.steps (100, 300) and would be pooled as "
                   "seeds of one cell; collect each train.steps into its own results_dir, or re-run them "
                   "at one value\n")
    assert not (root / "REPORT.md").exists()


def test_an_output_in_the_way_is_one_line_and_keeps_the_tables(tmp_path, capsys):
    root = write_synthetic_results(tmp_path / "res")
    (root / "REPORT.md").mkdir()
    tables = {p.name: p.read_bytes() for p in root.glob("*.parquet")}
    assert report.main([f"results_dir={root}"]) == errors.EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert err == f"error: report: {root / 'REPORT.md'}: Is a directory; nothing of the tables " \
                  "was changed\n"
    assert {p.name: p.read_bytes() for p in root.glob("*.parquet")} == tables
