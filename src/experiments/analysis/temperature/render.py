"""The temperature study's README, REPORT and dashboard: Python gathers the numbers (`facts`), the
templates in templates/ speak (one per output; a sentence changes there, not here). Tables go
through DataFrame.to_markdown."""
from __future__ import annotations

import base64
import math
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import tabulate

from experiments.analysis.temperature.clauses import B, GAMMA, LEARNED, NOT_MEASURED, PAPER, PUBLISHED
from experiments.analysis.render.markdown import missing as _nan, environment as markdown_env, num as _num
from experiments.store.results import atomic_write_text

TEMPLATES = Path(__file__).with_name("templates")


def _env() -> jinja2.Environment:
    return markdown_env(TEMPLATES)


def markdown(df: pd.DataFrame) -> str:
    """A pipe table through tabulate, its floats in 3 significant digits."""
    return tabulate.tabulate(df.to_numpy().tolist(), headers=list(df.columns), tablefmt="pipe", floatfmt=".3g",
                             missingval="—")


# qk_rms: every cell's runs had q and k RMS-normed (the published-point arm); experiment: the preset
# that trained the runs (the README's commands name it); steps: their training budget
ARM = {"qk_rms": False, "experiment": "temperature", "steps": None}
ARMS = TEMPLATES / "arms"  # one per preset: what its README's title adds and what its REPORT says of it


def arm_template(arm: dict) -> str:
    """An arm's own template; the main study's runs, and runs of no preset of their own (a user's
    folder), read as the main study, or as the published-point arm where q and k were RMS-normed."""
    own = arm["experiment"] != "temperature" and (ARMS / f"{arm['experiment']}.md.j2").is_file()
    name = arm["experiment"] if own else "temperature_qk_rms" if arm["qk_rms"] else "temperature"
    return f"arms/{name}.md.j2"


def facts(clauses: pd.DataFrame, opt: pd.DataFrame, fits: pd.DataFrame, walls: pd.DataFrame, cfg,
          rates: list[float], arm: dict | None = None) -> dict:
    """Every number the templates say, by name; `arm` names the runs' own (ARM's keys)."""
    arm = {**ARM, **(arm or {})}
    paper = clauses[clauses["clause"] == PAPER]
    measured = paper[paper["answer"] != NOT_MEASURED]
    tasks = []
    for task, at in clauses.groupby("task"):
        p = paper[paper["task"] == task]
        m = p[p["answer"] != NOT_MEASURED]
        law = {c: clauses[(clauses["task"] == task) & (clauses["clause"] == c)].to_dict("records") for c in (GAMMA, B)}
        counts = m["answer"].value_counts().to_dict()
        tasks.append({"task": task, "n_cells": len(p), "n_measured": len(m), "counts": counts,
                      "delta_min": m["estimate"].min() if len(m) else math.nan,
                      "delta_max": m["estimate"].max() if len(m) else math.nan,
                      "gamma": (law[GAMMA] or [None])[0], "b": (law[B] or [None])[0],
                      "c_star_min": opt.loc[opt["task"] == task, "c_star"].min(),
                      "c_star_max": opt.loc[opt["task"] == task, "c_star"].max()})
    lt = clauses[(clauses["clause"] == LEARNED) & (clauses["answer"] != NOT_MEASURED)]
    edged = opt.assign(**{k: opt.get(k, pd.Series("", index=opt.index)).fillna("")
                          for k in ("lr_edge_at_c_star", "lr_edge_at_1")})
    return {"cfg": cfg, "tasks": tasks, "cfg_ns": sorted(int(x) for x in opt["n_keys"].unique()),
            "cfg_dks": sorted(int(x) for x in opt["d_k"].unique()), "cfg_rates": rates, "n_cells": len(paper), "n_measured": len(measured),
            "answers": measured["answer"].value_counts().to_dict(),
            "learned_inside": int((lt["answer"] == "inside c*'s interval").sum()), "learned_n": len(lt),
            "learned_below": int((lt["answer"] == "below c*'s interval").sum()),
            "edges": opt[opt["where"].str.startswith("edge")][["task", "n_keys", "d_k", "where"]].to_dict("records"),
            "not_learned": opt[~opt["learned"]][["task", "n_keys", "d_k", "best_final_val_accuracy"]].to_dict("records"),
            "sigma0_min": opt.loc[opt["learned"], "sigma0_at_c_star"].min(),
            "sigma0_max": opt.loc[opt["learned"], "sigma0_at_c_star"].max(),
            "wall_h": walls["wall_s"].sum() / 3600,
            "published": clauses[clauses["clause"] == PUBLISHED].sort_values(["test", "task", "n_keys"]).to_dict("records"),
            "rate_edges": {at: edged[edged[f"lr_edge_at_{at}"].astype(bool) & edged["learned"]][
                ["task", "n_keys", "d_k", f"lr_edge_at_{at}"]].to_dict("records") for at in ("c_star", "1")},
            **arm, "arm_template": arm_template(arm)}


def answer_table(clauses: pd.DataFrame, opt: pd.DataFrame) -> pd.DataFrame:
    """The README's table: four short columns a cell."""
    paper = clauses[clauses["clause"] == PAPER].set_index(["task", "n_keys", "d_k"])
    rows = []
    for _, o in opt.sort_values(["task", "n_keys", "d_k"]).iterrows():
        p = paper.loc[(o["task"], o["n_keys"], o["d_k"])]
        rows.append({"cell (n keys, d_k)": f"{o['task']} {o['n_keys']}, {o['d_k']}",
                     "best c (× 1/√d_k)": f"{_num(o['c_star'], 2)} [{_num(o['c_star_lo'], 2)}, {_num(o['c_star_hi'], 2)}]"
                     if o["learned"] else "—",
                     "is 1/√d_k right?": p["answer"],
                     "AUC lost at 1/√d_k": "—" if _nan(p.get("estimate")) else f"{p['estimate']:+.3f}"})
    return pd.DataFrame(rows)


def figure_data(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode() if path.is_file() else ""


def write(root: Path, clauses, opt, fits, walls, chosen_rates_grid, cfg, figures: dict[str, Path],
          arm: dict | None = None) -> dict[str, Path]:
    """arm: what the runs share (ARM's keys), which the README and REPORT name."""
    env, f = _env(), facts(clauses, opt, fits, walls, cfg, sorted(float(x) for x in chosen_rates_grid), arm)
    tables = {"answer": markdown(answer_table(clauses, opt)),
              "optimum": markdown(opt[["task", "n_keys", "d_k", "c_star", "c_star_lo", "c_star_hi", "where",
                                       "best_final_val_accuracy", "final_at_1_selection", "auc_at_1_selection", "best_val_auc",
                                       "sigma0_at_1", "sigma0_at_c_star"]]),
              "paper": markdown(clauses[clauses["clause"] == PAPER][["task", "n_keys", "d_k", "n_seeds", "estimate", "lo",
                                                                      "hi", "p", "p_perm", "power", "power_at_zero", "answer"]]),
              "law": markdown(fits) if len(fits) else "(no task had cells that learned)",
              "learned": markdown(clauses[clauses["clause"] == LEARNED][["task", "n_keys", "d_k", "n_seeds", "estimate",
                                                                          "lo", "hi", "answer"]]),
              "walls": markdown(walls)}
    out = {}
    for name, template in (("README.md", "README.md.j2"), ("REPORT.md", "REPORT.md.j2")):
        out[name] = root / name
        atomic_write_text(out[name], env.get_template(template).render(f=f, t=tables, figures=figures))
    page = env.get_template("dashboard.html.j2").render(
        f=f, figures={k: figure_data(p) for k, p in figures.items()},
        clauses=clauses.replace({np.nan: None}).to_dict("records"),
        answer=answer_table(clauses, opt).to_html(index=False, border=0))
    out["dashboard.html"] = root / "dashboard.html"
    atomic_write_text(out["dashboard.html"], page)
    return out
