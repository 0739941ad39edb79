"""The text cell's yardsticks: what a model that ignores context scores on the plays it is judged on.

A (task, optimizer) of a text task (TEXT_TASKS: task=charlm, next-character prediction on
Shakespeare) reports its bits per character beside the uniform guess and the unigram and
bigram models of its validation and test plays, counted on its training plays (tasks.plays).
The plays are the ones the runs' own config names (task.val_plays, task.test_plays,
task.corpus_dir in the summary), never a list written here, so a study on another split is
measured against its own split; each run records their baselines in its summary, so a folder
of runs on a corpus that has since moved is still measured.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from enum import Enum

import pandas as pd

TEXT_TASKS = ("charlm",)
SPLITS = ("val", "test")
PLAY_COLUMNS = {"val": "task.val_plays", "test": "task.test_plays"}
# the summary columns a text run records (tasks.charlm.yardsticks)
RECORDED = ("uniform_bpc", *(f"{s}_{m}_bpc" for s in SPLITS for m in ("unigram", "bigram")))


class NoBaselines(Enum):
    """Why a text cell has no baselines."""
    NO_PLAYS = "the runs' config names no plays"
    NO_CORPUS = "the plays the runs name cannot be read"


@dataclass(frozen=True)
class Baselines:
    """Bits per character of a guess that ignores context, per split ("val", "test"): uniform over
    the vocabulary, and unigram / bigram counted on the training plays (add-one smoothed)."""
    plays: dict[str, tuple[str, ...]]  # split -> its plays, by name
    uniform: float
    unigram: dict[str, float]
    bigram: dict[str, float]


def is_text(task: str) -> bool:
    return task in TEXT_TASKS


def _one(runs: pd.DataFrame, column: str):
    """The one value of a config column over the runs (consistency.unlike_runs has checked that
    the runs of one condition agree on it); None where absent or null."""
    if column not in runs:
        return None
    values = runs[column].dropna().unique()
    return values[0] if len(values) else None


def baselines_of(runs: pd.DataFrame) -> Baselines | NoBaselines:
    """The baselines of the plays that a text condition's runs (summary rows) name: as the runs'
    summaries record them (tasks.charlm.yardsticks), else counted from the corpus (runs recorded
    before the summary held them)."""
    named = [_one(runs, PLAY_COLUMNS[split]) for split in SPLITS]
    if any(v is None for v in named):
        return NoBaselines.NO_PLAYS
    recorded = {c: _one(runs, c) for c in RECORDED}
    if all(v is not None for v in recorded.values()):
        return Baselines({s: tuple(json.loads(v)) for s, v in zip(SPLITS, named)}, float(recorded["uniform_bpc"]),
                         {s: float(recorded[f"{s}_unigram_bpc"]) for s in SPLITS},
                         {s: float(recorded[f"{s}_bigram_bpc"]) for s in SPLITS})
    corpus_dir = _one(runs, "task.corpus_dir")
    try:
        return _baselines(*(tuple(json.loads(v)) for v in named), None if corpus_dir is None else str(corpus_dir))
    except (OSError, KeyError, ValueError):
        return NoBaselines.NO_CORPUS


@functools.lru_cache(maxsize=4)
def _baselines(val: tuple[str, ...], test: tuple[str, ...], corpus_dir: str | None) -> Baselines:
    from experiments.tasks import charlm, plays  # the corpus, read only where a text cell is reported

    corpus = charlm.corpus(charlm.CharLMConfig(val_plays=list(val), test_plays=list(test), corpus_dir=corpus_dir))
    per_split = {split: plays.baselines(corpus, split) for split in SPLITS}
    return Baselines({"val": val, "test": test}, plays.uniform_bits(corpus),
                     {s: b["unigram_bpc"] for s, b in per_split.items()},
                     {s: b["bigram_bpc"] for s, b in per_split.items()})
