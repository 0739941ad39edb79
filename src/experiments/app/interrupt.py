"""Stopping a command cleanly on Ctrl-C (SIGINT) or SIGTERM.

`guard(command)` wraps a command's Hydra main (app.command.make_main). Inside it
SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so that a batch scheduler's
stop unwinds like a Ctrl-C: train.py records the run being trained as failed
(so the next launch re-runs it), closes its W&B run, and every file left
behind was written atomically. KeyboardInterrupt passes through Hydra's
launcher (it catches Exception only). The guard then prints one line on how
to resume and exits with 128 + the signal number (130 for SIGINT, 143 for
SIGTERM), as a shell reports a process stopped by a signal.

A sweep skips its finished runs, so resuming is re-running the same command.
SIGKILL cannot be caught: the run being trained then has no finished summary
and is re-run in the same way.

`deferred()` marks a short step that should not be cut in half (closing a
W&B run): a signal that comes during it is raised when it ends; a second
signal is raised at once, so that a double Ctrl-C always stops.

Python runs a signal handler at whatever bytecode the main thread is at. When
that is a garbage-collection callback or a __del__ (JAX registers one), the
raised exception is printed as "Exception ignored" and lost. Every signal is
therefore also kept, and `raise_if_lost()` raises it at the next job of a sweep
(a lost Ctrl-C once let all six runs of a sweep finish).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from experiments.app.errors import SWEEP_JOBS_ENV

SIGNALS = (signal.SIGINT, signal.SIGTERM)
RESUMABLE = ("train",)  # commands whose re-run skips what is finished


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM while a guard is active."""

    def __init__(self, signum: int, job: int | None):
        self.signum = signum
        self.job = job  # the Hydra job running when the signal came (None: unknown)
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def _current_job() -> int | None:
    """Number of the multirun job running now (jobs before it have ended), if any."""
    from hydra.core.hydra_config import HydraConfig

    try:
        return int(HydraConfig.instance().cfg.hydra.job.num)
    except Exception:  # noqa: BLE001 - no job (single run, between jobs, before the first)
        return None


_depth = 0  # deferred() blocks being run
_pending: Interrupted | None = None  # a signal that came during one
_received: Interrupted | None = None  # the first signal under the guard, raised or not


def _on_signal(signum: int, frame) -> None:
    global _pending, _received
    stop = Interrupted(signum, _current_job())
    _received = _received or stop
    if _depth and _pending is None:
        _pending = stop
        return
    raise stop


@contextmanager
def deferred() -> Iterator[None]:
    """Hold a first SIGINT/SIGTERM until the block ends (no-op outside a guard)."""
    global _depth, _pending
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending is not None:
            stop, _pending = _pending, None
            raise stop  # the signal outranks whatever the block raised


def raise_if_lost() -> None:
    """Raise a signal the guard received whose exception was swallowed (see above)."""
    if _received is not None and not _depth:
        raise _received


def resume_line(command: str, stop: KeyboardInterrupt) -> str:
    """The one line printed when `command` is stopped by `stop`."""
    signum = getattr(stop, "signum", signal.SIGINT)
    head = f"interrupted ({signal.Signals(signum).name})"
    if command not in RESUMABLE:
        return f"{head}; re-run the same command to start again"
    total = int(os.environ.get(SWEEP_JOBS_ENV) or 0)
    job = getattr(stop, "job", None)
    if job is not None and total:
        head += f" in job {job + 1} of {total}"  # jobs before it have ended
    return f"{head}; re-run the same command to resume (finished runs are skipped)"


@contextmanager
def guard(command: str) -> Iterator[None]:
    """Turn SIGINT/SIGTERM into Interrupted; on one, print the resume line and exit 130/143."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    global _received
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    try:
        yield
    except KeyboardInterrupt as stop:
        print(resume_line(command, stop), file=sys.stderr, flush=True)
        raise SystemExit(128 + getattr(stop, "signum", signal.SIGINT)) from None
    finally:
        _received = None
        for s, handler in previous.items():
            signal.signal(s, handler)
