"""Bad input never costs a result: every user mistake, for every command, ends in
ONE line on stderr that names the key, argument or file and what is allowed,
exit code 2, nothing on stdout, no traceback, and nothing created or changed
under the working folder (no results_dir, no Hydra outputs/).

Each case of CASES is one invocation. Most run in-process through the very
function the command line calls before anything else (`cli.check_command_line`
for train/probe/cost/collect, `main(argv)` for plot/report/dashboard), which
costs milliseconds; the cases marked SUBPROCESS (one or two a command, a
process start each) run from the real entry point (`python -m
experiments.<command>`) instead, to prove that no traceback and no Hydra folder
escapes. The memory estimate is checked against XLA's own memory analysis at
the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments import collect, cost, dashboard, plot, probe, report
from experiments.app import bench_job, config, errors, preflight, ranges
from experiments.tasks import TASKS
from experiments.training import memory


def group_options(group: str) -> str:
    """The options of a config group as an error lists them: its yaml files, sorted."""
    return ", ".join(sorted(p.stem for p in (Path(errors.CONF_DIR) / group).glob("*.yaml")))


PREFLIGHT = {"train": config.validate, "probe": probe.validate, "cost": cost.validate,
             "collect": collect.validate, "bench": bench_job.validate}
SWEEP = {"train": ranges.validate_jobs}  # checks over all the jobs of a command line
ANALYSIS = {"plot": plot.main, "report": report.main, "dashboard": dashboard.main}


# --- folders the cases start from ---------------------------------------------------------

def a_file(root: Path) -> None:
    (root / "afile").write_text("not a folder\n")


def read_only(root: Path) -> None:
    (root / "ro").mkdir()
    (root / "ro").chmod(0o555)


def empty_folder(root: Path) -> None:
    (root / "res").mkdir()


def empty_runs(root: Path) -> None:
    (root / "res" / "runs").mkdir(parents=True)


def write_run(root: Path, rid: str, status: str = "completed", summary: str | None = None,
              history: str = "ok") -> None:
    """A run folder as train writes it; `summary` replaces summary.json's text, `history`
    is ok | missing | garbage | truncated."""
    folder = root / "res" / "runs" / rid
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("d_k: 8\nattention:\n  name: scaled\n")
    keys = {"run_id": rid, "attention": "scaled", "d_k": 8, "seed": 0, "task": "assoc_recall",
            "optimizer": "adam"}
    if summary != "missing":
        (folder / "summary.json").write_text(summary if summary is not None else
                                             json.dumps({**keys, "status": status}))
    if history != "missing":
        write_table(folder / "history.parquet", pd.DataFrame([{**keys, "step": s} for s in (0, 10)]),
                    history)


def write_table(path: Path, frame: pd.DataFrame, how: str = "ok") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    if how == "garbage":
        path.write_bytes(b"this is not parquet\n")
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def table(name: str, how: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        frame = pd.DataFrame({"run_id": ["r"], "attention": ["scaled"], "d_k": [8], "seed": [0],
                              "step": [0]})
        write_table(root / "res" / f"{name}.parquet", frame, how)
    return setup


FULL_ROWS = {  # one row of each table with every column its readers rely on
    "summary": {"run_id": "r", "attention": "scaled", "d_k": 8, "seed": 0, "task": "assoc_recall",
                "optimizer": "adam", "status": "completed", "steps": 10, "threshold": 0.9,
                "steps_to_threshold": 10, "test_accuracy": 1.0, "final_val_accuracy": 1.0,
                "accuracy_auc": 0.5},
    "history": {"run_id": "r", "attention": "scaled", "d_k": 8, "seed": 0, "task": "assoc_recall",
                "optimizer": "adam", "step": 0, "accuracy": 0.1},
    "probe": {"attention": "scaled", "d_k": 8, "seed": 0, "input_model": "iid", "init": "none",
              "n_keys": 16},
}


def without(name: str, column: str) -> Callable[[Path], None]:
    """A table that has every column its readers need but `column`."""
    def setup(root: Path) -> None:
        row = {k: v for k, v in FULL_ROWS[name].items() if k != column}
        write_table(root / "res" / f"{name}.parquet", pd.DataFrame([row]))
    return setup


def run(**kwargs) -> Callable[[Path], None]:
    return lambda root: write_run(root, "r1", **kwargs)


# --- the table ----------------------------------------------------------------------------

@dataclass
class Case:
    command: str
    args: tuple[str, ...]
    key: str             # the line starts with "error: <key>:" ({tmp} = the working folder)
    allowed: str         # a fragment of what is allowed
    setup: Callable[[Path], None] | None = None
    env: dict = field(default_factory=dict)
    subprocess: bool = False

    @property
    def id(self) -> str:
        return f"{self.command} {' '.join(self.args)}".strip()


SUBPROCESS = {"subprocess": True}
LOW_MEMORY = {memory.LIMIT_ENV: "0.05"}
HUGE = ("train.batch_size=100000000", "attention=additive", "d_k=1024")

CASES = [
    # train: names of config options
    Case("train", ("attention=foo",), "attention", group_options("attention")),
    Case("train", ("task=foo",), "task", ", ".join(sorted(TASKS))),
    Case("train", ("optimizer=foo",), "optimizer", "adam, adamw, sgd"),
    Case("train", ("logger=foo",), "logger", "none, wandb"),
    Case("train", ("experiment=foo",), "experiment", "claim_full, claim_medium, claim_quick"),
    Case("train", ("launcher=foo",), "launcher", "basic, joblib"),
    Case("train", ("model.init=foo",), "model.init", "lecun_normal"),
    Case("train", ("logger.mode=foo",), "logger.mode", "offline"),
    # unknown or misspelt keys, wrong types, a broken command line
    Case("train", ("train.stepz=3",), "train.stepz", "unknown key"),
    Case("train", ("stepz=3",), "stepz", "unknown key"),
    Case("train", ("+foo=1",), "foo", "unknown key"),
    Case("train", ("attention.d_hidden=8",), "attention.d_hidden", "unknown key"),
    Case("train", ("train.steps=abc",), "train.steps", "integer"),
    Case("train", ("d_k=1.5",), "d_k", "integer"),
    Case("train", ("d_k=abc",), "d_k", "integer"),
    Case("train", ("model.token_shift=maybe",), "model.token_shift", "true or false"),
    Case("train", ("d_k=[1",), "d_k=[1", "not a key=value override"),
    Case("train", ("d_k",), "d_k", "not a key=value override"),
    Case("train", ("--cfg=foo",), "--cfg", "invalid choice"),
    Case("train", ("--foo",), "command line", "unrecognized arguments"),
    # ranges
    Case("train", ("d_k=0",), "d_k", ">= 1"),
    Case("train", ("d_k=-3",), "d_k", ">= 1"),
    Case("train", ("task=vector_retrieval", "task.n_keys=0"), "task.n_keys", "integer >= 1"),
    Case("train", ("task.n_pairs=0",), "task.n_pairs", "integer >= 1"),
    Case("train", ("task=mqar", "task.n_pairs=0"), "task.n_pairs", "integer >= 1"),
    Case("train", ("task.n_pairs=1000",), "task.n_pairs", "1000"),
    Case("train", ("task=mqar", "task.n_pairs=200"), "task.n_pairs", "vocab_size//2 - 1 = 127"),
    Case("train", ("task=mqar", "task.seq_len=16"), "task.seq_len", ">= 4 * n_pairs = 32"),
    Case("train", ("train.batch_size=0",), "train.batch_size", ">= 1"),
    Case("train", ("optimizer.lr=0",), "optimizer.lr", "> 0"),
    Case("train", ("optimizer.lr=-0.1",), "optimizer.lr", "finite number > 0"),
    Case("train", ("optimizer.lr=nan",), "optimizer.lr", "finite number > 0"),
    Case("train", ("optimizer.lr=inf",), "optimizer.lr", "finite number > 0"),
    Case("train", ("train.steps=-1",), "train.steps", "in [1, "),
    Case("train", ("train.steps=0",), "train.steps", "in [1, "),
    Case("train", ("train.threshold=1.5",), "train.threshold", "(0, 1]"),
    Case("train", ("train.threshold=0",), "train.threshold", "(0, 1]"),
    Case("train", ("train.threshold=nan",), "train.threshold", "(0, 1]"),
    Case("train", ("train.n_seeds=0",), "train.n_seeds", ">= 1"),
    Case("train", ("attention=cosine", "attention.init_temperature=inf"),
         "attention.init_temperature", "finite number > 0"),
    Case("train", ("-m", "d_k=8,0"), "d_k", ">= 1", **SUBPROCESS),  # the first job is fine: nothing may run
    # where the results go
    Case("train", ("results_dir={tmp}/afile/results",), "results_dir", "is a file", a_file),
    Case("train", ("results_dir={tmp}/afile",), "results_dir", "is a file, not a folder", a_file),
    Case("train", ("results_dir={tmp}/ro/results",), "results_dir", "is not writable", read_only),
    Case("train", ("results_dir=",), "results_dir", "non-empty path"),
    # permission bits say writable, the file system refuses (as for root on /proc)
    Case("train", ("results_dir=/proc/nope",), "results_dir", "cannot be created: /proc"),
    Case("probe", ("results_dir=/proc/nope/deeper",), "results_dir", "cannot be created: /proc"),
    # memory, estimated before anything is allocated
    Case("train", HUGE, "train.batch_size", "GB (estimated), this machine has"),
    Case("train", ("train.batch_size=4096",), "train.batch_size", f"{memory.LIMIT_ENV} allows",
         env=LOW_MEMORY),
    Case("train", ("train.n_val=100000",), "train.n_val", "lower train.n_val", env=LOW_MEMORY),
    Case("train", ("train.n_seeds=64", "train.batch_size=256"), "train.n_seeds",
         "64 seeds = 64 lanes need about", env=LOW_MEMORY),
    Case("train", ("train.n_seeds=16", "optimizer.lr_grid=[1e-4,3e-4,1e-3,3e-3]",
                   "train.batch_size=256"), "optimizer.lr_grid",
         "4 rates x 16 seeds = 64 lanes need about", env=LOW_MEMORY),
    Case("train", ("optimizer.lr_grid=[]",), "optimizer.lr_grid", "non-empty list"),
    Case("train", ("optimizer.lr_grid=[1e-3,-1]",), "optimizer.lr_grid", "finite numbers > 0"),
    Case("train", ("optimizer.lr_grid=[1e-3,1e-3]",), "optimizer.lr_grid", "must not repeat"),
    Case("train", ("optimizer.lr_grid=abc",), "optimizer.lr_grid", "a list"),
    Case("train", ("train.stop_at_threshold=maybe",), "train.stop_at_threshold", "true or false"),
    Case("train", (), memory.LIMIT_ENV, "number of GB", env={memory.LIMIT_ENV: "lots"}),

    # probe
    Case("probe", ("n_keys=1",), "n_keys", ">= 2", **SUBPROCESS),
    Case("probe", ("n_keyz=3",), "n_keyz", "unknown key"),
    Case("probe", ("input_model=foo",), "input_model", "iid, model, task"),
    Case("probe", ("variants=[scaled,nope]",), "variants", "scaled, unscaled"),
    Case("probe", ("d_ks=[0]",), "d_ks", ">= 2"),
    Case("probe", ("d_ks=[a]",), "d_ks[0]", "integer"),
    Case("probe", ("d_ks=64",), "d_ks", "a list"),
    Case("probe", ("n_rows=100",), "n_rows", "multiple of queries_per_batch"),
    Case("probe", ("task_name=nope",), "task_name", ", ".join(TASKS)),
    # `task` is the training config group, never a probe key: the message says so
    Case("probe", ("task=nope",), "task", "also a config group"),
    Case("probe", ("init=foo",), "init", "lecun_normal"),
    Case("probe", ("results_dir={tmp}/afile/results",), "results_dir", "is a file", a_file),

    # cost
    Case("cost", ("impls=[scaled,nope]",), "impls", "scaled, additive, reference", **SUBPROCESS),
    Case("cost", ("batch=0",), "batch", ">= 1"),
    Case("cost", ("ns=[0]",), "ns", ">= 1"),
    Case("cost", ("max_seconds=nan",), "max_seconds", "> 0"),
    Case("cost", ("quick=maybe",), "quick", "true or false"),
    Case("cost", ("results_dir={tmp}/ro",), "results_dir", "is not writable", read_only),

    # collect
    Case("collect", ("results_dir={tmp}/nowhere",), "results_dir", "does not exist", **SUBPROCESS),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "no run folders", empty_folder),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "no run folders", empty_runs),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "summary.json is not JSON",
         run(summary="{ truncated")),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "no summary.json",
         run(summary="missing")),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "status 'running'",
         run(status="running")),
    Case("collect", ("results_dir={tmp}/res",), "results_dir", "history.parquet is not readable",
         run(history="truncated")),
    Case("collect", ("results_dir={tmp}/afile",), "results_dir", "is a file", a_file),
    Case("collect", ("resultsdir=x",), "resultsdir", "unknown key"),

    # plot, report, dashboard
    Case("plot", ("results_dir={tmp}/nowhere",), "results_dir", "does not exist"),
    Case("report", ("results_dir={tmp}/res",), "results_dir", "holds none of summary.parquet",
         empty_folder, **SUBPROCESS),
    Case("dashboard", ("results_dir={tmp}/afile",), "results_dir", "is a file", a_file),
    Case("plot", ("results_dir={tmp}/ro",), "results_dir", "is not writable", read_only),
    Case("report", ("results_dir=",), "results_dir", "non-empty path"),
    Case("dashboard", ("resutls_dir=x",), "resutls_dir", "unknown key"),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/summary.parquet",
         "not a readable parquet file", table("summary", "garbage"), **SUBPROCESS),
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/history.parquet",
         "not a readable parquet file", table("history", "truncated")),
    Case("dashboard", ("results_dir={tmp}/res",), "{tmp}/res/probe.parquet",
         "not a readable parquet file", table("probe", "truncated"), **SUBPROCESS),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/cost.parquet", "not a cost table",
         table("cost", "ok")),
    # tables that pass the key check but lack what the readers use: the file and the columns
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/summary.parquet",
         "missing columns task, optimizer, status", table("summary", "ok")),
    Case("plot", ("results_dir={tmp}/res",), "{tmp}/res/summary.parquet",
         "missing column steps_to_threshold", without("summary", "steps_to_threshold")),
    Case("dashboard", ("results_dir={tmp}/res",), "{tmp}/res/history.parquet",
         "missing column task", without("history", "task")),
    Case("report", ("results_dir={tmp}/res",), "{tmp}/res/probe.parquet",
         "missing column seed", without("probe", "seed")),
]


def snapshot(root: Path) -> dict:
    """Every path under root with its kind, size and mtime: a created or touched file shows."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (p.is_dir(), st.st_size, st.st_mtime_ns)
    return out


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def _in_process(case: Case, args: list[str], capsys) -> tuple[int, str, str]:
    if case.command in ANALYSIS:
        code = ANALYSIS[case.command](args)
    else:
        with pytest.raises(SystemExit) as stop:
            preflight.check_command_line(case.command, args, PREFLIGHT[case.command],
                                         SWEEP.get(case.command))
        code = stop.value.code
    out, err = capsys.readouterr()
    return code, out, err


def _subprocess(case: Case, args: list[str], tmp: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", **case.env)
    proc = subprocess.run([sys.executable, "-m", f"experiments.{case.command}", *args], cwd=tmp,
                          env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _pretend_not_root(monkeypatch, tmp: Path) -> None:
    """root may write anywhere: make os.access answer as for anyone else on <tmp>/ro."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False
                        if Path(p) == tmp / "ro" and mode & os.W_OK else real(p, mode, *a, **k))


def case_id(case: Case) -> str:
    return case.id + (" [subprocess]" if case.subprocess else "")


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.subprocess else c for c in CASES],
                         ids=case_id)  # a case run as a command is slow: make test, not test-quick
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, monkeypatch, capsys):
    check_case(case, tmp_path, monkeypatch, capsys)


def check_case(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    """Run `case`: one line naming its key, exit 2, no traceback, nothing written."""
    if case.setup:
        case.setup(tmp_path)
    before = snapshot(tmp_path)
    args = [_fill(a, tmp_path) for a in case.args]
    if case.subprocess:
        code, out, err = _subprocess(case, args, tmp_path)
    else:
        monkeypatch.chdir(tmp_path)
        for k, v in case.env.items():
            monkeypatch.setenv(k, v)
        if case.setup is read_only and os.geteuid() == 0:
            _pretend_not_root(monkeypatch, tmp_path)
        code, out, err = _in_process(case, args, capsys)
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {_fill(case.key, tmp_path)}:"), err
    assert case.allowed in lines[0], err
    assert "Traceback" not in err
    assert out == ""
    assert snapshot(tmp_path) == before  # no results_dir, no outputs/ or multirun/, nothing touched


# --- collect: incomplete run folders are reported, not fatal --------------------------------

def _mixed_results(root: Path) -> None:
    write_run(root, "ok")
    write_run(root, "diverged", status="diverged")
    write_run(root, "failed", status="failed", history="missing")
    write_run(root, "no-summary", summary="missing")
    write_run(root, "bad-json", summary="{ truncated")
    write_run(root, "bad-history", history="garbage")
    write_run(root, "running", status="running")


def test_collect_reports_incomplete_runs_and_keeps_statuses(tmp_path):
    _mixed_results(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "experiments.collect", "results_dir=res"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == ("collect: 4 incomplete run folders skipped: bad-history (history.parquet is "
                        "not readable), bad-json (summary.json is not JSON), no-summary (no "
                        "summary.json), running (status 'running') (re-run the sweep to finish them)")
    assert lines[1].startswith("collect: 1 failed run collected with status failed: failed")
    summary = pd.read_parquet(tmp_path / "res" / "summary.parquet")
    history = pd.read_parquet(tmp_path / "res" / "history.parquet")
    assert dict(zip(summary.run_id, summary.status)) == {
        "ok": "completed", "diverged": "diverged", "failed": "failed"}
    assert sorted(set(history.run_id)) == ["diverged", "ok"]


def test_collect_in_process_names_why_each_folder_is_incomplete(tmp_path):
    _mixed_results(tmp_path)
    summary, history, incomplete = collect.collect_runs(tmp_path / "res")
    assert incomplete == {"bad-history": "history.parquet is not readable",
                          "bad-json": "summary.json is not JSON", "no-summary": "no summary.json",
                          "running": "status 'running'"}
    assert sorted(summary.run_id) == ["diverged", "failed", "ok"] and len(history) == 4




def _study_with_a_rerun(root: Path) -> None:
    """Tables of the runs old and new, whose folders are gone (a committed study in a
    fresh checkout), then new re-run since (diverged this time)."""
    write_run(root, "old")
    write_run(root, "new")
    summary, history, _ = collect.collect_runs(root / "res")
    summary.to_parquet(root / "res" / "summary.parquet")
    history.to_parquet(root / "res" / "history.parquet")
    shutil.rmtree(root / "res" / "runs")
    write_run(root, "new", status="diverged")


@pytest.mark.parametrize("keep, expected", [("true", {"old": "completed", "new": "diverged"}),
                                            ("false", {"new": "diverged"})])
def test_collect_keeps_tabled_runs_without_folders_when_asked(tmp_path, keep, expected, capsys):
    """keep_tabled=true keeps the tabled runs that have no folder; a run with a folder
    comes from its folder. Without it the tables are the folders' alone. (In-process:
    the command's own process is tested above.)"""
    _study_with_a_rerun(tmp_path)
    cfg = OmegaConf.create({"results_dir": str(tmp_path / "res"), "keep_tabled": keep == "true"})
    collect.validate(cfg)  # as the command does, then its run
    collect.run(cfg)
    stderr = capsys.readouterr().err
    summary = pd.read_parquet(tmp_path / "res" / "summary.parquet")
    history = pd.read_parquet(tmp_path / "res" / "history.parquet")
    assert dict(zip(summary.run_id, summary.status)) == expected
    assert sorted(history.run_id) == sorted(rid for rid in expected for _ in (0, 10))
    assert ("kept 1 run of the existing tables" in stderr) == (keep == "true")

# --- the memory estimate against XLA's memory analysis -------------------------------------

def _compose(*overrides: str):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=errors.CONF_DIR, version_base="1.3"):
        return compose("train", overrides=list(overrides))


def _xla_bytes(cfg) -> tuple[int, int]:
    """temp + argument + output bytes of the compiled train chunk and evaluation, as loop.py
    builds them (seeds stacked on a leading axis). Lowered from shapes alone: nothing runs."""
    import jax
    import jax.numpy as jnp

    from experiments.tasks import TASKS, fixed_set, train_batch
    from experiments.training import group, step
    from experiments.training.model import init_model

    task = TASKS[cfg.task.name]
    task_cfg = task.config_cls(**dict(cfg.task))
    t, n_seeds = cfg.train, cfg.train.n_seeds
    spec = group.model_spec(cfg, task_cfg)
    n_queries = int(fixed_set(task, task_cfg, 0, "val", 8)["loss_mask"].sum(-1).max())
    assert n_queries == memory.Shapes.from_config(cfg).n_queries
    chunk = min(group.EVAL_CHUNK, t.n_val)
    assert t.n_val % chunk == 0  # no padding (group.chunked) needed
    tx = step.make_optimizer(cfg.optimizer, t)
    chunk_fn, eval_fn = step.compile_fns(
        spec, tx, lambda s: train_batch(task, task_cfg, s["seed"], s["step"], t.batch_size), n_queries,
        t.divergence_loss)

    def seeds(shape):  # (S, ...) for every leaf
        return jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct((n_seeds,) + x.shape, x.dtype), shape)

    one = jax.eval_shape(lambda: init_model(spec, jax.random.PRNGKey(0)))
    params = seeds(one)
    state = {"params": params, "opt_state": seeds(jax.eval_shape(tx.init, one)),
             "step": jax.ShapeDtypeStruct((n_seeds,), jnp.int32),
             "seed": jax.ShapeDtypeStruct((n_seeds,), jnp.int32),
             "active": jax.ShapeDtypeStruct((n_seeds,), jnp.bool_),
             "score_scale": jax.ShapeDtypeStruct((n_seeds,), jnp.float32)}
    val = jax.eval_shape(lambda: fixed_set(task, task_cfg, 0, "val", t.n_val))
    val = seeds({k: jax.ShapeDtypeStruct((t.n_val // chunk, chunk) + v.shape[1:], v.dtype)
                 for k, v in val.items()})

    def used(compiled) -> int:
        m = compiled.memory_analysis()
        return m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes

    return (used(chunk_fn.lower(state, jnp.int32(1)).compile()),
            used(eval_fn.lower(params, val, jax.ShapeDtypeStruct((n_seeds,), jnp.float32),
                                 jax.ShapeDtypeStruct((n_seeds,), jnp.bool_)).compile()))


@pytest.mark.parametrize("overrides", [
    ("task=mqar", "task.seq_len=256", "task.n_pairs=32", "train.batch_size=64", "train.n_val=256"),
    ("attention=additive", "d_k=64", "train.batch_size=128", "train.n_val=256", "train.n_seeds=2"),
], ids=["mqar-rows", "additive-tanh-2-seeds"])
def test_memory_estimate_is_near_xla(overrides):
    cfg = _compose(*overrides)
    est = memory.estimate(memory.Shapes.from_config(cfg))
    train_xla, eval_xla = _xla_bytes(cfg)
    assert 0.5 <= (est.state + est.train_step) / train_xla <= 3, (est, train_xla)
    assert 0.5 <= (est.params + est.evaluation) / eval_xla <= 3, (est, eval_xla)


def test_memory_estimate_scales_with_seeds_and_matches_loop():
    from experiments.training import group

    assert memory.EVAL_CHUNK == group.EVAL_CHUNK
    one = memory.estimate(memory.Shapes.from_config(_compose()))
    four = memory.estimate(memory.Shapes.from_config(_compose("train.n_seeds=4")))
    assert four.total_bytes == 4 * one.total_bytes
    grid = memory.estimate(memory.Shapes.from_config(
        _compose("train.n_seeds=4", "optimizer.lr_grid=[1e-3,3e-3,1e-2]")))
    assert grid.total_bytes == 12 * one.total_bytes  # lanes = rates x seeds


def test_available_memory(monkeypatch):
    monkeypatch.delenv(memory.LIMIT_ENV, raising=False)
    have, source = memory.available_bytes()
    assert have is None or have > 0
    monkeypatch.setenv(memory.LIMIT_ENV, "2.5")
    assert memory.available_bytes() == (2_500_000_000, memory.LIMIT_ENV)
