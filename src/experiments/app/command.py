"""A console entry point from a command's three parts: its config name, its
`run(cfg)` and its validator. Pre-flight first, then Hydra, all of it under the
interrupt guard so that Ctrl-C anywhere ends in one line. A signal is held while
Hydra's own code runs in this process and taken in `run` (see app.interrupt)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from contextlib import nullcontext
from typing import Callable

from omegaconf import DictConfig

from experiments.app import config  # noqa: F401 - registers the schemas (config.register_schemas)
from experiments.app import interrupt
from experiments.app.errors import CONF_DIR, ConfigError, fail, fault, fault_line
from experiments.app.preflight import SweepValidator, Validator, check_command_line


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
            except ConfigError as exc:  # a refusal only the job could see (it reads the folder): exit 2
                _drop_own_output(cfg.get("results_dir"))
                fail(str(exc))
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


def _drop_own_output(results_dir) -> None:
    """Remove the folder Hydra made for this job (its log, nothing else) and the parents it made
    for it under results_dir, so that a refused job leaves the results folder as it found it."""
    from hydra.core.hydra_config import HydraConfig

    try:
        folder = Path(HydraConfig.get().runtime.output_dir)
    except (ValueError, AttributeError):  # no Hydra job around this call
        return
    if any(p.suffix != ".log" or p.is_dir() for p in folder.glob("*")):
        return  # something else was written there: not Hydra's alone
    logging.shutdown()  # the log file is open
    for log in folder.glob("*.log"):
        log.unlink(missing_ok=True)
    top = Path(results_dir).resolve() if results_dir else None
    while folder.resolve() != top and folder != folder.parent:
        try:
            folder.rmdir()
        except OSError:  # not empty (earlier jobs' folders) or not ours
            return
        folder = folder.parent
