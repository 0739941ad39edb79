"""Shared entry point of plot, report and dashboard: Hydra compose, one-line errors, exit 2.

Hydra's compose API (not @hydra.main) so that nothing is written before the
results folder is checked, and so that a bad override, a missing, empty or
read-only folder, or a table that cannot be read is one line on stderr with
exit code 2 rather than a traceback. Every command loads its tables (here, with
the primary condition the config names) before it writes anything, so a
malformed file or a primary condition with no runs stops it with nothing written.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from attention.checks import check
from experiments.analysis import results as analysis_results
from experiments.analysis.tables import load, steps_to
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts import top_up
from experiments.analysis.verdicts.top_up import TwoStage, check_design
from experiments.store.collect import Incomplete, check_folder, run_folders
from experiments.app.analysis_schema import PRIMARY_METRICS, AnalysisConfig, TaskDeclaration
from experiments.app.errors import CONF_DIR, ConfigError, explain, fault_line
from experiments.app.preflight import check_output_dir, check_path_length, check_single_values, path_exists


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


# A results folder may name its own primary condition in this file (a study of several
# tasks, e.g. results/reference), so that every command, and the stale-report test, reads
# the folder the same way without the key being repeated on each command line.
FOLDER_CONFIG = "analysis.yaml"
FOLDER_KEYS = ("primary_optimizer", "primary_task")


def folder_overrides(results_dir: str, argv: Sequence[str]) -> list[str]:
    """Overrides from <results_dir>/analysis.yaml for the keys the command line leaves unset."""
    path = Path(results_dir) / FOLDER_CONFIG
    if not path_exists(path):
        return []
    if not path.is_file():
        raise ConfigError(f"{path}: must be a YAML file (setting {', '.join(FOLDER_KEYS)}), not a folder "
                          "or another kind of file; move it away")
    try:
        given = OmegaConf.to_container(OmegaConf.load(path)) or {}
    except Exception as e:
        raise ConfigError(f"{path}: not readable as YAML ({_first_line(e)})") from None
    if not isinstance(given, dict) or set(given) - set(FOLDER_KEYS):
        raise ConfigError(f"{path}: may set only {', '.join(FOLDER_KEYS)}; got {given!r}")
    for key, value in given.items():
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{path}: {key}: must be a name or null, got {value!r}")
    on_command_line = {a.split("=", 1)[0].lstrip("+~") for a in argv}
    return [f"{k}={'null' if v is None else v}" for k, v in given.items() if k not in on_command_line]


def compose_config(argv: Sequence[str]) -> AnalysisConfig:
    check_single_values(list(argv))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="analysis"):
        cfg = _compose(list(argv))
        unknown = sorted(set(cfg.keys()) - set(AnalysisConfig.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"{unknown[0]}: unknown key; allowed: {', '.join(AnalysisConfig.__dataclass_fields__)}")
        extra = folder_overrides(str(cfg.results_dir), argv)
        if extra:
            try:
                cfg = compose(config_name="analysis", overrides=[*argv, *extra])
            except Exception as e:  # noqa: BLE001 - a value Hydra's grammar or the schema refuses
                raise ConfigError(f"{Path(str(cfg.results_dir)) / FOLDER_CONFIG}: {explain(e)}") from None
    check_declared("alike_margin", cfg.alike_margin, "a finite number > 0 (AUC)", lambda x: x > 0)
    check_declared("learned_fraction", cfg.learned_fraction, "a number in (0, 1]", lambda x: 0 < x <= 1)
    if str(cfg.comparator_learned) not in qp.COMPARATOR_GATES:
        raise ConfigError(f"comparator_learned: must be one of {', '.join(qp.COMPARATOR_GATES)}, "
                          f"got {cfg.comparator_learned!r}")
    check_alike("", cfg.alike_d_ks, cfg.alike_share)
    if str(cfg.reference_variant) not in load.VARIANTS:
        raise ConfigError(f"reference_variant: unknown variant {cfg.reference_variant!r}; allowed: "
                          f"{', '.join(load.VARIANTS)}")
    tasks = {str(name): _task_declaration(str(name), decl) for name, decl in cfg.tasks.items()}
    if cfg.confirm_seeds_from is not None:
        check_declared("confirm_seeds_from", cfg.confirm_seeds_from, "a whole number >= 1 or null",
                       lambda x: x >= 1 and float(x).is_integer())
    return AnalysisConfig(results_dir=str(cfg.results_dir), primary_optimizer=str(cfg.primary_optimizer),
                          primary_task=None if cfg.primary_task is None else str(cfg.primary_task),
                          alike_margin=float(cfg.alike_margin), alike_d_ks=[int(d) for d in cfg.alike_d_ks],
                          alike_share=float(cfg.alike_share), learned_fraction=float(cfg.learned_fraction),
                          comparator_learned=str(cfg.comparator_learned),
                          confirm_seeds_from=None if cfg.confirm_seeds_from is None else int(cfg.confirm_seeds_from),
                          reference_variant=str(cfg.reference_variant), tasks=tasks,
                          two_stage=two_stage_of(cfg.two_stage))


def two_stage_of(node) -> TwoStage:
    """The declared two-stage design, checked (one line naming the field out of range)."""
    design = TwoStage(int(node.first_seeds), [float(a) for a in node.alphas], float(node.power),
                      int(node.max_seeds))
    try:
        check_design(design)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return design


def _task_declaration(name: str, decl) -> TaskDeclaration:
    """One task's declaration, checked: a registered task, a known metric, numbers in range."""
    from experiments.tasks import TASKS

    if name not in TASKS:
        raise ConfigError(f"tasks: unknown task {name!r}; allowed: {', '.join(sorted(TASKS))}")
    check(decl.primary_metric in PRIMARY_METRICS, f"tasks.{name}.primary_metric",
          f"must be one of {', '.join(PRIMARY_METRICS)}", decl.primary_metric, error=ConfigError)
    if decl.alike_margin is not None:
        check_declared(f"tasks.{name}.alike_margin", decl.alike_margin, "a finite number > 0 (AUC) or null",
                       lambda x: x > 0)
    check_alike(f"tasks.{name}.", decl.alike_d_ks, decl.alike_share)
    if decl.threshold is not None:
        check_declared(f"tasks.{name}.threshold", decl.threshold, "a number in (0, 1] or null",
                       lambda x: 0 < x <= 1)
    return TaskDeclaration(str(decl.primary_metric),
                           None if decl.alike_margin is None else float(decl.alike_margin),
                           None if decl.alike_d_ks is None else [int(d) for d in decl.alike_d_ks],
                           None if decl.alike_share is None else float(decl.alike_share),
                           None if decl.threshold is None else float(decl.threshold))


def check_alike(prefix: str, d_ks, share) -> None:
    """alike_d_ks: a non-empty list of distinct powers of two; alike_share: in (0, 1] (None: not declared)."""
    if d_ks is not None:
        given = list(d_ks)
        check(bool(given) and len(set(given)) == len(given) and all(d >= 1 and d & (d - 1) == 0 for d in given),
              f"{prefix}alike_d_ks", "must be a non-empty list of distinct powers of two (swept d_k)", given,
              error=ConfigError)
    if share is not None:
        check_declared(f"{prefix}alike_share", share, "a number in (0, 1]", lambda x: 0 < x <= 1)


def check_declared(key: str, value, allowed: str, ok) -> None:
    check(isinstance(value, (int, float)) and math.isfinite(value) and ok(value), key, f"must be {allowed}", value,
          error=ConfigError)


def _compose(argv: list[str]):
    """The analysis config; an error that the config file itself causes (it fails without
    any override too) names the file."""
    try:
        return compose(config_name="analysis", overrides=argv)
    except Exception as e:  # noqa: BLE001 - Hydra/OmegaConf raise many types
        try:
            compose(config_name="analysis")
        except Exception as own:  # noqa: BLE001
            raise ConfigError(f"{Path(CONF_DIR) / 'analysis.yaml'}: {explain(own)}") from None
        raise e


def load_configured(cfg: AnalysisConfig) -> load.Results:
    """The results folder's tables with the primary condition the config names."""
    res = analysis_results.load_results(cfg.results_dir, cfg.primary_optimizer, cfg.primary_task,
                                        cfg.confirm_seeds_from)
    res = restate_thresholds(res, cfg.tasks)
    return dataclasses.replace(res, declared={"alike_margin": cfg.alike_margin,
                                              "alike_d_ks": list(cfg.alike_d_ks), "alike_share": cfg.alike_share,
                                              "learned_fraction": cfg.learned_fraction,
                                              "comparator_learned": cfg.comparator_learned,
                                              "reference_variant": cfg.reference_variant,
                                              "tasks": {k: dataclasses.asdict(v) for k, v in cfg.tasks.items()},
                                              top_up.RECORD: top_up.stages_of(confirm_record(res.root), cfg.two_stage)})


def confirm_record(root: Path) -> dict:
    """The folder's confirm.json (experiments.confirm), {} where there is none."""
    path = Path(root) / "confirm.json"
    if not path_exists(path):
        return {}
    if not path.is_file():
        raise ConfigError(f"{path}: must be the JSON record of experiments.confirm, not a folder; move it away")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not readable as JSON ({_first_line(e)}); move it away to choose "
                          "the rates again") from None
    if not isinstance(record, dict) or not isinstance(record.get("cells", []), list):
        raise ConfigError(f"{path}: not a record of experiments.confirm (a JSON object whose 'cells' is a list); "
                          "move it away to choose the rates again")
    return record


def restate_thresholds(res: load.Results, tasks: dict[str, TaskDeclaration]) -> load.Results:
    """The runs of each task with a declared "steps to" threshold, counted at it from their
    recorded curves (tables.steps_to), whatever train.threshold they trained with."""
    history = res.history_all if res.history_all is not None else res.history
    summary = res.summary
    if summary is None or history is None:
        return res
    for name, decl in tasks.items():
        if decl.threshold is not None:
            summary = steps_to.restated(summary, history, name, decl.threshold)
    return dataclasses.replace(res, summary=summary)


def entry(name: str, task: Callable[[load.Results], None], argv: Sequence[str] | None = None) -> int:
    """Compose the config, check results_dir, load its tables, run task(results); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(f"usage: python -m experiments.{name} results_dir=<results folder> "
              f"[primary_optimizer=adam] [primary_task=<task>] [alike_margin=0.05] [learned_fraction=0.25] "
              f"[reference_variant={REFERENCE}]  (config: {CONF_DIR}/analysis.yaml)")
        return 0
    try:
        cfg = compose_config(argv)
    except ConfigError as e:  # the folder's own analysis.yaml
        return _usage_error(str(e))
    except Exception as e:  # Hydra's own errors: bad override, unknown key, wrong type
        return _usage_error(explain(e, argv))
    try:
        check_results_dir(cfg.results_dir)
        task(load_configured(cfg))
        warn_untabled(Path(cfg.results_dir))  # last: an error stays the one line
    except (ConfigError, load.ResultsFileError) as e:
        return _usage_error(str(e))
    except OSError as e:  # an output in the way (a folder named REPORT.md), a full disk, a file gone
        print(f"error: {name}: {fault_line(e, cfg.results_dir)}; nothing of the tables was changed",
              file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {name}: {type(e).__name__}: {_first_line(e)} (HYDRA_FULL_ERROR=1 for the traceback)",
              file=sys.stderr)
        return 1
    return 0


def check_results_dir(results_dir: str) -> Path:
    """The results folder, if it exists, can be written and holds at least one table."""
    root = Path(results_dir)
    if results_dir.strip():
        check_path_length("results_dir", results_dir)
    if results_dir.strip() and not root.exists():
        raise ConfigError(f"results_dir: {results_dir!r} does not exist (pass results_dir=<folder "
                          "with summary.parquet>)")
    check_output_dir("results_dir", results_dir)  # empty, a file, not writable
    tables = [f"{name}.parquet" for name in load.TABLES]
    if not any((root / t).exists() for t in tables):
        raise ConfigError(f"results_dir: {results_dir!r} holds none of {', '.join(tables)} "
                          "(run experiments.collect, probe or cost first)")
    return root


def untabled_runs(root: Path) -> int:
    """Finished run folders under root/runs that summary.parquet lacks, or that finished
    after it was written (a re-run): what `collect` would add."""
    table = root / "summary.parquet"
    try:
        tabled = set(pd.read_parquet(table, columns=["run_id"])["run_id"]) if table.is_file() else set()
        written = table.stat().st_mtime if table.is_file() else float("-inf")
    except Exception:  # noqa: BLE001 - load_results has read it; a race is no reason to stop
        return 0
    count = 0
    for folder in run_folders(root):
        try:
            check_folder(folder)  # what collect would table (RECORDED, files there)
            changed = (folder / "summary.json").stat().st_mtime > written
        except (Incomplete, OSError):  # collect names these; not counted here
            continue
        count += folder.name not in tabled or changed
    return count


def warn_untabled(root: Path) -> None:
    n = untabled_runs(root)
    if n:
        print(f"warning: {n} finished run folder{'s' if n > 1 else ''} under {root / 'runs'} "
              f"{'are' if n > 1 else 'is'} not in the tables (or changed since); these results leave "
              f"{'them' if n > 1 else 'it'} out: run `python -m experiments.collect "
              f"results_dir={root}` first", file=sys.stderr)


def _usage_error(message: str) -> int:
    line = " ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"error: {line}", file=sys.stderr)
    return 2
