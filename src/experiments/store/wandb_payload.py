"""What the W&B mirror sends: history columns under sectioned W&B keys
(`val/accuracy`, `attn/entropy`) and the summary's numbers and strings.
Pure functions of a row; no wandb import."""
from __future__ import annotations

import math
import numbers
import re
from typing import Any, Mapping

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
        "entropy_norm", "saturation", "jacobian_norm_mean", "jacobian_norm_median", "temperature")},
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
