"""W&B faults: logger.mode=online with no API key, or with a server that does not
answer, warns in one line and mirrors offline instead; training and the local
results go on regardless; the API key is never written anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_wandb_mirror import read_offline_run

from experiments.store import wandb_mirror
from experiments.store.wandb_mirror import LoggerConfig, open_run

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick

KEY = "0123456789abcdef" * 2 + "fedcba98"  # 40 characters, like a real key; fake
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: connection refused at once
FALLBACK = "warning: W&B online mirror unavailable ("


@pytest.fixture
def fresh_wandb(monkeypatch, tmp_path):
    """No credentials anywhere (env, ~/.netrc, settings file); a fresh wandb singleton."""
    import wandb

    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL", "WANDB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NETRC", str(home / ".netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home / ".config" / "wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(wandb_mirror, "_offline_reason", None)
    wandb.teardown()  # the singleton keeps the environment it was created in
    yield tmp_path
    wandb.teardown()


def _open(results: Path, run_id: str, **logger):
    return open_run(LoggerConfig(mode="online", **logger), run_id=run_id, results_dir=results,
                    config={"d_k": 8}, tags=[], group=None)


def _log_and_close(mirror) -> None:
    assert mirror.active
    mirror.log_eval({"step": 0, "accuracy": 0.5}, step=0)
    mirror.finish({"status": "completed"})


def test_no_api_key_goes_offline_at_once(fresh_wandb, capsys):
    results = fresh_wandb / "results"
    start = time.monotonic()
    mirror = _open(results, "nokey")
    assert time.monotonic() - start < 10
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(FALLBACK + "no API key: set WANDB_API_KEY or run `wandb login`)")
    assert "wandb sync" in line and str(results / "wandb") in line
    _log_and_close(mirror)
    assert read_offline_run(results, "nokey")["exit_code"] == 0
    assert not (fresh_wandb / "home" / ".netrc").exists()


def test_unreachable_server_falls_back_to_offline(fresh_wandb, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    monkeypatch.setenv("WANDB_BASE_URL", UNREACHABLE)
    results = fresh_wandb / "results"
    start = time.monotonic()
    mirror = _open(results, "down", init_timeout=3.0)
    assert time.monotonic() - start < 3.0 + 10
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(FALLBACK + "wandb.init failed after at most 3 s: ") and KEY not in line
    _log_and_close(mirror)
    got = read_offline_run(results, "down")
    assert got["exit_code"] == 0 and sorted(got["history"]) == [0]
    assert not list(results.glob("wandb/run-*-down"))  # the failed online attempt is gone
    # the next run of the same command goes offline at once, without a second warning
    start = time.monotonic()
    _log_and_close(_open(results, "down2", init_timeout=3.0))
    assert time.monotonic() - start < 3.0 and capsys.readouterr().err == ""


def _grep(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_online_sweep_with_a_fake_key_never_writes_it(tmp_path):
    home, results = tmp_path / "home", tmp_path / "results"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_API_KEY=KEY, WANDB_BASE_URL=UNREACHABLE, HOME=str(home))
    command = [sys.executable, "-m", "experiments.train", "-m", "seed=0,1", "attention=scaled", "d_k=8",
               "train.steps=20", "train.eval_every=10", "train.n_val=32", "train.n_test=64",
               "train.batch_size=8", "progress=false", "logger=wandb", "logger.mode=online",
               "logger.init_timeout=5", f"runtime.compile_cache_dir={tmp_path / 'jax_cache'}",
               f"results_dir={results}"]
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    start = time.monotonic()
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=o, stderr=e)
        warned = None
        while proc.poll() is None:
            if warned is None and FALLBACK in err.read_text():
                warned = time.monotonic() - start
            time.sleep(0.05)
    stderr = err.read_text()
    assert proc.returncode == 0, stderr[-3000:]
    assert warned is not None and warned < 30, warned
    assert sum(line.startswith("warning:") for line in stderr.splitlines()) == 1, stderr
    summaries = [json.loads(p.read_text()) for p in results.glob("runs/*/summary.json")]
    assert sorted(s["status"] for s in summaries) == ["completed", "completed"]
    for rid in (s["run_id"] for s in summaries):
        assert read_offline_run(results, rid)["exit_code"] == 0
    secret = KEY.encode()
    assert secret not in out.read_bytes() and secret not in err.read_bytes()
    assert _grep(results, secret) == [] and _grep(home, secret) == []
    assert not (home / ".netrc").exists()
