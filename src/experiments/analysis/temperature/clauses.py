"""Every verdict of the temperature study as a row of one long table (clauses.parquet): the cell
(task, n_keys, d_k; the law's rows have d_k and n_keys empty), the clause, its seeds, estimate,
interval, test, p, permutation p, power, answer and the look that decided it. The README, REPORT
and dashboard are views of it; `verdicts` is a groupby over it."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.analysis.temperature import grid, law, optimum
from experiments.analysis.temperature.tests_paired import paired, answer

COLUMNS = ["task", "n_keys", "d_k", "clause", "n_seeds", "estimate", "lo", "hi", "test", "p", "p_perm",
           "power", "power_at_zero", "answer", "look"]
NOT_MEASURED = "not measured"
C_STAR, PAPER, LEARNED, GAMMA, B = "c_star", "paper_amount", "learned_temperature", "gamma", "b"
PUBLISHED = "published_point"


def optima(runs: pd.DataFrame, chosen: pd.DataFrame, cfg) -> tuple[pd.DataFrame, dict]:
    """Per cell: c* (relative to 1/sqrt(d_k)), its bootstrap interval and flag, whether it learned,
    σ₀ (the logit std at init at c = 1) and the bootstrap draws of log2 c* (for the law)."""
    rng = np.random.default_rng(cfg.boot_seed)
    rows, draws = [], {}
    for cell, at in chosen.groupby(grid.CELL):
        log2_c, auc = grid.seed_matrix(runs, chosen, cell)
        est, where = optimum.vertex(log2_c, np.nanmean(auc, axis=1), cfg.fit_half_width)
        boot = optimum.bootstrap_vertices(log2_c, auc, cfg.fit_half_width, cfg.n_boot, rng)
        lo, hi = optimum.interval(boot, cfg.level)
        best = at.sort_values("val_auc").iloc[-1]
        draws[cell] = boot
        rows.append({**dict(zip(grid.CELL, cell)), "c_star": 2 ** est, "c_star_lo": 2 ** lo, "c_star_hi": 2 ** hi,
                     "where": where, "n_seeds": int(auc.shape[1]), "best_grid_c": float(best["c"]),
                     "best_val_auc": float(best["val_auc"]), "best_final_val_accuracy": float(best["val_final"]),
                     "chance": float(best["chance"]),
                     "learned": bool(best["val_final"] >= cfg.learned_over_chance * best["chance"]),
                     "auc_at_1_selection": float(at.loc[at["c"] == 1.0, "val_auc"].iloc[0])
                     if (at["c"] == 1.0).any() else math.nan,
                     # the reference variant's own reading: does the paper's c learn this cell?
                     "final_at_1_selection": float(at.loc[at["c"] == 1.0, "val_final"].iloc[0])
                     if (at["c"] == 1.0).any() else math.nan})
    return pd.DataFrame(rows), draws


def confirmation_rows(runs: pd.DataFrame, opt: pd.DataFrame, record: dict, cfg) -> list[dict]:
    """Per cell: Δ = AUC(c*) − AUC(1) on the fresh seeds, paired by seed."""
    planned = {(e["task"], int(e["n_keys"]), int(e["d_k"])): e for e in record.get("cells", [])}
    fresh = runs[(runs["phase"] == "confirmation") & (runs["attention"] == grid.GRID_VARIANT)]
    out = []
    for _, o in opt.iterrows():
        cell = (o["task"], int(o["n_keys"]), int(o["d_k"]))
        e = planned.get(cell)
        base = dict(zip(grid.CELL, cell), clause=PAPER, test="TOST (paired t), sign-flip permutation",
                    look="confirmation")
        if e is None or not o["learned"]:
            out.append({**base, "answer": NOT_MEASURED, "n_seeds": 0})
            continue
        mine = fresh[(fresh[grid.CELL] == list(cell)).all(axis=1)]
        at_star = mine[np.isclose(mine["c"], e["c_star"]) & np.isclose(mine["lr"], e["lr_at_c_star"])]
        at_one = mine[np.isclose(mine["c"], 1.0) & np.isclose(mine["lr"], e["lr_at_1"])]
        both = at_star.set_index("seed")["val_auc"].to_frame("star").join(
            at_one.set_index("seed")["val_auc"].to_frame("one"), how="inner")
        if len(both) < 2:
            out.append({**base, "answer": NOT_MEASURED, "n_seeds": len(both)})
            continue
        p = paired(both["star"].to_numpy(), both["one"].to_numpy(), cfg.margin, cfg.alpha)
        out.append({**base, "n_seeds": p.n, "estimate": p.delta, "lo": p.lo, "hi": p.hi, "p": p.p_tost,
                    "p_perm": p.p_perm, "power": p.power_observed, "power_at_zero": p.power_at_zero,
                    "answer": answer(p, e["c_star"], cfg.margin, cfg.alpha), "c_star_trained": e["c_star"]})
    return out


def optimum_rows(opt: pd.DataFrame) -> list[dict]:
    return [{**{k: o[k] for k in grid.CELL}, "clause": C_STAR, "n_seeds": o["n_seeds"], "estimate": o["c_star"],
             "lo": o["c_star_lo"], "hi": o["c_star_hi"], "test": "quadratic in log2 c, seed bootstrap",
             "answer": o["where"] if o["learned"] else NOT_MEASURED, "look": "selection"} for _, o in opt.iterrows()]


def law_rows(opt: pd.DataFrame, draws: dict, cfg) -> tuple[list[dict], pd.DataFrame]:
    """Per task: gamma and b of the law with bootstrap intervals (the cells' own draws), on the
    cells that learned; the fit's coefficients as a table too."""
    rows, fits = [], []
    for task, cells in opt[opt["learned"]].groupby("task"):
        d_k, n = cells["d_k"].to_numpy(float), cells["n_keys"].to_numpy(float)
        point = law.fit(law.absolute(np.log2(cells["c_star"].to_numpy(float)), d_k), d_k, n)
        boot = np.array([law.fit(law.absolute(np.array([draws[(task, int(a), int(b))][i]
                                                          for a, b in zip(cells["n_keys"], cells["d_k"])]), d_k),
                                 d_k, n) for i in range(cfg.n_boot)])
        bounds = [optimum.interval(boot[:, j], cfg.level) for j in range(3)]
        fits.append({"task": task, **{t: point[j] for j, t in enumerate(law.TERMS)},
                     **{f"{t}_lo": bounds[j][0] for j, t in enumerate(law.TERMS)},
                     **{f"{t}_hi": bounds[j][1] for j, t in enumerate(law.TERMS)}, "n_cells": len(cells)})
        for j, clause, named in ((1, GAMMA, {"the paper (−1/2)": -0.5, "muP (−1)": -1.0}),
                                 (2, B, {"no n dependence (0)": 0.0, "log n (1)": 1.0})):
            lo, hi = bounds[j]
            held = [name for name, v in named.items() if law.consistent(lo, hi, v)]
            said = (" and ".join(held) if held else "neither") if np.isfinite([point[j], lo, hi]).all() else NOT_MEASURED
            rows.append({"task": task, "clause": clause, "n_seeds": int(cells["n_seeds"].min()),
                         "estimate": point[j], "lo": lo, "hi": hi, "test": "least squares, seed bootstrap",
                         "answer": said, "look": "selection"})
    return rows, pd.DataFrame(fits)


def learned_rows(runs: pd.DataFrame, opt: pd.DataFrame) -> list[dict]:
    """Per cell: the learned temperature's final multiplier (seed mean at its best rate) against
    c*: inside c*'s interval or not."""
    lt = runs[(runs["attention"] == grid.LEARNED) & (runs["phase"] == "selection")]
    out = []
    for cell, at in lt.groupby(grid.CELL):
        best_lr = at.groupby("lr")["val_auc"].mean().idxmax()
        final = at.loc[at["lr"] == best_lr, "final_temperature"].astype(float)
        o = opt[(opt[grid.CELL] == list(cell)).all(axis=1)]
        ok = len(o) and bool(o["learned"].iloc[0]) and final.notna().any()
        inside = ok and law.consistent(math.log2(o["c_star_lo"].iloc[0]), math.log2(o["c_star_hi"].iloc[0]),
                                       math.log2(final.mean()))
        out.append({**dict(zip(grid.CELL, cell)), "clause": LEARNED, "n_seeds": int(final.notna().sum()),
                    "estimate": float(final.mean()), "lo": float(final.min()), "hi": float(final.max()),
                    "test": "seed range against c*'s interval",
                    "answer": NOT_MEASURED if not ok else ("inside c*'s interval" if inside else
                              ("below c*'s interval" if final.mean() < o["c_star_lo"].iloc[0] else "above c*'s interval")),
                    "look": "selection"})
    return out


def cells_rms_normed(runs: pd.DataFrame) -> set[tuple]:
    """The cells whose grid runs all had q and k RMS-normed (attention.qk_rms)."""
    grid_runs = runs[runs["attention"] == grid.GRID_VARIANT]
    flag = grid_runs["attention.qk_rms"] if "attention.qk_rms" in grid_runs else pd.Series(False, index=grid_runs.index)
    normed = flag.fillna(False).astype(bool).groupby([grid_runs[k] for k in grid.CELL]).all()
    return {cell for cell, ok in normed.items() if ok}


def published_rows(runs: pd.DataFrame, opt: pd.DataFrame, cfg) -> list[dict]:
    """Per declared published point (conf/temperature.yaml published_points) and cell of its d_k
    and normalisation: its multiplier against the cell's c* interval."""
    normed, out = cells_rms_normed(runs), []
    for point in cfg.get("published_points") or []:
        for _, o in opt[opt["d_k"] == int(point["d_k"])].iterrows():
            cell = (o["task"], int(o["n_keys"]), int(o["d_k"]))
            if (cell in normed) != bool(point.get("qk_rms", False)):
                continue
            c = float(point["c"])
            said = (NOT_MEASURED if not o["learned"] else "inside c*'s interval"
                    if law.consistent(o["c_star_lo"], o["c_star_hi"], c) else
                    "above c*'s interval" if c > o["c_star_hi"] else "below c*'s interval")
            out.append({**dict(zip(grid.CELL, cell)), "clause": PUBLISHED, "n_seeds": o["n_seeds"], "estimate": c,
                        "lo": o["c_star_lo"], "hi": o["c_star_hi"], "test": f"{point['name']} against c*'s interval",
                        "answer": said, "look": "selection", "c_star": o["c_star"]})
    return out


def clause_table(runs: pd.DataFrame, record: dict, cfg) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(clauses, optima per cell, the law's fits per task)."""
    chosen = grid.chosen_rates(runs)
    opt, draws = optima(runs, chosen, cfg)
    laws, fits = law_rows(opt, draws, cfg)
    rows = (optimum_rows(opt) + confirmation_rows(runs, opt, record, cfg) + laws + learned_rows(runs, opt)
            + published_rows(runs, opt, cfg))
    table = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in table:
            table[col] = np.nan
    return table[COLUMNS + [c for c in table.columns if c not in COLUMNS]], opt, fits


def verdicts(clauses: pd.DataFrame) -> pd.DataFrame:
    """Per (task, clause): how many cells gave each answer."""
    return clauses.groupby(["task", "clause", "answer"]).size().rename("cells").reset_index()
