"""`python -m experiments.collect results_dir=…`: one table of runs, one of histories.

Reads ${results_dir}/runs/*/ and writes ${results_dir}/summary.parquet and
${results_dir}/history.parquet (see store.collect). Incomplete run folders
are skipped and named in one line; failed runs are collected and named.

No tabled run vanishes unasked: when the existing summary.parquet holds runs
that have no run folder here, collect refuses in one line (exit 2) unless
told what to do with them. keep_tabled=true keeps them: a committed study
(results/reference) keeps its tables, not its run folders, and new runs
collected beside it must not drop it; keep_tabled=false drops them.

Two collects of one folder take turns (a lock in ${results_dir}/.staging), and
both tables are replaced together or, on a fault such as a full disk, not at
all. A run folder that a killed overwrite left aside is put back first.
"""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from pathlib import Path

from omegaconf import DictConfig

from experiments.app import progress
from experiments.app.command import make_main
from experiments.store import claim
from experiments.store.collect import collect_runs, is_finished, list_ids, validate, with_tabled
from experiments.store.results import atomic_write_parquets


def run(cfg: DictConfig) -> None:
    root = Path(cfg.results_dir)
    with claim.claim(root, "collect", wait=True):
        _collect(cfg, root)


def _collect(cfg: DictConfig, root: Path) -> None:
    claim.recover_all(root, is_finished)
    summary, history, incomplete = collect_runs(root)
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
    atomic_write_parquets({root / "summary.parquet": summary, root / "history.parquet": history})
    counts = summary["status"].value_counts().to_dict() if len(summary) else {}
    progress.say(f"collected {len(summary)} runs ({counts}) and {len(history)} history rows "
                 f"into {root / 'summary.parquet'} and {root / 'history.parquet'}")


main = make_main("collect", run, validate)

if __name__ == "__main__":
    main()
