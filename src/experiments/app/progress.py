"""Progress bars for a run and for the sweep it belongs to (rich).

Hydra's basic launcher runs the jobs of a multirun one after another in one
process, so one sweep bar lives across jobs; it learns the number of jobs
from the pre-flight (ATTN_SWEEP_JOBS) and closes after the last one.
"""
from __future__ import annotations

import atexit
import os
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from experiments.app.errors import SWEEP_JOBS_ENV

console = Console(stderr=True)
_progress: Progress | None = None
_sweep_task = None


def _bar() -> Progress:
    global _progress
    if _progress is None:
        _progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=False,
            disable=not sys.stderr.isatty() and os.environ.get("ATTN_PROGRESS") != "1")
        _progress.start()
        atexit.register(close)
    return _progress


def sweep_started(job_num: int | None) -> None:
    """Show the sweep bar in a multirun (job_num is Hydra's job number)."""
    global _sweep_task
    total = int(os.environ.get(SWEEP_JOBS_ENV, "0") or 0)
    if job_num is None or total <= 1:
        return
    bar = _bar()
    if _sweep_task is None:
        _sweep_task = bar.add_task("sweep", total=total)
    bar.update(_sweep_task, completed=job_num)


def sweep_job_done() -> None:
    if _progress is not None and _sweep_task is not None:
        _progress.advance(_sweep_task)


class RunBar:
    """A bar over the training steps of one run; removed when the run ends."""

    def __init__(self, description: str, total: int, enabled: bool = True):
        self.enabled = enabled
        if enabled:
            self.bar = _bar()
            self.task = self.bar.add_task(description, total=total)

    def advance(self, n: int) -> None:
        if self.enabled:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.enabled:
            self.bar.remove_task(self.task)


def say(line: str) -> None:
    """A line above the bars (or plain stderr when there are none)."""
    if _progress is not None:
        _progress.console.print(line, highlight=False, markup=False, soft_wrap=True)
    else:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def close() -> None:
    global _progress, _sweep_task
    if _progress is not None:
        _progress.stop()
    _progress, _sweep_task = None, None
