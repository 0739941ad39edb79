"""Sub-claim 4 on the d_k profile, at the verdict level: each clause (alike range, ahead range,
crossover, fix-from) can come out either way on plausible data at the declared margin and 8 seeds
(the power before running); the profile figure, the answer and the declared margins' checks."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from experiments import report
from experiments.analysis.figures import profile as figures_profile
from experiments.analysis.figures import style
from experiments.analysis.render import dashboard
from experiments.analysis.render.answer import answer_lines
from experiments.analysis.tables import load
from experiments.analysis.verdicts import quality as vq
from experiments.analysis.verdicts import quality_profile as qp
from experiments.analysis.verdicts.rules import HOLDS, Answer, Method, verdict_of
from experiments.analysis.verdicts.section import Section
from experiments.app import analysis_cli

D_KS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
X = np.log2(D_KS)
MARGIN = qp.ALIKE_MARGIN
SD = 0.035  # paired sd of Δ AUC at small d_k in the committed study (0.03-0.04)
SEEDS, REPS = 8, 100

# SYNTHETIC true profiles (not data), Δ AUC against log2 d_k
CROSSING = 0.04 * (X - 3)  # additive behind below 8, alike at 8, ahead above
CLAIM = 0.04 * np.maximum(X - 3, 0) - 0.01  # alike up to 8 (the declared 4 and 8), ahead above: the claim
NEVER_AHEAD = np.zeros_like(X)  # alike everywhere, never ahead
JUMP = np.where(X <= 3, -0.15, 0.2)  # ahead at large d_k, but far behind below d*: not alike
ALWAYS_AHEAD = np.full_like(X, 0.15)  # ahead at every d_k: no crossing, nowhere alike
FIX_FROM_64 = np.where(X >= 6, 0.1, 0.0)  # scaled ahead by twice the margin from 64 on


def readings(add_truth, fix_truth, rng):
    """One simulated experiment: (verdict, ahead answer, alike answer, d*, fix from) of the quality
    section's own clause assembly (quality.profile_parts) on 8 paired seeds."""
    noise = lambda: SD * rng.standard_normal((SEEDS, X.size))  # noqa: E731
    p = qp.CellProfile("sim", D_KS, [True] * X.size, "", {qp.CLAIM_PAIR: add_truth + noise(),
                                                          qp.FIX_PAIR: fix_truth + noise()}, SEEDS)
    parts, cross, fix_from = vq.profile_parts(p, MARGIN)
    return verdict_of(parts), parts[0].answer, parts[1].answer, cross.d_star, fix_from


def rates(add_truth, fix_truth, seed):
    rng = np.random.default_rng(seed)
    runs = [readings(add_truth, fix_truth, rng) for _ in range(REPS)]
    return {"holds": np.mean([r[0] is HOLDS for r in runs]),
            "ahead yes": np.mean([r[1] is Answer.YES for r in runs]),
            "alike yes": np.mean([r[2] is Answer.YES for r in runs]),
            "d* found": np.mean([r[3] is not None for r in runs]),
            "d* median": float(np.median([r[3] for r in runs if r[3] is not None] or [math.nan])),
            "fix from 64": np.mean([r[4] == 64 for r in runs]),
            "fix from < 64": np.mean([r[4] is not None and r[4] < 64 for r in runs]),
            "fix from none": np.mean([r[4] is None for r in runs])}


def test_each_clause_can_come_out_either_way_at_8_seeds():
    table = pd.DataFrame({"claim": rates(CLAIM, FIX_FROM_64, 0), "crossing": rates(CROSSING, FIX_FROM_64, 4), "never ahead": rates(NEVER_AHEAD, 0 * X, 1),
                          "not alike": rates(JUMP, FIX_FROM_64, 2),
                          "always ahead": rates(ALWAYS_AHEAD, FIX_FROM_64, 3)}).T
    print(f"\nverdict-level power, margin ±{MARGIN}, {SEEDS} seeds, paired sd {SD}:\n{table.to_string()}")
    claim, never, jump, always, crossing = (table.loc[k] for k in ("claim", "never ahead", "not alike",
                                                                    "always ahead", "crossing"))
    # ahead range: found where additive gains 0.04 per doubling, not where it gains nothing
    assert claim["ahead yes"] >= 0.9 and never["ahead yes"] <= 0.06
    # alike at the declared d_k 4 and 8: found where Δ is −0.01 at both (about 80% power each at the
    # paired sd), rarely where Δ(4) = −0.04 sits next to the margin, never where Δ jumps to −0.15
    assert claim["alike yes"] >= 0.45 and crossing["alike yes"] <= 0.35 and jump["alike yes"] <= 0.05
    # crossover: located near its true d* = 8; none where the mean never crosses from below
    assert claim["d* found"] >= 0.95 and 6 < claim["d* median"] < 11
    assert always["d* found"] <= 0.05 and always["alike yes"] <= 0.05 and always["holds"] <= 0.05
    # fix-from: 64 where the gain over the margin starts there; none where there is no gain
    assert claim["fix from 64"] >= 0.6 and claim["fix from < 64"] <= 0.06 and never["fix from none"] >= 0.95
    # the whole verdict each way
    assert claim["holds"] >= 0.45 and never["holds"] <= 0.06 and jump["holds"] <= 0.05


def _summary(rng=0) -> pd.DataFrame:
    """SYNTHETIC one-lr summary: additive − unscaled follows CROSSING, scaled leads unscaled."""
    rng = np.random.default_rng(rng)
    rows = []
    for j, d in enumerate(D_KS):
        for s in range(SEEDS):
            base = 0.7 + rng.normal(0, 0.02)
            for v, auc in (("unscaled", base), ("additive", base + CROSSING[j]), ("scaled", base + FIX_FROM_64[j]),
                           ("qk_norm", base + FIX_FROM_64[j] + 0.01)):
                rows.append(dict(run_id=f"{v}-{d}-{s}", attention=v, d_k=d, seed=s, task="assoc_recall",
                                 optimizer="adam", lr=1e-3, status="completed",
                                 accuracy_auc=auc + rng.normal(0, 0.01), test_accuracy=auc, final_val_accuracy=auc,
                                 steps_to_threshold=np.nan, steps=1000, threshold=0.9))
    return pd.DataFrame(rows)


def test_the_answer_figure_and_dashboard_block():
    res = load.Results(None, _summary(), None, None, None)
    section = vq.quality(res)
    (cell,) = section.cells
    assert cell.name == "assoc_recall/adam" and cell.crossover.d_star is not None  # additive crosses unscaled
    assert "mup" not in cell.lr_parts  # muP's transfer: not measured
    (line,) = answer_lines([section])
    assert line.startswith("**assoc_recall/adam** (")
    block = dashboard.answer_html([section])
    assert block.startswith("<h2>The answer</h2>") and "<strong>assoc_recall/adam</strong>" in block
    assert dashboard.answer_html([]) == ""
    odd = dataclasses.replace(cell, dk_profile=dataclasses.replace(cell.dk_profile, name="<b>&"))
    assert dashboard.answer_html([Section("q", "4", "", [], HOLDS, cells=[odd])]).count("&lt;b&gt;&amp;")
    ((name, fig),) = figures_profile.profile(res)
    assert name == "profile" and len(fig.axes) == 1
    style.close(fig)
    with pytest.raises(style.Skip):
        figures_profile.profile(load.Results(None, None, None, None, None))


def test_the_answer_counts_the_seeds_of_every_test_behind_a_clause():
    """A stage-2 top-up at one alike d_k is said even where the clause is read at another."""
    section = vq.quality(load.Results(None, _summary(), None, None, None))
    (cell,) = section.cells
    (line,) = answer_lines([section])
    assert f" on {SEEDS} seeds;" in line
    checks = {label: tuple(dataclasses.replace(k, n=24) if k.d_k == 8 else k for k in ks)
              for label, ks in cell.checks.items()}
    assert any(k.n == 24 for ks in checks.values() for k in ks)
    topped = dataclasses.replace(section, cells=[dataclasses.replace(cell, checks=checks)])
    (line,) = answer_lines([topped])
    assert f" on {SEEDS}-24 seeds;" in line


@pytest.mark.parametrize("arg", ["alike_margin=0", "alike_margin=-0.1", "alike_margin=nan", "alike_margin=inf",
                                 "learned_fraction=0", "learned_fraction=1.5", "confirm_seeds_from=0",
                                 "confirm_seeds_from=-3"])
def test_declared_margins_are_checked(tmp_path, capsys, arg):
    _summary().to_parquet(tmp_path / "summary.parquet", index=False)
    assert report.main([f"results_dir={tmp_path}", arg]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {arg.split('=')[0]}: must be") and len(err.splitlines()) == 1
    assert not (tmp_path / "REPORT.md").exists()


def test_the_declared_margin_reaches_the_verdict(tmp_path):
    _summary().to_parquet(tmp_path / "summary.parquet", index=False)
    assert report.main([f"results_dir={tmp_path}", "alike_margin=0.2"]) == 0
    assert (tmp_path / "REPORT.md").exists()
    res = analysis_cli.load_configured(analysis_cli.compose_config([f"results_dir={tmp_path}", "alike_margin=0.2"]))
    (cell,) = vq.quality(res).cells
    alike = next(p for p in cell.parts if p.test is Method.TOST)
    assert cell.margin == 0.2 and alike.question.margin == 0.2
