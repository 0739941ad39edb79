"""The lr study of sub-claim 4: best lr on validation, edge flags, diverged runs at chance, the
verdict (a)/(b)/(c) each way on simulated lr-grid summaries whose truth is known, and the power of
the design at 8 seeds (printed: run with -s to read it)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.figures import lr as figures_lr
from experiments.analysis import results as analysis_results
from experiments.analysis.tables import load
from experiments.analysis.lr import select as lr_select
from experiments.analysis.lr import views as lr_views
from experiments.analysis.stats.intervals import mean_ci
from experiments.analysis.verdicts import rules
from experiments.analysis.figures import style
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts.rules import FAILS, HOLDS, UNMEASURED, UNSURE, Answer
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.render.answer import answer_lines
from experiments.tasks import TASKS
from experiments.tasks.mqar import MQARConfig

GRID = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
D_KS = (8, 16, 32, 64, 128, 256)


def simulate(n_seeds=8, drift=-1.0, gap=0.03, noise=0.01, seed_sd=0.03, grid=GRID, d_ks=D_KS,
             rng=0, task="assoc_recall", optimizer="adam") -> pd.DataFrame:
    """SYNTHETIC summary of an lr-grid sweep (not data). AUC of (variant, d_k, lr, seed) =
    peak − 0.05 (log2 lr − log2 lr*)² + a seed effect shared by the variants (the pairing) + noise,
    clipped to [chance, 1].
    lr* of unscaled moves by `drift` log2 units per doubling of d_k (scaled and additive stay at
    1e-3); unscaled's peak falls by `gap` per doubling (additive and scaled stay at 0.8)."""
    rng = np.random.default_rng(rng)
    seed_effect = rng.normal(0, seed_sd, n_seeds)
    rows = []
    for v in ("scaled", "unscaled", "additive"):
        for d in d_ks:
            doublings = math.log2(d / d_ks[0])
            centre = math.log2(1e-3) + (drift * doublings if v == "unscaled" else 0.0)
            peak = 0.8 - (gap * doublings if v == "unscaled" else 0.0)
            for lr in grid:
                for s in range(n_seeds):
                    auc = peak - 0.05 * (math.log2(lr) - centre) ** 2 + seed_effect[s] + rng.normal(0, noise)
                    auc = float(np.clip(auc, 1 / 32, 1.0))  # never below chance
                    rows.append(dict(run_id=f"{v}-{d}-{lr}-{s}", attention=v, d_k=d, seed=s, task=task,
                                     optimizer=optimizer, lr=lr, status="completed", accuracy_auc=auc,
                                     final_val_accuracy=min(auc + 0.1, 1.0), test_accuracy=min(auc + 0.1, 1.0),
                                     steps_to_threshold=np.nan, steps=1000, threshold=0.9))
    return pd.DataFrame(rows)


def results_of(summary: pd.DataFrame, history=None) -> load.Results:
    return load.Results(None, summary, history, None, None)


def _one_cell(values: dict, **extra) -> pd.DataFrame:
    """A (variant, d_k) cell: {lr: [(val auc, test acc, status), ...per seed]}."""
    rows = [dict(run_id=f"r{lr}-{s}", attention="scaled", d_k=16, seed=s, task="assoc_recall", optimizer="adam",
                 lr=lr, accuracy_auc=auc, final_val_accuracy=auc, test_accuracy=test, status=st, **extra)
            for lr, seeds in values.items() for s, (auc, test, st) in enumerate(seeds)]
    return pd.DataFrame(rows)


# --- choice of lr ----------------------------------------------------------------------

def test_best_lr_uses_validation_never_test():
    ok = "completed"
    s = _one_cell({1e-3: [(0.6, 0.99, ok)] * 3, 3e-3: [(0.7, 0.10, ok)] * 3, 1e-2: [(0.5, 0.5, ok)] * 3})
    best = lr_select.best_lrs(lr_select.scored(s))
    assert best["best_lr"].tolist() == [3e-3] and best["edge"].tolist() == [""]
    assert set(lr_select.at_best(s)["lr"]) == {3e-3}


@pytest.mark.parametrize("aucs, edge", [((0.9, 0.5, 0.4), "edge: low"), ((0.4, 0.5, 0.9), "edge: high"),
                                        ((0.4, 0.9, 0.5), "")])
def test_edge_flag(aucs, edge):
    s = _one_cell({lr: [(a, a, "completed")] * 3 for lr, a in zip((1e-3, 3e-3, 1e-2), aucs)})
    assert lr_select.best_lrs(lr_select.scored(s))["edge"].tolist() == [edge]
    assert lr_select.edge_flag(1e-3, [1e-3]) == ""  # one lr: no edge to speak of


def test_diverged_runs_count_at_chance_from_the_task_config():
    # the diverged lr recorded a high AUC before it blew up: counted at chance (1/32), it loses
    s = _one_cell({1e-3: [(0.5, 0.5, "completed")] * 3, 1e-2: [(0.95, math.nan, "diverged")] * 3},
                  **{"task.name": "assoc_recall", "task.vocab_size": 64, "task.n_pairs": 16})
    sc = lr_select.scored(s)
    assert np.allclose(sc.loc[sc["status"] == "diverged", "val_auc"], 1 / 32)
    assert lr_select.best_lrs(sc)["best_lr"].tolist() == [1e-3]
    sens = lr_select.seed_sensitivity(sc)["sensitivity"]
    assert np.allclose(sens, (0.5 - 1 / 32) / 2)  # Wortsman: mean over the grid of best − achieved


def test_chance_of_tasks_with_different_fields_in_one_table():
    # each task leaves the other's fields NaN: each still gets its own chance from its config
    recall = _one_cell({1e-2: [(0.9, math.nan, "diverged")]}, **{"task.name": "assoc_recall",
                                                                 "task.vocab_size": 64, "task.n_pairs": 16})
    mqar_cfg = MQARConfig(vocab_size=128)
    mqar = _one_cell({1e-2: [(0.9, math.nan, "diverged")]},
                     **{f"task.{k}": v for k, v in dataclasses.asdict(mqar_cfg).items()})
    mixed = pd.concat([recall, mqar.assign(task="mqar", run_id="m")], ignore_index=True)
    got = lr_select.chance(mixed)
    assert got.tolist() == pytest.approx([1 / 32, 1 / TASKS["mqar"].n_classes(mqar_cfg)])


def test_chance_falls_back_to_the_accuracy_at_init():
    s = _one_cell({1e-3: [(0.5, 0.5, "completed")] * 3, 1e-2: [(0.95, math.nan, "diverged")] * 3})
    history = pd.DataFrame([dict(run_id=r, attention="scaled", d_k=16, task="assoc_recall", optimizer="adam",
                                 step=step, accuracy=0.1 if step == 0 else 0.9)
                            for r in s["run_id"] for step in (0, 50)])
    sc = lr_select.scored(s, history)
    assert np.allclose(sc.loc[sc["status"] == "diverged", "val_auc"], 0.1)


def test_one_lr_per_cell_still_works():
    s = simulate(grid=(1e-3,), n_seeds=4).drop(columns=["lr"])  # an old summary: no lr column at all
    assert not lr_select.has_grid(s)
    assert len(lr_select.at_best(s)) == len(s)
    section = vq.quality(results_of(s))
    assert [c.lr_verdict for c in section.cells] == [None]  # no lr view without a grid
    assert not section.detail.has_grid
    kinds = [t.kind for t in section.tables]
    assert kinds[:2] == ["profile", "quality"]
    assert not {"optimal_lr", "drift", "sensitivity"} & set(kinds)  # no lr tables
    with pytest.raises(style.Skip, match=lr_select.NO_GRID):
        figures_lr.optimal_lr(results_of(s))


# --- the lr view (c) --------------------------------------------------------------------

def _lr_view(summary):
    return vq.lr_view(summary)


def test_unscaled_optimum_halving_per_doubling_gives_slope_minus_one():
    s = simulate(drift=-1.0, grid=tuple(2.0 ** np.arange(-17, -7)), noise=0.003)  # 7.6e-6 .. 3.9e-3, ×2
    slopes = lr_views.drift_slopes(lr_select.scored(s))
    est, lo, hi = (float(x) for x in mean_ci(slopes["unscaled"]))
    assert abs(est + 1) < 0.1 and lo < -0.8 and hi < 0
    verdict, parts, (step, band) = _lr_view(s)
    assert verdict is UNMEASURED and "mup" not in parts  # no mup runs: the test that matters is not measured
    assert parts["unscaled"].answer is Answer.REPORTED and parts["unscaled"].question.predicted == -1.0
    assert step == pytest.approx(1.0) and parts["unscaled"].question.band == band


@pytest.mark.parametrize("drift, expected", [(0.0, HOLDS), (-1.0, FAILS)])
def test_mups_optimum_is_judged_flat_or_not(drift, expected):
    """mup's prediction (lr.theory) is a flat optimum: one that stays holds, one that drifts fails."""
    s = simulate(drift=drift, noise=0.002)
    s["attention"] = s["attention"].replace("unscaled", "mup")  # the drifting variant, named mup
    verdict, parts, _ = _lr_view(s)
    assert verdict is expected, parts
    assert parts["mup"].answer is (Answer.YES if expected is HOLDS else Answer.NO)


def test_a_seed_that_learned_nothing_has_no_best_lr():
    # assoc_recall's chance is 1/32: a seed whose best AUC stays under 2/32 learned nothing
    fields = {"task.name": "assoc_recall", "task.vocab_size": 64, "task.n_pairs": 16}
    at_chance = _one_cell({1e-3: [(0.031, 0.03, "completed")], 3e-3: [(0.040, 0.03, "completed")]}, **fields)
    learned = _one_cell({1e-3: [(0.031, 0.03, "completed")], 3e-3: [(0.070, 0.3, "completed")]}, **fields)
    assert math.isnan(lr_select.seed_best_lr(lr_select.scored(at_chance))["best_lr"].iloc[0])
    assert lr_select.seed_best_lr(lr_select.scored(learned))["best_lr"].tolist() == [3e-3]


# --- the verdict (a)+(b) each way ------------------------------------------------------------

@pytest.mark.parametrize("kw, expected", [
    (dict(gap=0.03), HOLDS),  # unscaled falls behind as d_k grows, alike at d_k = 8
    (dict(gap=-0.03), FAILS),  # unscaled pulls ahead: Δ slope below 0
    (dict(gap=0.03, noise=0.3), UNSURE),  # the same truth, drowned in noise
    (dict(gap=0.03, n_seeds=2), rules.FEW),
])
def test_quality_verdict_follows_the_data(kw, expected):
    section = vq.quality(results_of(simulate(**kw)))
    assert section.verdict is expected, [c.parts for c in section.cells]
    assert section.seeds == (kw.get("n_seeds", 0) if expected is rules.FEW else 0)
    assert section.key == "quality" and {"quality", "steps_survival", "learning_curves"} <= set(section.figures)


def test_quality_names_a_task_that_disagrees():
    s = pd.concat([simulate(gap=0.03), simulate(gap=-0.03, task="vector_retrieval", rng=1)])
    section = vq.quality(results_of(s))
    assert section.verdict is UNSURE
    assert {c.name: c.verdict for c in section.cells} == {"assoc_recall/adam": HOLDS,
                                                          "vector_retrieval/adam": FAILS}
    assert {"optimal_lr", "drift", "sensitivity"} <= {t.kind for t in section.tables}


def test_a_gap_between_runs_at_chance_is_not_measured():
    """vector_retrieval's plateau: additive and unscaled never leave chance, so a tight interval on
    their gap at chance (here additive 0.01 ahead, seeds alike) must not decide (a) either way."""
    s = simulate(gap=0.03).assign(**{"task.name": "assoc_recall", "task.vocab_size": 64, "task.n_pairs": 16})
    pair = s["attention"].isin(["additive", "unscaled"])  # chance 1/32
    s.loc[pair, "accuracy_auc"] = 1 / 32 + np.where(s.loc[pair, "attention"] == "additive", 0.01, 0.0)
    s.loc[pair, "final_val_accuracy"] = s.loc[pair, "accuracy_auc"]  # they end at chance too
    section = vq.quality(results_of(s))
    ahead = section.cells[0].parts[0]
    assert ahead.label == "(a) additive ahead of unscaled" and ahead.n == 0  # not measured
    assert section.verdict is UNSURE, section.cells[0].parts
    s.loc[s["attention"] == "additive", ["accuracy_auc", "final_val_accuracy"]] = 0.5  # additive learns: judged again
    assert vq.quality(results_of(s)).cells[0].parts[0].n > 0


def test_a_d_k_where_scaled_did_not_learn_is_not_measured():
    s = simulate(gap=0.03)
    s.loc[(s["attention"] == "scaled") & (s["d_k"] == 256), "accuracy_auc"] = 0.05  # under 25% of its best
    section = vq.quality(results_of(s))
    assert section.verdict is UNSURE, section.cells[0].parts
    (cell,) = section.cells
    assert cell.dk_profile.why_unmeasured() == {qp.NOT_LEARNED: [256]}
    assert cell.dk_profile.entered(qp.FIX_PAIR)[0][-1] < 256  # the largest d_k did not enter
    profile = {r["row"].d_k: r["row"] for r in section.tables[0].rows}
    assert (profile[256].entered, profile[256].out) == (False, qp.NOT_LEARNED)
    assert "Not measured at d_k = 256: scaled did not learn there." in answer_lines([section])[0]
    lower = load.Results(None, s, None, None, None, declared={"learned_fraction": 0.01})
    assert vq.quality(lower).verdict is FAILS  # the declared bar lets it in: scaled is behind there


def test_without_additive_only_the_fix_is_judged():
    s = simulate(gap=0.03)
    section = vq.quality(results_of(s[s["attention"] != "additive"]))
    assert section.verdict is UNSURE  # (b) holds, (a) not measured
    (cell,) = section.cells
    additive, fix = cell.parts
    assert additive.n == 0 and cell.crossover is None  # no additive runs: not measured
    assert fix.label == "(b) scaled ahead of unscaled" and fix.answer is Answer.YES and cell.fix_from is not None
    assert [r["d_k"] for r in section.tables[1].rows] == list(D_KS)
    assert "Additive was not run." in answer_lines([section])[0]


def test_best_lr_is_what_the_verdict_compares():
    """One lr per (variant, d_k) enters the verdict, and a best lr at the grid's end is flagged."""
    s = simulate(gap=0.03)
    best = lr_select.at_best(s)
    assert best.groupby(["attention", "d_k"])["lr"].nunique().eq(1).all()
    low = best[(best["attention"] == "unscaled") & (best["d_k"] == 256)]["lr"].iloc[0]
    assert low == GRID[0]  # unscaled's optimum (1e-3 / 32 at d_k = 256) lies below the grid
    rows = {r["d_k"]: r for r in vq.quality(results_of(s)).tables[1].rows}
    assert rows[256]["lrs"]["unscaled"] == (GRID[0], lr_select.edge_flag(GRID[0], GRID)) != (GRID[0], "")


# --- end to end: a tiny lane grid, trained, collected, read back ----------------------------

def test_a_trained_lane_grid_reads_back(tmp_path):
    from test_lanes import compose_train

    from experiments import train
    from experiments.store import collect

    train.run(compose_train("train.n_seeds=3", "optimizer.lr_grid=[3e-4,3e-3,3e-2]", f"results_dir={tmp_path}"))
    summary, history, _ = collect.collect_runs(tmp_path)
    best = lr_select.best_lrs(lr_select.scored(summary, history))
    assert len(best) == 1 and best["n_lrs"].iloc[0] == 3 and best["best_lr"].iloc[0] in (3e-4, 3e-3, 3e-2)
    means = lr_select.lr_means(lr_select.scored(summary, history))
    top = means.loc[means["val_auc"].idxmax(), "lr"]
    assert best["best_lr"].iloc[0] == top  # the seed mean of each lane's accuracy_auc decides
    (name, fig), = figures_lr.lr_accuracy(results_of(summary, history))
    style.close(fig)
    assert name.startswith("lr_accuracy_")


def test_lr_figures_and_report_on_a_grid(tmp_path):
    from experiments import plot, report

    simulate(gap=0.03, n_seeds=4).to_parquet(tmp_path / "summary.parquet", index=False)
    assert plot.main([f"results_dir={tmp_path}"]) == 0
    assert report.main([f"results_dir={tmp_path}"]) == 0
    files = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"optimal_lr.png", "lr_sensitivity.svg", "lr_accuracy_assoc-recall_adam.png",
            "steps_survival_assoc-recall_adam.png", "quality.png"} <= files
    text = (tmp_path / "REPORT.md").read_text()
    links = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert "figures/optimal_lr.png" in links and all((tmp_path / link).exists() for link in links)
    assert "*Optimal lr (chosen on validation AUC) per variant × d_k × task*" in text
    (cell,) = vq.quality(analysis_results.load_results(tmp_path)).cells
    assert cell.lr_verdict is UNMEASURED and "mup" not in cell.lr_parts
    assert "edge: low" in text and "lr view (c)" in text
    assert text.index("## The answer") < text.index("| sub-claim | verdict |")
    assert "figures/profile.png" in links


def test_the_d_k_sections_read_only_the_best_lr_runs(tmp_path):
    """With a grid, the history the d_k-sweep sections read holds the best-lr runs alone
    (never an average over rates); every run's history stays in history_all."""
    summary = simulate(n_seeds=3, d_ks=(8, 16, 32))
    history = summary[["run_id", "attention", "d_k", "seed", "task", "optimizer"]].assign(
        step=0, accuracy=0.1, experiment="x")
    summary.to_parquet(tmp_path / "summary.parquet", index=False)
    history.to_parquet(tmp_path / "history.parquet", index=False)
    res = analysis_results.load_results(tmp_path)
    best = set(lr_select.at_best(summary)["run_id"])
    assert set(res.history["run_id"]) == best and len(best) == 3 * 3 * 3  # variants x d_k x seeds
    assert len(res.history_all) == len(history)


def test_sensitivity_is_taken_over_the_common_grid():
    """A rate added where a variant fails would raise its sensitivity, a rate left out lower it:
    a widened cell counts only the common rates, a narrowed one gets none."""
    common = {1e-3: [(0.5, 0.5, "completed")] * 3, 3e-3: [(0.9, 0.9, "completed")] * 3,
              1e-2: [(0.7, 0.7, "completed")] * 3}
    def cell(values, d_k):
        frame = _one_cell(values)
        return frame.assign(d_k=d_k, run_id=frame["run_id"] + f"-dk{d_k}")

    frames = [cell(common, 8), cell(common, 16)]
    frames.append(cell({**common, 3e-2: [(0.0, 0.0, "completed")] * 3}, 32))  # widened
    frames.append(cell({3e-3: common[3e-3], 1e-2: common[1e-2]}, 64))  # narrowed
    sc = lr_select.scored(pd.concat(frames, ignore_index=True))
    assert lr_select.common_grid(sc) == (1e-3, 3e-3, 1e-2)
    sens = lr_select.seed_sensitivity(sc).groupby("d_k")["sensitivity"].mean()
    assert np.allclose(sens[[8, 16, 32]], (0.4 + 0.0 + 0.2) / 3)  # the 4th rate of d_k=32 left out
    assert np.isnan(sens[64])
    table = lr_views.sensitivity_table(pd.concat(frames, ignore_index=True))
    assert table.loc[table["d_k"] == 64].iloc[0, -1] == "narrowed grid: 2 of the 3 common rates"
