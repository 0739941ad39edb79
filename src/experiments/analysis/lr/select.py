"""The learning rate of each cell, chosen on validation, and what the lr grid shows beside it.

A training job can run a grid of learning rates as lanes (optimizer.lr_grid),
each lane its own run. At one fixed lr, d_k changes the effective step size,
so a comparison of variants across d_k would measure the lr, not the
attention (docs/CLAIM.md, sub-claim 4). So every variant is judged at its own best
lr per cell (task, optimizer, variant, d_k): the lr with the best mean
validation accuracy AUC over seeds. Test accuracy never enters the choice.

A diverged run counts at chance accuracy (the summary's `chance_accuracy`, which
training records; for runs recorded before it, 1 / the task's number of classes
from the task config in the summary's `task.*` columns; where that cannot be
rebuilt, the mean accuracy at the first evaluation of the history, the value
at init of Wortsman et al. 2023), so that an lr that blows up ranks below one
that merely learns slowly. A best lr at an end of its grid is flagged
("edge: low" / "edge: high"): the optimum may lie outside the grid.

A rate stopped by train.prune (a run with status pruned: it could no longer be
the best) is never chosen, per cell nor per seed. Its runs still enter the LR
sensitivity, at the rule's bound on their final AUC (`accuracy_auc_bound`: the
accuracy so far, then at most `slack` above the last and rising at its recent
pace); on the committed study that bound was about unbiased where the last
accuracy held was not (experiments.replay measures the error).

Confirmation seeds (a summary with `phase`, tables.load.with_phase: seeds from
conf/analysis.yaml's confirm_seeds_from on, trained by experiments.confirm at the
rate the selection seeds chose) never choose a rate, per cell nor per seed, nor
enter the LR sensitivity. Where a cell has them, they alone are its runs at the
best lr (`at_best`): every clause is judged on seeds that did not pick the rate,
and `optimism` says how much the selection seeds flattered it.

A summary with one lr per cell (results written before the grid existed)
works the same: the best lr is the only one, and the lr views say so
(NO_GRID). Everything here is a pure function of the frames it is given.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.analysis.tables import diverged
from experiments.analysis.tables.chance import chance

CELL = ["task", "optimizer", "attention", "d_k"]
PHASE, CONFIRMATION = "phase", "confirmation"  # tables.load.with_phase
NO_GRID = "one learning rate per cell: no lr view"
SCORES = {"accuracy_auc": "val_auc", "final_val_accuracy": "val_final"}  # column -> diverged at chance


def lr_values(summary: pd.DataFrame) -> pd.Series:
    """Each run's learning rate: `lr`, else `optimizer.lr` (older summaries), else NaN."""
    for col in ("lr", "optimizer.lr"):
        if col in summary and summary[col].notna().any():
            return summary[col].astype(float)
    return pd.Series(math.nan, index=summary.index, dtype=float)


def scored(summary: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.DataFrame:
    """The summary (a fresh index) with `lr` (the lane's rate), the validation scores `val_auc`,
    `val_final`: accuracy_auc and final_val_accuracy, a diverged run at chance (its own values
    are not kept), and `pruned_rate`: some run of that cell at that rate was pruned."""
    out = summary.reset_index(drop=True).assign(lr=lr_values(summary).to_numpy())  # one row, one label
    out["pruned_rate"] = diverged.pruned(out).groupby([out[c] for c in CELL] + [out["lr"]],
                                                    dropna=False).transform("any")
    broken = out.index.isin(diverged.diverged(out).index)
    out["chance"] = chance(out, history)
    for col, name in SCORES.items():
        values = out[col].astype(float) if col in out else pd.Series(math.nan, index=out.index)
        if col == "accuracy_auc" and "accuracy_auc_bound" in out:
            values = values.where(~diverged.pruned(out), out["accuracy_auc_bound"].astype(float))
        out[name] = values.where(~broken, out["chance"])
    return out


def has_grid(summary: pd.DataFrame | None) -> bool:
    """True when some cell was trained at more than one learning rate."""
    if summary is None or summary.empty:
        return False
    s = summary.assign(lr=lr_values(summary))
    return bool((s.groupby(CELL)["lr"].nunique() > 1).any())


def confirming(runs: pd.DataFrame) -> pd.Series:
    """True for the runs of confirmation seeds (False everywhere without a `phase` column)."""
    return runs[PHASE].eq(CONFIRMATION) if PHASE in runs else pd.Series(False, index=runs.index)


def selecting(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that choose the rate: all but the confirmation seeds'."""
    return runs[~confirming(runs)]


def lr_means(sc: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, lr), over the selection seeds: means of val_auc and val_final, seeds, diverged
    runs (from `scored`)."""
    sc = selecting(sc)
    g = sc.assign(_div=sc.index.isin(diverged.diverged(sc).index),
                  pruned_rate=sc["pruned_rate"] if "pruned_rate" in sc else False)
    g = g.groupby(CELL + ["lr"], dropna=False)
    return g.agg(val_auc=("val_auc", "mean"), val_final=("val_final", "mean"),
                 n=("seed", "nunique"), n_diverged=("_div", "sum"),
                 pruned=("pruned_rate", "any")).reset_index()


def edge_flag(best: float, grid) -> str:
    """'edge: low' / 'edge: high' for a best lr at an end of a grid of two or more rates, else ''."""
    grid = sorted(x for x in grid if math.isfinite(x))
    if len(grid) < 2 or not math.isfinite(best):
        return ""
    return "edge: low" if best == grid[0] else "edge: high" if best == grid[-1] else ""


def best_lrs(sc: pd.DataFrame) -> pd.DataFrame:
    """Per cell: best_lr (highest seed-mean val_auc of the rates not pruned; a tie goes to the
    lower rate), its val_auc, the grid, n_lrs and the edge flag."""
    rows = []
    for cell, g in lr_means(sc).groupby(CELL, sort=True):
        g = g.sort_values("lr")
        ok = g[g["val_auc"].notna() & ~g["pruned"].astype(bool)]
        top = (ok if len(ok) else g).iloc[int(np.argmax(ok["val_auc"].to_numpy())) if len(ok) else 0]
        grid = tuple(float(x) for x in g["lr"])
        rows.append(dict(zip(CELL, cell), best_lr=float(top["lr"]), best_val_auc=float(top["val_auc"]),
                         grid=grid, n_lrs=len(grid), edge=edge_flag(float(top["lr"]), grid)))
    return pd.DataFrame(rows, columns=CELL + ["best_lr", "best_val_auc", "grid", "n_lrs", "edge"])


def at_chosen(summary: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every run of each cell at that cell's best lr, selection and confirmation seeds alike,
    with `lr`, `val_auc`, `val_final` and the cell's `edge` flag."""
    sc = scored(summary, history)
    best = best_lrs(sc)[CELL + ["best_lr", "edge"]].rename(columns={"best_lr": "lr"})
    return sc.merge(best, on=CELL + ["lr"], how="inner")  # NaN lr (none recorded) matches NaN


def judged(runs: pd.DataFrame) -> pd.DataFrame:
    """Of the runs at the chosen rates (`at_chosen`), those judged: a cell's confirmation seeds
    alone where it has any, else all of its runs."""
    fresh = confirming(runs)
    has_fresh = fresh.groupby([runs[c] for c in CELL], dropna=False).transform("any")
    return runs[fresh | ~has_fresh]


def at_best(summary: pd.DataFrame, history: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs judged: each cell's runs at its best lr (all runs where a cell has one lr), its
    confirmation seeds alone where it has any; with `lr`, `val_auc`, `val_final`, `edge`."""
    return judged(at_chosen(summary, history))


def optimism(chosen: pd.DataFrame) -> pd.DataFrame:
    """Per cell with confirmation seeds, from its runs at the chosen rate (`at_chosen`): the
    seed-mean val AUC on the seeds that chose the rate and on the fresh ones, and their difference
    (the winner's curse of the choice: > 0 where the selection seeds flattered the rate). A
    diverged run counts at chance."""
    runs = chosen.assign(_fresh=confirming(chosen))
    rows = []
    for cell, g in runs.groupby(CELL, sort=True):
        sel, fresh = g.loc[~g["_fresh"], "val_auc"], g.loc[g["_fresh"], "val_auc"]
        if len(fresh) and len(sel):
            rows.append(dict(zip(CELL, cell), lr=float(g["lr"].iloc[0]), selection_auc=float(sel.mean()),
                             confirmation_auc=float(fresh.mean()), optimism=float(sel.mean() - fresh.mean()),
                             n_selection=int(sel.size), n_confirmation=int(fresh.size)))
    return pd.DataFrame(rows, columns=CELL + ["lr", "selection_auc", "confirmation_auc", "optimism",
                                              "n_selection", "n_confirmation"])


def lr_text(lr: float, edge: str = "") -> str:
    """'1e-03', '3e-03 (edge: high)'; 'one lr' where the summary names none."""
    base = f"{lr:.0e}" if math.isfinite(lr) else "one lr"
    return f"{base} ({edge})" if edge else base


# --- per seed --------------------------------------------------------------------------

# A seed whose val AUC stays below this multiple of chance at every rate learned nothing:
# its "best" rate would be the argmax of noise (vector_retrieval's plateau), so it has none.
LEARNED_OVER_CHANCE = 2.0


def past_chance(val_auc, chance):
    """True where a val AUC reached LEARNED_OVER_CHANCE x chance; where chance is unknown
    (NaN) too: nothing is ruled out on a guess. Scalars or arrays, compared elementwise."""
    return ~(np.asarray(val_auc, dtype=float) < LEARNED_OVER_CHANCE * np.asarray(chance, dtype=float))


_SEED_BEST_READS = CELL + ["seed", "lr", "val_auc", "pruned_rate", "chance", PHASE]


def seed_best_lr(sc: pd.DataFrame, mask=None) -> pd.DataFrame:
    """Per (cell, seed): the lr with that seed's best val_auc among the rates not pruned; NaN where
    the best is tied, where no rate took it past LEARNED_OVER_CHANCE x chance (when chance is
    known), or no rate has a value. `mask`, when given, picks the rows first. One grouped pass
    over the columns it reads (a summary has a hundred, and a study thousands of (cell, seed)
    groups)."""
    keys = CELL + ["seed"]
    rows = slice(None) if mask is None else mask
    runs = selecting(sc.loc[rows, [c for c in _SEED_BEST_READS if c in sc]])
    score = runs["val_auc"].astype(float)
    if "pruned_rate" in runs:
        score = score.where(~runs["pruned_rate"].astype(bool))
    frame = runs[keys].assign(score=score, lr=runs["lr"].astype(float),
                              chance=runs["chance"].astype(float) if "chance" in runs else math.nan)
    top = frame.groupby(keys, sort=True)["score"].transform("max")
    hit = np.isclose(frame["score"], top, rtol=0, atol=1e-12)
    per = frame.assign(hit=hit, hit_lr=frame["lr"].where(hit)).groupby(keys, sort=True).agg(
        top=("score", "max"), chance=("chance", "max"), hits=("hit", "sum"), lr=("hit_lr", "first"))
    chosen = (per["hits"] == 1) & np.isfinite(per["top"]) & past_chance(per["top"], per["chance"])
    return per.assign(best_lr=per["lr"].where(chosen)).reset_index()[keys + ["best_lr"]]


def cell_grids(sc: pd.DataFrame) -> pd.Series:
    """Per cell: the sorted tuple of rates it was trained at."""
    return sc.groupby(CELL)["lr"].agg(lambda x: tuple(sorted(set(x.dropna().astype(float)))))


def common_grid(sc: pd.DataFrame) -> tuple[float, ...]:
    """The grid most cells of `sc` were trained at (a tie goes to the wider one): what a
    sensitivity is measured over, so that cells are compared over the same rates."""
    counts = cell_grids(sc).value_counts()
    return max(counts.index, key=lambda g: (counts[g], len(g))) if len(counts) else ()


def seed_sensitivity(sc: pd.DataFrame) -> pd.DataFrame:
    """LR sensitivity after Wortsman et al. 2023, per (cell, seed): the mean over the grid of
    (best − achieved) val_auc, a diverged run at chance. 0 = every rate as good as the best.

    The mean grows with every rate added where a variant fails, and shrinks with every
    such rate left out, so it is taken over the common grid of `sc` (one condition):
    a cell widened beyond it counts only the common rates, and a cell trained on a
    grid narrowed below it gets none (NaN, with `grid_note` saying why)."""
    sc = selecting(sc)
    grid = common_grid(sc)
    grids = cell_grids(sc)
    rows = []
    for key, g in sc.groupby(CELL + ["seed"], sort=True):
        cell_grid = grids[key[:-1]]
        missing = [r for r in grid if r not in cell_grid]
        note = f"narrowed grid: {len(grid) - len(missing)} of the {len(grid)} common rates" if missing else ""
        v = g.loc[g["lr"].isin(grid), "val_auc"].to_numpy(dtype=float)
        ok = np.isfinite(v)
        value = float(np.mean(v[ok].max() - v[ok])) if ok.sum() > 1 and not missing else math.nan
        rows.append(dict(zip(CELL + ["seed"], key), n_lrs=int(ok.sum()), sensitivity=value,
                         grid_note=note))
    return pd.DataFrame(rows, columns=CELL + ["seed", "n_lrs", "sensitivity", "grid_note"])


def drift_band(grid, d_ks) -> float:
    """Slope of log2(best lr) per doubling of d_k below which the optimum moves by less than half
    a grid step over the whole d_k sweep: (median log2 grid step / 2) / log2(d_max / d_min)."""
    grid = np.log2(sorted(x for x in set(grid) if math.isfinite(x) and x > 0))
    d_ks = np.asarray(sorted(set(d_ks)), dtype=float)
    if grid.size < 2 or d_ks.size < 2:
        return math.nan
    return float(np.median(np.diff(grid)) / 2 / np.log2(d_ks[-1] / d_ks[0]))
