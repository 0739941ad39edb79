"""experiments.probe: the init-time probe agrees with theory; config errors are named (the command's one
line: test_bad_input's probe cases)."""
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

import attention
from experiments import probe as probe_command
from experiments.instruments import probe

ROOT = Path(__file__).resolve().parents[1]


def make_cfg(**overrides):
    cfg = OmegaConf.structured(probe.ProbeConfig)
    cfg.progress = False
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


@pytest.fixture(scope="module")
def iid_table():
    return probe.probe(make_cfg(variants=["scaled", "unscaled"], d_ks=[8, 64, 512]), log=lambda *_: None)


def test_iid_logit_variance(iid_table):
    for r in iid_table.itertuples():
        expected = r.d_k if r.attention == "unscaled" else 1.0
        assert r.logit_var / expected == pytest.approx(1, abs=0.05), (r.attention, r.d_k)
        assert r.theory_logit_var == pytest.approx(expected)


def test_iid_entropy_matches_monte_carlo(iid_table):
    for r in iid_table.itertuples():
        assert r.entropy / r.theory_entropy == pytest.approx(1, abs=0.05), (r.attention, r.d_k)
    unscaled = iid_table[iid_table.attention == "unscaled"].sort_values("d_k")
    assert unscaled.entropy.is_monotonic_decreasing and unscaled.saturation.iloc[-1] > 0.4


def test_model_input_lecun_logit_variance():
    table = probe.probe(make_cfg(variants=["scaled", "unscaled"], d_ks=[64, 256],
                                 input_model="model", init="lecun_normal"), log=lambda *_: None)
    assert set(table.init) == {"lecun_normal"} and set(table.input_model) == {"model"}
    for r in table.itertuples():
        assert r.logit_var / r.theory_logit_var == pytest.approx(1, abs=0.10), (r.attention, r.d_k)


def test_grad_norms_equal_per_row_rms_in_expectation():
    # iid q: the batch loss / sqrt(B) gives exactly the per-row RMS of |dl_i/dq_i|
    cfg = make_cfg(variants=["scaled"], d_ks=[16], n_rows=256, queries_per_batch=64)
    got = probe.measure_grid(cfg, 16, None)[("scaled", "none")]["grad_norm_q"]
    rows = {k: jnp.asarray(x) for k, x in probe.draw_rows(cfg, 16, False).items()}

    def row_loss(q, k, v, r):  # one query
        out, _ = attention.attend("scaled", {}, q[None], k, v)
        return jnp.sum(out[0] * r)

    per_row = jax.vmap(jax.vmap(jax.grad(row_loss), (0, None, None, 0)), (0, 0, 0, 0))(
        rows["q"], rows["k"], rows["v"], rows["r"])
    assert got == pytest.approx(float(jnp.sqrt(jnp.mean(jnp.sum(per_row ** 2, -1)))), rel=1e-4)


def test_deterministic_and_written(tmp_path):
    cfg = make_cfg(variants=["scaled", "additive", "cosine"], d_ks=[8], n_rows=128,
                   input_model="both", init="xavier", theory_rows=2000,
                   results_dir=str(tmp_path))
    a = probe_command.run(cfg)
    b = pd.read_parquet(tmp_path / "probe.parquet")
    c = probe.probe(cfg, log=lambda *_: None)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    assert len(a) == 3 * 2
    contract = ["attention", "d_k", "n_keys", "input_model", "init", "n_rows", "seed", *probe.MEASURED,
                *[f"theory_{s}" for s in probe.theory.THEORY_STATS]]
    assert set(contract) <= set(a.columns)
    assert set(a[a.input_model == "iid"].init) == {"none"}
    assert np.isfinite(a[contract[7:]].to_numpy(float)).all()


def test_yaml_composes_and_validates():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("probe", overrides=["n_keys=32", "input_model=model"])
    probe.validate(cfg)
    assert cfg.n_keys == 32 and list(cfg.d_ks) == [8, 16, 32, 64, 128, 256, 512, 1024]
    with pytest.raises(ValueError, match=r"^n_keys: must be >= 2, got 1$"):
        probe.validate(make_cfg(n_keys=1))
    with pytest.raises(ValueError, match=r"^variants: "):
        probe.validate(make_cfg(variants=["scaled", "nope"]))


@pytest.fixture(scope="module")
def task_table():
    return probe.probe(make_cfg(variants=["scaled", "unscaled"], d_ks=[8, 64], input_model="task",
                                init="lecun_normal", n_rows=1024, theory_rows=4000),
                       log=lambda *_: None)


def test_task_input_matches_theory(task_table):
    t = task_table
    assert set(t.input_model) == {"task"} and set(t.task) == {"assoc_recall"} and len(t) == 4
    assert (t.n_rows >= 1024).all() and (t.n_keys == 33).all()  # assoc_recall: 16 pairs + query
    assert np.isfinite(t[list(probe.MEASURED) + [f"theory_{s}" for s in probe.theory.THEORY_STATS]]
                       .to_numpy(float)).all()
    for r in t.itertuples():
        assert r.logit_var / r.theory_logit_var == pytest.approx(1, abs=0.25), (r.attention, r.d_k)
    at64 = t[t.d_k == 64].set_index("attention")
    assert at64.entropy["unscaled"] < at64.entropy["scaled"]


def test_task_rows_are_the_harness_forward():
    # the probe's logits are experiments.training.model.forward's, at the loss positions
    from experiments.instruments import probe_task
    from experiments.training import blocks
    from experiments.training import model as harness

    cfg = make_cfg(variants=["unscaled"], n_rows=64)
    data = probe_task.task_rows(cfg.task_name, cfg.seed, cfg.n_rows, cfg.queries_per_batch, cfg.d_v)
    spec = probe_task.model_spec(cfg, "unscaled", 16, "lecun_normal")
    params = harness.init_model(spec, jax.random.fold_in(jax.random.PRNGKey(0), probe_task._MODEL))
    batch = {k: jnp.asarray(x) for k, x in data["batch"].items()}
    _, qidx, [(logits, _, mask)] = harness.forward(spec, params, batch, data["qidx"].shape[-1])
    np.testing.assert_array_equal(np.asarray(qidx).reshape(data["qidx"].shape), data["qidx"])
    layer = params["layers"][0]
    x = blocks.layer_norm(harness.embed(spec, params, batch), layer["ln"])
    xq = jnp.take_along_axis(x, qidx[..., None], axis=1)
    mine = jnp.einsum("bqd,btd->bqt", xq @ layer["w_q"], x @ layer["w_k"])
    m = np.asarray(mask[:, 0])
    np.testing.assert_allclose(np.asarray(logits[:, 0])[m], np.asarray(mine)[m], rtol=1e-4, atol=1e-4)
    got = probe_task.measure_task(cfg, 16, ["lecun_normal"])[("unscaled", "lecun_normal")]
    want = attention.stats.row_summary(logits, jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), -1),
                                       mask, np.asarray(batch["loss_mask"])[:, None, -1:] > 0)
    assert got["logit_var"] == pytest.approx(float(want["logit_var"]), rel=1e-4)
    assert got["entropy"] == pytest.approx(float(want["entropy"]), rel=1e-4)


def test_bad_task_name_is_one_line():
    with pytest.raises(ValueError, match=r"^task_name: must be one of assoc_recall, .*got 'nope'$"):
        probe.validate(make_cfg(task_name="nope"))


@pytest.mark.parametrize("model", [False, True])
def test_per_row_gradient_aggregates_match_the_closed_form(model):
    # scaled, logits c q.k: dl_i/dlogits = J_i u_i (u_ij = v_j . r_i), so
    # dl_i/dq_i = c K^T J u, dl_i/dk_j = c (J u)_j q_i; through q = x W_q, K = X' W_k:
    # |dl_i/dW_q| = |x_i| |dl_i/dq_i|, |dl_i/dW_k| = c |X'^T J u| |q_i|
    d_k = 16
    cfg = make_cfg(variants=["scaled"], d_ks=[d_k], n_rows=256, queries_per_batch=64,
                   input_model="model" if model else "iid", init="lecun_normal")
    proj = probe.projections(cfg, d_k, ["lecun_normal"])["lecun_normal"] if model else None
    got = probe.measure_grid(cfg, d_k, {"lecun_normal": proj} if model else None)
    got = got[("scaled", "lecun_normal" if model else "none")]
    rows = probe.draw_rows(cfg, d_k, model)
    x, xk = rows["q"].astype(np.float64), rows["k"].astype(np.float64)
    q, k = (x @ np.asarray(proj["w_q"]), xk @ np.asarray(proj["w_k"])) if model else (x, xk)
    c = 1 / np.sqrt(d_k)
    logits = c * np.einsum("bid,bjd->bij", q, k)
    s = np.exp(logits - logits.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    u = np.einsum("bid,bjd->bij", rows["r"], rows["v"])
    ju = s * u - s * (s * u).sum(-1, keepdims=True)
    gq = c * np.einsum("bij,bjd->bid", ju, k)
    if model:
        g2 = (x ** 2).sum(-1) * (gq ** 2).sum(-1) + \
            c ** 2 * (np.einsum("bjm,bij->bim", xk, ju) ** 2).sum(-1) * (q ** 2).sum(-1)
    else:
        g2 = (gq ** 2).sum(-1) + c ** 2 * (q ** 2).sum(-1) * (ju ** 2).sum(-1)
    assert got["grad_qk_row_median"] == pytest.approx(np.sqrt(np.median(g2)), rel=1e-3)
    assert got["grad_qk_row_rms"] == pytest.approx(np.sqrt(g2.mean()), rel=1e-3)
