"""Weights & Biases mirror of the local results.

The parquet/json files under ``${results_dir}/runs/<run_id>/`` are the primary
copy; this module only mirrors them to W&B. Hence two rules:

* offline by default: runs land in ``${results_dir}/wandb/offline-run-*`` and
  can be uploaded later with ``wandb sync``;
* the mirror never breaks or blocks training: the first exception raised by
  wandb is reported as one warning and the mirror becomes a no-op.

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

import math
import numbers
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

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


def validate_logger(cfg: Any) -> None:
    """Raise a one-line ValueError naming the key for a bad name or mode."""
    for key, allowed in (("name", LOGGER_NAMES), ("mode", MODES)):
        value = getattr(cfg, key)
        if value not in allowed:
            raise ValueError(f"logger.{key}: must be one of {', '.join(allowed)}; got {value!r}")


# --- column -> W&B key ------------------------------------------------------

# History columns (flat snake_case, docs/ARCHITECTURE.md) to W&B keys with a
# section prefix, so the W&B UI groups panels by section.
RENAMED = {
    "train_loss": "train/loss",
    "update_norm": "train/update_norm",
    "loss": "val/loss",
    "accuracy": "val/accuracy",
}
SECTION_BY_STAT = {
    **{name: "attn" for name in (
        "logit_mean", "logit_var", "logit_std", "logit_absmax", "entropy",
        "entropy_norm", "saturation", "jacobian_norm_mean", "jacobian_norm_median")},
    **{name: "grad" for name in (
        "grad_norm", "grad_norm_q", "grad_norm_k", "grad_norm_v", "grad_norm_attn")},
}
# Keys and labels of a history row: constant within a run (they belong in the
# config) or the step itself (passed as W&B's step).
NOT_LOGGED = {"run_id", "attention", "d_k", "seed", "task", "optimizer", "experiment", "step"}
# Per-layer/head columns: entropy_l0h1 (statistics), grad_norm_q_l0 (gradients).
_SUFFIX = re.compile(r"^(?P<stat>.+?)_l\d+(h\d+)?$")


def wandb_key(column: str) -> str | None:
    """W&B key for a history column, or None when it is not logged per step."""
    if column in NOT_LOGGED:
        return None
    if column in RENAMED:
        return RENAMED[column]
    match = _SUFFIX.match(column)
    stat = match["stat"] if match else column
    if stat in SECTION_BY_STAT:
        return f"{SECTION_BY_STAT[stat]}/{column}"
    return f"other/{column}"


def _is_number(value: Any) -> bool:
    # Python/numpy scalars, and 0-d numpy/jax arrays fetched from the device.
    # bools are flags, not measurements.
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Number) or getattr(value, "ndim", None) == 0


def eval_payload(row: Mapping[str, Any]) -> dict[str, float]:
    """The numeric columns of one history row under their W&B keys."""
    payload = {}
    for column, value in row.items():
        key = wandb_key(column)
        if key is not None and _is_number(value):
            payload[key] = float(value)
    return payload


def summary_payload(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Numbers and strings of the summary; None and NaN (e.g. steps_to_threshold
    never reached) are left out rather than shown as a misleading value."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if isinstance(value, (str, bool)):
            out[key] = value
        elif _is_number(value):
            value = value.item() if hasattr(value, "item") else value
            if not (isinstance(value, float) and math.isnan(value)):
                out[key] = value
    return out


# --- the mirror ----------------------------------------------------------------


class Mirror:
    """One W&B run, or a no-op when ``run`` is None. Never raises from wandb."""

    def __init__(self, run: Any = None):
        self._run = run

    @property
    def active(self) -> bool:
        return self._run is not None

    def log_eval(self, row: Mapping[str, Any], step: int) -> None:
        if self._run is not None:
            self._guard("log", lambda: self._run.log(eval_payload(row), step=int(step)))

    def finish(self, summary: Mapping[str, Any] | None = None, exit_code: int = 0) -> None:
        """Write the summary and close the run; a second call does nothing."""
        run = self._run
        if run is None:
            return

        def close():
            run.summary.update(summary_payload(summary or {}))
            run.finish(exit_code=exit_code)

        self._guard("finish", close)
        self._run = None

    def _guard(self, what: str, call) -> None:
        try:
            call()
        except Exception as error:  # noqa: BLE001 - any wandb failure must not reach training
            run, self._run = self._run, None
            warnings.warn(
                f"W&B mirror off after error in {what}: {type(error).__name__}: {error} "
                "(local results are unaffected)", RuntimeWarning, stacklevel=3)
            if what != "finish":
                try:  # best effort, so the run is not left open in wandb-core
                    run.finish(exit_code=1)
                except Exception:  # noqa: BLE001
                    pass

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
    init_timeout=60.0, finish_timeout=60.0,
)


def _plain(config: Any) -> dict:
    """A plain dict for wandb (which would otherwise keep DictConfig proxies)."""
    from omegaconf import OmegaConf

    if OmegaConf.is_config(config):
        return OmegaConf.to_container(config, resolve=True)
    return dict(config)


def open_run(logger_cfg: Any, *, run_id: str, results_dir: str | Path,
             config: Mapping[str, Any], tags: list[str] | None = None,
             group: str | None = None) -> Mirror:
    """Open the W&B run mirroring local run ``run_id``, or a no-op Mirror.

    ``id=run_id`` with ``resume="allow"`` maps a re-run of the same config to
    the same W&B run. ``reinit="create_new"`` lets Hydra multirun open one run
    per job in one process without touching the global ``wandb.run``.
    """
    validate_logger(logger_cfg)
    if logger_cfg.name == "none" or logger_cfg.mode == "disabled":
        return Mirror()
    results_dir = Path(results_dir)
    try:
        # W&B appends "wandb/" to dir: files go to ${results_dir}/wandb/.
        (results_dir / "wandb").mkdir(parents=True, exist_ok=True)
        import wandb

        run = wandb.init(
            id=run_id, name=run_id, resume="allow", reinit="create_new",
            dir=str(results_dir), mode=logger_cfg.mode,
            project=logger_cfg.project, entity=logger_cfg.entity,
            group=logger_cfg.group or group, job_type=logger_cfg.job_type,
            tags=sorted({*logger_cfg.tags, *(tags or [])}),
            config=_plain(config), settings=wandb.Settings(**_SETTINGS),
        )
    except Exception as error:  # noqa: BLE001 - see module docstring
        warnings.warn(
            f"W&B mirror off: wandb.init failed: {type(error).__name__}: {error} "
            "(local results are unaffected)", RuntimeWarning, stacklevel=2)
        return Mirror()
    return Mirror(run)
