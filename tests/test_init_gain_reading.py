"""The Britz control's rule can come out each way: on simulated points whose AUC is a function of
sigma_0 alone it says so, and where d_k adds its own effect it says that; the crossover's
arithmetic at its edges."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments.analysis.init_gain import clauses, collapse
from experiments.app.command_configs import InitGainConfig

CFG = OmegaConf.structured(InitGainConfig(n_boot=300))
D_KS, GAINS, SEEDS = (8, 32, 128, 512), [2 ** (k / 2) for k in range(-4, 5)], range(4, 8)


def simulated(d_k_effect: float, noise: float, seed: int = 0) -> pd.DataFrame:
    """Fresh runs of unscaled, scaled and additive: unscaled's AUC falls with log2 sigma_0
    (sigma_0 = gain^2 sqrt(d_k)), plus d_k_effect across the d_k range; additive flat at 0.85."""
    rng = np.random.default_rng(seed)
    rows = []
    for d_k in D_KS:
        tilt = d_k_effect * (math.log2(d_k) - 3) / 6
        for g in GAINS:
            for v, s0, mean in (("unscaled", g * g * math.sqrt(d_k), None), ("scaled", g * g, 0.9),
                                ("additive", 0.5, 0.85)):
                mean = 0.95 - 0.1 * max(math.log2(s0), 0) + tilt if mean is None else mean
                for seed in SEEDS:
                    rows.append(dict(variant=v, d_k=d_k, gain=g, seed=seed, sigma0=s0, lr=1e-3, val_final=0.9,
                                     chance=0.016, val_auc=mean + noise * rng.standard_normal()))
    return pd.DataFrame(rows)


def answers(table: pd.DataFrame, clause: str) -> set:
    return set(table.loc[table["clause"] == clause, "answer"])


def test_a_function_of_sigma0_alone_reads_as_such():
    table, _, _ = clauses.reading(simulated(0.0, 0.005), CFG)
    assert answers(table, clauses.COLLAPSE) == {collapse.ALONE}
    at_gain = table[(table["clause"] == clauses.AT_GAIN) & (table["variant"] == "unscaled")]
    assert at_gain["answer"].item() == collapse.TOO and at_gain["estimate"].item() < -0.2
    assert answers(table, clauses.TREND) == {clauses.CONSISTENT}
    cross = table[table["clause"] == clauses.CROSSOVER]
    assert np.allclose(cross["estimate"], 2 ** 1.0, rtol=0.1)  # 0.95 - 0.1 log2 s = 0.85


def test_an_effect_of_d_k_beyond_sigma0_reads_as_d_k_too():
    table, _, _ = clauses.reading(simulated(0.15, 0.005), CFG)
    assert answers(table, clauses.COLLAPSE) == {collapse.TOO}
    assert answers(table, clauses.TREND) == {clauses.MOVES}


def test_noise_past_the_margin_leaves_it_unclear():
    table, _, _ = clauses.reading(simulated(0.0, 0.2), CFG)
    assert collapse.UNCLEAR in answers(table, clauses.COLLAPSE)


def test_scaled_control_is_read_at_its_matched_gain():
    table, _, _ = clauses.reading(simulated(0.0, 0.005), CFG)
    scaled = table[(table["variant"] == "scaled") & (table["clause"] == clauses.AT_GAIN)]
    assert scaled["answer"].item() == collapse.ALONE


@pytest.mark.parametrize("auc, where", [([0.8, 0.7, 0.6], collapse.BELOW), ([0.95, 0.94, 0.93], collapse.OPEN),
                                        ([0.95, 0.9, 0.8], collapse.INSIDE)])
def test_crossover_at_its_edges(auc, where):
    x, said = collapse.crossover(np.array([0.0, 1.0, 2.0]), np.array(auc), 0.85)
    assert said == where
    if where == collapse.INSIDE:
        assert x == pytest.approx(1.5)


def test_interval_opens_at_an_infinite_draw():
    lo, hi = collapse.interval(np.array([1.0] * 90 + [math.inf] * 10), 0.95)
    assert lo == 1.0 and hi == math.inf


def test_readme_says_the_clause_table_numbers(tmp_path):
    from experiments.analysis.init_gain import render
    from experiments.analysis.init_gain.points import point_table

    runs = simulated(0.0, 0.005)
    table, pts, _ = clauses.reading(runs, CFG)
    readme = render.write(tmp_path, table, point_table(runs), CFG, tmp_path / "figure.png").read_text()
    exponent = table.loc[table["clause"] == clauses.EXPONENT].iloc[0]
    assert f"gain^{exponent['estimate']:.2f}" in readme and exponent["answer"] in readme
    for _, r in table[table["clause"] == clauses.D_STAR].iterrows():
        assert render.bound(r["estimate"]) in readme


def test_report_refuses_a_folder_without_fresh_seeds(tmp_path):
    import subprocess
    import sys

    (tmp_path / "runs").mkdir()
    out = subprocess.run([sys.executable, "-m", "experiments.init_gain_report", f"results_dir={tmp_path}",
                          f"out_dir={tmp_path / 'out'}"], capture_output=True, text=True)
    assert out.returncode == 2 and "results_dir" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "out").exists()


FOLDERS = [p for p in ("init_gain", "init_gain_mqar") if (Path(__file__).parents[1] / "results" / p / "clauses.csv").is_file()]


@pytest.mark.parametrize("name", FOLDERS)
def test_committed_reading_is_fresh(tmp_path, name):
    """A committed control's clauses and README come again from its own tables (no run folders)."""
    import shutil
    import subprocess
    import sys

    committed = Path(__file__).parents[1] / "results" / name
    out = tmp_path / name
    shutil.copytree(committed, out)
    done = subprocess.run([sys.executable, "-m", "experiments.init_gain_report", f"results_dir={tmp_path / 'none'}",
                           f"out_dir={out}", f"preset={name}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in ("clauses.csv", "points.csv", "README.md"):
        assert (out / name).read_text() == (committed / name).read_text(), name
