"""What a pruning replay changes: lane-steps, the chosen rates, the verdicts, the LR sensitivity.

Compares the full tables of a study with the tables analysis.lr.prune_replay makes
of them, overall and per cell (a cell: `<optimizer>_<task>`, the name of its
conf/cell/ file). Pure: frames in, a dict of plain numbers and lists out.

- lane_steps_saved: 1 - (steps trained with pruning) / (steps trained), over every lane.
- best_lr_agreement: the fraction of (cell, variant, d_k) whose chosen rate is unchanged.
- auc_loss_at_choice: where the choice changes, the full-grid seed-mean val AUC of the
  full choice minus that of the pruned choice (mean and max; 0 where nothing changes).
- verdicts_changed: the readings (a section's verdict, a condition's verdict and lr view, or one
  clause's answer: the sections' own values, see `readings`) that differ between the verdict
  pipeline on the full tables and on the pruned ones (per cell: only that cell's runs replaced by
  their pruned version), each as "<reading>: <full> -> <pruned>".
- lr_sensitivity_error: the largest difference, over (cell, variant, d_k), of the seed-mean
  LR sensitivity; a pruned lane enters it at its AUC with its last accuracy held (lr_select).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis import results as analysis_results
from experiments.analysis.lr import select as lr_select
from experiments.analysis.tables import load
from experiments.analysis.verdicts.rules import Answer, Verdict, fewest, words
from experiments.analysis.verdicts.sections import all_sections

Reading = tuple[Verdict, int] | Answer  # a verdict with its fewest seeds (Verdict.FEW), or a clause's answer


def cell_name(task: str, optimizer: str) -> str:
    return f"{optimizer}_{task}"


def _cells(summary: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted({(t, o) for t, o in zip(summary["task"], summary["optimizer"])})


def readings(res: load.Results) -> dict[str, Reading]:
    """{reading: value}: each section's verdict and each of its judged clauses' answers, and per
    condition of a section that reads conditions (quality) its verdict, its clauses' answers, its
    lr view's verdict and its slope clauses' answers. A clause is keyed by its place and its label."""
    out: dict[str, Reading] = {}
    for s in all_sections(res):
        out[f"{s.key}: verdict"] = (s.verdict, s.seeds)
        if not s.cells:
            out.update({f"{s.key}: {p.label}": p.answer for p in s.parts})
        for c in s.cells:
            out[f"{s.key} {c.name}: verdict"] = (c.verdict, c.seeds)
            out.update({f"{s.key} {c.name}: {p.label}": p.answer for p in c.parts})
            if c.lr_verdict is not None:
                mup = [c.lr_parts["mup"]] if "mup" in c.lr_parts else []
                out[f"{s.key} {c.name}: lr view"] = (c.lr_verdict, fewest(mup))
                out.update({f"{s.key} {c.name}: {p.label}": p.answer for p in c.lr_parts.values()})
    return out


def _text(value: Reading | None) -> str:
    if value is None:
        return "absent"
    return value.value if isinstance(value, Answer) else words(*value)


def _choices(summary: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    return lr_select.best_lrs(lr_select.scored(summary, history)).set_index(lr_select.CELL)


def choice_measures(full: pd.DataFrame, pruned: pd.DataFrame, history: pd.DataFrame,
                   pruned_history: pd.DataFrame) -> dict:
    """best_lr_agreement, auc_loss_at_choice and lr_sensitivity_error of one set of runs."""
    bf, bp = _choices(full, history), _choices(pruned, pruned_history)
    same = bf["best_lr"] == bp.reindex(bf.index)["best_lr"]
    means = lr_select.lr_means(lr_select.scored(full, history)).set_index(lr_select.CELL + ["lr"])["val_auc"]
    loss = np.array([bf.loc[k, "best_val_auc"] - means[(*k, bp.loc[k, "best_lr"])] for k in bf.index[~same]])
    sf = _sensitivity(full, history)
    sp = _sensitivity(pruned, pruned_history).reindex(sf.index)
    gap = (sf - sp).abs()
    return {"best_lr_agreement": float(same.mean()) if len(same) else 1.0,
            "n_choices": int(len(same)),
            "choices_changed": [f"{k[1]}/{k[0]} {k[2]} d_k={int(k[3])}: {bf.loc[k, 'best_lr']:g} -> "
                                f"{bp.loc[k, 'best_lr']:g}" for k in bf.index[~same]],
            "auc_loss_at_choice": {"mean": float(loss.mean()) if loss.size else 0.0,
                                   "max": float(loss.max()) if loss.size else 0.0},
            "lr_sensitivity_error": float(gap.max()) if gap.notna().any() else 0.0}


def _sensitivity(summary: pd.DataFrame, history: pd.DataFrame) -> pd.Series:
    """Seed-mean LR sensitivity per (cell, variant, d_k), each condition over its own common grid."""
    parts = [lr_select.seed_sensitivity(lr_select.scored(load.at_condition(summary, c), history))
             for c in load.conditions(summary)]
    sens = pd.concat(parts) if parts else pd.DataFrame(columns=lr_select.CELL + ["sensitivity"])
    return sens.groupby(lr_select.CELL)["sensitivity"].mean()


def measures(tables: dict, pruned_summary: pd.DataFrame, pruned_history: pd.DataFrame, root,
             primary: tuple[str, str | None]) -> dict:
    """What pruning changes, overall and per cell: pruning_replay.json's measures (see the module
    docstring)."""
    full, hist = tables["summary"], tables["history"]
    analysed = lambda s, h: readings(analysis_results.load_results(root, *primary, tables={**tables, "summary": s, "history": h}))  # noqa: E731
    base = analysed(full, hist)

    def changed(s, h) -> list[str]:
        now = analysed(s, h)
        return sorted(f"{k}: {_text(base.get(k))} -> {_text(now.get(k))}"
                      for k in set(base) | set(now) if base.get(k) != now.get(k))

    def one(mask_full, mask_pruned) -> dict:
        f, p = full[mask_full], pruned_summary[mask_pruned]
        ids = set(p["run_id"])
        return {"lane_steps_saved": float(1 - p["steps_done"].sum() / f["steps_done"].sum()),
                "lanes_pruned": int((p["status"] == "pruned").sum()), "lanes": int(len(p)),
                **choice_measures(f, p, hist[hist["run_id"].isin(ids)],
                                 pruned_history[pruned_history["run_id"].isin(ids)])}

    every = np.ones(len(full), bool)
    out = {**one(every, np.ones(len(pruned_summary), bool)),
           "verdicts_changed": changed(pruned_summary, pruned_history), "cells": {}}
    for task, opt in _cells(full):
        mf = ((full["task"] == task) & (full["optimizer"] == opt)).to_numpy()
        mp = ((pruned_summary["task"] == task) & (pruned_summary["optimizer"] == opt)).to_numpy()
        mixed = pd.concat([full[~mf], pruned_summary[mp]], ignore_index=True)
        ids = set(mixed["run_id"])
        mixed_hist = pd.concat([hist[~hist["run_id"].isin(set(full.loc[mf, "run_id"]))],
                                pruned_history[pruned_history["run_id"].isin(ids)]], ignore_index=True)
        out["cells"][cell_name(task, opt)] = {**one(mf, mp), "verdicts_changed": changed(mixed, mixed_hist)}
    return out
