"""Data safety, continued: run claims between processes, and a full disk.

A run claimed by another process is skipped (a job trains only its
unclaimed lanes), a claim dies with its process, two identical sweeps train
each run once; a full disk during train or collect ends in one line naming
the disk and the folder, exit 1, nothing lost.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from omegaconf import OmegaConf
from test_bad_input import write_run
from test_wandb_mirror import _log_run, _row, read_offline_run
from test_data_safety import TINY, cli, compose_train, contents, one_line, res, trained  # noqa: F401

from experiments import collect, train
from experiments.app import train_job
from experiments.store import claim
from experiments.store.wandb_mirror import LoggerConfig, open_run

pytestmark = pytest.mark.slow  # they train or start commands: in make test, not make test-quick


# --- 4. a run claimed by another process ------------------------------------------------------

HOLD = """
import sys
from experiments.app import train_job
from experiments.store import claim
from experiments.store.wandb_mirror import LoggerConfig, open_run
with claim.claim(sys.argv[1], sys.argv[2]) as mine:
    assert mine
    print("held", flush=True)
    sys.stdin.read()  # until killed
"""


def test_claimed_run_is_skipped_and_a_killed_claim_does_not_block(tmp_path, capsys):
    root = tmp_path / "res"
    rid = train_job.members(compose_train(f"results_dir={root}"))[0].rid
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root), rid], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    [skipped] = train.run(compose_train(f"results_dir={root}"))
    assert skipped["status"] == "claimed"
    assert f"skip {rid}: being trained by another process (pid {holder.pid})" in \
        capsys.readouterr().err
    assert not (root / "runs").exists()  # nothing trained, nothing written
    holder.send_signal(signal.SIGKILL)  # its lock file stays behind; its lock does not
    holder.wait(timeout=30)
    assert (root / claim.STAGING / f"{rid}.lock").exists()
    [done] = train.run(compose_train(f"results_dir={root}"))
    assert done["status"] == "completed" and not (root / claim.STAGING).exists()


def test_a_job_trains_only_its_unclaimed_lanes(tmp_path, capsys):
    root = tmp_path / "res"
    cfg = compose_train(f"results_dir={root}", "train.n_seeds=2")
    first, second = (m.rid for m in train_job.members(cfg))
    with claim.claim(root, second) as mine:  # another descriptor: flock conflicts in-process too
        assert mine
        summaries = train.run(cfg)
    assert [s["status"] for s in summaries] == ["completed", "claimed"]
    assert sorted(p.name for p in (root / "runs").iterdir()) == [first]
    assert f"skip {second}: being trained by another process" in capsys.readouterr().err


def test_two_identical_sweeps_train_each_run_once(tmp_path):
    """Two sweeps started together into one results_dir: every run is trained by one of them."""
    args = ["-m", "seed=0,1", *TINY, "results_dir=res"]
    script = "import sys; sys.argv = ['train', *sys.argv[1:]]\nfrom experiments.train import main\nmain()"
    env = {**os.environ, "WANDB_SILENT": "true"}
    procs = [subprocess.Popen([sys.executable, "-c", script, *args], cwd=tmp_path, env=env,
                              stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
             for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    trained = sum(e.count(": completed, test acc") for e in errs)
    skipped = sum(e.count("skip ") for e in errs)
    assert trained == 2 and skipped == 2, errs
    assert len(list((tmp_path / "res" / "runs").iterdir())) == 2


# --- 6. a full disk ---------------------------------------------------------------------------

DISK_FULL = """
import errno, os
def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
os.fsync = full  # every text file of a run folder is synced before its rename
import pandas
pandas.DataFrame.to_parquet = full
"""


@pytest.mark.parametrize("command", ["train", "collect"])
def test_full_disk_is_one_line_and_loses_nothing(res, command):
    root, rid = res
    collect.run(OmegaConf.create({"results_dir": str(root), "keep_tabled": None}))
    before = contents(root)
    args = [*TINY, "overwrite=true"] if command == "train" else []
    code, lines = cli(command, *args, f"results_dir={root}", cwd=root.parent, prelude=DISK_FULL)
    assert code == 1
    line = one_line(lines, "error: no space left on the disk mounted at ")
    assert str(root) in line and "results written before are intact" in line
    assert contents(root) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny tmpfs needs root")
@pytest.mark.parametrize("command", ["collect", "train"])  # train: Hydra's own first writes, before the job
def test_full_tmpfs(tmp_path, command):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("mount -t tmpfs is not permitted here (a container without CAP_SYS_ADMIN)")
    try:
        for rid in ("r1", "r2"):
            write_run(disk, rid)
        collect.run(OmegaConf.create({"results_dir": str(disk / "res"), "keep_tabled": None}))
        before = contents(disk / "res")
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as f:  # fill the disk to its last byte
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        args = TINY if command == "train" else []
        code, lines = cli(command, *args, f"results_dir={disk / 'res'}", cwd=tmp_path)
        assert code == 1
        one_line(lines, f"error: no space left on the disk mounted at {disk} ")
        assert contents(disk / "res") == before
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# --- the W&B mirror of an overwrite ----------------------------------------------------------

def test_failed_attempt_keeps_the_earlier_offline_record(tmp_path):
    """A re-run that fails (a failed overwrite) leaves the earlier record for `wandb sync`."""
    results = tmp_path / "results"
    _log_run(results, "again")
    with pytest.raises(RuntimeError):
        with open_run(LoggerConfig(), run_id="again", results_dir=results, config={}) as mirror:
            mirror.log_eval(_row(0), step=0)
            raise RuntimeError("the overwrite failed")
    got = read_offline_run(results, "again")  # exactly one visible record: the first
    assert got["exit_code"] == 0 and sorted(got["history"]) == [0, 10, 20]
    _log_run(results, "again")  # a later attempt that finishes replaces it, hidden ones too
    left = [p.name for p in (results / "wandb").iterdir() if "again" in p.name]
    assert len(left) == 1 and left[0].startswith("offline-run-"), left


def test_record_set_aside_by_a_killed_attempt_is_put_back(tmp_path):
    """A kill while an overwrite trains: the relaunch (which skips the old run) puts
    the old run's record back in place of the killed attempt's partial one."""
    results = tmp_path / "results"
    _log_run(results, "again")
    (first,) = (results / "wandb").glob("offline-run-*-again")
    os.replace(first, first.with_name(f".{first.name}.earlier"))
    (results / "wandb" / "offline-run-20991231_235959-again").mkdir()  # the killed attempt's
    claim.recover(results / "runs" / "again", results, "again", lambda folder: False)
    visible = [p.name for p in (results / "wandb").glob("offline-run-*")]  # what wandb sync reads
    assert visible == [first.name]
    assert read_offline_run(results, "again")["exit_code"] == 0
