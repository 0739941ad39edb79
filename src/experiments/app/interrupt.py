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

`deferred()` marks a step that should not be cut in half (closing a W&B run):
a signal that comes during it is raised when it ends; a second signal is raised
at once, so that a double Ctrl-C always stops. `interruptible()` undoes the
deferred blocks around it for its body. The command line (app.command) holds
signals in Hydra's and OmegaConf's code, the pre-flight and the composing of
each job's config: a KeyboardInterrupt raised inside OmegaConf's bookkeeping
left a config half-built, and the stop came out as another error, printed by
Hydra with exit 1 (a sweep stopped between two jobs). The command's own code
runs interruptible.

Python runs a signal handler at whatever bytecode the main thread is at. When
that is a finalizer (a garbage-collection callback, and jax registers one that
runs at every collection; a weakref callback; a __del__), the raised exception
is printed as "Exception ignored", with a traceback, and dropped (a lost Ctrl-C
once let all six runs of a sweep finish). Under the guard such an exception
goes to `_redeliver` instead (sys.unraisablehook), which sends the signal again
a moment later. Every signal is also kept, and `raise_if_lost()` raises it at
the next job of a sweep, for a loss nothing reports (a library's bare except).

Before the guard, while a command's modules import, `watch_imports()` notes a
Ctrl-C instead of raising it (jax's extensions swallowed it there, or turned
it into an ImportError), and the guard raises it as it starts.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from functools import partial
from typing import Callable, Iterator

from experiments.app.errors import SWEEP_JOBS_ENV

SIGNALS = (signal.SIGINT, signal.SIGTERM)
RESUMABLE = ("train",)  # commands whose re-run skips what is finished
REDELIVER_S = 0.01  # a signal that came in a finalizer is sent again this much later


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


_early: int | None = None  # a SIGINT that came while a command's modules imported


def _note_early(signum: int, frame) -> None:
    global _early
    if _early is not None:
        raise KeyboardInterrupt  # a second Ctrl-C stops at once
    _early = signum


def _running_a_command() -> bool:
    """Whether this process was started as one of our commands (not a test or
    a notebook that imports one)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name.startswith("experiments."):
        return True  # python -m experiments.<command>
    return os.path.basename(sys.argv[0]).startswith("attn-")  # pyproject's console scripts


def watch_imports() -> None:
    """Called by a command's module before its heavy imports (jax and the rest).

    Some of them swallow a KeyboardInterrupt raised while they initialise (an
    extension module's set-up), or turn it into an ImportError: unguarded, a
    Ctrl-C in a sweep's first second would be lost (the sweep runs to its end)
    or end in a traceback. When this process runs a command, a first SIGINT there is
    only noted, and guard() raises it as it starts: one line and exit 130."""
    if threading.current_thread() is threading.main_thread() and _running_a_command() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _note_early)


_depth = 0  # deferred() blocks being run
_pending: Interrupted | None = None  # a signal that came during one
_received: Interrupted | None = None  # the first signal under the guard, raised or not


def _redeliver(unraisable, previous_hook: Callable) -> None:
    """sys.unraisablehook under the guard: a stop raised in a finalizer is sent
    again; anything else goes to the hook the guard found."""
    if isinstance(unraisable.exc_value, Interrupted):
        signum = unraisable.exc_value.signum

        def again() -> None:
            if _received is not None:  # the guard is still on (its end forgets the signal)
                os.kill(os.getpid(), signum)

        threading.Timer(REDELIVER_S, again).start()
    else:
        previous_hook(unraisable)


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


@contextmanager
def interruptible() -> Iterator[None]:
    """Let a signal stop the block at once, enclosing deferred() blocks notwithstanding.

    A signal they held is raised on entry, as a stop in the job starting (Hydra's
    current one: jobs before it have ended). An exception the block raises after a
    signal came is replaced by the signal: raised inside a library's cleanup, a
    KeyboardInterrupt can come out as that cleanup's own error."""
    global _depth, _pending
    saved, _depth = _depth, 0
    try:
        if _pending is not None:  # raised as the block's job, which has not started
            signum, _pending = _pending.signum, None
            raise Interrupted(signum, _current_job())
        yield
    except Exception:
        if _received is None:
            raise
        raise _received from None
    finally:
        _depth = saved


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
    global _received, _early
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = partial(_redeliver, previous_hook=previous_hook)
    try:
        if _early is not None:  # came while the command imported (watch_imports)
            signum, _early = _early, None
            raise Interrupted(signum, None)
        yield
    except KeyboardInterrupt as stop:
        print(resume_line(command, stop), file=sys.stderr, flush=True)
        raise SystemExit(128 + getattr(stop, "signum", signal.SIGINT)) from None
    finally:
        _received = None
        sys.unraisablehook = previous_hook
        for s, handler in previous.items():  # the imports are over: no more noting
            signal.signal(s, signal.default_int_handler if handler is _note_early else handler)
