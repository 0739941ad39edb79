"""The temperature study's reading on tables whose truth is known: c* from the declared fit, the
law's coefficients, the paired verdict coming out each way, the clause table and its views."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf
from statsmodels.stats.weightstats import ttost_paired

from experiments.analysis.temperature import clauses, grid, law, optimum, render
from experiments.analysis.temperature.tests_paired import RIGHT, TOO_LITTLE, TOO_MUCH, UNCLEAR, answer, paired
from experiments.app.command_configs import TemperatureConfig

CFG = OmegaConf.structured(TemperatureConfig(n_boot=200))
GRID = 2.0 ** np.arange(-6, 5)


def test_the_vertex_of_a_quadratic_is_found_and_the_edges_are_named():
    x = np.log2(GRID)
    assert optimum.vertex(x, 0.8 - 0.01 * (x + 1.3) ** 2, 2) == (pytest.approx(-1.3), optimum.INSIDE)
    assert optimum.vertex(x, 0.8 - 0.01 * (x + 9) ** 2, 2)[1] == optimum.EDGE_LOW
    assert optimum.vertex(x, 0.8 - 0.01 * (x - 9) ** 2, 2)[1] == optimum.EDGE_HIGH
    assert optimum.vertex(x, 0.5 + 0.01 * x ** 2, 2)[1] in (optimum.FLAT, optimum.EDGE_LOW, optimum.EDGE_HIGH)


def test_the_law_recovers_its_coefficients():
    d_k, n = np.array([4, 16, 64] * 3, float), np.repeat([4, 16, 64], 3).astype(float)
    truth = np.array([0.7, -0.8, 0.6])
    got = law.fit(law.design(d_k, n) @ truth, d_k, n)
    np.testing.assert_allclose(got, truth, atol=1e-10)
    assert np.isnan(law.fit(np.zeros(3), d_k[:3], n[:3])).all()  # one n: b cannot be told apart


def test_the_paired_rule_comes_out_each_way_and_tost_is_statsmodels():
    rng = np.random.default_rng(1)
    base = rng.normal(0.6, 0.05, 6)
    near = base + rng.normal(0.0, 0.004, 6)
    far = base + 0.06 + rng.normal(0.0, 0.004, 6)
    p = paired(near, base, 0.02, 0.05)
    assert p.p_tost == pytest.approx(ttost_paired(near, base, -0.02, 0.02)[0])
    assert answer(p, 0.5, 0.02, 0.05) == RIGHT
    assert answer(paired(far, base, 0.02, 0.05), 0.5, 0.02, 0.05) == TOO_MUCH
    assert answer(paired(far, base, 0.02, 0.05), 2.0, 0.02, 0.05) == TOO_LITTLE
    noisy = base + 0.02 + rng.normal(0.0, 0.05, 6)
    assert answer(paired(noisy, base, 0.02, 0.05), 0.5, 0.02, 0.05) == UNCLEAR


def _study(peaks: dict[tuple[int, int], float], fresh_gain: dict[tuple[int, int], float]) -> tuple[pd.DataFrame, dict]:
    """A summary table of the study: AUC a parabola in log2 c peaking at log2 peaks[(n, d_k)] at
    rate 3e-3 (1e-2 worse by 0.05), three selection seeds, four fresh seeds at c* and at 1."""
    rng = np.random.default_rng(0)
    rows, record = [], {"cells": []}

    def row(n, d, c, lr, seed, auc, attention="temperature", temp=None):
        rows.append({"run_id": f"r{len(rows)}", "attention": attention, "attention.c": c, "n_keys": n, "d_k": d,
                     "task": "assoc_recall", "optimizer": "adam", "lr": lr, "seed": seed, "status": "completed",
                     "accuracy_auc": auc, "final_val_accuracy": min(1.0, auc + 0.2), "chance_accuracy": 1 / 66,
                     "final_temperature": temp, "wall_time_s": 10.0, "experiment": "temperature"})

    for (n, d), peak in peaks.items():
        for seed in range(3):
            noise = rng.normal(0, 0.002)
            for c in GRID:
                auc = 0.8 - 0.02 * (np.log2(c) - np.log2(peak)) ** 2 + noise
                row(n, d, c, 3e-3, seed, auc)
                row(n, d, c, 1e-2, seed, auc - 0.05)
            for lr in (3e-3, 1e-2):
                row(n, d, None, lr, seed, 0.7, attention="learned_temperature", temp=peak)
        star = float(f"{peak:.4g}")
        record["cells"].append({"task": "assoc_recall", "n_keys": n, "d_k": d, "c_star": star,
                                "lr_at_c_star": 3e-3, "lr_at_1": 3e-3})
        for seed in range(100, 104):
            base = 0.7 + rng.normal(0, 0.02)
            row(n, d, star, 3e-3, seed, base + fresh_gain[(n, d)] + rng.normal(0, 0.002))
            row(n, d, 1.0, 3e-3, seed, base)
    return pd.DataFrame(rows), record


def test_the_clause_table_reads_a_known_study():
    # the truth: c*_abs = 2^0.5 d_k^-0.9 (ln n)^1, i.e. c*_rel = 2^0.5 d_k^-0.4 ln n
    peaks = {(n, d): 2 ** 0.5 * d ** -0.4 * math.log(n) for n in (4, 16, 64) for d in (4, 16, 64)}
    gains = {k: (0.0 if abs(math.log2(v)) < 0.3 else 0.05) for k, v in peaks.items()}
    summary, record = _study(peaks, gains)
    runs = grid.runs_of(summary, 100)
    table, opt, fits = clauses.clause_table(runs, record, CFG)
    assert list(table.columns[:len(clauses.COLUMNS)]) == clauses.COLUMNS
    got = opt.set_index(["n_keys", "d_k"])["c_star"]
    for key, peak in peaks.items():
        assert got[key] == pytest.approx(peak, rel=0.05)
    fit = fits.iloc[0]
    assert fit["gamma"] == pytest.approx(-0.9, abs=0.05) and fit["b"] == pytest.approx(1.0, abs=0.1)
    said = table.set_index(["clause", "n_keys", "d_k"])["answer"]
    for (n, d), gain in gains.items():
        want = RIGHT if gain == 0 else (TOO_MUCH if peaks[(n, d)] < 1 else TOO_LITTLE)
        assert said[(clauses.PAPER, n, d)] == want
    law_said = table[table["clause"].isin([clauses.GAMMA, clauses.B])].set_index("clause")["answer"]
    assert "the paper" not in law_said[clauses.GAMMA] and "log n" in law_said[clauses.B]
    assert (table[table["clause"] == clauses.LEARNED]["answer"] == "inside c*'s interval").all()
    counts = clauses.verdicts(table)
    assert counts[counts["clause"] == clauses.PAPER]["cells"].sum() == len(peaks)


def test_a_cell_that_did_not_learn_is_not_measured_and_the_views_render(tmp_path):
    peaks = {(4, 4): 0.5, (4, 16): 0.5, (16, 4): 0.5}
    summary, record = _study(peaks, {k: 0.0 for k in peaks})
    summary.loc[(summary["n_keys"] == 16), "final_val_accuracy"] = 0.05  # below 10 x chance
    runs = grid.runs_of(summary, 100)
    table, opt, fits = clauses.clause_table(runs, record, CFG)
    said = table.set_index(["clause", "n_keys", "d_k"])["answer"]
    assert said[(clauses.PAPER, 16, 4)] == clauses.NOT_MEASURED and said[(clauses.PAPER, 4, 4)] == RIGHT
    opt = opt.assign(sigma0_at_1=1.0, sigma0_at_c_star=opt["c_star"])
    walls = pd.DataFrame({"n_keys": [4], "wall_s": [3600.0]})
    figs = {k: tmp_path / "figures" / v for k, v in {"optimum": "a.png", "curves": "b.png", "learned": "c.png",
                                                     "sigma0": "d.png"}.items()}
    written = render.write(tmp_path, table, opt, fits, walls, [3e-3, 1e-2], CFG, figs)
    readme = written["README.md"].read_text()
    table_rows = [line for line in readme.splitlines() if line.startswith("| assoc_recall")]
    assert len(table_rows) == len(peaks) and all(line.count("|") == 5 for line in table_rows)  # four columns
    assert "{{" not in readme and "{{" not in written["REPORT.md"].read_text()


@pytest.mark.parametrize("published_c, want", [(1.0, "inside c*'s interval"), (8.0, "above c*'s interval"),
                                               (0.05, "below c*'s interval")])
def test_a_published_point_is_read_against_c_star_where_its_normalisation_ran(tmp_path, published_c, want):
    """A declared published point reads against c*'s interval at its d_k, only in cells whose runs
    share its normalisation (attention.qk_rms); the views say it."""
    peaks = {(16, 4): 1.0, (16, 16): 1.0, (64, 4): 1.0}
    summary, record = _study(peaks, {k: 0.0 for k in peaks})
    point = {"name": "a paper's scale", "c": published_c, "d_k": 4, "qk_rms": True}
    cfg = OmegaConf.merge(CFG, {"published_points": [point]})
    runs = grid.runs_of(summary, 100)
    plain, _, _ = clauses.clause_table(runs, record, cfg)
    assert not (plain["clause"] == clauses.PUBLISHED).any()  # the runs were not RMS-normed
    runs = grid.runs_of(summary.assign(**{"attention.qk_rms": True}), 100)
    table, opt, fits = clauses.clause_table(runs, record, cfg)
    rows = table[table["clause"] == clauses.PUBLISHED]
    assert sorted(rows["n_keys"]) == [16, 64] and (rows["d_k"] == 4).all() and (rows["answer"] == want).all()
    assert clauses.cells_rms_normed(runs) == {("assoc_recall", n, d) for n, d in peaks}
    opt = opt.assign(sigma0_at_1=1.0, sigma0_at_c_star=opt["c_star"])
    figs = {k: tmp_path / v for k, v in {"optimum": "a.png", "curves": "b.png", "learned": "c.png",
                                         "sigma0": "d.png"}.items()}
    written = render.write(tmp_path, table, opt, fits, pd.DataFrame({"wall_s": [1.0]}), [3e-3], cfg, figs, {"qk_rms": True})
    assert written["README.md"].read_text().count(want) == 2  # one line a cell at d_k 4


def test_the_rate_c_star_trains_at_is_flagged_at_the_rate_grids_edge():
    """The confirmation trains c* at the rate of its nearest grid multiplier: the report flags it
    where that rate is an end of the rate grid (a better rate may lie beyond)."""
    chosen = pd.DataFrame({"task": "a", "n_keys": 4, "d_k": 4, "c": [0.25, 0.5, 1.0], "lr": [1e-2, 3e-3, 1e-3],
                           "lr_edge": ["edge: high", "", "edge: low"]})
    cell = ("a", 4, 4)
    assert [grid.rate_edge(chosen, cell, c) for c in (0.3, 0.6, 0.9)] == ["edge: high", "", "edge: low"]
    assert grid.rate_edge(chosen, cell, 1.0) == "edge: low"  # c = 1's own rate, whatever c* is


def test_a_task_with_its_own_pilot_is_projected_from_it(monkeypatch):
    """walls: each run's projection reads its task's pilot (conf/temperature.yaml pilot_by_task),
    every other task the default pilot; lanes of one program share one wall."""
    from experiments import temperature_report

    runs = pd.DataFrame({"task": ["assoc_recall", "assoc_recall", "mqar", "mqar"], "n_keys": 4, "d_k": 4,
                         "phase": "selection", "attention": "temperature", "c": [0.5, 1.0, 0.5, 1.0],
                         "steps": 100, "wall_time_s": [7.0, 7.0, 9.0, 9.0], "T": [10.0, 10.0, 20.0, 20.0]})
    monkeypatch.setattr(temperature_report, "sequence_length", lambda row: row["T"])
    cfg = OmegaConf.merge(CFG, {"pilot_s_per_lane_step": 0.01, "pilot_seq_len": 10,
                                "pilot_by_task": {"mqar": {"s_per_lane_step": 0.02, "seq_len": 40}}})
    got = temperature_report.walls(runs, cfg).set_index("task")
    assert got.loc["assoc_recall", "wall_s"] == 7.0 and got.loc["mqar", "wall_s"] == 9.0
    assert got.loc["assoc_recall", "projected_s"] == pytest.approx(2 * 100 * 0.01)
    assert got.loc["mqar", "projected_s"] == pytest.approx(2 * 100 * 0.02 * 20 / 40)


def test_the_observed_power_is_statsmodels_and_stays_a_number_at_large_effects():
    from statsmodels.stats.power import TTestPower

    from experiments.analysis.temperature.tests_paired import observed_power

    for es in (0.5, 1.0, 2.0, 4.0):
        assert observed_power(es, 4, 0.05) == TTestPower().power(effect_size=es, nobs=4, alpha=0.1)
    assert math.isnan(TTestPower().power(effect_size=15.0, nobs=4, alpha=0.1))  # the library's gap
    big = [observed_power(es, 4, 0.05) for es in (4.0, 4.5, 15.0, 100.0)]
    assert all(0.9999 < p <= 1.0 for p in big) and big == sorted(big)
