"""`python -m experiments.regenerate results_dir=… [key=value …]`: collect, plot, report and
dashboard of one results folder, from the folder alone (no W&B, no network).

    RESULTS=results/reference bash scripts/regenerate.sh keep_tabled=true
    python -m experiments.regenerate results_dir=results/mine primary_task=mqar

Each key goes to the steps that read it: collect's own (experiments.collect: results_dir,
keep_tabled) to collect, the analysis keys (conf/analysis.yaml: results_dir, primary_task,
alike_margin, …) to plot, report and dashboard. A key no step reads, or an analysis value the
analysis refuses, is one line and exit 2 before any step runs; a step that fails stops the
rest, and its exit code is this command's. A folder of the temperature study
(experiment=temperature) gets its own report after collect (experiments.temperature_report). A folder of tables alone (no run folders:
results/reference) skips collect and reads its tables as they are. A key given twice takes
its last value (scripts/regenerate.sh puts RESULTS first, so results_dir= on its command
line wins).
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pandas as pd

from experiments.app import analysis_cli
from experiments.app.errors import EXIT_USAGE, ConfigError, explain
from experiments.app.command_configs import CollectConfig
from experiments.analysis.tables import load
from experiments.analysis.tables.files import ResultsFileError
from experiments.store.collect import Incomplete, check_folder, run_folders

COLLECT_KEYS = tuple(f.name for f in dataclasses.fields(CollectConfig))
ANALYSIS_KEYS = tuple(f.name for f in dataclasses.fields(analysis_cli.AnalysisConfig))
STEPS = {"collect": COLLECT_KEYS, "plot": ANALYSIS_KEYS, "report": ANALYSIS_KEYS,
         "dashboard": ANALYSIS_KEYS}


def step_arguments(argv: list[str]) -> dict[str, list[str]]:
    """Each step's `key=value` arguments; ConfigError naming an argument that no step reads."""
    allowed = (f"allowed keys: {', '.join(COLLECT_KEYS)} (collect); {', '.join(ANALYSIS_KEYS)} "
               "(plot, report, dashboard)")
    given = {}
    for arg in argv:
        key = arg.split("=", 1)[0]
        if "=" not in arg:
            raise ConfigError(f"{arg}: expected key=value; {allowed}")
        if key not in COLLECT_KEYS + ANALYSIS_KEYS:
            raise ConfigError(f"{key}: unknown key; {allowed}")
        given[key] = arg
    return {step: [arg for key, arg in given.items() if key in keys] for step, keys in STEPS.items()}


def analysis_config(args: list[str]) -> analysis_cli.AnalysisConfig:
    """The analysis keys composed and checked as plot, report and dashboard will."""
    try:
        return analysis_cli.compose_config(args)
    except ConfigError:
        raise
    except Exception as e:  # Hydra's own errors: a wrong type, a bad override
        raise ConfigError(explain(e, args)) from None


def tables_alone(root: Path) -> bool:
    """Whether the results folder is its tables alone (a committed study keeps its tables,
    not its run folders): collect has nothing to add there, and would refuse."""
    return (root / "summary.parquet").is_file() and not run_folders(root)


def check_conditions(root: Path, cfg: analysis_cli.AnalysisConfig, keep_tabled: bool) -> None:
    """The primary condition the analysis keys name is one the folder holds (its finished run
    folders, and its tables where they are kept), checked before collect rewrites anything."""
    pairs = set()
    for folder in run_folders(root):
        try:
            summary = check_folder(folder)
        except Incomplete:  # collect names it; it is not a condition here
            continue
        pairs.add((str(summary.get("task")), str(summary.get("optimizer"))))
    table = root / "summary.parquet"
    if (keep_tabled or not pairs) and table.is_file():
        try:
            tabled = pd.read_parquet(table, columns=["task", "optimizer"])
        except Exception:  # noqa: BLE001 - a table the steps refuse in their own words
            return
        pairs |= set(zip(tabled["task"].astype(str), tabled["optimizer"].astype(str)))
    if pairs:
        load.check_primary(pairs, cfg.primary_optimizer, cfg.primary_task, root, where=f"the runs of {root}")


def run_step(step: str, args: list[str]) -> int:
    """`python -m experiments.<step> args`; its exit code. A Ctrl-C reaches the step too,
    which ends in its own line: this waits for it rather than leave it behind."""
    with subprocess.Popen([sys.executable, "-m", f"experiments.{step}", *args]) as proc:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            return proc.wait()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    try:
        steps = step_arguments(argv)
        cfg = analysis_config(steps["report"])
        root = Path(cfg.results_dir)
        check_conditions(root, cfg, keep_tabled="keep_tabled=true" in [a.lower() for a in steps["collect"]])
    except (ConfigError, ResultsFileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if tables_alone(root):
        del steps["collect"]
        print(f"regenerate: no run folders under {root / 'runs'} to collect; the tables there are "
              "read as they are", file=sys.stderr)
    for step, args in steps.items():
        if step != "collect" and temperature_study(root):  # its own reading: conf/temperature.yaml
            return run_step("temperature_report", [f"results_dir={cfg.results_dir}"])
        code = run_step(step, args)
        if code:
            return code
    return 0


TEMPERATURE_EXPERIMENTS = ("temperature", "temperature_lr_wide", "temperature_mqar", "temperature_qk_rms",
                           "temperature_qk_rms_lr_wide")


def temperature_study(root: Path) -> bool:
    """Whether the folder's tables are the temperature study's (experiment=temperature alone, or one
    of its arms alone: TEMPERATURE_EXPERIMENTS)."""
    try:
        kinds = set(pd.read_parquet(root / "summary.parquet", columns=["experiment"])["experiment"].dropna())
    except Exception:  # noqa: BLE001 - no table, or one the steps refuse in their own words
        return False
    return len(kinds) == 1 and next(iter(kinds)) in TEMPERATURE_EXPERIMENTS


if __name__ == "__main__":
    sys.exit(main())
