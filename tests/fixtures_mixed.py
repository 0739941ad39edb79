"""A SYNTHETIC results folder with a new task and a new variant beside the built-in ones. Not data.

Cut from fixtures_results' folder (made-up numbers), as a user's own sweep would look:
the primary condition (assoc_recall, adam) at d_k 16, 32 and 128, where a variant the
registry lacks (`gated`) also ran; a task of the user's own (`copy`, adam) at d_k 256
alone, its accuracies far lower (a line joined across tasks would dip there); and
assoc_recall under sgd at d_k 512 alone. Additive ran in the primary condition only, so
that the profile's legend panel lacks a pair another panel has. Every run is trained
at two learning rates, so that the lr figures are drawn. A figure that joins two
conditions in one line joins 256 or 512 to the primary's d_ks: tests look for exactly that.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from fixtures_results import write_synthetic_results

PRIMARY = ("assoc_recall", "adam")
PRIMARY_D_KS = (16, 32, 128)
OTHER_D_K = {("copy", "adam"): 256, ("assoc_recall", "sgd"): 512}  # one d_k each, none of the primary's
PRIMARY_ONLY = "additive"
NEW_VARIANT = "gated"
LRS = (1e-3, 3e-3)


def _cut(df: pd.DataFrame, scores: list[str]) -> pd.DataFrame:
    primary = df[(df["task"] == PRIMARY[0]) & (df["optimizer"] == PRIMARY[1])]
    parts = [primary[primary["d_k"].isin(PRIMARY_D_KS)]]
    scaled = parts[0][parts[0]["attention"] == "scaled"]
    parts.append(scaled.assign(attention=NEW_VARIANT, run_id=scaled["run_id"] + "-gated",
                               **{c: scaled[c] * 0.9 for c in scores}))
    source = primary[primary["d_k"] == 64]
    for (task, optimizer), d_k in OTHER_D_K.items():
        runs = source[source["attention"] != PRIMARY_ONLY]
        low = {c: runs[c] * 0.3 for c in scores} if task != PRIMARY[0] else {}
        parts.append(runs.assign(task=task, optimizer=optimizer, d_k=d_k, **low,
                                 run_id=runs["run_id"] + f"-{task}-{optimizer}"))
    one_lr = pd.concat(parts, ignore_index=True)
    # the second rate a little worse, so that each cell's best rate is the first
    return pd.concat([one_lr.assign(lr=lr, run_id=one_lr["run_id"] + f"-lr{lr:g}",
                                    **{c: one_lr[c] * (1 - 0.1 * i) for c in scores})
                      for i, lr in enumerate(LRS)], ignore_index=True)


def write_mixed_results(root: str | Path) -> Path:
    """The folder above under root (probe and cost as in fixtures_results), with its
    analysis.yaml naming the primary task; return root."""
    root = write_synthetic_results(root)
    summary = pd.read_parquet(root / "summary.parquet").drop(columns="train.lr")
    history = pd.read_parquet(root / "history.parquet")
    _cut(summary, ["accuracy_auc", "test_accuracy", "final_val_accuracy"]).to_parquet(
        root / "summary.parquet", index=False)
    _cut(history, ["accuracy"]).to_parquet(root / "history.parquet", index=False)
    (root / "analysis.yaml").write_text(f"primary_task: {PRIMARY[0]}\n")
    return root


def short_label(text: str) -> bool:
    """A tick label a reader takes in at a glance: a plain number, at most three significant
    figures after a decimal point (an integer tick, such as d_k = 1024, keeps its digits)."""
    if not re.fullmatch(r"[-−]?\d+(\.\d+)?", text):
        return False
    return "." not in text or len(text.lstrip("-−").replace(".", "").lstrip("0")) <= 3
