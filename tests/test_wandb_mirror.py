"""W&B mirror: key mapping, offline runs read back from W&B's transaction log,
no-op paths, and failures that must not reach training."""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from experiments.store.wandb_mirror import LoggerConfig, Mirror, open_run, validate_logger
from experiments.store.wandb_payload import eval_payload, summary_payload, wandb_key


@pytest.fixture(autouse=True)
def quiet_wandb(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")  # belt and braces: never the network
    # Run from an empty cwd so a stray ./wandb would be caught.
    monkeypatch.chdir(tmp_path)


# --- reading an offline run back ----------------------------------------------
# wandb 0.31 no longer ships a Python reader (wandb.sdk.internal.datastore is
# gone; wandb-core in Go writes and syncs). The .wandb file is LevelDB's log
# format with a 7-byte ":W&B" header: 32 KiB blocks of records, each
# [crc32 u32][length u16][type u8] + payload, a record split over blocks as
# FIRST/MIDDLE/LAST. Each assembled payload is a wandb_internal_pb2.Record.
_BLOCK, _FULL, _FIRST, _MIDDLE, _LAST = 32 * 1024, 1, 2, 3, 4


def read_records(path: Path):
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0)
    pos, parts = 7, b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:  # block trailer too short for a header: zero padding
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        payload = data[pos + 7:pos + 7 + length]
        if len(payload) < length:  # tail still being written
            return
        pos += 7 + length
        if kind == 0:  # zero-filled rest of a block
            pos += left - 7 - length
            continue
        assert zlib.crc32(payload, zlib.crc32(bytes([kind]))) == crc
        parts = payload if kind in (_FULL, _FIRST) else parts + payload
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            yield record


def _key(item) -> str:
    return "/".join(item.nested_key) or item.key


def _complete_records(path: Path, timeout_s: float = 10.0) -> list:
    # run.finish() returns once wandb-core has *handled* the exit record, but
    # its writer flushes the file only when the stream closes, moments later.
    deadline = time.monotonic() + timeout_s
    while True:
        records = list(read_records(path))
        if records and records[-1].WhichOneof("record_type") == "exit":
            return records
        assert time.monotonic() < deadline, f"no exit record in {path}"
        time.sleep(0.02)


def read_offline_run(results_dir: Path, run_id: str) -> dict:
    """run record, history rows by step, final summary and exit code."""
    (path,) = results_dir.glob(f"wandb/offline-run-*-{run_id}/run-{run_id}.wandb")
    out = {"run": None, "history": {}, "summary": {}, "exit_code": None}
    for record in _complete_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["run"] = record.run
        elif kind == "history":
            row = {_key(item): json.loads(item.value_json) for item in record.history.item}
            out["history"][row["_step"]] = row
        elif kind == "summary":
            out["summary"].update(
                {_key(item): json.loads(item.value_json) for item in record.summary.update})
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
    return out


# --- key mapping ----------------------------------------------------------------


@pytest.mark.parametrize("column, key", [
    ("train_loss", "train/loss"), ("update_norm", "train/update_norm"),
    ("loss", "val/loss"), ("accuracy", "val/accuracy"),
    ("entropy", "attn/entropy"), ("entropy_norm", "attn/entropy_norm"),
    ("jacobian_norm_median", "attn/jacobian_norm_median"),
    ("entropy_l0h1", "attn/entropy_l0h1"), ("logit_std_l2h10", "attn/logit_std_l2h10"),
    ("grad_norm", "grad/grad_norm"), ("grad_norm_attn", "grad/grad_norm_attn"),
    ("grad_norm_q_l0", "grad/grad_norm_q_l0"),
    ("lr", "other/lr"), ("loss_l0", "other/loss_l0"),
    ("run_id", None), ("attention", None), ("step", None), ("d_k", None),
])
def test_wandb_key(column, key):
    assert wandb_key(column) == key


def test_payloads_keep_numbers_only():
    row = {"run_id": "r", "task": "mqar", "step": 3, "accuracy": np.float32(0.5), "lr": 1e-3,
           "entropy_l0h0": np.array(2.0), "diverged": True}
    assert eval_payload(row) == {"val/accuracy": 0.5, "other/lr": 1e-3, "attn/entropy_l0h0": 2.0}
    summary = {"status": "completed", "steps_to_threshold": None, "auc": float("nan"),
               "steps": np.int64(10), "diverged": False}
    assert summary_payload(summary) == {"status": "completed", "steps": 10, "diverged": False}
    assert type(summary_payload(summary)["steps"]) is int  # JSON-able for wandb


def test_validate_logger():
    validate_logger(LoggerConfig())
    with pytest.raises(ValueError, match=r"^logger.mode: must be one of offline, online, disabled; got 'x'$"):
        validate_logger(LoggerConfig(mode="x"))
    with pytest.raises(ValueError, match=r"^logger.name: must be one of wandb, none; got 'tb'$"):
        validate_logger(LoggerConfig(name="tb"))


# --- offline runs -----------------------------------------------------------------


def _row(step: int) -> dict:
    return {"run_id": "r", "attention": "scaled", "step": step, "loss": 1.0 / (step + 1),
            "accuracy": 0.25 * step, "entropy": 3.0 - step, "entropy_l0h1": 0.5 + step,
            "grad_norm_q": 0.1 * step, "train_loss": 2.0 - step}


def _log_run(results_dir: Path, run_id: str, group: str | None = "exp") -> None:
    config = {"attention": {"name": "scaled"}, "d_k": 64, "seed": 0}
    with open_run(LoggerConfig(tags=["cfg"]), run_id=run_id, results_dir=results_dir,
                  config=config, tags=["scaled"], group=group) as mirror:
        assert mirror.active
        for step in (0, 10, 20):
            mirror.log_eval(_row(step), step=step)
        mirror.finish({"status": "completed", "test_accuracy": 0.875,
                       "steps_to_threshold": None, "steps": 20})
        mirror.finish({"status": "ignored"})  # second call: no-op


def test_offline_run_reads_back(tmp_path):
    results = tmp_path / "results"
    _log_run(results, "scaled-dk64-s0")
    got = read_offline_run(results, "scaled-dk64-s0")

    run = got["run"]
    assert (run.run_id, run.project, run.run_group, run.job_type) == (
        "scaled-dk64-s0", "attention-scaling", "exp", "train")
    assert sorted(run.tags) == ["cfg", "scaled"]
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["d_k"] == 64 and config["attention"] == {"name": "scaled"}

    assert sorted(got["history"]) == [0, 10, 20]
    for step, row in got["history"].items():
        assert row["val/accuracy"] == pytest.approx(0.25 * step)
        assert row["attn/entropy"] == pytest.approx(3.0 - step)
        assert row["attn/entropy_l0h1"] == pytest.approx(0.5 + step)
        assert row["grad/grad_norm_q"] == pytest.approx(0.1 * step)
        assert row["train/loss"] == pytest.approx(2.0 - step)
        assert not {"run_id", "attention", "other/step"} & set(row)

    summary = got["summary"]
    assert summary["status"] == "completed" and summary["test_accuracy"] == 0.875
    assert summary["steps"] == 20 and "steps_to_threshold" not in summary
    assert summary["val/accuracy"] == pytest.approx(5.0)  # last logged value
    assert got["exit_code"] == 0


def test_files_stay_under_results_dir(tmp_path):
    results = tmp_path / "results"
    _log_run(results, "r1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # nothing in cwd
    assert [p.name for p in results.iterdir()] == ["wandb"]
    assert len(list(results.glob("wandb/offline-run-*-r1/run-r1.wandb"))) == 1


def test_two_runs_in_one_process(tmp_path):
    results = tmp_path / "results"
    _log_run(results, "job0")
    _log_run(results, "job1", group=None)
    first, second = (read_offline_run(results, r) for r in ("job0", "job1"))
    assert first["run"].run_id == "job0" and second["run"].run_id == "job1"
    assert second["run"].run_group == ""
    assert sorted(second["history"]) == [0, 10, 20] and second["exit_code"] == 0


def test_rerun_replaces_the_earlier_offline_record(tmp_path):
    # a run is re-run only when its earlier attempt failed, was killed or is overwritten:
    # `wandb sync` must find one record per run, the latest
    results = tmp_path / "results"
    _log_run(results, "x-again")  # another run whose id ends like it: untouched
    with pytest.raises(RuntimeError):
        with open_run(LoggerConfig(), run_id="again", results_dir=results, config={}) as mirror:
            mirror.log_eval(_row(0), step=0)
            raise RuntimeError("killed")
    _log_run(results, "again")
    assert len(list(results.glob("wandb/offline-run-????????_??????-again"))) == 1
    assert len(list(results.glob("wandb/offline-run-????????_??????-x-again"))) == 1
    got = read_offline_run(results, "again")
    assert got["exit_code"] == 0 and sorted(got["history"]) == [0, 10, 20]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_exception_in_with_block_finishes_failed(tmp_path, error):
    results = tmp_path / "results"
    with pytest.raises(error):
        with open_run(LoggerConfig(), run_id="crash", results_dir=results,
                      config={}, tags=[], group=None) as mirror:
            mirror.log_eval(_row(0), step=0)
            raise error()
    assert not mirror.active
    got = read_offline_run(results, "crash")
    assert got["exit_code"] == 1 and sorted(got["history"]) == [0]


# --- no-op paths ------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [LoggerConfig(name="none"), LoggerConfig(mode="disabled")])
def test_none_logger_is_a_noop(tmp_path, cfg):
    results = tmp_path / "results"
    with open_run(cfg, run_id="r", results_dir=results, config={}, tags=[], group=None) as mirror:
        assert not mirror.active
        mirror.log_eval(_row(0), step=0)
        mirror.finish({"status": "completed"})
    assert list(tmp_path.iterdir()) == []  # no results/, no wandb/


def test_bad_run_id_warns_once_and_turns_noop(tmp_path, capsys):
    # wandb rejects ":" in run ids; training must carry on regardless.
    mirror = open_run(LoggerConfig(), run_id="bad:id", results_dir=tmp_path / "results",
                      config={}, tags=[], group=None)
    assert not mirror.active
    mirror.log_eval(_row(0), step=0)
    mirror.finish({})
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("warning: W&B mirror off: wandb.init failed: ")


class _BrokenRun:
    def __init__(self):
        self.finished = []

    def log(self, *args, **kwargs):
        raise OSError("disk full")

    def finish(self, exit_code=0):
        self.finished.append(exit_code)


def test_wandb_error_in_log_warns_once(capsys):
    run = _BrokenRun()
    mirror = Mirror(run)
    mirror.log_eval(_row(0), step=0)
    mirror.log_eval(_row(1), step=1)
    mirror.finish({"status": "completed"})
    assert capsys.readouterr().err.splitlines() == [
        "warning: W&B mirror off after error in log: OSError: disk full (local results are unaffected)"]
    assert run.finished == [1] and not mirror.active
