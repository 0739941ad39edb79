"""The study's figures, drawn from its tables (never from the run folders)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

NAMES = {"optimum": "temperature_optimum.png", "curves": "temperature_auc_vs_c.png",
         "learned": "temperature_learned.png", "sigma0": "temperature_sigma0.png"}


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def optimum(opt: pd.DataFrame, fits: pd.DataFrame, task: str, path: Path) -> None:
    """Left: c*/(1/sqrt(d_k)) over (d_k, n) as a heat map. Right: log2 c* against d_k per n with its
    interval, and the laws: the paper (c* = 1), muP as its code runs it (8/d_k, i.e. 8/sqrt(d_k)
    here) and the fitted law."""
    o = opt[(opt["task"] == task) & opt["learned"]]
    d_ks, ns = sorted(opt["d_k"].unique()), sorted(opt["n_keys"].unique())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    heat = o.pivot_table(index="n_keys", columns="d_k", values="c_star").reindex(index=ns, columns=d_ks)
    im = ax.imshow(np.log2(heat.to_numpy(float)), cmap="RdBu_r", vmin=-4, vmax=4, origin="lower", aspect="auto")
    for i, n in enumerate(ns):
        for j, d in enumerate(d_ks):
            v = heat.loc[n, d]
            ax.text(j, i, "—" if np.isnan(v) else f"{v:.2g}", ha="center", va="center", fontsize=9)
    ax.set(xticks=range(len(d_ks)), xticklabels=d_ks, yticks=range(len(ns)), yticklabels=ns,
           xlabel="d_k", ylabel="n keys", title="c* in units of 1/√d_k (1: the paper)")
    fig.colorbar(im, ax=ax, label="log2 c*")
    x = np.array(d_ks, float)
    bx.axhline(0, color="k", lw=1, label="the paper: 1/√d_k")
    bx.plot(x, np.log2(8 / np.sqrt(x)), "k--", lw=1, label="muP: 8/d_k")
    fit = fits[fits["task"] == task]
    for n, at in o.groupby("n_keys"):
        at = at.sort_values("d_k")
        err = [np.log2(at["c_star"]) - np.log2(at["c_star_lo"]), np.log2(at["c_star_hi"]) - np.log2(at["c_star"])]
        line = bx.errorbar(at["d_k"], np.log2(at["c_star"]), yerr=err, marker="o", capsize=3, label=f"n = {n}")
        if len(fit):
            f = fit.iloc[0]
            bx.plot(x, f["a"] + (f["gamma"] + 0.5) * np.log2(x) + f["b"] * np.log2(np.log(n)), ":",
                    color=line[0].get_color(), lw=1)
    bx.set(xscale="log", xlabel="d_k", ylabel="log2 c* (units of 1/√d_k)", title="c* with 95% intervals; dotted: the fitted law")
    bx.set_xticks(d_ks, [str(d) for d in d_ks])
    bx.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    bx.legend(fontsize=8)
    _save(fig, path)


def curves(table: pd.DataFrame, opt: pd.DataFrame, task: str, path: Path) -> None:
    """Validation AUC (selection seeds' mean, each c at its chosen rate) against log2 c, one panel per n."""
    t = table[table["task"] == task]
    ns = sorted(t["n_keys"].unique())
    fig, axes = plt.subplots(1, len(ns), figsize=(4 * len(ns), 3.4), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], ns):
        for d, at in t[t["n_keys"] == n].groupby("d_k"):
            at = at.sort_values("c")
            line = ax.plot(np.log2(at["c"]), at["val_auc"], marker=".", label=f"d_k {d}")[0]
            o = opt[(opt["task"] == task) & (opt["n_keys"] == n) & (opt["d_k"] == d)]
            if len(o) and o["learned"].iloc[0]:
                ax.axvline(np.log2(o["c_star"].iloc[0]), color=line.get_color(), ls=":", lw=1)
        ax.axvline(0, color="k", lw=0.8)
        ax.set(title=f"n = {n} keys", xlabel="log2 c (0: the paper's 1/√d_k)")
    axes[0][0].set_ylabel("validation AUC")
    axes[0][-1].legend(fontsize=8)
    _save(fig, path)


def learned(clauses: pd.DataFrame, opt: pd.DataFrame, path: Path) -> None:
    """The learned temperature's final multiplier against c*, per cell."""
    lt = clauses[clauses["clause"] == "learned_temperature"].merge(opt, on=["task", "n_keys", "d_k"])
    lt = lt[lt["learned"]]
    fig, ax = plt.subplots(figsize=(4.6, 4))
    for n, at in lt.groupby("n_keys"):
        ax.errorbar(at["c_star"], at["estimate"], xerr=[at["c_star"] - at["c_star_lo"], at["c_star_hi"] - at["c_star"]],
                    yerr=[at["estimate"] - at["lo"], at["hi"] - at["estimate"]], fmt="o", capsize=3, label=f"n = {n}")
    lims = [2 ** -7, 2 ** 5]
    ax.plot(lims, lims, "k:", lw=1)
    ax.set(xscale="log", yscale="log", xlim=lims, ylim=lims, xlabel="c* (grid fit)", ylabel="learned multiplier at the end",
           title="what training chooses vs the optimum")
    ax.legend(fontsize=8)
    _save(fig, path)


def sigma0(opt: pd.DataFrame, path: Path) -> None:
    """The logit std at init at c*, against d_k: is the optimum a fixed initial logit spread?"""
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    for n, at in opt[opt["learned"]].groupby("n_keys"):
        at = at.sort_values("d_k")
        ax.plot(at["d_k"], at["sigma0_at_c_star"], marker="o", label=f"n = {n}")
    ax.set(xscale="log", yscale="log", xlabel="d_k", ylabel="σ₀ at c* (logit std at step 0)",
           title="the optimum's initial logit spread")
    ax.legend(fontsize=8)
    _save(fig, path)
