"""The premise of the lr prediction, checked with one real Adam step: the change of the logit
grows like c(d_k) * d_k * lr (analysis.lr.theory)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import attention
from experiments.analysis.lr import theory as lr_theory

D_MODEL, D_KS, LR = 64, [8, 16, 32, 64, 128, 256, 512], 1e-4


def logit_change(name: str, d_k: int, seed: int) -> float:
    """|Δ logit| of one query-key pair after one Adam step that raises it (loss = -logit),
    x ~ N(0, I), W ~ N(0, 1/d_model) (fan-in init)."""
    kx, kq, kk = jax.random.split(jax.random.PRNGKey(seed), 3)
    x = jax.random.normal(kx, (2, D_MODEL))  # the query's and the key's inputs
    params = {"w_q": jax.random.normal(kq, (D_MODEL, d_k)) / jnp.sqrt(D_MODEL),
              "w_k": jax.random.normal(kk, (D_MODEL, d_k)) / jnp.sqrt(D_MODEL)}

    def logit(p):
        q, k = x[0:1] @ p["w_q"], x[1:2] @ p["w_k"]
        return attention.scores(name, {}, q, k)[0, 0]

    opt = optax.adam(LR)
    updates, _ = opt.update(jax.grad(lambda p: -logit(p))(params), opt.init(params), params)
    return float(abs(logit(optax.apply_updates(params, updates)) - logit(params)))


@pytest.mark.parametrize("name", ["unscaled", "scaled", "mup"])
def test_one_adam_step_moves_the_logit_as_predicted(name):
    changes = [np.mean([logit_change(name, d, s) for s in range(4)]) for d in D_KS]
    measured = np.polyfit(np.log2(D_KS), np.log2(changes), 1)[0]
    # the best lr keeps c * d_k * lr fixed: its slope is minus the logit change's
    assert -measured == pytest.approx(lr_theory.predicted_lr_slope(name), abs=0.1)


def test_the_predictions_are_ordered_as_stated():
    assert lr_theory.predicted_lr_slope("unscaled") == pytest.approx(-1.0)
    assert lr_theory.predicted_lr_slope("scaled") == pytest.approx(-0.5)
    assert lr_theory.predicted_lr_slope("mup") == pytest.approx(0.0)
    assert lr_theory.predicted_lr_slope("additive") is None


def test_the_adam_step_predicts_nothing_under_sgd_and_mup_reads_plus_zero():
    # SGD's step grows with the gradient, which the Adam-step argument does not model
    assert lr_theory.predicted_lr_slope("scaled", "sgd") is None
    assert lr_theory.predicted_lr_slope("scaled", "adamw") == pytest.approx(-0.5)
    assert f"{lr_theory.predicted_lr_slope('mup'):+.1f}" == "+0.0"
