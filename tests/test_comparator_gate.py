"""The pair gate reads learning (final validation accuracy, a fraction of the way from chance to scaled's best), not speed: a comparator that
learned slowly enters; one at chance does not; `comparator_learned=auc` keeps the rule before; a
wrong value is refused in one line."""
import subprocess
import sys

import pandas as pd

from experiments.analysis.verdicts import quality_profile as qp


def best(final: float, auc: float) -> pd.DataFrame:
    rows = []
    for seed in range(4):
        rows.append(dict(attention="additive", d_k=1024, seed=seed, val_final=final, val_auc=auc, chance=0.016))
        rows.append(dict(attention="scaled", d_k=1024, seed=seed, val_final=0.99, val_auc=0.9, chance=0.016))
    return pd.DataFrame(rows)


def test_slow_learner_passes_the_final_accuracy_gate_not_the_auc_bar():
    slow = best(final=0.577, auc=0.183)
    assert qp.learned(slow, [1024], qp.LEARNED_FRACTION, "val_final")[0]["additive"] == [True]
    did, gate = qp.learned(slow, [1024], qp.LEARNED_FRACTION)
    assert did["additive"] == [False] and gate.bar > 0.183


def test_a_variant_at_chance_stays_out():
    assert qp.learned(best(final=0.05, auc=0.02), [1024], qp.LEARNED_FRACTION, "val_final")[0]["additive"] == [False]


def test_declared_rule_defaults_to_final_accuracy():
    rule = qp.as_rule(0.25)
    assert rule.comparator == "final_accuracy" and rule.fraction == 0.25


def test_unknown_gate_is_refused(tmp_path):
    out = subprocess.run([sys.executable, "-m", "experiments.report", f"results_dir={tmp_path}",
                          "comparator_learned=speed"], capture_output=True, text=True)
    assert out.returncode == 2 and "comparator_learned" in out.stderr and "Traceback" not in out.stderr
