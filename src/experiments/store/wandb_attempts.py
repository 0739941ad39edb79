"""W&B's offline records of a run id: found, set aside while a new attempt runs,
then dropped or put back.

wandb writes each attempt of a run to
${results_dir}/wandb/offline-run-<YYYYMMDD_HHMMSS>-<run_id>/.
`wandb sync .../offline-run-*` uploads every one it finds, so a run re-run must
leave one record: the earlier one is renamed to a hidden name while the new
attempt runs (`Earlier.set_aside`), removed when the new one has finished well,
and put back in its place otherwise, so that a failed overwrite keeps the old
run's record. Hidden names are what `wandb sync`'s glob skips.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path


OFFLINE = "offline-run"
EARLIER, FAILED = ".earlier", ".failed"  # suffixes of hidden records


def _attempts_named(name: str, run_id: str, prefix: str = OFFLINE) -> bool:
    return re.fullmatch(rf"{prefix}-\d{{8}}_\d{{6}}-{re.escape(run_id)}", name) is not None


def attempts(wandb_dir: Path, prefix: str, run_id: str) -> set[Path]:
    """W&B's folders of run_id: <prefix>-<YYYYMMDD_HHMMSS>-<run_id>."""
    return {p for p in wandb_dir.glob(f"{prefix}-*")
            if _attempts_named(p.name, run_id, prefix) and p.is_dir()}


def remove(folders: set[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _hide(folders, suffix: str) -> list[Path]:
    """Rename W&B folders to hidden names (`wandb sync`'s offline-run-* skips them)."""
    hidden = [f.with_name(f".{f.name}{suffix}") for f in sorted(folders)]
    for folder, name in zip(sorted(folders), hidden):
        remove({name})
        os.replace(folder, name)
    return hidden


def _hidden(wandb_dir: Path, run_id: str, suffix: str) -> list[Path]:
    return [p for p in wandb_dir.glob(f".{OFFLINE}-*{suffix}")
            if _attempts_named(p.name[1:-len(suffix)], run_id)]


@dataclass
class Earlier:
    """The offline records of a run id's earlier attempts, set aside while a new one
    runs. A failed attempt is hidden, not removed: wandb-core may still be flushing it."""
    wandb_dir: Path
    run_id: str
    aside: list[Path]

    @classmethod
    def set_aside(cls, wandb_dir: Path, run_id: str) -> "Earlier":
        put_back(wandb_dir, run_id)
        return cls(wandb_dir, run_id, _hide(attempts(wandb_dir, OFFLINE, run_id), EARLIER))

    def settle(self, finished_well: bool) -> None:
        """Drop the earlier records, or put them back in this attempt's place."""
        if finished_well:
            remove(set(self.aside))
        elif self.aside:
            _hide(attempts(self.wandb_dir, OFFLINE, self.run_id), FAILED)
            for folder in self.aside:
                os.replace(folder, folder.with_name(folder.name[1:-len(EARLIER)]))
        self.aside = []


def put_back(wandb_dir: Path, run_id: str) -> None:
    """Records that a killed attempt left aside are still the run's record: put them
    back in place of the killed attempt's own (the caller holds the run's claim)."""
    remove(set(_hidden(wandb_dir, run_id, FAILED)))
    Earlier(wandb_dir, run_id, _hidden(wandb_dir, run_id, EARLIER)).settle(False)
