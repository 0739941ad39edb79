"""Figures 1-4 and 8: attention statistics against d_k (init, probe, end of training)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.tables import load
from experiments.analysis.tables import diverged
from experiments.analysis.figures import style
from experiments.analysis.stats.intervals import fmt_ci, slope_ci
from experiments.analysis.figures.style import Skip


def sources(res: load.Results) -> list[tuple[str, pd.DataFrame]]:
    """Panels shared by figures 1-4: init and end rows of the primary condition, and the probe.

    Init rows come from every run; end rows from the runs that did not diverge."""
    out = []
    if res.history is not None:
        cond = res.primary
        hist = load.at_condition(res.history, cond)
        tag = f"{cond[0]}, {cond[1]}"
        out.append((f"init (step 0) — {tag}", load.init_rows(hist)))
    if res.probe is not None:
        probe = load.probe_rows(res.probe)
        n = ", ".join(f"{k:g}" for k in sorted(probe["n_keys"].unique())) if "n_keys" in probe else "?"
        out.append((f"probe at init — iid inputs, n_keys={n}", probe))
    if res.history is not None:
        trained = diverged.without_diverged(hist, res.summary)
        n_div = hist["run_id"].nunique() - trained["run_id"].nunique()
        if len(trained):
            end = load.end_rows(trained)
            out.append((f"end of training (step {int(end['step'].max())}) — {tag}"
                        f"{diverged.left_out(n_div)}", end))
    if not out:
        raise Skip("no history.parquet and no probe.parquet")
    return out


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    order = {v: i for i, v in enumerate(load.variant_order(df["attention"].unique()))}
    return df.sort_values(["attention", "d_k"], key=lambda s: s.map(order) if s.name == "attention" else s)


def _row_of_panels(res, column: str, ylabel: str, logy: bool, theory: bool = False):
    panels = [(t, df) for t, df in sources(res) if column in df and df[column].notna().any()]
    if not panels:
        raise Skip(f"no {column} column in history.parquet or probe.parquet")
    fig, axes = style.new_figure(1, len(panels), width=4.4, height=3.4)
    for i, (ax, (title, df)) in enumerate(zip(axes[0], panels)):
        df = _ordered(load.per_seed(df, column))
        if logy:
            df = df[df[column] > 0]  # a zero (e.g. zero-initialised W_q) has no log
        style.mean_band(ax, df, column)
        if theory:
            _theory(ax, title, res, df)
        style.dk_axis(ax, df["d_k"])
        ax.set_ylabel(ylabel)
        if logy:
            style.log_scale(ax)
        ax.set_title(title)
        if i == len(panels) - 1:
            style.legend(ax, theory=theory)
    return fig


def _theory(ax, title: str, res, df) -> None:
    if title.startswith("probe") and "theory_logit_var" in res.probe:
        t = load.probe_rows(res.probe).groupby(["attention", "d_k"], as_index=False)["theory_logit_var"].mean()
        for v, g in t.dropna().groupby("attention"):
            ax.plot(g["d_k"], g["theory_logit_var"], ls="--", lw=1, color=style.colour(v))
    else:
        style.theory_lines(ax, df["d_k"], df["attention"].unique())


def logit_variance(res):
    return [("logit_variance", _row_of_panels(
        res, "logit_var", "Var(logit) over keys (logit units²)", logy=True, theory=True))]


def entropy(res):
    return [("entropy", _row_of_panels(
        res, "entropy_norm", "attention entropy / log n (normalised, 1 = uniform)", logy=False))]


def saturation(res):
    return [("saturation", _row_of_panels(
        res, "saturation", "share of saturated rows (max weight > 0.99)", logy=False))]


GRADIENT_PANELS = [
    ("jacobian_norm_median", "median softmax Jacobian ‖J‖_F per row"),
    ("grad_norm_q", "‖∂L/∂{q}‖ (Frobenius)"),
    ("grad_norm_k", "‖∂L/∂{k}‖ (Frobenius)"),
    ("grad_qk_row_median", "median over rows of ‖∂l/∂({q}, {k})‖"),
    ("grad_qk_row_rms", "RMS over rows of ‖∂l/∂({q}, {k})‖"),
]


def _wrt(df: pd.DataFrame) -> dict:
    """What the gradient columns of these rows differentiate: q, k themselves (iid probe) or W_q, W_k."""
    iid = "grad_wrt" in df and (df["grad_wrt"] == "q,k").all()
    return {"q": "q", "k": "k"} if iid else {"q": "W_q", "k": "W_k"}


def gradients(res):
    rows = [(t, df) for t, df in sources(res)
            if any(c in df and df[c].notna().any() for c, _ in GRADIENT_PANELS)]
    if not rows:
        raise Skip("no Jacobian or gradient-norm columns")
    fig, axes = style.new_figure(len(rows), len(GRADIENT_PANELS), width=4.2, height=3.1)
    drawn = []  # the legend goes beside the last panel of the first row that has lines
    for r, (title, df) in enumerate(rows):
        for c, (column, ylabel) in enumerate(GRADIENT_PANELS):
            ylabel = ylabel.format(**_wrt(df))
            ax = axes[r][c]
            if column not in df or not df[column].notna().any():
                ax.set_axis_off()
                ax.set_title(f"{column}: not measured")  # the row is named by its other panels
                continue
            d = _ordered(load.per_seed(df, column))
            style.mean_band(ax, d[d[column] > 0], column)
            style.dk_axis(ax, d["d_k"])
            style.log_scale(ax)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            drawn.append((r, c, ax))
    style.legend(max(drawn, key=lambda rc: (-rc[0], rc[1]))[2])
    return [("gradients", fig)]


def logit_growth(res):
    """Figure 8, the muP check: does trained q.k grow like sqrt(d_k) (slope 0.5) or d_k (1)?"""
    res = res.for_width()
    if res.history is None or "logit_std" not in res.history:
        raise Skip("no history.parquet with logit_std")
    cond = res.primary
    everything = load.at_condition(res.history, cond)
    hist = diverged.without_diverged(everything, res.summary)
    if hist.empty:
        raise Skip(f"every run of {cond[0]}, {cond[1]} diverged")
    note = diverged.left_out(everything["run_id"].nunique() - hist["run_id"].nunique())
    end = _ordered(load.per_seed(load.end_rows(hist), "logit_std"))
    fig, axes = style.new_figure(1, 2, width=5.0, height=3.6)
    ax = axes[0][0]
    for v in load.variant_order(end["attention"].unique()):
        g = end[end["attention"] == v]
        ci = slope_ci(*load.seed_matrix(g, "logit_std", v)[::2])
        style.mean_band(ax, g[g["logit_std"] > 0], "logit_std", label=f"{style.label(v)}: slope {fmt_ci(ci)}")
    style.dk_axis(ax, end["d_k"])
    style.log_scale(ax)
    ax.set_ylabel("logit std at end of training (logit units)")
    ax.set_title("at the end, against d_k")
    ax = axes[0][1]
    d_max = hist["d_k"].max()
    # Steps take the place of d_k on the x axis of this panel.
    top = _ordered(load.per_seed(hist[hist["d_k"] == d_max].assign(d_k=lambda d: d["step"]), "logit_std"))
    style.mean_band(ax, top, "logit_std", ms=2, label="_nolegend_")  # the left panel's lines name them
    ax.set_xlabel("training step")
    ax.set_ylabel("logit std (logit units)")
    style.log_scale(ax)
    ax.set_title(f"over training at d_k = {int(d_max)}")
    style.legend(ax)
    style.suptitle(fig, f"Trained logit scale — {cond[0]}, {cond[1]}{note} (legend: per-seed log-log "
                        "slope against d_k, 95% t)")
    return [("logit_growth", fig)]

