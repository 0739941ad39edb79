"""Launchers end to end: one tiny sweep through the basic launcher, submitit_local
and joblib (2 workers, W&B offline) collects to the same runs and numbers;
parallel workers share one results folder without a lost, doubled or torn run;
the W&B sweep definition composes and validates at every grid point."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from test_wandb_mirror import read_offline_run

from experiments import collect
from experiments.app import config  # registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.app.preflight import check_jobs
from experiments.store.results import NOT_IDENTITY, run_id

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

ROOT = Path(CONF_DIR).parent
TINY = ["d_k=8", "train.steps=20", "train.eval_every=10", "train.n_val=32", "train.n_test=64",
        "train.batch_size=8", "progress=false"]
# 3 runs of one program: 2 parallel jobs, then 1 (joblib: one worker runs two jobs)
SWEEP = ["-m", "attention=scaled", "seed=0,1,2", *TINY]
N_RUNS = 3


# --- launching -------------------------------------------------------------------


def _shared_tmp(tmp_path_factory) -> Path:
    """A folder shared by the xdist workers of this session (pytest's own under -n 0)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def launch(shared: Path, name: str, *args: str) -> dict:
    """Run the tiny sweep with `args` in a fresh cwd, then collect; once per session.

    The xdist workers share the outcome, so each launch costs one train
    subprocess however the tests are distributed."""
    cwd = shared / name
    results = cwd / "results"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"{name}.done").exists():
            cwd.mkdir(exist_ok=True)
            env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline",
                   # compiled once (basic, launched first), loaded by every other job
                   "JAX_COMPILATION_CACHE_DIR": str(shared / "jax_cache"),
                   "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
            proc = subprocess.run([sys.executable, "-m", "experiments.train", *SWEEP, *args,
                                   f"results_dir={results}"], cwd=cwd, env=env, capture_output=True,
                                  text=True, timeout=240)
            assert proc.returncode == 0, proc.stderr[-3000:]
            # collected in this process (test_train_e2e starts the collect command itself)
            collect.run(OmegaConf.create({"results_dir": str(results), "keep_tabled": None}))
            (shared / f"{name}.done").touch()
    return {"cwd": cwd, "results": results,
            "summary": pd.read_parquet(results / "summary.parquet"),
            "history": pd.read_parquet(results / "history.parquet")}


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    return _shared_tmp(tmp_path_factory)


@pytest.fixture(scope="module")
def basic(shared):
    return launch(shared, "basic", "logger=none")


@pytest.fixture(scope="module")
def submitit_local(shared, basic):
    return launch(shared, "submitit_local", "launcher=submitit_local", "logger=none")


@pytest.fixture(scope="module")
def joblib(shared, basic):
    # 2 workers, 3 jobs: a worker process runs (and mirrors to W&B) a second job
    return launch(shared, "joblib", "launcher=joblib", "hydra.launcher.n_jobs=2",
                  "logger=wandb", "logger.mode=offline")


# --- same results whichever launcher ran the sweep --------------------------------

TIMINGS = ("wall_time_s", "compile_time_s", "train_time_s", "steps_per_s")


def _comparable(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary without timings and config keys that do not set the numbers
    (results_dir, logger, runtime, ...: results.NOT_IDENTITY)."""
    keep = [c for c in summary.columns
            if c not in TIMINGS and c.split(".")[0] not in NOT_IDENTITY]
    return summary[sorted(keep)].sort_values("run_id").reset_index(drop=True)


def _sorted_history(history: pd.DataFrame) -> pd.DataFrame:
    return history.sort_values(["run_id", "step"]).reset_index(drop=True)


@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_launcher_collects_what_basic_collects(launcher, request, basic):
    got = request.getfixturevalue(launcher)
    assert len(basic["summary"]) == N_RUNS and set(basic["summary"].status) == {"completed"}
    assert sorted(got["summary"].run_id) == sorted(basic["summary"].run_id)
    expected, actual = _comparable(basic["summary"]), _comparable(got["summary"])
    assert {"test_accuracy", "final_val_accuracy", "accuracy_auc", "steps_to_threshold",
            "status", "model.d_model", "train.steps"} <= set(expected.columns)
    pd.testing.assert_frame_equal(actual, expected, check_exact=True)
    pd.testing.assert_frame_equal(_sorted_history(got["history"]),
                                  _sorted_history(basic["history"]), check_exact=True)


def test_submitit_writes_only_under_results_dir(submitit_local):
    # nothing in the cwd but results_dir; submitit's job folders under hydra/
    assert sorted(p.name for p in submitit_local["cwd"].iterdir()) == ["results"]
    (sweep_dir,) = (submitit_local["results"] / "hydra" / "multirun").iterdir()
    job_logs = sorted((sweep_dir / ".submitit").glob("*/*_log.err"))
    assert len(job_logs) == N_RUNS
    assert sum("completed, test acc" in p.read_text() for p in job_logs) == N_RUNS


def test_slurm_preset_reaches_sbatch(tmp_path, monkeypatch):
    """The submitit_slurm preset through the plugin's own launch(), up to the
    sbatch file it would submit (no cluster here: no srun, no submission)."""
    import submitit
    from hydra.utils import instantiate
    from submitit.slurm import slurm

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", ["launcher=submitit_slurm", f"results_dir={tmp_path}",
                                "hydra.launcher.partition=cpu"], return_hydra_config=True)
    monkeypatch.setattr(slurm.SlurmExecutor, "affinity", classmethod(lambda cls: 1))
    executors = []
    monkeypatch.setattr(submitit.AutoExecutor, "map_array",
                        lambda self, fn, *args: executors.append(self._executor) or [])
    launcher = instantiate(cfg.hydra.launcher)
    launcher.setup(hydra_context=None, task_function=None, config=cfg)
    launcher.launch([["seed=0"], ["seed=1"]], initial_job_idx=0)
    (executor,) = executors
    sbatch = slurm._make_sbatch_string(command="python", folder=executor.folder, map_count=100,
                                       **executor.parameters)
    for flag in ("--partition=cpu", "--time=60", "--cpus-per-task=4", "--mem=16GB",
                 "--array=0-99%64", "--ntasks-per-node=1", "--job-name=attn-scaling"):
        assert f"#SBATCH {flag}\n" in sbatch
    assert "--gpus" not in sbatch  # CPU only unless asked
    (sweep_dir,) = (tmp_path / "hydra" / "multirun").iterdir()
    assert str(executor.folder) == f"{sweep_dir}/.submitit/%j"  # logs under results_dir


# --- two workers, one results folder ---------------------------------------------


def test_parallel_workers_write_every_run_once(joblib):
    results, summary, history = joblib["results"], joblib["summary"], joblib["history"]
    folders = sorted(p.name for p in (results / "runs").iterdir())
    assert len(folders) == N_RUNS and sorted(summary.run_id) == folders  # each run exactly once
    assert set(summary.status) == {"completed"}
    assert not history.duplicated(["run_id", "step"]).any()
    assert history.groupby("run_id").step.apply(sorted).tolist() == [[0, 10, 20]] * N_RUNS
    for name in folders:  # every file reads back; no temp file left behind
        folder = results / "runs" / name
        assert sorted(p.name for p in folder.iterdir()) == [
            "config.yaml", "history.parquet", "summary.json"]
        assert json.loads((folder / "summary.json").read_text())["run_id"] == name
        assert set(pd.read_parquet(folder / "history.parquet").run_id) == {name}
        assert OmegaConf.load(folder / "config.yaml").results_dir == str(results)


def test_parallel_workers_finish_one_wandb_run_per_job(joblib):
    results = joblib["results"]
    assert len(list(results.glob("wandb/offline-run-*"))) == N_RUNS
    for _, row in joblib["summary"].iterrows():
        got = read_offline_run(results, row.run_id)  # exactly one folder for this run
        assert got["exit_code"] == 0 and got["summary"]["status"] == "completed"
        assert sorted(got["history"]) == [0, 10, 20]
        assert got["summary"]["test_accuracy"] == pytest.approx(row.test_accuracy)


# --- the W&B sweep definition ------------------------------------------------------

WANDB_SWEEP = ROOT / "sweeps" / "claim_quick.yaml"


def _agent_argv(sweep: dict, point: dict) -> list[str]:
    """The command line `wandb agent` runs for one grid point, macros expanded
    by W&B's own code; returns the arguments after `-m experiments.train`."""
    from wandb.sdk.launch.sweeps.utils import create_sweep_command_args

    macros = {"env": ["/usr/bin/env"], "interpreter": ["python"], "program": [sweep["program"]],
              **create_sweep_command_args({"args": {k: {"value": v} for k, v in point.items()}})}
    argv = []
    for word in sweep["command"]:
        argv += macros[word[2:-1]] if word.startswith("${") else [word]
    assert argv[:4] == ["/usr/bin/env", "python", "-m", "experiments.train"]
    return argv[4:]


def _grid(sweep: dict) -> list[dict]:
    names = list(sweep["parameters"])
    return [dict(zip(names, values)) for values in
            itertools.product(*(sweep["parameters"][n]["values"] for n in names))]


def _run_id(*overrides: str) -> str:
    cfg = compose("train", overrides=list(overrides))
    config.validate(cfg)
    return run_id(cfg)


def test_wandb_sweep_runs_what_claim_quick_runs():
    """The agent's grid is the preset's runs, and a grid point has the run id
    the preset gives it (the fixed arguments change nothing that is measured)."""
    sweep = yaml.safe_load(WANDB_SWEEP.read_text())
    assert sweep["method"] == "grid" and "${args_no_hyphens}" in sweep["command"]
    points = _grid(sweep)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        preset = compose("train", ["experiment=claim_quick"], return_hydra_config=True)
        swept = {k: str(v).split(",") for k, v in preset.hydra.sweeper.params.items()}
        if "seed" not in swept:  # the preset trains n_seeds seeds per job
            swept["seed"] = [str(preset.seed + i) for i in range(preset.train.n_seeds)]
        assert sorted(swept) == sorted(points[0])
        assert ({tuple(str(p[k]) for k in sorted(swept)) for p in points}
                == set(itertools.product(*(swept[k] for k in sorted(swept)))))
        for point in (points[0], points[-1]):
            assert _run_id(*_agent_argv(sweep, point)) == _run_id(
                "experiment=claim_quick", *(f"{k}={v}" for k, v in point.items()))


def test_wandb_sweep_passes_preflight_at_every_grid_point():
    sweep = yaml.safe_load(WANDB_SWEEP.read_text())
    points = _grid(sweep)
    assert len(points) == 45
    for point in points:
        argv = _agent_argv(sweep, point)
        assert [f"{k}={v}" for k, v in point.items()] == argv[-len(point):]
        # one job per agent run, composed and validated like the real command line
        assert check_jobs("train", argv, config.validate)[0] == 1
