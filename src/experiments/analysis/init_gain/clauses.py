"""The control's verdicts as rows of one long table (clauses.csv, the temperature study's form):
the collapse at each matched sigma_0 and at the matched gain, the crossover sigma_0* per d_k, its
trend over d_k, and what Britz's crossover would need. All read on the fresh seeds."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.analysis.init_gain import collapse, points

COLUMNS = ["variant", "d_k", "gain", "sigma0", "clause", "n_seeds", "estimate", "lo", "hi", "test", "answer", "look"]
COLLAPSE, AT_GAIN, CROSSOVER, TREND, BRITZ, D_STAR = (
    "d_k effect at matched sigma_0", "d_k effect at matched gain", "crossover sigma_0", "crossover trend over d_k",
    "sigma_0 for Britz's d*", "d* at gain")
EXPONENT = "d* exponent in gain"
SIGMA0_LAW, D_K_LAW = -4.0, 0.0  # d* ~ gain^-4 where sigma_0 (~ gain^2 sqrt(d_k)) alone decides; gain^0 where d_k does
CONSISTENT, MOVES = "consistent with sigma_0 alone (0)", "moves with d_k"


def curves(fresh_runs: pd.DataFrame, pts: pd.DataFrame, variant: str, seeds: list[int]) -> dict:
    """Per d_k of the variant: (log2 sigma_0 per gain, gains, AUC [gain, seed])."""
    out = {}
    for d_k in sorted(pts.loc[pts["variant"] == variant, "d_k"].unique()):
        gains, auc = points.seed_matrix(fresh_runs, variant, int(d_k), seeds)
        s0 = pts[(pts["variant"] == variant) & (pts["d_k"] == d_k)].set_index("gain")["sigma0"].reindex(gains)
        out[int(d_k)] = (np.log2(s0.to_numpy(float)), gains, auc)
    return out


def at_gain(curve: dict, gain: float) -> np.ndarray:
    """[d_k, seeds] AUC of each d_k's point at `gain`."""
    return np.array([auc[np.isclose(gains, gain)][0] for _, gains, auc in curve.values()])


def effect_rows(curve: dict, draws: np.ndarray, cfg, variant: str) -> tuple[list[dict], np.ndarray]:
    """The d_k effect at each matched sigma_0 of the common grid, and at the reference gain."""
    d_ks = np.array(list(curve), float)
    log2_d = np.log2(d_ks)
    grid = collapse.common_grid([c[0] for c in curve.values()], cfg.grid_points)
    level = 1 - 2 * cfg.alpha
    n = len(draws[0])
    base = dict(variant=variant, n_seeds=n, look="confirmation")
    rows = []
    if len(grid):
        est = collapse.d_k_effect(log2_d, np.array([collapse.read_at(s, np.nanmean(a, axis=1), grid)
                                                     for s, _, a in curve.values()]))
        means = [collapse.resampled_means(a, draws) for _, _, a in curve.values()]  # [gain, boot] per d_k
        boot = np.stack([collapse.d_k_effect(log2_d, np.array([collapse.read_at(s, m[:, b], grid)
                                                                for (s, _, _), m in zip(curve.values(), means)]))
                         for b in range(draws.shape[0])])
        for j, s in enumerate(grid):
            lo, hi = collapse.interval(boot[:, j], level)
            rows.append({**base, "sigma0": 2 ** s, "clause": COLLAPSE, "estimate": est[j], "lo": lo, "hi": hi,
                         "test": f"AUC change d_k {int(d_ks.min())} to {int(d_ks.max())}, seed bootstrap at {level:g}",
                         "answer": collapse.verdict(lo, hi, cfg.margin)})
    matched = at_gain(curve, cfg.reference_gain)
    est = collapse.d_k_effect(log2_d, np.nanmean(matched, axis=1)[:, None])[0]
    boot = collapse.d_k_effect(log2_d, collapse.resampled_means(matched, draws))
    lo, hi = collapse.interval(boot, level)
    rows.append({**base, "clause": AT_GAIN, "estimate": est, "lo": lo, "hi": hi,
                 "test": f"AUC change at gain {cfg.reference_gain:g}, seed bootstrap at {level:g}",
                 "answer": collapse.verdict(lo, hi, cfg.margin)})
    return rows, grid


def crossover_rows(curve: dict, comparator: np.ndarray, draws: np.ndarray, cfg) -> tuple[list[dict], dict]:
    """Per d_k: the sigma_0 at which the variant falls to the comparator (its point at the reference
    gain, resampled with the same seeds); the bootstrap draws of log2 sigma_0* per d_k."""
    rows, boots = [], {}
    for (d_k, (s, _, auc)), comp in zip(curve.items(), comparator):
        x, where = collapse.crossover(s, np.nanmean(auc, axis=1), float(np.nanmean(comp)))
        m, c = collapse.resampled_means(auc, draws), collapse.resampled_means(comp, draws)
        boot = np.array([collapse.crossover(s, m[:, b], c[b])[0] for b in range(draws.shape[0])])
        boots[d_k] = boot
        lo, hi = collapse.interval(boot, cfg.level)
        rows.append({"variant": cfg.collapse_variant, "d_k": d_k, "clause": CROSSOVER, "n_seeds": draws.shape[1],
                     "estimate": 2 ** x, "lo": 2 ** lo, "hi": 2 ** hi, "answer": where, "look": "confirmation",
                     "test": f"first fall to {cfg.comparator} at gain {cfg.reference_gain:g}, seed bootstrap at {cfg.level:g}"})
    return rows, boots


def d_star_rows(curve: dict, comparator: np.ndarray, draws: np.ndarray, cfg) -> list[dict]:
    """Per gain: d*, the d_k (log2-linear between the grid's) at which the variant at that gain falls
    to the comparator at the reference gain, as the reference reads d* over d_k; `sigma0` the
    variant's sigma_0 there (log-linear between the d_k)."""
    d_ks = np.array(list(curve), float)
    gains = next(iter(curve.values()))[1]
    comp_mean, comp_boot = np.nanmean(comparator, axis=1), collapse.resampled_means(comparator, draws)
    rows = []
    for i, g in enumerate(gains):
        auc = np.array([c[2][i] for c in curve.values()])  # [d_k, seeds]
        log_s = np.array([c[0][i] for c in curve.values()])
        x, where = collapse.crossover(np.log2(d_ks), np.nanmean(auc, axis=1) - comp_mean, 0.0)
        boot = collapse.resampled_means(auc, draws) - comp_boot
        xs = np.array([collapse.crossover(np.log2(d_ks), boot[:, b], 0.0)[0] for b in range(draws.shape[0])])
        lo, hi = collapse.interval(xs, cfg.level)
        at = float(2 ** np.interp(x, np.log2(d_ks), log_s)) if math.isfinite(x) else math.nan
        rows.append({"variant": cfg.collapse_variant, "clause": D_STAR, "gain": float(g), "sigma0": at,
                     "estimate": 2 ** x, "lo": 2 ** lo, "hi": 2 ** hi, "answer": where, "look": "confirmation",
                     "_boot": xs,
                     "test": f"first fall below {cfg.comparator} at gain {cfg.reference_gain:g} over log2 d_k, "
                             f"seed bootstrap at {cfg.level:g}"})
    return rows


def exponent_rows(rows: list[dict], spread_per_gain2: float, cfg) -> list[dict]:
    """The slope of log2 d* on log2 gain over the gains whose d* lies inside the d_k range (-4 where
    sigma_0 alone sets the crossover, d* moving as gain^-4; 0 where d_k alone does); and, on that
    line extrapolated, the sigma_0 at init that would put d* at Britz's britz_low and britz_high
    (sigma_0 = spread_per_gain2 * gain^2 * sqrt(d_k), as the points give it)."""
    inside = [r for r in rows if r["answer"] == collapse.INSIDE]
    base = {"variant": cfg.collapse_variant, "look": "confirmation"}
    if len(inside) < 2:
        return [{**base, "clause": EXPONENT, "answer": "not measured (fewer than two gains cross inside)"}]
    x = np.log2([r["gain"] for r in inside])
    line = np.polyfit(x, np.log2([r["estimate"] for r in inside]), 1)
    boot = np.stack([r["_boot"] for r in inside], axis=1)
    ok = np.isfinite(boot).all(axis=1)
    lines = np.array([np.polyfit(x, b, 1) for b in boot[ok]])
    lo, hi = collapse.interval(lines[:, 0], cfg.level)
    held = [name for name, v in (("sigma_0 alone (-4)", SIGMA0_LAW), ("d_k alone (0)", D_K_LAW)) if lo <= v <= hi]
    said = " and ".join(held) if held else "between" if SIGMA0_LAW < lo and hi < D_K_LAW else "neither"
    gains = ", ".join(f"{g:.3g}" for g in np.exp2(x))
    out = [{**base, "clause": EXPONENT, "estimate": line[0], "lo": lo, "hi": hi, "answer": said,
            "test": f"least squares of log2 d* on log2 gain (gains {gains}); {ok.mean():.0%} of the draws cross "
                    "inside at each"}]

    def sigma0_for(d: float, fit) -> np.ndarray:  # the init spread at which the line puts d* at d
        log2_gain = (np.log2(d) - fit[..., 1]) / fit[..., 0]
        return spread_per_gain2 * np.exp2(2 * log2_gain) * math.sqrt(d)

    for d in (cfg.britz_low, cfg.britz_high):
        blo, bhi = collapse.interval(sigma0_for(d, lines), cfg.level)
        out.append({**base, "clause": BRITZ, "d_k": d, "estimate": float(sigma0_for(d, line)), "lo": blo, "hi": bhi,
                    "answer": "extrapolated beyond the grid",
                    "test": f"sigma_0 at init that puts d* at {d} on the fitted line (gains {gains})"})
    return out


def trend_rows(boots: dict, estimates: dict, cfg) -> list[dict]:
    """The slope of log2 sigma_0* on log2 d_k over the d_k whose crossover lies inside the range
    (0: the crossover is a function of sigma_0 alone)."""
    inside = [d for d, x in estimates.items() if math.isfinite(x)]
    base = {"variant": cfg.collapse_variant, "look": "confirmation"}
    if len(inside) < 2:
        return [{**base, "clause": TREND, "answer": "not measured (fewer than two d_k cross inside)"}]
    x = np.log2(np.array(inside, float))
    y = np.array([estimates[d] for d in inside])
    b = np.stack([boots[d] for d in inside], axis=1)
    ok = np.isfinite(b).all(axis=1)
    slope = np.polyfit(x, y, 1)[0]
    slopes = np.array([np.polyfit(x, row, 1)[0] for row in b[ok]])
    lo, hi = collapse.interval(slopes, cfg.level)
    share = f"{ok.mean():.0%} of the draws cross inside at every one of these d_k"
    return [{**base, "clause": TREND, "estimate": slope, "lo": lo, "hi": hi,
             "test": f"least squares of log2 sigma_0* on log2 d_k (d_k {', '.join(map(str, inside))}); {share}",
             "answer": CONSISTENT if lo <= 0 <= hi else MOVES}]


def reading(fresh_runs: pd.DataFrame, cfg) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(clauses, points, the collapse variant's curves)."""
    pts = points.point_table(fresh_runs)
    seeds = sorted(int(s) for s in fresh_runs["seed"].unique())
    draws = collapse.seed_draws(len(seeds), cfg.n_boot, np.random.default_rng(cfg.boot_seed))
    curve = curves(fresh_runs, pts, cfg.collapse_variant, seeds)
    rows, _ = effect_rows(curve, draws, cfg, cfg.collapse_variant)
    scaled = curves(fresh_runs, pts, "scaled", seeds)  # a control: its sigma_0 matches across d_k at any gain
    if scaled:
        rows += [r for r in effect_rows(scaled, draws, cfg, "scaled")[0] if r["clause"] == AT_GAIN]
    comparator = curves(fresh_runs, pts, cfg.comparator, seeds)
    comp = at_gain({d: comparator[d] for d in curve if d in comparator}, cfg.reference_gain)
    cross, boots = crossover_rows({d: curve[d] for d in curve if d in comparator}, comp, draws, cfg)
    estimates = {r["d_k"]: math.log2(r["estimate"]) if 0 < r["estimate"] < math.inf else math.nan for r in cross}
    d_stars = d_star_rows({d: curve[d] for d in curve if d in comparator}, comp, draws, cfg)
    unscaled = pts[pts["variant"] == cfg.collapse_variant]
    per_gain2 = float((unscaled["sigma0"] / (unscaled["gain"] ** 2 * np.sqrt(unscaled["d_k"]))).mean())
    rows += cross + trend_rows(boots, estimates, cfg) + exponent_rows(d_stars, per_gain2, cfg)
    rows += [{k: v for k, v in r.items() if k != "_boot"} for r in d_stars]
    table = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in table:
            table[col] = np.nan
    table["n_seeds"] = len(seeds)
    return with_flip_margins(table[COLUMNS]), pts, curve


def with_flip_margins(table: pd.DataFrame) -> pd.DataFrame:
    """The margins at which a d_k effect's verdict would flip: `alone_above`, the margin past which
    it reads sigma_0 alone (its interval's farther end from 0), and `d_k_too_below`, the margin under
    which it reads d_k too (its nearer end, where the interval excludes 0)."""
    effect = table["clause"].isin([COLLAPSE, AT_GAIN])
    far = np.maximum(table["lo"].abs(), table["hi"].abs())
    near = np.minimum(table["lo"].abs(), table["hi"].abs()).where((table["lo"] > 0) | (table["hi"] < 0))
    return table.assign(alone_above=far.where(effect), d_k_too_below=near.where(effect))
