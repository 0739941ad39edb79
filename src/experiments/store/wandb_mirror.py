"""Weights & Biases mirror of the local results.

The parquet/json files under ``${results_dir}/runs/<run_id>/`` are the primary
copy; this module only mirrors them to W&B. Hence two rules:

* offline by default: runs land in ``${results_dir}/wandb/offline-run-*`` and
  can be uploaded later with ``wandb sync``;
* the mirror never breaks or blocks training: the first exception raised by
  wandb is reported as one warning line and the mirror becomes a no-op.

``logger.mode=online`` degrades to offline, with one warning line, when no API
key is configured (checked at once, before any prompt could block a sweep) or
when the server does not answer within ``logger.init_timeout`` seconds; the
rest of the process then stays offline. A re-run of a run id replaces the
offline record of its earlier, unfinished or overwritten attempt, so that
``wandb sync`` uploads one record per run; the earlier record is only set aside
until the new attempt has finished well (a failed overwrite keeps it). The API
key is never written: it is only looked for (``wandb.login(prompt=False,
verify=False)``), warnings are scrubbed of it, and the config mirrored is the
run's resolved config, which holds no credential (tests/test_wandb_faults.py
greps for a fake key).

Usage (one run per Hydra job; many jobs may share one process)::

    with open_run(cfg.logger, run_id=run_id, results_dir=cfg.results_dir,
                  config=resolved, tags=[...], group=experiment) as mirror:
        for row in evaluations:
            mirror.log_eval(row, step=row["step"])
        mirror.finish(summary)

``wandb`` is imported only when a run is really opened, so ``logger=none``
costs nothing.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from experiments.store.wandb_attempts import Earlier, attempts, remove
from experiments.store.wandb_payload import eval_payload, summary_payload

Shield = Callable[[], AbstractContextManager]  # holds a signal until a short step ends

LOGGER_NAMES = ("wandb", "none")
MODES = ("offline", "online", "disabled")


@dataclass
class LoggerConfig:
    """Schema of the ``logger`` config group (conf/logger/*.yaml)."""

    name: str = "wandb"
    mode: str = "offline"
    project: str = "attention-scaling"
    entity: Optional[str] = None
    group: Optional[str] = None
    job_type: str = "train"
    tags: list[str] = field(default_factory=list)
    init_timeout: float = 15.0  # seconds an online wandb.init may wait before going offline


def validate_logger(cfg: Any) -> None:
    """Raise a one-line ValueError naming the key for a bad name, mode or timeout."""
    for key, allowed in (("name", LOGGER_NAMES), ("mode", MODES)):
        value = getattr(cfg, key)
        if value not in allowed:
            raise ValueError(f"logger.{key}: must be one of {', '.join(allowed)}; got {value!r}")
    if not cfg.init_timeout > 0:
        raise ValueError(f"logger.init_timeout: must be > 0 (seconds); got {cfg.init_timeout!r}")


def _redact(text: str) -> str:
    """Text safe to print: no API key, no password in a URL."""
    key = os.environ.get("WANDB_API_KEY")
    if key:
        text = text.replace(key, "***")
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def _warn(message: str) -> None:
    """One line on stderr (above the progress bars, which redirect stderr)."""
    print(f"warning: {_redact(message)}", file=sys.stderr, flush=True)


# --- the mirror ----------------------------------------------------------------


class Mirror:
    """One W&B run, or a no-op when ``run`` is None. Never raises from wandb."""

    def __init__(self, run: Any = None, shield: Shield = nullcontext,
                 earlier: Optional[Earlier] = None):
        self._run = run
        self._shield = shield
        self._earlier = earlier  # records of earlier attempts, set aside until finish

    @property
    def active(self) -> bool:
        return self._run is not None

    def log_eval(self, row: Mapping[str, Any], step: int) -> None:
        run = self._run
        if run is not None:
            self._guard("log", lambda: run.log(eval_payload(row), step=int(step)))

    def finish(self, summary: Mapping[str, Any] | None = None, exit_code: int = 0) -> None:
        """Write the summary and close the run; a second call does nothing. The close
        runs inside `shield()` (the app passes interrupt.deferred: a Ctrl-C or
        SIGTERM during the close waits for it): the run is never left half-closed."""
        run, self._run = self._run, None
        if run is None:
            return

        def close():
            run.summary.update(summary_payload(summary or {}))
            run.finish(exit_code=exit_code)

        with self._shield():
            if self._guard("finish", close):
                self._settle(exit_code == 0)

    def _settle(self, finished_well: bool) -> None:
        earlier, self._earlier = self._earlier, None
        if earlier is not None:
            earlier.settle(finished_well)

    def _guard(self, what: str, call) -> bool:
        try:
            call()
            return True
        except Exception as error:  # noqa: BLE001 - any wandb failure must not reach training
            run, self._run = self._run, None
            _warn(f"W&B mirror off after error in {what}: {_first_line(error)} "
                  "(local results are unaffected)")
            if run is not None:
                try:  # best effort, so the run is not left open in wandb-core
                    run.finish(exit_code=1)
                except Exception:  # noqa: BLE001
                    pass
            self._settle(False)
            return False

    def __enter__(self) -> "Mirror":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        # Any exception, KeyboardInterrupt included, marks the run failed; the
        # exception itself propagates (returning False).
        self.finish(exit_code=0 if exc_type is None else 1)
        return False


# Keep wandb fast and quiet: no console capture (progress bars stay readable),
# no system-metrics sampler, no git/pip/code/metadata probes, and bounded
# waits so an unreachable server in online mode cannot hang a job.
_SETTINGS = dict(
    silent=True, console="off", quiet=True,
    x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True,
    x_save_requirements=False, disable_git=True, disable_code=True, save_code=False,
    finish_timeout=60.0,
)
# Why this process mirrors offline although online was asked for (set once).
_offline_reason: str | None = None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _plain(config: Any) -> dict:
    """A plain dict for wandb (which would otherwise keep DictConfig proxies)."""
    from omegaconf import OmegaConf

    if OmegaConf.is_config(config):
        return OmegaConf.to_container(config, resolve=True)
    return dict(config)


def _go_offline(reason: str, results_dir: Path) -> None:
    global _offline_reason
    _offline_reason = reason
    _warn(f"W&B online mirror unavailable ({reason}); mirroring offline to "
          f"{results_dir / 'wandb'} instead for the rest of this command (upload later with "
          f"`wandb sync {results_dir / 'wandb'}/offline-run-*`; local results are unaffected)")


def _init(wandb, mode: str, timeout: float, results_dir: Path, run_id: str, **run_args):
    return wandb.init(id=run_id, name=run_id, resume="allow", reinit="create_new",
                      dir=str(results_dir), mode=mode,
                      settings=wandb.Settings(**_SETTINGS, init_timeout=timeout), **run_args)


def _init_online(wandb, logger_cfg: Any, results_dir: Path, run_id: str, **run_args):
    """An online run, or an offline one when no key is set or the server does not answer."""
    wandb.setup(wandb.Settings(silent=True))  # login below says nothing
    if _offline_reason is None and not wandb.login(prompt=False, verify=False):
        _go_offline("no API key: set WANDB_API_KEY or run `wandb login`", results_dir)
    if _offline_reason is not None:
        return _init(wandb, "offline", logger_cfg.init_timeout, results_dir, run_id, **run_args)
    before = attempts(results_dir / "wandb", "run", run_id)
    try:
        return _init(wandb, "online", logger_cfg.init_timeout, results_dir, run_id, **run_args)
    except Exception as error:  # noqa: BLE001 - unreachable, timed out, key refused
        # The failed run still holds its id in wandb-core: stop the service first.
        wandb.teardown()
        remove(attempts(results_dir / "wandb", "run", run_id) - before)
        _go_offline(f"wandb.init failed after at most {logger_cfg.init_timeout:g} s: "
                    f"{_first_line(error)}", results_dir)
    return _init(wandb, "offline", logger_cfg.init_timeout, results_dir, run_id, **run_args)


def open_run(logger_cfg: Any, *, run_id: str, results_dir: str | Path,
             config: Mapping[str, Any], tags: list[str] | None = None,
             group: str | None = None, shield: Shield = nullcontext) -> Mirror:
    """Open the W&B run mirroring local run ``run_id``, or a no-op Mirror.

    ``id=run_id`` with ``resume="allow"`` maps a re-run of the same config to
    the same W&B run. ``reinit="create_new"`` lets Hydra multirun open one run
    per job in one process without touching the global ``wandb.run``.
    """
    validate_logger(logger_cfg)
    if logger_cfg.name == "none" or logger_cfg.mode == "disabled":
        return Mirror()
    results_dir = Path(results_dir)
    run_args = dict(project=logger_cfg.project, entity=logger_cfg.entity,
                    group=logger_cfg.group or group, job_type=logger_cfg.job_type,
                    tags=sorted({*logger_cfg.tags, *(tags or [])}), config=_plain(config))
    earlier = None
    try:
        # W&B appends "wandb/" to dir: files go to ${results_dir}/wandb/.
        (results_dir / "wandb").mkdir(parents=True, exist_ok=True)
        earlier = Earlier.set_aside(results_dir / "wandb", run_id)
        import wandb

        if logger_cfg.mode == "online":
            run = _init_online(wandb, logger_cfg, results_dir, run_id, **run_args)
        else:
            run = _init(wandb, logger_cfg.mode, logger_cfg.init_timeout, results_dir, run_id,
                        **run_args)
    except Exception as error:  # noqa: BLE001 - see module docstring
        _warn(f"W&B mirror off: wandb.init failed: {_first_line(error)} "
              "(local results are unaffected)")
        if earlier is not None:
            earlier.settle(False)
        return Mirror()
    return Mirror(run, shield, earlier)
