"""Collect: the run folders of a results folder as one table of runs and one of histories.

Reads ${results_dir}/runs/*/ and writes ${results_dir}/summary.parquet (one
row per run: summary metrics and the flattened config, dotted keys, and the
run's `status`: completed | diverged | pruned | failed) and ${results_dir}/history.parquet
(every evaluation row of every run).

A run folder that cannot be read as a whole (no summary.json, a summary.json
that is not JSON or says the run is still running, no config.yaml or an
unreadable one, an unreadable history.parquet) is incomplete: it is skipped and named in one
line, never a crash. A failed run is collected with status failed and named
too (a relaunch of the sweep retries it).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.store.results import FINISHED

RECORDED = ("completed", "diverged", "pruned", "failed")  # statuses a finished job writes
ENDED = FINISHED + ("pruned",)  # a run with nothing left to train (pruned: while train.prune is on)
LISTED = 5  # run ids named in a report line before "..."


def flatten(tree: dict, prefix: str = "") -> dict:
    """A config tree as the tables' columns: dotted keys, lists as JSON text."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat


def run_folders(results_dir: str | Path) -> list[Path]:
    return sorted(p for p in (Path(results_dir) / "runs").glob("*") if p.is_dir())


class Incomplete(Exception):
    """A run folder that cannot be collected; the message says why."""


def _read_summary(folder: Path) -> dict:
    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise Incomplete("no summary.json") from None
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise Incomplete("summary.json is not JSON") from None
    if not isinstance(summary, dict):
        raise Incomplete("summary.json is not a JSON object")
    if summary.get("status") not in RECORDED:
        raise Incomplete(f"status {summary.get('status')!r}")
    return summary


def _read_config(folder: Path) -> dict:
    path = folder / "config.yaml"
    if not path.exists():  # what the run was is unknown: it could not be told apart from the others
        raise Incomplete("no config.yaml")
    try:
        config = OmegaConf.to_container(OmegaConf.load(path))
    except Exception:  # yaml and OmegaConf errors come in many types
        raise Incomplete("config.yaml is not readable") from None
    if not isinstance(config, dict):
        raise Incomplete("config.yaml is not a mapping")
    return config


def _read_history(folder: Path, status: str) -> pd.DataFrame | None:
    path = folder / "history.parquet"
    if not path.exists():
        if status == "failed":  # may have failed before its first evaluation
            return None
        raise Incomplete("no history.parquet")
    try:
        return pd.read_parquet(path)
    except Exception:  # pyarrow's errors for a truncated or foreign file vary
        raise Incomplete("history.parquet is not readable") from None


def check_folder(folder: Path) -> dict:
    """The summary of a run folder that looks complete (cheap: no parquet is read)."""
    summary = _read_summary(folder)
    if not (folder / "config.yaml").is_file():
        raise Incomplete("no config.yaml")
    path = folder / "history.parquet"
    if path.exists():
        import pyarrow.parquet as pq

        try:
            pq.read_metadata(path)
        except Exception:
            raise Incomplete("history.parquet is not readable") from None
    elif summary["status"] != "failed":
        raise Incomplete("no history.parquet")
    return summary


def finished_run(folder: Path, statuses: tuple[str, ...] = ENDED) -> dict | None:
    """The summary when `folder` holds a run ended with one of `statuses` whose files can be
    read (train skips or replaces it); None when it holds no recorded run or one to train
    again (failed); Incomplete, saying why, when it claims to but its files cannot be read."""
    if not (folder / "summary.json").exists():
        return None
    summary = check_folder(folder)
    return summary if summary["status"] in statuses else None


def is_finished(folder: Path) -> bool:
    try:
        return finished_run(folder) is not None
    except Incomplete:
        return False


def read_run(folder: Path) -> tuple[dict, pd.DataFrame | None]:
    """(summary row, history) of one run; Incomplete when a file is missing or unreadable."""
    summary = _read_summary(folder)
    config = _read_config(folder)
    history = _read_history(folder, summary["status"])
    summary = {"run_id": folder.name, **{k: v for k, v in summary.items() if k != "versions"}}
    # summary keys win over config keys of the same name
    return {**flatten(config), **summary}, history


def collect_runs(results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """(summary, history, {run id: why incomplete}) of the runs under results_dir (no writes)."""
    rows, histories, incomplete = [], [], {}
    for folder in run_folders(results_dir):
        try:
            row, history = read_run(folder)
        except Incomplete as why:
            incomplete[folder.name] = str(why)
            continue
        rows.append(row)
        if history is not None and len(history):
            histories.append(history)
    summary = pd.DataFrame(rows)
    history = pd.concat(histories, ignore_index=True) if histories else pd.DataFrame()
    if "steps_to_threshold" in summary:
        summary["steps_to_threshold"] = summary["steps_to_threshold"].astype("Int64")
    return summary, history, incomplete


def with_tabled(summary: pd.DataFrame, history: pd.DataFrame,
                results_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The collected runs plus the runs of results_dir's existing tables that
    have no run folder there (a committed study keeps its tables, not its
    folders: collecting new runs beside it must not drop it). A run with a
    folder is taken from its folder. Returns (summary, history, runs kept)."""
    root = Path(results_dir)
    if not (root / "summary.parquet").exists():
        return summary, history, 0
    tabled = pd.read_parquet(root / "summary.parquet")
    folders = {p.name for p in run_folders(root)}
    kept = tabled[~tabled["run_id"].isin(folders)]
    if not len(kept):
        return summary, history, 0
    kept_history = pd.DataFrame()
    if (root / "history.parquet").exists():
        old = pd.read_parquet(root / "history.parquet")
        kept_history = old[old["run_id"].isin(set(kept["run_id"]))]
    merged = pd.concat([summary, kept], ignore_index=True) if len(summary) else kept
    merged_history = pd.concat([history, kept_history], ignore_index=True) if len(history) \
        else kept_history
    return merged.reset_index(drop=True), merged_history.reset_index(drop=True), len(kept)


def list_ids(ids: list[str]) -> str:
    return ", ".join(ids[:LISTED]) + (f", ... ({len(ids) - LISTED} more)" if len(ids) > LISTED else "")


def validate(cfg: DictConfig) -> None:
    """results_dir holds run folders and at least one of them can be collected."""
    root = Path(cfg.results_dir)
    if not root.is_dir():
        raise ValueError(f"results_dir: {str(root)!r} does not exist (run experiments.train first, "
                         "or pass results_dir=<folder with runs/>)")
    folders = run_folders(root)
    if not folders:
        raise ValueError(f"results_dir: no run folders under {str(root / 'runs')!r} "
                         "(run experiments.train first)")
    why = {}
    for folder in folders:
        try:
            check_folder(folder)
            break
        except Incomplete as exc:
            why[folder.name] = str(exc)
    else:
        first = next(iter(why.items()))
        raise ValueError(f"results_dir: none of the {len(folders)} run folders under "
                         f"{str(root / 'runs')!r} is complete (e.g. {first[0]}: {first[1]}); "
                         "re-run the sweep to finish them")
    check_tabled(root, cfg.get("keep_tabled"), {p.name for p in folders})


def _tabled_ids(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    try:
        return set(pq.read_table(path, columns=["run_id"]).column("run_id").to_pylist())
    except Exception:  # pyarrow's errors for a foreign or truncated file vary
        raise ValueError(f"keep_tabled: {str(path)!r} is not a parquet table with a run_id "
                         "column, so the runs it holds cannot be kept; move it away, or "
                         "replace it with keep_tabled=false") from None


def check_tabled(root: Path, keep: bool | None, folders: set[str]) -> None:
    """No tabled run vanishes unasked. keep_tabled unset: refuse when runs of the
    existing summary.parquet have no run folder here (collecting would drop them),
    naming how many and the two flags; true: the tables must be readable (they are
    kept); false: they are replaced, as asked."""
    table = root / "summary.parquet"
    if keep is False or not table.exists():
        return
    gone = _tabled_ids(table) - folders
    if keep:
        if gone and (root / "history.parquet").exists():
            _tabled_ids(root / "history.parquet")
        return
    if gone:
        raise ValueError(f"keep_tabled: {len(gone)} run{'s' if len(gone) > 1 else ''} of "
                         f"{str(table)!r} ha{'ve' if len(gone) > 1 else 's'} no run folder under "
                         f"{str(root / 'runs')!r} and would be dropped from the tables "
                         f"(e.g. {sorted(gone)[0]}); keep_tabled=true keeps them, "
                         "keep_tabled=false drops them")
