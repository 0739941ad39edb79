"""The lr views of a condition: per-seed optimal lr against d_k, its drift, LR sensitivity.

Built on lr_select (the choice) and stats (the intervals), shared by the
quality section and the lr figures, so that a number in a table and the same
number in a figure come from one function. The drift from whole curves, and
from every seed with pruned rates at their bound, is lr.whole's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import whole
from experiments.analysis.lr.theory import predicted_lr_slope
from experiments.analysis.stats.intervals import fmt_ci, mean_ci, per_seed_slopes

# Declared before the data that judges it: muP's clause (c) is judged over the d_ks at or above
# its base width, the d_k where its factor m/d_k equals scaled's 1/sqrt(d_k), i.e. m² (64 for
# attention=mup8, m = 8). Below it muP's logits at init have variance m²/d_k (32 at d_k = 2 for
# mup8), above scaled's 1: its multiplier overshoots there, and a best rate that moves there is
# that overshoot, not a failure of muP's prediction, which is about widths above the base one.
# The full range is reported beside it (drift_table).
JUDGED_FROM_BASE_WIDTH = ("mup",)


def label(cond: tuple[str, str]) -> str:
    return f"{cond[0]}/{cond[1]}"


def best_lr_matrix(sc: pd.DataFrame, variant: str):
    """(d_ks [m], seeds [s], best lr [s, m]) of one variant in one condition (from lr_select.scored)."""
    per = lr_select.seed_best_lr(sc, sc["attention"] == variant)
    wide = per.pivot_table(index="seed", columns="d_k", values="best_lr", aggfunc="first", dropna=False)
    wide = wide.reindex(index=sorted(lr_select.selecting(sc)["seed"].unique()))
    return wide.columns.to_numpy(dtype=float), wide.index.to_numpy(), wide.to_numpy(dtype=float)


def drift_slopes(sc: pd.DataFrame, from_d_k: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """{variant: per-seed slope of log2(best lr) against log2 d_k} in one condition, over every
    d_k, or over those at or above from_d_k[variant] where it names one."""
    out = {}
    for v in load.variant_order(sc["attention"].unique()):
        d_ks, _, lrs = best_lr_matrix(sc, v)
        keep = d_ks >= (from_d_k or {}).get(v, 0)
        out[v] = per_seed_slopes(d_ks[keep], lrs[:, keep]) if keep.sum() >= 2 else np.array([])
    return out


def base_width(sc: pd.DataFrame, variant: str) -> float:
    """The d_k at which a muP variant's factor m/d_k equals scaled's 1/sqrt(d_k): m², from the runs'
    attention.multiplier (1 where none is recorded, muP's default); 0 for any other variant."""
    if variant != "mup":
        return 0.0
    m = sc.loc[sc["attention"] == variant, "attention.multiplier"] if "attention.multiplier" in sc else None
    m = m.dropna() if m is not None else pd.Series(dtype=float)
    return float(m.max()) ** 2 if len(m) else 1.0


def judged_from(sc: pd.DataFrame) -> dict[str, int]:
    """{variant: the smallest d_k its clause (c) is judged at} for the variants judged from their
    base width (JUDGED_FROM_BASE_WIDTH) where that lies above the smallest d_k swept."""
    out = {}
    for v in JUDGED_FROM_BASE_WIDTH:
        d_ks = sorted(sc.loc[sc["attention"] == v, "d_k"].unique())
        above = [d for d in d_ks if d >= base_width(sc, v)]
        if d_ks and above and above[0] > d_ks[0]:
            out[v] = int(above[0])
    return out


def drift_band(sc: pd.DataFrame) -> float:
    return lr_select.drift_band(sc["lr"].dropna().unique(), sc["d_k"].unique())


def grid_step(sc: pd.DataFrame) -> float:
    """The rate grid's resolution: the median spacing of its rates in log2 units."""
    grid = np.log2(sorted(x for x in set(sc["lr"].dropna()) if x > 0))
    return float(np.median(np.diff(grid))) if grid.size > 1 else float("nan")


def predicted_text(variant: str, optimizer: str = "adam") -> str:
    slope = predicted_lr_slope(variant, optimizer) if variant in load.VARIANTS else None
    return "none" if slope is None else f"{slope:+.1f}"


def _conditions(summary: pd.DataFrame, history) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    return [(c, lr_select.scored(load.at_condition(summary, c), history)) for c in load.conditions(summary)]


def optimal_lr_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """Variant × d_k rows, one column per condition: the best lr (edge flagged) and its val AUC."""
    cols = {}
    for cond, sc in _conditions(summary, history):
        best = lr_select.best_lrs(sc)
        cols[label(cond)] = {(r.attention, int(r.d_k)): f"{lr_select.lr_text(r.best_lr, r.edge)}; AUC "
                             f"{r.best_val_auc:.3f}" for r in best.itertuples()}
    return _wide(summary, cols)


def sensitivity_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """Variant × d_k rows, one column per condition: LR sensitivity, mean [95% CI] over seeds."""
    cols = {}
    for cond, sc in _conditions(summary, history):
        sens = lr_select.seed_sensitivity(sc)
        cols[label(cond)] = {(a, int(d)): g["grid_note"].iloc[0] if g["grid_note"].iloc[0]
                             else fmt_ci(mean_ci(g["sensitivity"].to_numpy()), 3)
                             for (a, d), g in sens.groupby(["attention", "d_k"])}
    return _wide(summary, cols)


WHOLE_NOT_MEASURED = "not measured: no seed trained every rate to the end"


def drift_text(d: whole.Drift) -> str:
    """'-0.12 [-0.20, -0.05] (2 seeds)' of a drift from lr.whole."""
    return f"{fmt_ci(d.ci, 2)} ({d.n_seeds} seeds)"


def drift_row(cond, sc: pd.DataFrame, v: str, slopes: np.ndarray, from_d_k: int = 0) -> dict:
    """One row of the drift table: the per-seed slope over the d_ks from `from_d_k` (0: all; else
    the range clause (c) judges), and
    the refined slopes of lr.whole, from whole curves and from every seed with pruned rates at
    their bound."""
    full, bound = whole.drifts(sc, v, from_d_k)
    return {"condition": label(cond), "variant": v, "d_k": f"≥ {from_d_k} (judged)" if from_d_k else "all",
            "slope of log2 best lr per doubling of d_k": fmt_ci(mean_ci(slopes), 2) if slopes.size else "n/a",
            "predicted (Adam step, lr.theory)": predicted_text(v, cond[1]),
            "grid step (log2)": f"{grid_step(sc):.2f}", "seeds": int(np.isfinite(slopes).sum()),
            "refined, whole curves [bootstrap]": drift_text(full) if full.n_seeds else WHOLE_NOT_MEASURED,
            "refined, pruned rates at their bound [bootstrap]": drift_text(bound)}


def base_width_rows(summary: pd.DataFrame, history=None) -> tuple[dict, ...]:
    """Per condition where a variant is judged from its base width (judged_from): its base width,
    the per-seed slope interval over every d_k and from the judged d_k on, and lr.whole's refined
    drifts from there (whole curves; every seed with pruned rates at their bound)."""
    rows = []
    for cond, sc in _conditions(summary, history):
        start = judged_from(sc)
        full, judged = drift_slopes(sc), drift_slopes(sc, start)
        for v, d in start.items():
            rows.append({"condition": label(cond), "variant": v, "base_width": base_width(sc, v), "from_d_k": d,
                         "all": mean_ci(full[v]), "judged": mean_ci(judged[v]),
                         **dict(zip(("whole", "bound"), whole.drifts(sc, v, d)))})
    return tuple(rows)


def drift_table(summary: pd.DataFrame, history=None) -> pd.DataFrame:
    """One row per (condition, variant): slope of log2(best lr) per doubling of d_k [95% CI], and
    beside it lr.whole's refined slopes; a variant judged from its base width (judged_from) gets
    a second row over those d_ks, the one its clause (c) reads."""
    rows = []
    for cond, sc in _conditions(summary, history):
        base = judged_from(sc)
        narrowed = drift_slopes(sc, base)
        for v, slopes in drift_slopes(sc).items():
            rows.append(drift_row(cond, sc, v, slopes))
            if v in base:
                rows.append(drift_row(cond, sc, v, narrowed[v], base[v]))
    return pd.DataFrame(rows)


def _wide(summary: pd.DataFrame, cols: dict[str, dict]) -> pd.DataFrame:
    keys = sorted({k for c in cols.values() for k in c},
                  key=lambda k: (load.variant_order(summary["attention"].unique()).index(k[0]), k[1]))
    return pd.DataFrame([{"variant": a, "d_k": d, **{c: vals.get((a, d), "—") for c, vals in cols.items()}}
                         for a, d in keys])
