"""train.prune.spare_seeds: the lanes of a job's first seeds are never pruned, every rate trains to
the budget, and the other seeds are pruned exactly as without the key (the rule on lists, then a
tiny lr-grid job trained both ways)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments.app.config import validate_prune
from experiments.training import prune

ON = prune.PruneRule(enabled=True, min_frac=0.1, slack=0.1, window=2, keep_below=0)
N = 11  # evaluations of the whole budget
LEADER, LOSER = list(np.linspace(0, 0.9, 5)), [0.0, 0.01, 0.02, 0.03, 0.05]


def test_a_spared_lane_of_a_stopped_rate_runs_on():
    accs, rates = [LEADER, LEADER, LOSER, LOSER], [1e-3, 1e-3, 1e-5, 1e-5]
    out: set = set()
    spared = [True, False, True, False]  # lanes of seed 0 spared, seed 1 not
    assert prune.lanes_to_stop(accs, rates, [False] * 4, [0, 1, 2, 3], out, N, ON, spared) == [3]
    assert out == {1e-5}  # the rate is out all the same: it is never chosen
    later = [a + [0.9] for a in accs[:2]] + [LOSER + [0.5]]  # the spared loser climbs after the cut
    assert prune.lanes_to_stop(later + [LOSER], rates, [False] * 4, [0, 1, 2], out, N, ON, spared) == []


def test_the_spared_seeds_are_the_jobs_first():
    assert list(prune.spared_seeds(3, prune.PruneRule(enabled=True, spare_seeds=2))) == [3, 4]
    assert list(prune.spared_seeds(3, prune.PruneRule(enabled=False, spare_seeds=2))) == []
    assert list(prune.spared_seeds(0, ON)) == []  # the default spares none


def test_a_negative_spare_count_is_refused():
    with pytest.raises(Exception, match="train.prune.spare_seeds"):
        validate_prune(prune.PruneRule(enabled=True, spare_seeds=-1), "train.prune")


def _runs(folder, summaries) -> dict:
    from experiments.store import results

    return {s["run_id"]: (s, pd.read_parquet(results.run_dir(folder, s["run_id"]) / "history.parquet"))
            for s in summaries}


@pytest.mark.slow
def test_spared_seeds_train_every_rate_and_the_others_are_untouched(tmp_path):
    from test_lanes import compose_train

    from experiments import train

    args = ["train.n_seeds=2", "optimizer.lr_grid=[1e-6,3e-3]", "train.prune.enabled=true", "train.steps=30",
            "train.prune.min_frac=0", "train.prune.slack=0", "train.prune.keep_below=0"]
    spared = train.run(compose_train(*args, "train.prune.spare_seeds=1", f"results_dir={tmp_path / 'a'}"))
    plain = train.run(compose_train(*args, f"results_dir={tmp_path / 'b'}"))
    assert [s["run_id"] for s in spared] == [s["run_id"] for s in plain]  # the key is no identity
    assert all(s["status"] == "completed" and s["steps_done"] == s["steps"] for s in spared if s["seed"] == 0)
    assert [s["seed"] for s in spared if s["status"] == "pruned"] == [1]
    cut = [s for s in plain if s["status"] == "pruned"]
    assert len(cut) == 2 and {s["seed"] for s in cut} == {0, 1}  # without the key both seeds of one rate go
    a, b = _runs(tmp_path / "a", spared), _runs(tmp_path / "b", plain)
    for rid in (s["run_id"] for s in plain if s["seed"] == 1):  # the seed not spared: bit for bit
        (sa, ha), (sb, hb) = a[rid], b[rid]
        assert sa["status"] == sb["status"] and sa["pruned_at_step"] == sb["pruned_at_step"]
        for key in ("accuracy_auc", "accuracy_auc_bound", "final_val_accuracy", "steps_done"):
            assert sa[key] == sb[key], key
        numeric = [c for c in ha.select_dtypes("number").columns if not c.endswith("_s")]
        np.testing.assert_array_equal(ha[numeric].to_numpy(float), hb[numeric].to_numpy(float))
