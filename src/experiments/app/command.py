"""A console entry point from a command's three parts: its config name, its
`run(cfg)` and its validator. Pre-flight first, then Hydra, all of it under the
interrupt guard so that Ctrl-C anywhere ends in one line. A signal is held while
Hydra's own code runs in this process and taken in `run` (see app.interrupt)."""
from __future__ import annotations

import errno
import logging
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

from omegaconf import DictConfig

from experiments.app import interrupt
from experiments.app.errors import CONF_DIR, fault
from experiments.app.preflight import SweepValidator, Validator, check_command_line


def _mount(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def fault_line(exc: OSError, results_dir: str | None) -> str:
    """One line naming the file (or results_dir) and the cause; for a full disk,
    the disk too. Every file is written atomically: what was there is intact."""
    where = exc.filename or results_dir or "."
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc):
        folder = Path(results_dir or where)
        return (f"no space left on the disk mounted at {_mount(folder)} while writing to "
                f"{where}; free space there and re-run (results written before are intact)")
    return f"{where}: {exc.strerror or exc}"


def make_main(config_name: str, run: Callable[[DictConfig], object], validate: Validator,
              validate_sweep: SweepValidator | None = None) -> Callable[[], None]:
    """A console entry point: pre-flight (each job, then `validate_sweep` over all
    of them), then `run(cfg)` under hydra.main."""
    import hydra

    @hydra.main(config_path=CONF_DIR, config_name=config_name, version_base="1.3")
    def _hydra_main(cfg: DictConfig):
        with interrupt.interruptible():
            try:
                return run(cfg)
            except OSError as exc:  # the machine's fault, not the user's: exit 1
                fault(fault_line(exc, cfg.get("results_dir")))

    def main() -> None:
        # jax logs at INFO that it found no TPU; Hydra's logging setup would show it
        logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)
        with interrupt.guard(config_name), interrupt.deferred():  # Ctrl-C in the pre-flight too
            jobs_here = check_command_line(config_name, sys.argv[1:], validate, validate_sweep)
            # a launcher that runs the jobs in other processes leaves this one waiting
            # on them, in the launcher's code: a stop must reach it at once
            with nullcontext() if jobs_here else interrupt.interruptible():
                _hydra_main()

    return main
