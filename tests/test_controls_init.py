"""unscaled_init, the control of unscaled's fall (src/attention/unscaled_init.py): scaled's logit
law at init, and under one Adam step W_q's share of the logit change as unscaled's, W_k's as scaled's."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import attention
from experiments.analysis.verdicts.at_init import predicted_slopes
from experiments.instruments import theory
from experiments.training.inits import component_var, query_init_factor
from experiments.training.model import init_model
from experiments.training.spec import ModelSpec

D_MODEL, N_KEYS, LR = 64, 64, 1e-3


def init_logit_var(variant: str, d_k: int, seed: int) -> float:
    """Mean within-row logit variance of the harness model's own W_q, W_k at init
    (x ~ N(0, I_d_model) for the queries and the keys)."""
    spec = ModelSpec(variant, (), d_k, D_MODEL, 8, 1, 1, "lecun_normal", False, 4, 4, 0)
    layer = init_model(spec, jax.random.PRNGKey(seed))["layers"][0]
    xq, xk = jax.random.normal(jax.random.PRNGKey(1000 + seed), (2, 256, N_KEYS, D_MODEL))
    q, k = xq[:, :1] @ layer["w_q"], xk @ layer["w_k"]  # (rows, 1, d_k), (rows, n, d_k)
    logits = attention.scores(variant, {}, q, k)[:, 0]  # (rows, n)
    return float(jnp.var(logits, axis=-1, ddof=1).mean())


@pytest.mark.parametrize("d_k", [4, 16, 64, 256])
def test_its_logits_at_init_follow_scaleds_law(d_k):
    measured = np.mean([init_logit_var("unscaled_init", d_k, s) for s in range(4)])
    law = theory.predicted_logit_var("scaled", d_k, N_KEYS, component_var("lecun_normal", D_MODEL, d_k),
                                     rank=D_MODEL)
    assert measured == pytest.approx(law, rel=0.1)
    unscaled = theory.predicted_logit_var("unscaled", d_k, N_KEYS, 1.0, rank=D_MODEL)
    assert unscaled / measured == pytest.approx(d_k, rel=0.15)  # unscaled's own law is d_k times more


def one_step_change(name: str, d_k: int, seed: int, stepped: str) -> float:
    """|Δ logit| of one query-key pair after one Adam step (loss = -logit) of `stepped` alone
    (w_q or w_k); W_q drawn with the variant's own init factor, x ~ N(0, I), W ~ N(0, 1/d_model)."""
    kx, kq, kk = jax.random.split(jax.random.PRNGKey(seed), 3)
    x = jax.random.normal(kx, (2, D_MODEL))  # the query's and the key's inputs
    params = {"w_q": query_init_factor(name, d_k) * jax.random.normal(kq, (D_MODEL, d_k)) / jnp.sqrt(D_MODEL),
              "w_k": jax.random.normal(kk, (D_MODEL, d_k)) / jnp.sqrt(D_MODEL)}

    def logit(p):
        return attention.scores(name, {}, x[0:1] @ p["w_q"], x[1:2] @ p["w_k"])[0, 0]

    opt = optax.adam(LR)
    updates, _ = opt.update(jax.grad(lambda p: -logit(p))(params), opt.init(params), params)
    only = {w: updates[w] if w == stepped else jnp.zeros_like(updates[w]) for w in updates}
    return float(abs(logit(optax.apply_updates(params, only)) - logit(params)))


@pytest.mark.parametrize("d_k", [8, 64, 512])
def test_one_adam_step_moves_its_logit_through_w_q_as_unscaled_and_through_w_k_as_scaled(d_k):
    for seed in range(2):
        change = {(v, w): one_step_change(v, d_k, seed, w)
                  for v in ("unscaled_init", "unscaled", "scaled") for w in ("w_q", "w_k")}
        assert change[("unscaled_init", "w_q")] == pytest.approx(change[("unscaled", "w_q")], rel=1e-3)
        assert change[("unscaled_init", "w_k")] == pytest.approx(change[("scaled", "w_k")], rel=1e-3)
        # and not the other way round: W_q's step is sqrt(d_k) times scaled's
        ratio = change[("unscaled_init", "w_q")] / change[("scaled", "w_q")]
        assert ratio == pytest.approx(np.sqrt(d_k), rel=1e-3)


def test_the_factor_is_declared_by_the_variant_alone():
    assert query_init_factor("unscaled_init", 64) == pytest.approx(1 / 8)
    assert query_init_factor("unscaled", 64) == 1.0
    assert attention.get_variant("unscaled_init").bilinear
    # at init its logit variance is flat in d_k like scaled's, not d_k like unscaled's
    assert predicted_slopes()["unscaled_init"] == 0.0 and predicted_slopes()["unscaled"] == 1.0


@pytest.mark.parametrize("model", [True, False])
def test_the_probe_measures_it_at_its_own_init(model):
    """The probe draws W_q (or, for iid input, the query) with the variant's factor: on the same
    draws its logits are scaled's exactly, so every statistic at init is scaled's."""
    from omegaconf import OmegaConf

    from experiments.instruments import probe

    cfg = OmegaConf.structured(probe.ProbeConfig)
    cfg.variants, cfg.n_rows, cfg.n_keys, cfg.queries_per_batch = ["scaled", "unscaled_init"], 256, 16, 16
    proj = probe.projections(cfg, 64, ["lecun_normal"]) if model else None
    got = probe.measure_grid(cfg, 64, proj)
    init = "lecun_normal" if model else "none"
    for stat in ("logit_var", "entropy_norm", "saturation"):
        assert got[("unscaled_init", init)][stat] == pytest.approx(got[("scaled", init)][stat], rel=1e-4)
