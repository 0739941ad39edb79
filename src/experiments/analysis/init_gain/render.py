"""The control's README: Python gathers the numbers by name (`facts`), templates/README.md.j2 says
them (a sentence changes there, not here)."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from experiments.analysis.init_gain import clauses as c
from experiments.analysis.render.markdown import environment, num
from experiments.store.results import atomic_write_text

TEMPLATES = Path(__file__).with_name("templates")


def _rows(table: pd.DataFrame, clause: str, **where) -> list[dict]:
    at = table[table["clause"] == clause]
    for k, v in where.items():
        at = at[at[k] == v]
    return at.to_dict("records")


def bound(x: float) -> str:
    """An interval end in words where the crossover left the range."""
    return "open" if x == math.inf else "≤ range" if x == 0 else f"{x:.3g}"


def d_star_table(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in _rows(table, c.D_STAR):
        rows.append({"W_q, W_k init gain": num(r["gain"], 3),
                     "d* (additive at gain 1 overtakes)": f"{bound(r['estimate'])} [{bound(r['lo'])}, {bound(r['hi'])}]",
                     "σ₀ at d*": "—" if pd.isna(r["sigma0"]) else num(r["sigma0"], 3)})
    return pd.DataFrame(rows)


def facts(table: pd.DataFrame, pts: pd.DataFrame, cfg, cell: str = "", experiment: str = "init_gain") -> dict:
    effect = table[table["clause"] == c.COLLAPSE]
    first = lambda clause, **w: (_rows(table, clause, **w) or [None])[0]  # noqa: E731
    return {"cfg": cfg, "cell": cell, "experiment": experiment, "level_pct": round(100 * (1 - 2 * cfg.alpha)), "n_seeds": int(table["n_seeds"].max()),
            "d_ks": sorted(int(d) for d in pts["d_k"].unique()),
            "gains": sorted(float(g) for g in pts["gain"].unique()),
            "collapse": {"n": len(effect), "counts": effect["answer"].value_counts().to_dict(),
                         "lo": effect["estimate"].min(), "hi": effect["estimate"].max(),
                         "s_lo": effect["sigma0"].min(), "s_hi": effect["sigma0"].max(),
                         "alone_above": effect["alone_above"].max(),
                         "alone_above_min": effect["alone_above"].min()},
            "at_gain": first(c.AT_GAIN, variant=cfg.collapse_variant),
            "scaled": first(c.AT_GAIN, variant="scaled"),
            "crossovers": _rows(table, c.CROSSOVER), "trend": first(c.TREND), "exponent": first(c.EXPONENT),
            # q.k of alike independent components has sd sqrt(d_k) s^2: s = sqrt(sigma_0 / sqrt(d_k))
            "britz": [{**r, "component_sd": math.sqrt(r["estimate"] / math.sqrt(r["d_k"]))}
                      for r in _rows(table, c.BRITZ)],
            "d_star_ref": first(c.D_STAR, gain=float(cfg.reference_gain))}


def write(out: Path, table: pd.DataFrame, pts: pd.DataFrame, cfg, figure: Path, cell: str = "",
          experiment: str = "init_gain") -> Path:
    """README.md in out; `cell` the runs' task/optimizer, `experiment` the preset that trained them."""
    text = environment(TEMPLATES).get_template("README.md.j2").render(
        f=facts(table, pts, cfg, cell, experiment), d_star=d_star_table(table), figure=figure.name, bound=bound)
    atomic_write_text(out / "README.md", text)
    return out / "README.md"
