"""experiments.instruments.theory: the closed forms and the Monte Carlo of softmax rows."""
import math
import subprocess
import sys

import numpy as np
import pytest

from experiments.instruments import theory


@pytest.mark.parametrize("n_keys", [2, 4])
@pytest.mark.parametrize("sigma", [0.1, 0.2])
def test_small_sigma_entropy_has_the_n_minus_1_over_n_factor(sigma, n_keys):
    # at few keys sigma^2 (n-1)/(2n) and its near miss sigma^2/2 differ by sigma^2/(2n); the
    # Monte Carlo (SE ~ 1e-5) and the O(sigma^4) error both sit well inside half that gap
    mc = theory.monte_carlo(theory.RowLaw("gauss", sigma), n_keys=n_keys, n_rows=32768)
    assert mc["entropy"] == pytest.approx(theory.small_sigma_entropy(sigma, n_keys), abs=sigma ** 2 / (4 * n_keys))


@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.2])
def test_small_sigma_entropy_formula(sigma):
    # E[H] ~ log n - sigma^2 (n - 1) / (2n); the error is O(sigma^4)
    mc = theory.monte_carlo(theory.RowLaw("gauss", sigma), n_keys=64, n_rows=32768)
    assert mc["entropy"] == pytest.approx(theory.small_sigma_entropy(sigma, 64), abs=2 * sigma ** 4 + 2e-4)


def test_row_scale_law_matters_at_small_d_k():
    # docs/CLAIM.md: a fixed sigma (ignoring |q|^2 ~ chi2(d_k)) is off by several percent at small d_k
    law = theory.row_law("unscaled", 8, 64)
    with_chi2 = theory.monte_carlo(law, 64)["entropy"]
    fixed = theory.monte_carlo(theory.RowLaw("gauss", math.sqrt(law.var)), 64)["entropy"]
    assert abs(with_chi2 / fixed - 1) > 0.03


def test_logit_scale_matches_the_variants():
    import attention

    for name, variant in attention.VARIANTS.items():
        c = theory.logit_scale(name, 64, 32)
        if variant.logit_scale is None:
            assert c is None
        elif c is not None:
            assert c == pytest.approx(variant.logit_scale(64, 32))


def test_predicted_logit_var_closed_forms():
    from experiments.training.inits import INITS, component_var, init_variance

    assert theory.predicted_logit_var("unscaled", 128, 64) == 128
    assert theory.predicted_logit_var("scaled", 128, 64) == pytest.approx(1)
    assert theory.predicted_logit_var("mup", 128, 64) == pytest.approx(1 / 128)
    assert theory.predicted_logit_var("ssmax", 16, 64) == pytest.approx(math.log(64) ** 2)
    assert theory.predicted_logit_var("cosine", 50, 64) == pytest.approx(100 / 50)
    assert theory.predicted_logit_var("qk_norm", 8, 64) == pytest.approx(8 / 7)
    assert theory.predicted_logit_var("additive", 8, 64) == pytest.approx(theory.additive_tau(1.0))
    for init in INITS:  # model input: d_k (d_model s^2)^2, whatever the rank
        p = component_var(init, 64, 256)
        assert p == pytest.approx(64 * init_variance(init, 64, 256))
        assert theory.predicted_logit_var("unscaled", 256, 64, p, rank=64) == \
            pytest.approx(256 * (64 * init_variance(init, 64, 256)) ** 2)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0])
def test_additive_tau_against_monte_carlo(p):
    # E_a Var_Z tanh(a + Z), a (the query's term) and Z (the key's) independent N(0, p):
    # fresh Z for every a; SE ~ 1e-3, while leaving out a gives 0.27 / 0.39 / 0.52
    r = np.random.default_rng(0)
    a, z = (math.sqrt(p) * r.standard_normal(shape) for shape in ((4000, 1), (4000, 400)))
    mc = float(np.tanh(a + z).var(axis=1, ddof=1).mean())
    assert theory.additive_tau(p) == pytest.approx(mc, abs=0.005)


@pytest.mark.parametrize("d_model, d_k", [(16, 1024), (8, 512)])
def test_row_law_rank_of_projected_queries(d_model, d_k):
    # q = x W_q, x ~ N(0, I_d_model): q lies in a d_model-dim space, so |q|^2 spreads like
    # chi2(d_model) (CV^2 = 2 / d_model), not chi2(d_k) (2 / d_k); the law's row scale
    # c^2 p |q|^2 = scale^2 chi2(dof) must carry that spread and the right mean
    r = np.random.default_rng(1)
    w = r.standard_normal((d_model, d_k)) / math.sqrt(d_model)  # LeCun: p = d_model s^2 = 1
    q2 = np.sum((r.standard_normal((20000, d_model)) @ w) ** 2, axis=1)
    law = theory.row_law("unscaled", d_k, 64, 1.0, rank=d_model)
    assert law.kind == "gauss_chi2"
    assert law.scale ** 2 * law.dof == pytest.approx(q2.mean(), rel=0.05)
    assert 2 / law.dof == pytest.approx(q2.var() / q2.mean() ** 2, rel=0.1)


@pytest.mark.parametrize("law", [theory.RowLaw("sphere", 10.0, 8), theory.RowLaw("sphere", 4.0, 63),
                                 theory.row_law("qk_norm", 2, 64),  # layer-normed 2-vectors: +-(1, -1)
                                 theory.RowLaw("gauss_chi2", 0.5, 8)])
def test_drawn_logits_have_the_law_variance(law):
    x = theory.draw_logits(law, 20000, 16)
    assert x.var(axis=1, ddof=1).mean() == pytest.approx(law.var, rel=0.02)


def test_saturated_rows_have_small_jacobian_median():
    sat = theory.monte_carlo(theory.row_law("unscaled", 1024, 64), 64)
    flat = theory.monte_carlo(theory.row_law("scaled", 1024, 64), 64)
    assert sat["saturation"] > 0.5 and flat["saturation"] == 0
    assert sat["jacobian_norm_median"] < 0.01 < flat["jacobian_norm_median"]


def test_theory_is_deterministic():
    a = theory.monte_carlo(theory.row_law("scaled", 16, 64), 64, n_rows=4096, seed=3)
    b = theory.monte_carlo(theory.row_law("scaled", 16, 64), 64, n_rows=4096, seed=3)
    assert a == b


def test_theory_imports_no_jax_and_no_attention():
    code = ("import sys, experiments.instruments.theory; "
            "assert not any(m == 'jax' or m.startswith(('jax.', 'attention')) for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_softmax_row_stats_match_definitions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7)) * 3
    s = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    got = theory.softmax_row_stats(x)
    np.testing.assert_allclose(got["entropy"], -(s * np.log(s)).sum(-1), rtol=1e-10)
    jac = [np.linalg.norm(np.diag(r) - np.outer(r, r)) for r in s]
    np.testing.assert_allclose(got["jacobian_norm"], jac, rtol=1e-10)
