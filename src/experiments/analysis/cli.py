"""Shared entry point of plot, report and dashboard: Hydra compose, one-line errors, exit 2.

Hydra's compose API (not @hydra.main) so that nothing is written before the
results folder is checked, and so that a bad override or a missing folder is
one line on stderr with exit code 2 rather than a traceback.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore

from experiments.cli import CONF_DIR, explain


@dataclass
class AnalysisConfig:
    results_dir: str = "results"


ConfigStore.instance().store(name="analysis_schema", node=AnalysisConfig)


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def compose_config(argv: Sequence[str]) -> AnalysisConfig:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="analysis"):
        cfg = compose(config_name="analysis", overrides=list(argv))
    return AnalysisConfig(results_dir=str(cfg.results_dir))


def entry(name: str, task: Callable[[Path], None], argv: Sequence[str] | None = None) -> int:
    """Compose the config, check results_dir, run task(results_dir); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(f"usage: python -m experiments.{name} results_dir=<results folder>  (config: {CONF_DIR}/analysis.yaml)")
        return 0
    try:
        cfg = compose_config(argv)
    except Exception as e:  # Hydra's own errors: bad override, unknown key, wrong type
        print(f"error: {explain(e)}", file=sys.stderr)
        return 2
    root = Path(cfg.results_dir)
    if not root.is_dir():
        print(f"error: {name}: results_dir '{root}' does not exist (pass results_dir=<folder with "
              "summary.parquet>)", file=sys.stderr)
        return 2
    try:
        task(root)
    except Exception as e:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {name}: {type(e).__name__}: {_first_line(e)} (HYDRA_FULL_ERROR=1 for the traceback)",
              file=sys.stderr)
        return 1
    return 0
