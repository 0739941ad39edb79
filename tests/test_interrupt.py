"""Interrupted sweeps: a real sweep is stopped by SIGINT or SIGKILL (SIGTERM in-process) once
a run has finished; the folder left behind is consistent, and re-running the
same command finishes only what is missing (the W&B offline mirror included)."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_wandb_mirror import read_offline_run

from experiments.app import interrupt
from experiments.store.collect import collect_runs

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

# Six runs, long enough (with a warm compilation cache a run of 40 steps takes
# well under a second, so a sweep of four such runs can finish before the
# signal lands) that a stop after the first finished run lands mid-sweep.
STEPS, EVAL_EVERY = 120, 10
SWEEP = ["-m", "attention=scaled,unscaled", "d_k=8", "seed=0,1,2", f"train.steps={STEPS}",
         f"train.eval_every={EVAL_EVERY}", "train.n_val=32", "train.n_test=64", "train.batch_size=8",
         "logger=wandb", "logger.mode=offline", "progress=false"]
N_RUNS = 6
EVAL_STEPS = list(range(0, STEPS + 1, EVAL_EVERY))
RUN_FILES = ["config.yaml", "history.parquet", "summary.json"]
RESUME = re.compile(r"^interrupted \((SIGINT|SIGTERM)\)( in job [1-6] of 6)?; re-run the same "
                    r"command to resume \(finished runs are skipped\)$")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # one compilation cache for every launch of the module
    cache = tmp_path_factory.mktemp("jax_cache")
    return {**os.environ, "WANDB_SILENT": "true", "ATTN_TEST_CACHE": str(cache)}


def _command(results: Path, env: dict) -> list[str]:
    return [sys.executable, "-m", "experiments.train", *SWEEP, f"results_dir={results}",
            f"runtime.compile_cache_dir={env['ATTN_TEST_CACHE']}"]


def _summaries(results: Path) -> dict[str, dict]:
    out = {}
    for path in (results / "runs").glob("*/summary.json"):
        out[path.parent.name] = json.loads(path.read_text())  # every one parses
    return out


def _finished(results: Path) -> dict[str, int]:
    """{run_id: summary mtime} of the runs whose summary says completed."""
    return {rid: (results / "runs" / rid / "summary.json").stat().st_mtime_ns
            for rid, s in _summaries(results).items() if s["status"] == "completed"}


def _launch_and_stop(tmp_path: Path, env: dict, sig: signal.Signals):
    results = tmp_path / "results"
    log = tmp_path / "first.err"
    with open(log, "w") as err:
        proc = subprocess.Popen(_command(results, env), cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        while not (results / "runs").is_dir() or not _finished(results):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no run finished in 120 s"
            time.sleep(0.05)
        proc.send_signal(sig)
        # a stop waits for an XLA compile in flight (not interruptible), which on a
        # loaded 2-core machine has taken over 60 s
        code = proc.wait(timeout=180)
    return results, code, log.read_text()


def _check_consistent(results: Path, sig: signal.Signals) -> None:
    """Only complete files, each readable; collect reads the folder."""
    summaries = _summaries(results)
    for folder in (results / "runs").iterdir():
        visible = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        assert set(visible) <= set(RUN_FILES) and "config.yaml" in visible, (folder, visible)
        hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
        if sig != signal.SIGKILL:  # a clean stop removes its temporary files
            assert not hidden, hidden
    for s in summaries.values():
        assert s["status"] in ("completed", "failed"), s
        if s["status"] == "failed":  # the run being trained when the signal came
            assert s["error"] == f"Interrupted: stopped by {sig.name}"
    table, _, _ = collect_runs(results)
    assert sorted(table["run_id"]) == sorted(summaries)


def _check_wandb_closed(results: Path) -> None:
    """Every W&B offline run was finished: exit 0 if completed, 1 if interrupted."""
    for rid, s in _summaries(results).items():
        got = read_offline_run(results, rid)
        assert got["exit_code"] == (0 if s["status"] == "completed" else 1), rid


# SIGTERM takes SIGINT's path through the guard (test_guard_turns_sigterm_into_exit_143
# checks it in-process); a third launched sweep would add a minute to the suite.
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_sweep_resumes(tmp_path, env, sig):
    results, code, err = _launch_and_stop(tmp_path, env, sig)
    before = _finished(results)
    assert 1 <= len(before) < N_RUNS
    _check_consistent(results, sig)
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
    else:
        assert code == 128 + sig, err[-3000:]
        lines = err.strip().splitlines()
        assert RESUME.match(lines[-1]), err[-3000:]
        assert sum("interrupted" in line for line in lines) == 1
        assert "Traceback" not in err and "ERROR" not in err and "warning" not in err, err[-3000:]
        _check_wandb_closed(results)

    again = subprocess.run(_command(results, env), cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    summaries = _summaries(results)
    assert len(summaries) == N_RUNS and {s["status"] for s in summaries.values()} == {"completed"}
    assert len({(s["attention"], s["seed"]) for s in summaries.values()}) == N_RUNS
    skipped = set(re.findall(r"^skip (\S+): already completed$", again.stderr, re.M))
    assert skipped == set(before)  # finished before the stop: skipped, files untouched
    assert {rid: _finished(results)[rid] for rid in before} == before
    for rid in summaries:  # one W&B offline record per run, the finished one
        assert len(list(results.glob(f"wandb/offline-run-????????_??????-{rid}"))) == 1, rid
        # a finished run closed its W&B run before writing summary.json (train._record),
        # so even a SIGKILL right after it leaves a closed record
        got = read_offline_run(results, rid)
        assert got["exit_code"] == 0 and sorted(got["history"]) == EVAL_STEPS
    table, history, _ = collect_runs(results)
    assert len(table) == N_RUNS and set(table["status"]) == {"completed"}
    assert len(history) == N_RUNS * len(EVAL_STEPS)


# --- the guard in-process ----------------------------------------------------------


def test_signal_during_training_records_the_run_failed(tmp_path, monkeypatch, capsys):
    """The run being trained gets a failed summary (re-run next time) and a closed W&B run."""
    from hydra import compose, initialize_config_dir

    from experiments.app import config
    from experiments.app import train_job as train
    from experiments.app.errors import CONF_DIR

    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", overrides=[
            "d_k=8", "train.steps=1000000", "train.eval_every=20", "train.n_val=16",
            "train.n_test=16", "train.batch_size=4", "logger.mode=offline", "progress=false",
            "runtime.compile_cache=false", f"results_dir={results}"])
    config.validate(cfg)

    training = threading.Event()  # set at the first evaluation row
    train_lanes = train.train_lanes

    def watched(*args, on_eval, **kwargs):
        def seen(*row):
            training.set()
            on_eval(*row)
        return train_lanes(*args, on_eval=seen, **kwargs)

    monkeypatch.setattr(train, "train_lanes", watched)

    def stop_when_training():
        assert training.wait(timeout=120)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=stop_when_training, daemon=True)
    killer.start()
    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"):
            train.run(cfg)
    killer.join()
    assert stop.value.code == 143
    assert RESUME.match(capsys.readouterr().err.strip().splitlines()[-1])
    (folder,) = (results / "runs").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"] == "Interrupted: stopped by SIGTERM"
    assert sorted(p.name for p in folder.iterdir()) == RUN_FILES
    assert read_offline_run(results, folder.name)["exit_code"] == 1


def test_guard_turns_sigterm_into_exit_143(capsys):
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises at the next bytecode
    assert stop.value.code == 143
    assert RESUME.match(capsys.readouterr().err.strip())
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


def test_deferred_holds_one_signal_until_the_block_ends():
    done = []
    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("collect"):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
                done.append("block finished")
            done.append("not reached")
    assert done == ["block finished"] and stop.value.code == 130


def test_second_signal_is_not_deferred():
    with pytest.raises(SystemExit):
        with interrupt.guard("collect"):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
                with pytest.raises(KeyboardInterrupt):
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(5)
    assert interrupt._pending is None


def test_a_signal_in_a_gc_callback_is_raised_after_it(capsys):
    """An exception raised inside a gc callback is printed with a traceback and
    dropped by Python (it happened to a real sweep, in jax's callback: all six
    runs finished): the guard sends the signal again, and it stops the command
    once the collection is over."""
    after = []

    def in_the_callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs here, and must not raise

    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"):
            gc.callbacks.append(in_the_callback)
            try:
                gc.collect()
            finally:
                gc.callbacks.remove(in_the_callback)
            after.append("collected")
            time.sleep(5)  # the signal sent again lands here
            pytest.fail("the signal was lost")
    assert after == ["collected"] and stop.value.code == 130
    err = capsys.readouterr().err.strip()
    assert RESUME.match(err) and "Exception ignored" not in err
    assert interrupt._received is None  # the guard's end forgets it


def test_a_signal_swallowed_by_a_library_stops_the_next_job(capsys):
    """A library that swallows the stop (a bare except) leaves nothing to report it:
    the next job raises it instead of starting."""
    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # the handler raises here
            except BaseException:  # noqa: BLE001 - what such a library does
                pass
            assert interrupt._received is not None  # received, and lost: we got here
            interrupt.raise_if_lost()
            pytest.fail("the lost signal was not raised")
    assert stop.value.code == 130
    assert RESUME.match(capsys.readouterr().err.strip())
    assert interrupt._received is None  # the guard's end forgets it


# Hydra composing job 2 with a SIGINT that lands in the middle; run in its own
# process (Hydra's job logging takes over the process's handlers)
COMPOSE_AND_STOP = """
import json, os, signal, time
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from experiments.train import main

load = ConfigLoaderImpl.load_sweep_config
composed = []

def load_with_a_stop(self, *args, **kwargs):
    if len(composed) == 3:  # job 2 (the sweeper first composes every job to check it)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here: held, not raised
    cfg = load(self, *args, **kwargs)
    composed.append(1)
    return cfg

ConfigLoaderImpl.load_sweep_config = load_with_a_stop
try:
    main()
finally:
    print(json.dumps(len(composed)))
"""


def test_a_signal_while_hydra_composes_a_job_is_taken_when_the_job_starts(tmp_path, env):
    """A stop that lands in Hydra's code (here: composing job 2's config) is held
    there, so OmegaConf's bookkeeping is never cut in half, and raised as job 2
    starts (a KeyboardInterrupt inside OmegaConf once came out as an AttributeError,
    which Hydra printed as an error with exit 1)."""
    results = tmp_path / "results"
    args = ["-m", "seed=0,1", "d_k=4", "train.steps=2", "train.eval_every=1", "train.n_val=8",
            "train.n_test=8", "train.batch_size=4", "logger=none", "progress=false",
            f"runtime.compile_cache_dir={env['ATTN_TEST_CACHE']}", f"results_dir={results}"]
    got = subprocess.run([sys.executable, "-c", COMPOSE_AND_STOP, *args], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 130, got.stderr[-3000:]
    assert got.stdout.splitlines()[-1] == "4"  # job 2's config was composed to the end
    assert got.stderr.strip().splitlines()[-1] == (
        "interrupted (SIGINT) in job 2 of 2; re-run the same command to resume "
        "(finished runs are skipped)"), got.stderr[-3000:]
    assert "Traceback" not in got.stderr and "ERROR" not in got.stderr
    assert [s["seed"] for s in _summaries(results).values()] == [0]  # job 2 never started


def test_an_error_after_a_signal_is_the_signal(capsys):
    """Raised inside a library's cleanup, a KeyboardInterrupt can come out as that
    cleanup's own error: in an interruptible block, once a signal came, it is the stop."""
    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"), interrupt.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # held
            with interrupt.interruptible():
                pytest.fail("a held signal let the block start")
    assert stop.value.code == 143

    with pytest.raises(SystemExit) as stop:
        with interrupt.guard("train"):
            with interrupt.interruptible():
                with interrupt.deferred():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.2)
                    interrupt._pending = None  # as if the stop were lost in a library
                raise AttributeError("'NoneType' object has no attribute '_invalidate_flags_cache'")
    assert stop.value.code == 130
    assert "AttributeError" not in capsys.readouterr().err


def test_a_launcher_running_jobs_elsewhere_is_not_held(tmp_path, monkeypatch):
    """Signals are held in Hydra's code only where it runs the jobs itself: with
    joblib the command waits in the launcher, and Ctrl-C must reach it at once."""
    from experiments.app import config
    from experiments.app.errors import SWEEP_JOBS_ENV
    from experiments.app.preflight import check_command_line

    monkeypatch.setenv(SWEEP_JOBS_ENV, "")  # check_command_line sets it
    out = [f"results_dir={tmp_path / 'results'}"]
    assert check_command_line("train", out, config.validate)
    assert check_command_line("train", ["-m", "seed=0,1", *out], config.validate)
    assert check_command_line("train", ["launcher=joblib", *out], config.validate)  # one run: here
    assert not check_command_line("train", ["-m", "seed=0,1", "launcher=joblib", *out],
                                  config.validate)
    assert not check_command_line("train", ["-m", "launcher=submitit_local", *out], config.validate)
    assert not (tmp_path / "results").exists()


def test_a_signal_while_the_command_imports_is_taken_by_the_guard(monkeypatch, capsys):
    """jax's and its extensions' imports swallowed a KeyboardInterrupt raised inside
    them (a sweep Ctrl-C'd in its first second ran to its end) or turned it into an
    ImportError: a command notes the signal while it imports, and the guard takes it."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as Python starts a command
    try:
        monkeypatch.setattr(sys, "argv", ["pytest"])
        interrupt.watch_imports()  # a process that only imports a command: nothing changes
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

        monkeypatch.setattr(sys, "argv", ["/venv/bin/attn-train", "-m", "seed=0,1"])
        interrupt.watch_imports()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # noted, not raised: nothing for an import to swallow
        with pytest.raises(SystemExit) as stop:
            with interrupt.guard("train"):
                pytest.fail("the noted signal did not stop the command")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the imports are over
    finally:
        signal.signal(signal.SIGINT, before)
        interrupt._early = None
    assert stop.value.code == 130
    assert RESUME.match(capsys.readouterr().err.strip())

