"""The control's figure, drawn from its tables: AUC against sigma_0 per d_k (does it collapse?) and
the d_k effect at matched sigma_0 against the margin."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.analysis.init_gain import clauses as clauselib  # noqa: E402

NAME = "init_gain_collapse.png"


def collapse(pts: pd.DataFrame, table: pd.DataFrame, cfg, path: Path) -> None:
    """Left: the fresh seeds' mean AUC against sigma_0, the collapse variant per d_k (solid, its
    crossover sigma_0* marked), the comparator at the reference gain (dotted, the same colour).
    Right: the AUC change from the smallest to the largest d_k at matched sigma_0, with its
    interval and the margin, and the same at the matched gain."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 3.9))
    cross = table[table["clause"] == clauselib.CROSSOVER].set_index("d_k")
    for d_k, at in pts[pts["variant"] == cfg.collapse_variant].groupby("d_k"):
        at = at.sort_values("sigma0")
        line = ax.plot(at["sigma0"], at["auc"], marker="o", ms=3, label=f"d_k {d_k}")[0]
        comp = pts[(pts["variant"] == cfg.comparator) & (pts["d_k"] == d_k) & np.isclose(pts["gain"], cfg.reference_gain)]
        if len(comp):
            ax.axhline(comp["auc"].iloc[0], color=line.get_color(), ls=":", lw=1)
        if d_k in cross.index and np.isfinite(cross.loc[d_k, "estimate"]) and cross.loc[d_k, "estimate"] > 0:
            ax.axvline(cross.loc[d_k, "estimate"], color=line.get_color(), ls="--", lw=0.8)
    ax.set(xscale="log", xlabel="σ₀: logit std at step 0", ylabel="validation AUC (fresh seeds)",
           title=f"{cfg.collapse_variant} (solid) vs {cfg.comparator} at gain {cfg.reference_gain:g} (dotted)")
    ax.legend(fontsize=8)
    eff = table[(table["clause"] == clauselib.COLLAPSE)].sort_values("sigma0")
    bx.axhspan(-cfg.margin, cfg.margin, color="0.9", label=f"±{cfg.margin:g}: σ₀ alone")
    bx.axhline(0, color="k", lw=0.8)
    if len(eff):
        bx.fill_between(eff["sigma0"], eff["lo"], eff["hi"], alpha=0.3)
        bx.plot(eff["sigma0"], eff["estimate"], marker="o", label="at matched σ₀")
    for _, r in table[table["clause"] == clauselib.AT_GAIN].iterrows():
        x = eff["sigma0"].max() * 1.6 if len(eff) else 1.0
        x *= 1.0 if r["variant"] == cfg.collapse_variant else 1.4
        bx.errorbar([x], [r["estimate"]], yerr=[[r["estimate"] - r["lo"]], [r["hi"] - r["estimate"]]], fmt="s",
                    capsize=3, label=f"{r['variant']} at gain {cfg.reference_gain:g}")
    bx.set(xscale="log", xlabel="σ₀ (matched across d_k)", ylabel="AUC change, smallest to largest d_k",
           title=f"the d_k effect left at matched σ₀ ({1 - 2 * cfg.alpha:.0%} intervals)")
    bx.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
