#!/usr/bin/env python
"""The next study's plan (results/reference/README.md, "Next study") from the committed one:
confirmation seeds for 80% TOST power at ±0.05 AUC per cell and d_k, and the projected cost per
cell. Usage: PYTHONPATH=src python scripts/next_study_plan.py [results/reference]

Cost: the committed runs' job wall times, scaled per cell to this build's projection of that
cell (README: Wall time), give seconds per lane-step per (variant, d_k); the selection's
lane-steps are the committed ones per rate x the new grid's rates, cut by the pruning replay's
saving per cell; new d_k are interpolated in log2 d_k; mup costs as scaled, additive_wide as
additive at d_k = 64; confirmation seeds run the committed mean steps at the best rate."""
import json
import math
import sys

import numpy as np
import pandas as pd

from experiments.analysis.lr import select
from experiments.analysis.stats import profile

REF = sys.argv[1] if len(sys.argv) > 1 else "results/reference"
PROJECTED_H = {"adam_assoc_recall": 0.44, "sgd_assoc_recall": 0.52, "adam_mqar": 2.34,
               "adam_vector_retrieval": 2.51}
CONDITION = {"adam_assoc_recall": ("assoc_recall", "adam"), "sgd_assoc_recall": ("assoc_recall", "sgd"),
             "adam_mqar": ("mqar", "adam"), "adam_vector_retrieval": ("vector_retrieval", "adam")}
D_K = [2, 4, 8, 16, 32, 64, 128, 512, 1024]

s = pd.read_parquet(f"{REF}/summary.parquet")
s = s[s["experiment"] == "quality"].copy()
s["cellname"] = s["optimizer"] + "_" + s["task"]
saved = {k: v["lane_steps_saved"] for k, v in json.load(open(f"{REF}/pruning_replay.json"))["cells"].items()}
best = select.best_lrs(select.scored(s)).set_index(select.CELL)["best_lr"]

# seeds for TOST: the paired sd of additive - unscaled at the chosen rates
at = select.at_best(s).pivot_table(index=["task", "optimizer", "d_k", "seed"], columns="attention", values="val_auc")
rows = []
for (task, opt, d), g in at.groupby(level=[0, 1, 2]):
    sd = float((g["additive"] - g["unscaled"]).dropna().std(ddof=1))
    rows.append(dict(cell=f"{task}/{opt}", d_k=d, sd=round(sd, 3), seeds=profile.seeds_for_tost(sd, 0.05)))
print(pd.DataFrame(rows).pivot_table(index="d_k", columns="cell", values=["seeds", "sd"]).to_string())

jobs = s.groupby(["cellname", "attention", "d_k"]).agg(lane_steps=("steps_done", "sum"), n_lrs=("lr", "nunique"))
jobs["wall"] = s.groupby(["cellname", "attention", "d_k", "lr"])["wall_time_s"].max().groupby(level=[0, 1, 2]).sum()
per_cell = jobs.groupby(level=0)["wall"].transform("sum")
scale = jobs.index.get_level_values(0).map(lambda c: PROJECTED_H[c] * 3600)
jobs["sec_per_lane_step"] = jobs["wall"] * scale / per_cell / jobs["lane_steps"]


def interp(cell, att, d, values):
    g = values.loc[(cell, att)]
    return float(np.interp(math.log2(d), np.log2(g.index.to_numpy(float)), g.to_numpy(float)))


def steps_at_best(cell, att, d):
    task, opt = CONDITION[cell]
    sel = s[(s.task == task) & (s.optimizer == opt) & (s.attention == att)]
    mean = sel.groupby("d_k").apply(lambda g: g.loc[g["lr"] == best[(task, opt, att, g.name)], "steps_done"].mean())
    return float(np.interp(math.log2(d), np.log2(mean.index.to_numpy(float)), mean.to_numpy(float)))


def plan(name, cell, variants, d_ks, rates, n_conf, wide=False, per_step=1.0, step_ratio=1.0):
    sel_s = conf_s = sel_ls = conf_ls = 0.0
    for att in variants:
        base = "scaled" if att == "mup" else att
        for d in d_ks:
            t = interp(cell, base, min(d, 64) if wide else d, jobs["sec_per_lane_step"]) * per_step
            ls = (interp(cell, base, d, jobs["lane_steps"]) / interp(cell, base, d, jobs["n_lrs"])
                  * rates * (1 - saved[cell]) * step_ratio)
            c = n_conf * steps_at_best(cell, base, d) * step_ratio
            sel_s, sel_ls, conf_s, conf_ls = sel_s + ls * t, sel_ls + ls, conf_s + c * t, conf_ls + c
    return dict(cell=name, selection_Mls=sel_ls / 1e6, selection_h=sel_s / 3600, confirm_Mls=conf_ls / 1e6,
                confirm_h=conf_s / 3600, total_h=(sel_s + conf_s) / 3600)


TOKEN = ["scaled", "unscaled", "additive", "qk_norm"]
out = pd.DataFrame([
    plan("adam_assoc_recall", "adam_assoc_recall", TOKEN + ["mup"], D_K, 6, 10),
    plan("sgd_assoc_recall", "sgd_assoc_recall", TOKEN, D_K, 6, 18),
    plan("adam_mqar", "adam_mqar", TOKEN + ["mup"], D_K, 6, 8),
    plan("adam_assoc_recall additive_wide", "adam_assoc_recall", ["additive"], D_K[:6], 6, 10, wide=True),
    plan("sgd_assoc_recall additive_wide", "sgd_assoc_recall", ["additive"], D_K[:6], 6, 18, wide=True),
    plan("adam_mqar additive_wide", "adam_mqar", ["additive"], D_K[:6], 6, 8, wide=True),
    # the new vector cell: 33 positions against 65 (a step's work ~ T), 2000 steps against 3000
    plan("adam_vector_retrieval_d8", "adam_vector_retrieval", TOKEN, [8, 16, 32, 64, 128, 512, 1024], 5, 8,
         per_step=33 / 65, step_ratio=2000 / 3000),
])
print(out.round(2).to_string())
print(f"total: {out['total_h'].sum():.1f} h")
