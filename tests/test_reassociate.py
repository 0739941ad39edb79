"""model.reassociate: the query rows computed without the keys and values
(bilinear_rows for the variants that declare themselves bilinear, whose score is
checked to be c * q.k; factored_rows for those with a factored form) are the same
function as attention_layer's; the bilinear variants share their programs; and the
lane axis runs in blocks without changing a lane's numbers."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

import attention
from experiments.app import config  # noqa: F401 - registers the schemas
from experiments.app.errors import CONF_DIR
from experiments.store import results
from experiments.training import group as grouplib
from experiments.training import spec as speclib
from experiments.training import lane_axis
from experiments.training.compile import ProgramCache
from experiments.training.group import Lane
from experiments.training.loop import train_lanes
from experiments.training.model import ModelSpec, attention_layer, init_model
from experiments.training.reassociate import (
    BilinearProgram, bilinear_factor, bilinear_rows, factored_rows, program_key, reassociated_rows)

TINY = ["d_k=16", "train.steps=20", "train.eval_every=10", "train.n_val=48", "train.n_test=80",
        "train.batch_size=8", "logger=none", "progress=false"]


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("train", overrides=[*TINY, *overrides])


def _spec(name: str, n_heads: int, **options) -> ModelSpec:
    return ModelSpec(attention=name, attention_options=tuple(sorted(options.items())), d_k=8,
                     d_model=24, d_v=12, n_layers=1, n_heads=n_heads, init="lecun_normal",
                     token_shift=True, vocab=32, n_classes=16, d_in=0)


# what the registered variants declare: each is checked below against its score function
BILINEAR = [n for n in attention.variant_names() if attention.VARIANTS[n].bilinear]
FACTORED = [n for n in attention.variant_names()
            if attention.VARIANTS[n].factored is not None and not attention.VARIANTS[n].bilinear]


def _bilinear_gap(variant: attention.Variant, d_k: int, n_keys: int) -> float:
    """Largest |score - logit_scale(d_k, n_keys) q.k| of `variant` (its default options)
    on random queries and keys, the rows attending to different numbers of keys."""
    kq, kk, kp = jax.random.split(jax.random.PRNGKey(d_k), 3)
    q = jax.random.normal(kq, (2, 4, d_k))  # (B, n_q, d_k)
    k = jax.random.normal(kk, (2, n_keys, d_k))  # (B, n_k, d_k)
    key_count = jnp.broadcast_to(jnp.arange(1.0, 5.0)[:, None], (2, 4, 1))  # (B, n_q, 1)
    got = variant.score(variant.init(kp, d_k), q, k, key_count=key_count)
    want = variant.logit_scale(d_k, n_keys) * jnp.einsum("bqd,bkd->bqk", q, k)
    return float(jnp.max(jnp.abs(got - want)) / jnp.max(jnp.abs(want)))


@pytest.mark.parametrize("name", BILINEAR)
def test_a_declared_bilinear_score_is_its_logit_scale_times_q_dot_k(name):
    """bilinear=True is what reassociation and program sharing rest on: the score
    is c * q.k, c = logit_scale(d_k) whatever the keys, and c is what the training
    programs take as the lane's factor (bilinear_factor)."""
    variant = attention.VARIANTS[name]
    for d_k, n_keys in ((4, 7), (16, 5), (64, 12)):
        assert _bilinear_gap(variant, d_k, n_keys) < 1e-6, (d_k, n_keys)
        layer = init_model(_spec(name, 1)._replace(d_k=d_k), jax.random.PRNGKey(0))["layers"][0]
        factor = bilinear_factor(_spec(name, 1)._replace(d_k=d_k), layer)
        np.testing.assert_allclose(factor, variant.logit_scale(d_k, n_keys), rtol=1e-6)


def test_the_bilinear_check_fails_a_score_that_is_not():
    """A length-aware score (ssmax: log(n_keys) / sqrt(d_k) q.k per row) or a factor
    other than the declared one fails the check that the registered variants pass."""
    assert BILINEAR and "scaled" in BILINEAR and "ssmax" not in BILINEAR
    ssmax = dataclasses.replace(attention.VARIANTS["ssmax"], bilinear=True)
    assert _bilinear_gap(ssmax, 16, 5) > 0.1
    halved = dataclasses.replace(attention.VARIANTS["scaled"], logit_scale=lambda d_k, n_keys: 0.5 / d_k ** 0.5)
    assert _bilinear_gap(halved, 16, 5) > 0.1


@pytest.mark.parametrize("name", BILINEAR)
@pytest.mark.parametrize("n_heads", [1, 2])
def test_bilinear_rows_equal_attention_layer(name, n_heads):
    spec = _spec(name, n_heads)
    layer = init_model(spec, jax.random.PRNGKey(0))["layers"][0]
    h = jax.random.normal(jax.random.PRNGKey(1), (3, 10, spec.d_model))
    query_idx = jnp.array([[2, 9], [0, 5], [9, 9]])
    for got, want in zip(bilinear_rows(spec, layer, h, query_idx),
                         attention_layer(spec, layer, h, query_idx)):
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=2e-5, atol=2e-5)
    # the rows are not trivially equal: another scale would fail
    other = bilinear_rows(spec._replace(d_k=8), {**layer, "w_k": 2 * layer["w_k"]}, h, query_idx)
    assert not np.allclose(other[1], attention_layer(spec, layer, h, query_idx)[1], atol=1e-3)


@pytest.mark.parametrize("c", [1.0, 0.3])
@pytest.mark.parametrize("n_heads", [1, 2])
def test_rms_normed_rows_equal_attention_layer(c, n_heads):
    """attention.qk_rms: bilinear_rows normalises the keys from W_k's Gram matrix, never forming
    them; the same rows as attention_layer's, which normalises the keys it forms."""
    spec = _spec("temperature", n_heads, c=c, alpha=0.5, qk_rms=True)
    layer = init_model(spec, jax.random.PRNGKey(0))["layers"][0]
    h = 3 * jax.random.normal(jax.random.PRNGKey(1), (3, 10, spec.d_model)) + 0.3
    query_idx = jnp.array([[2, 9], [0, 5], [9, 9]])
    got, want = bilinear_rows(spec, layer, h, query_idx), attention_layer(spec, layer, h, query_idx)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=2e-5, atol=2e-5)
    assert float(bilinear_factor(spec, layer)) == pytest.approx(c / np.sqrt(spec.d_k), rel=1e-7)
    # normalised: the logits do not grow with W_k, unlike the plain score's
    plain = bilinear_rows(spec._replace(attention_options=(("alpha", 0.5), ("c", c))), layer, h, query_idx)
    bigger = {**layer, "w_k": 10 * layer["w_k"]}
    np.testing.assert_allclose(bilinear_rows(spec, bigger, h, query_idx)[1], got[1], rtol=1e-4, atol=1e-5)
    assert not np.allclose(plain[1], got[1], atol=1e-3)
    assert float(jnp.abs(got[1]).max()) <= c * np.sqrt(spec.d_k) + 1e-4  # |q^.k^| <= d_k


@pytest.mark.parametrize("name,options", [(n, {}) for n in FACTORED] + [("additive", {"d_hidden": 5})])
@pytest.mark.parametrize("n_heads", [1, 2])
def test_factored_rows_equal_attention_layer(name, options, n_heads):
    spec = _spec(name, n_heads, **options)
    params = init_model(spec, jax.random.PRNGKey(0))
    layer = params["layers"][0]
    # learned-looking variant parameters, so that every factor is exercised
    layer["attn"] = jax.tree_util.tree_map(
        lambda a: a * (1 + 0.5 * jax.random.normal(jax.random.PRNGKey(3), a.shape)), layer["attn"])
    h = jax.random.normal(jax.random.PRNGKey(1), (3, 10, spec.d_model)) + 0.3
    query_idx = jnp.array([[2, 9], [0, 5], [9, 9]])
    for got, want in zip(factored_rows(spec, layer, h, query_idx),
                         attention_layer(spec, layer, h, query_idx)):
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=2e-4, atol=2e-4)
    # and not trivially: other key weights change the rows
    nudge = jax.random.normal(jax.random.PRNGKey(4), layer["w_k"].shape)
    other = factored_rows(spec, {**layer, "w_k": layer["w_k"] + 0.3 * nudge}, h, query_idx)
    assert not np.allclose(other[1], attention_layer(spec, layer, h, query_idx)[1], atol=1e-3)


def test_which_variants_are_reassociated():
    """By what each variant declares: bilinear rows, else its factored form, else none."""
    marked = {n: reassociated_rows(_spec(n, 1)._replace(reassociate=True)) for n in attention.VARIANTS}
    assert {n for n, f in marked.items() if f is bilinear_rows} == set(BILINEAR)
    assert {n for n, f in marked.items() if f is factored_rows} == set(FACTORED)
    assert {n for n, f in marked.items() if f is None} == set(attention.VARIANTS) - set(BILINEAR) - set(FACTORED)
    assert {"scaled", "unscaled"} <= set(BILINEAR) and "additive" in FACTORED  # the paper's three
    assert reassociated_rows(_spec("scaled", 1)) is None  # the key off


def test_the_program_key_names_the_bilinear_structure():
    """One-layer bilinear models are keyed on the structure they share (BilinearProgram:
    their weight function and the rest of the model), every other model on its own spec."""
    keys = {n: program_key(_spec(n, 1)._replace(reassociate=True)) for n in attention.variant_names()}
    for name, key in keys.items():
        variant = attention.VARIANTS[name]
        assert isinstance(key, BilinearProgram) is variant.bilinear, name
        if variant.bilinear:
            assert key.weights is variant.weights and key == keys[BILINEAR[0]], name
        else:
            assert key == _spec(name, 1)._replace(reassociate=True), name
    two_layers = _spec("unscaled", 1)._replace(reassociate=True, n_layers=2)
    assert program_key(two_layers) == two_layers
    # q and k RMS-normed compute other rows: never the plain bilinear program
    normed = program_key(_spec("temperature", 1, c=1.0, alpha=0.5, qk_rms=True)._replace(reassociate=True))
    plain = program_key(_spec("temperature", 1, c=1.0, alpha=0.5, qk_rms=False)._replace(reassociate=True))
    assert plain == keys[BILINEAR[0]] and normed != plain


def test_factored_scores_refuse_a_variant_without_the_form():
    with pytest.raises(ValueError, match="attention: 'cosine' has no factored form"):
        attention.factored_scores("cosine", {}, jnp.ones((2, 4)), jnp.ones((3, 4)), jnp.ones((5, 3)))


def test_reassociate_is_ignored_where_it_changes_nothing():
    """For a variant without a reassociated form the key changes neither the model nor the
    run id; for one with it, it changes both (other rounding is another run)."""
    for name, same in (("cosine", True), ("ssmax", True), ("additive", False), ("qk_norm", False),
                       ("scaled", False)):
        on, off = _compose(f"attention={name}", "model.reassociate=true"), _compose(f"attention={name}")
        task_cfg = speclib.task_object(dict(on.task))
        assert speclib.model_spec(on, task_cfg).reassociate is (not same)
        assert (results.run_id(on) == results.run_id(off)) is same


@pytest.mark.parametrize("name", ["scaled", "additive", "qk_norm"])
def test_reassociated_training_matches_within_rounding(name):
    lanes = [Lane(0, 1e-3), Lane(1, 3e-3)]
    plain = train_lanes(_compose(f"attention={name}"), lanes)
    fast = train_lanes(_compose(f"attention={name}", "model.reassociate=true"), lanes)
    for a, b in zip(plain, fast):
        for ra, rb in zip(a.rows, b.rows):
            np.testing.assert_allclose(ra["loss"], rb["loss"], rtol=1e-3)
            np.testing.assert_allclose(ra["grad_norm"], rb["grad_norm"], rtol=1e-3)


BLOCK_LANES = [Lane(s, 1e-3) for s in range(4)]


@pytest.fixture(scope="module")
def four_lanes_in_one_block():
    return train_lanes(_compose("attention=unscaled", "runtime.lane_block=4"), BLOCK_LANES)


@pytest.mark.parametrize("block", [1, 2, 0])
def test_lane_blocks_do_not_change_the_numbers(block, four_lanes_in_one_block):
    """Blocks of 1 (lax.map), 2, or all lanes vmapped at once: the same rows."""
    got = train_lanes(_compose("attention=unscaled", f"runtime.lane_block={block}"), BLOCK_LANES)
    for a, b in zip(four_lanes_in_one_block, got):
        for ra, rb in zip(a.rows, b.rows):
            for k in ra:
                np.testing.assert_allclose(ra[k], rb[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_block_size_divides_the_lanes():
    assert lane_axis.block_size(8, 1) == 1 and lane_axis.block_size(8, 3) == 2
    assert lane_axis.block_size(6, None) == 6 and lane_axis.block_size(5, 4) == 1
    assert lane_axis.default_block("cpu") == 1 and lane_axis.default_block("gpu") is None


def test_an_ended_lane_skips_its_steps():
    """A lane marked inactive comes back from a chunk unchanged; its neighbours move."""
    cfg = _compose("attention=scaled")
    group = grouplib.prepare(cfg, [Lane(0, 1e-3), Lane(1, 1e-3)])
    before = jax.device_get(group.state["params"])
    after, measured, _ = group.run(group.with_running(group.state, [0]), 5)
    after = jax.device_get(after)
    assert list(after["step"]) == [5, 0]
    moved = [not np.allclose(a[i], b[i]) for a, b in zip(jax.tree_util.tree_leaves(after["params"]),
                                                          jax.tree_util.tree_leaves(before)) for i in (0, 1)]
    assert any(moved[0::2]) and not any(moved[1::2])
    assert measured[0]["grad_norm"] > 0 and measured[1]["grad_norm"] == 0.0


class _Lowered(ProgramCache):
    """A cache that lowers the programs it is given and compiles none: their text
    as XLA receives it (no source locations) and the key they are cached on."""

    def compile(self, key, lowerers):
        self.key = key
        self.texts = {name: lower().as_text(debug_info=False) for name, lower in lowerers.items()}
        return lambda: (dict.fromkeys(lowerers), 0.0, 0.0)


def _program_texts(*overrides: str) -> dict:
    """The chunk and evaluation programs of a 2-lane group under model.reassociate,
    each traced from its own variant's spec, with their key and the lanes' factors."""
    cache = _Lowered()
    group = grouplib.prepare(_compose("model.reassociate=true", *overrides), [Lane(0, 1e-3), Lane(1, 1e-3)], cache)
    return {**cache.texts, "key": cache.key, "score_scale": jax.device_get(group.state["score_scale"]).tolist()}


def test_bilinear_variants_share_their_programs():
    """Under model.reassociate the bilinear factor is data (reassociate.score_scale):
    scaled, unscaled and mup at one d_k are one program, so a sweep compiles it
    once (the persistent cache holds it), under one key; the factor tells them apart."""
    scaled = _program_texts("attention=scaled")
    unscaled = _program_texts("attention=unscaled")
    mup = _program_texts("attention=mup", "attention.multiplier=2.0")
    additive = _program_texts("attention=additive")
    for name in ("chunk", "eval", "key"):
        assert scaled[name] == unscaled[name] == mup[name], name
        assert additive[name] != scaled[name], name
    assert scaled["score_scale"] == [np.float32(1 / np.sqrt(16))] * 2  # TINY: d_k = 16
    assert unscaled["score_scale"] == [1.0, 1.0] and mup["score_scale"] == [2.0 / 16] * 2


def test_more_layers_make_the_variants_programs_differ():
    """Below the last layer every variant forms its own scores, in the program:
    why program_key shares only one-layer models."""
    scaled = _program_texts("attention=scaled", "model.n_layers=2")
    unscaled = _program_texts("attention=unscaled", "model.n_layers=2")
    assert scaled["chunk"] != unscaled["chunk"] and scaled["key"] != unscaled["key"]


def test_the_next_bilinear_variant_reuses_the_programs():
    """scaled, then unscaled at the same d_k (a sweep with d_k outermost): the
    second group takes the first's compiled programs (compile time 0) where
    its model has one layer, and each lane keeps its own factor. (With two
    layers their keys differ, test_more_layers_make_the_variants_programs_differ,
    and the cache compiles each key anew, test_seeds' other shape.)"""
    lanes, cache = [Lane(0, 1e-3), Lane(1, 1e-3)], ProgramCache()
    cfgs = [_compose("model.reassociate=true", f"attention={name}", "model.n_layers=1")
            for name in ("scaled", "unscaled")]
    first, second = (grouplib.prepare(cfg, lanes, cache) for cfg in cfgs)
    assert first.compile_time_s > 0 and second.compile_time_s == 0
    assert second.chunk is first.chunk
    assert jax.device_get(second.state["score_scale"]).tolist() == [1.0, 1.0]
