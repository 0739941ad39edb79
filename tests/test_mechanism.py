"""The mechanism figure's numbers (figures.mechanism): per run at its chosen rate, the lowest
entropy_norm and the largest logit_absmax through training beside its accuracy AUC."""
import numpy as np
import pandas as pd
import pytest

from experiments.analysis.figures import mechanism, style
from experiments.analysis.tables import load


def tables():
    """SYNTHETIC: two variants at two d_k, two rates (1e-3 the better), two seeds, three evaluations;
    the run unscaled-64 at seed 1 diverged at the better rate."""
    summary, history = [], []
    for v in ("scaled", "unscaled"):
        for d in (8, 64):
            for lr in (1e-3, 1e-2):
                for s in (0, 1):
                    rid = f"{v}-{d}-{lr}-{s}"
                    auc = 0.8 - (0.3 if lr == 1e-2 else 0.0) - (0.1 * s)
                    broken = v == "unscaled" and d == 64 and s == 1 and lr == 1e-3
                    summary.append(dict(run_id=rid, attention=v, d_k=d, seed=s, task="assoc_recall",
                                        optimizer="adam", lr=lr, status="diverged" if broken else "completed",
                                        accuracy_auc=auc, final_val_accuracy=auc, steps=100))
                    for step, (ent, logit) in enumerate([(0.9, 1.0), (0.2 + s / 10, 30.0 + d), (0.5, 5.0)]):
                        history.append(dict(run_id=rid, attention=v, d_k=d, seed=s, task="assoc_recall",
                                            optimizer="adam", lr=lr, step=50 * step, entropy_norm=ent,
                                            logit_absmax=logit))
    return pd.DataFrame(summary), pd.DataFrame(history)


def test_each_run_at_its_chosen_rate_reads_its_extremes_through_training():
    summary, history = tables()
    rows = mechanism.per_run(history, summary).set_index("run_id")
    assert all(r.endswith(("-0.001-0", "-0.001-1")) for r in rows.index)
    assert "unscaled-64-0.001-1" not in rows.index  # diverged: left out
    assert len(rows) == 7
    assert rows.loc["scaled-8-0.001-1", "entropy_norm"] == pytest.approx(0.3)  # the lowest, not the last
    assert rows.loc["unscaled-64-0.001-0", "logit_absmax"] == pytest.approx(94.0)  # the largest
    assert rows.loc["scaled-64-0.001-1", "accuracy_auc"] == pytest.approx(0.7)


def test_the_figure_has_a_row_per_condition_and_says_why_it_is_skipped():
    summary, history = tables()
    res = load.Results(None, summary, history, None, None)
    ((name, fig),) = mechanism.mechanism(res)
    try:
        assert name == "mechanism" and len(fig.axes) == 2
        assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 7  # one point per run
    finally:
        style.close(fig)
    with pytest.raises(style.Skip, match="logit_absmax"):
        mechanism.mechanism(load.Results(None, summary, history.drop(columns="logit_absmax"), None, None))
    with pytest.raises(style.Skip, match="summary"):
        mechanism.mechanism(load.Results(None, None, history, None, None))
