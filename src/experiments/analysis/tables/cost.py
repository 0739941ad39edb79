"""The cost table cut for its readers: each implementation's measured rows, with its ratios over scaled."""

from __future__ import annotations

import pandas as pd


def cost_pairs(cost: pd.DataFrame, impl: str) -> pd.DataFrame:
    """Rows of impl measured (not skipped), with its ratio over scaled at the same n, d_k, mode."""
    df = cost[cost["impl"] == impl]
    if "skipped" in df:
        df = df[~df["skipped"].fillna(False).astype(bool)]
    return df.dropna(subset=["time_ratio"])
