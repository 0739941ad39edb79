"""`python -m experiments.collect results_dir=…`: one table of runs, one of histories.

Reads ${results_dir}/runs/*/ and writes ${results_dir}/summary.parquet and
${results_dir}/history.parquet (see store.collect). Incomplete run folders
are skipped and named in one line; failed runs are collected and named.

keep_tabled=true also keeps the runs of the existing tables that have no run
folder here: a committed study (results/reference) keeps its tables, not its
run folders, and new runs collected beside it must not drop it.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from dataclasses import dataclass
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from experiments.app import progress
from experiments.app.command import make_main
from experiments.store.collect import collect_runs, list_ids, validate, with_tabled
from experiments.store.results import atomic_write_parquet


@dataclass
class CollectConfig:
    results_dir: str = "results"
    keep_tabled: bool = False  # keep tabled runs that have no run folder here


ConfigStore.instance().store(name="collect_schema", node=CollectConfig)


def run(cfg: DictConfig) -> None:
    summary, history, incomplete = collect_runs(cfg.results_dir)
    root = Path(cfg.results_dir)
    if incomplete:
        progress.say(f"collect: {len(incomplete)} incomplete run folder"
                     f"{'s' if len(incomplete) > 1 else ''} skipped: "
                     f"{list_ids([f'{rid} ({why})' for rid, why in sorted(incomplete.items())])} "
                     "(re-run the sweep to finish them)")
    failed = sorted(summary.loc[summary["status"] == "failed", "run_id"]) if len(summary) else []
    if failed:
        progress.say(f"collect: {len(failed)} failed run{'s' if len(failed) > 1 else ''} "
                     f"collected with status failed: {list_ids(failed)} "
                     "(re-run the sweep to retry them)")
    if cfg.keep_tabled:
        summary, history, kept = with_tabled(summary, history, root)
        progress.say(f"collect: kept {kept} run{'s' if kept != 1 else ''} of the existing tables "
                     "that have no run folder here (keep_tabled=true)")
    atomic_write_parquet(root / "summary.parquet", summary)
    atomic_write_parquet(root / "history.parquet", history)
    counts = summary["status"].value_counts().to_dict() if len(summary) else {}
    progress.say(f"collected {len(summary)} runs ({counts}) and {len(history)} history rows "
                 f"into {root / 'summary.parquet'} and {root / 'history.parquet'}")


main = make_main("collect", run, validate)

if __name__ == "__main__":
    main()
