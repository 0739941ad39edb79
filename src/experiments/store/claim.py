"""Who trains a run, and how a finished run folder is replaced.

A process claims a run before it trains it: an exclusive `fcntl.flock` on
${results_dir}/.staging/<run_id>.lock, taken without waiting. The kernel
drops the lock when its process ends, however it ends (SIGKILL included), so
a killed sweep leaves no claim that could block a relaunch; a lock file left
on disk by a kill is claimed again at once. A second process that finds the
run claimed skips it. flock holds between the processes of one machine (a
joblib or submitit local launcher); on NFS, Linux maps it to the server's
byte-range locks (NFSv4 leases: a crashed client's claim lapses with its
lease). A file system without locks (Lustre mounted without `flock`) gives
one warning, and runs are then trained unclaimed.

A run that replaces a finished one (overwrite=true) is trained in
${results_dir}/.staging/<run_id>/ while runs/<run_id> stays as it was. Once
the new run has finished, `swap_in` moves the old folder aside, the new one
in, and removes the old one. A process killed between those renames leaves
the old folder aside; `recover` (called under the claim, before anything
else touches the run) completes the swap when the staged run had finished,
or puts the old folder back otherwise. Nothing outside runs/ is collected,
so a staged run is never tabled.

A run folder that says it finished but whose files cannot be read is moved
whole to ${results_dir}/unreadable/<run_id>-<UTC time>/ (`set_aside`) before
the run is trained again: what can still be read of it (its config, its
history) is never deleted, and collect, which reads runs/ alone, never counts it.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from experiments.store import wandb_attempts
from experiments.store.results import run_dir

STAGING = ".staging"
UNREADABLE = "unreadable"  # run folders set aside whole because their files cannot be read
ASIDE = ".old"  # suffix of a replaced run folder, between the two renames of a swap
NO_LOCKS = (errno.ENOLCK, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP)
_warned_no_locks = False


def staging_dir(results_dir: str | Path) -> Path:
    return Path(results_dir) / STAGING


def staged(results_dir: str | Path, rid: str) -> Path:
    """Where a run that replaces a finished one is trained."""
    return staging_dir(results_dir) / rid


def _aside(results_dir: str | Path, rid: str) -> Path:
    return staging_dir(results_dir) / f"{rid}{ASIDE}"


def _acquire(path: Path, wait: bool) -> int | None:
    """An open descriptor holding the lock on `path`; None when another process holds it."""
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the folder went as another claim let go: make it again
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BaseException:
            os.close(fd)
            raise
        try:  # the holder before us may have removed the file as it let go: lock the new one
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def holder(results_dir: str | Path, name: str) -> str:
    """' (pid N)' of the process holding a claim, as it wrote it; '' when unknown."""
    try:
        pid = (staging_dir(results_dir) / f"{name}.lock").read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextmanager
def claim(results_dir: str | Path, name: str, wait: bool = False) -> Iterator[bool]:
    """Yields True while this process holds the claim on `name` (a run id), False
    when another process holds it (wait=True waits for it instead)."""
    global _warned_no_locks
    path = staging_dir(results_dir) / f"{name}.lock"
    fd, held = None, True
    try:
        fd = _acquire(path, wait)
    except BlockingIOError:
        held = False
    except OSError as exc:
        if exc.errno not in NO_LOCKS:
            raise
        if not _warned_no_locks:
            _warned_no_locks = True
            print(f"warning: {path.parent} does not support file locks ({exc.strerror}): runs "
                  "are not claimed, and two sweeps into this folder may train a run twice",
                  file=sys.stderr, flush=True)
    if fd is None:
        yield held
        return
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield True
    finally:
        path.unlink(missing_ok=True)  # while still held: no other process holds this file
        os.close(fd)
        try:  # leave no trace once no run is claimed or staged
            path.parent.rmdir()
        except OSError:
            pass


def swap_in(new: Path, folder: Path, results_dir: str | Path, rid: str) -> None:
    """Replace the run folder `folder` by `new` (both finished runs); the caller holds the claim."""
    aside = _aside(results_dir, rid)
    os.replace(folder, aside)
    os.replace(new, folder)
    shutil.rmtree(aside)


def set_aside(folder: Path, results_dir: str | Path, rid: str) -> Path:
    """Move the run folder `folder`, whose files cannot be read, out of runs/ intact; return
    where it went. The caller holds the claim, so only a second unreadable folder of the same
    run within the same second can want the same name: it gets a counter."""
    root = Path(results_dir) / UNREADABLE
    root.mkdir(parents=True, exist_ok=True)
    name = f"{rid}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    target, n = root / name, 1
    while target.exists():
        n += 1
        target = root / f"{name}-{n}"
    os.rename(folder, target)
    return target


def discard(results_dir: str | Path, rid: str) -> None:
    """Remove a staged run (it failed, or was stopped): the run folder is untouched."""
    shutil.rmtree(staged(results_dir, rid), ignore_errors=True)


def recover(folder: Path, results_dir: str | Path, rid: str,
            finished: Callable[[Path], bool]) -> None:
    """Complete or undo a swap that a killed process left, and drop a stale staged
    run; the caller holds the claim. The old run never vanishes: it is put back
    unless a finished new one takes its place; so is its W&B offline record."""
    wandb_attempts.put_back(Path(results_dir) / "wandb", rid)
    aside, new = _aside(results_dir, rid), staged(results_dir, rid)
    if aside.exists():
        if not folder.exists():
            os.replace(new if new.is_dir() and finished(new) else aside, folder)
        shutil.rmtree(aside, ignore_errors=True)
    discard(results_dir, rid)


def recover_all(results_dir: str | Path, finished: Callable[[Path], bool]) -> None:
    """`recover` every run a killed swap left aside that no process is training now."""
    root = staging_dir(results_dir)
    if not root.is_dir():
        return
    for aside in sorted(root.glob(f"*{ASIDE}")):
        rid = aside.name[: -len(ASIDE)]
        with claim(results_dir, rid) as mine:
            if mine:
                recover(run_dir(results_dir, rid), results_dir, rid, finished)
