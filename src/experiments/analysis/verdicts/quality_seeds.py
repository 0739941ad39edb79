"""Which seeds chose each rate and which were judged, and what choosing cost: the
optimism of the selection seeds (lr.select.optimism) where a study has confirmation
seeds (conf/analysis.yaml: confirm_seeds_from)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.tables import load


def optimism_table(gain: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"task": gain["task"], "optimizer": gain["optimizer"], "variant": gain["attention"],
                         "d_k": gain["d_k"].astype(int), "lr": [lr_select.lr_text(x) for x in gain["lr"]],
                         "selection AUC": gain["selection_auc"].map("{:.3f}".format),
                         "confirmation AUC": gain["confirmation_auc"].map("{:.3f}".format),
                         "optimism": gain["optimism"].map("{:+.3f}".format),
                         "seeds (selection / confirmation)": [f"{a} / {b}" for a, b in
                                                              zip(gain["n_selection"], gain["n_confirmation"])]})


def phases(s: pd.DataFrame, chosen: pd.DataFrame) -> list[str]:
    """Per condition of the summary `s`, where some cell has confirmation seeds: which seeds chose
    the rates and which were judged (`chosen`: the runs at the chosen rates, lr_select.at_chosen)."""
    judged = lr_select.judged(chosen)
    if not lr_select.confirming(judged).any():
        return []
    out = []
    for cond in load.conditions(s):
        runs = load.at_condition(judged, cond)
        fresh = lr_select.confirming(runs)
        chose = sorted(lr_select.selecting(load.at_condition(s, cond))["seed"].unique())
        per_cell = fresh.groupby([runs["attention"], runs["d_k"]]).any()
        n_fresh, n_cells = int(per_cell.sum()), len(per_cell)
        head = f"{lr_views.label(cond)}: rates chosen on seeds {_span(chose)}; "
        if not n_fresh:
            out.append(head + "no confirmation seeds yet: judged on the seeds that chose the rates")
            continue
        out.append(head + f"judged on confirmation seeds {_span(sorted(runs.loc[fresh, 'seed'].unique()))} in "
                   f"{n_fresh} of {n_cells} (variant, d_k)"
                   + ("" if n_fresh == n_cells else ", the others on the seeds that chose the rates"))
    return out


def _span(seeds) -> str:
    seeds = [int(x) for x in seeds]
    if not seeds:
        return "none"
    return f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))
