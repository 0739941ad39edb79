"""Unit tests of the attention library (src/attention): every variant against
a reference written here (jax.nn.dot_product_attention, a plain Python loop,
closed forms), masking, fully masked rows, jit/vmap/grad, bfloat16, errors.

Shapes are small and float32 unless a test says otherwise; the library's
layout is [..., n, d] with heads as a leading dim, jax.nn's is [B, T, N, H].
"""

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention

# Tiny shapes, so XLA's compile time is most of the run time: LLVM optimisation
# level 0 cuts it by ~40% and leaves the float semantics (no fast-math) as they are.
jit = functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})
NAMES = sorted(attention.VARIANTS)
B, H, N_Q, N_K, D_K, D_V = 2, 3, 5, 7, 8, 4  # d_v != d_k: d_v is free


def normal(seed, shape):
    # numpy, not jax.random: each new shape would compile a fresh threefry program
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), jnp.float32)


def qkv(seed=0, lead=(B, H), n_q=N_Q, n_k=N_K, d_k=D_K, d_v=D_V):
    return (normal(seed, lead + (n_q, d_k)), normal(seed + 1, lead + (n_k, d_k)),
            normal(seed + 2, lead + (n_k, d_v)))


@functools.lru_cache(maxsize=None)
def _jitted(fn, name, options):
    return jit(functools.partial(fn, name, **dict(options)))


def attend(name, params, q, k, v, mask=None, **options):
    """attention.attend, jitted once per (variant, options): eager dispatch is slow on CPU."""
    return _jitted(attention.attend, name, tuple(sorted(options.items())))(params, q, k, v, mask)


def scores(name, params, q, k, mask=None, **options):
    return _jitted(attention.scores, name, tuple(sorted(options.items())))(params, q, k, mask)


def params_for(name, d_k=D_K, **options):
    return _params(name, d_k, tuple(sorted(options.items())))


@functools.lru_cache(maxsize=None)
def _params(name, d_k, options):
    return attention.init_params(name, jax.random.PRNGKey(42), d_k, **dict(options))


def random_mask(seed, shape, p=0.5):
    """Random bool mask; column (i mod n_k) of row i forced True, so no row is empty."""
    m = np.random.default_rng(seed).random(shape) < p
    n_q, n_k = shape[-2:]
    m[..., np.arange(n_q), np.arange(n_q) % n_k] = True
    return jnp.asarray(m)


def _np_dot(q, k):
    return np.einsum("...qd,...kd->...qk", np.asarray(q, np.float64), np.asarray(k, np.float64))


# --- scaled / unscaled against jax.nn.dot_product_attention -------------------

@jit
def _reference(q, k, v, mask, scale):
    """jax.nn.dot_product_attention on the library's [B, N, T, H] layout."""
    to_jax = lambda x: jnp.swapaxes(x, 1, 2)  # [B, N, T, H] <-> [B, T, N, H]
    mask = jnp.broadcast_to(mask, q.shape[:2] + (q.shape[2], k.shape[2]))  # [B, N, T, S]
    out = jax.nn.dot_product_attention(to_jax(q), to_jax(k), to_jax(v), mask=mask, scale=scale)
    return to_jax(out)


def _reference_cases():
    q, k, v = qkv(0, d_v=D_K)  # jax.nn.dot_product_attention needs d_v == d_k
    qs, ks, vs = qkv(10, n_q=6, n_k=6, d_k=16, d_v=16)  # square, for causal masks
    causal = jnp.tril(jnp.ones((6, 6), bool))
    padding = np.ones((B, 1, 1, N_K), bool)
    padding[0, ..., 4:] = False  # batch 0 has 4 valid keys
    return {
        "no_mask": (q, k, v, None),
        "causal": (qs, ks, vs, causal),
        "causal_per_head": (qs, ks, vs, jnp.broadcast_to(causal, (B, H, 6, 6))),
        "random": (q, k, v, random_mask(1, (B, H, N_Q, N_K))),
        "random_shared": (q, k, v, random_mask(2, (N_Q, N_K))),
        "random_sparse": (q, k, v, random_mask(3, (B, H, N_Q, N_K), p=0.15)),
        "padding": (q, k, v, jnp.asarray(padding)),
    }


def test_scaled_and_unscaled_equal_jax_dot_product_attention():
    errors = {}
    for case, (q, k, v, mask) in _reference_cases().items():
        d_k = q.shape[-1]
        full_mask = np.broadcast_to(True if mask is None else mask, q.shape[:-1] + k.shape[-2:-1])
        for name, scale in (("scaled", 1.0 / math.sqrt(d_k)), ("unscaled", 1.0)):
            out, weights = attend(name, {}, q, k, v, mask=mask)
            ref = _reference(q, k, v, jnp.asarray(full_mask), scale)
            assert out.shape == ref.shape == q.shape[:-1] + (v.shape[-1],)
            errors[f"{name}/{case}"] = float(jnp.max(jnp.abs(out - ref)))
            # the weights are the softmax of the scaled logits over the allowed keys
            logits = np.where(full_mask, scale * _np_dot(q, k), -np.inf)
            expected = np.exp(logits - logits.max(-1, keepdims=True))
            np.testing.assert_allclose(weights, expected / expected.sum(-1, keepdims=True), atol=1e-6)
    worst = max(errors, key=errors.get)
    print(f"\nmax |attend - jax.nn.dot_product_attention| (float32): "
          f"{errors[worst]:.3e} ({worst}; {len(errors)} cases)")
    assert errors[worst] <= 1e-5, errors


# --- additive ------------------------------------------------------------------

def _additive_loop(params, q, k):
    """score[..., i, j] = v . tanh(q_i W_q + k_j W_k), one (i, j) at a time, float64."""
    w_q, w_k, v = (np.asarray(params[n], np.float64) for n in ("w_q", "w_k", "v"))
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    out = np.zeros(q.shape[:-1] + (k.shape[-2],))
    for lead in np.ndindex(*q.shape[:-2]):
        for i in range(q.shape[-2]):
            for j in range(k.shape[-2]):
                out[lead + (i, j)] = v @ np.tanh(q[lead + (i,)] @ w_q + k[lead + (j,)] @ w_k)
    return out


@pytest.mark.parametrize("d_hidden", [None, 3])
def test_additive_equals_python_loop(d_hidden):
    options = {} if d_hidden is None else {"d_hidden": d_hidden}
    params = params_for("additive", **options)
    q, k, v = qkv(3)
    mask = random_mask(5, (B, H, N_Q, N_K))
    ref_logits = _additive_loop(params, q, k)
    np.testing.assert_allclose(scores("additive", params, q, k, **options),
                               ref_logits, rtol=1e-5, atol=1e-5)
    out, weights = attend("additive", params, q, k, v, mask=mask, **options)
    ref_w = np.where(mask, np.exp(ref_logits - ref_logits.max(-1, keepdims=True)), 0.0)
    ref_w /= ref_w.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, ref_w, atol=1e-5)
    np.testing.assert_allclose(out, ref_w @ np.asarray(v, np.float64), atol=1e-5)


@pytest.mark.parametrize("d_hidden", [None, 3])
def test_additive_params_shapes(d_hidden):
    options = {} if d_hidden is None else {"d_hidden": d_hidden}
    params = params_for("additive", **options)
    h = D_K if d_hidden is None else d_hidden
    assert set(params) == {"w_q", "w_k", "v"}
    assert params["w_q"].shape == (D_K, h)
    assert params["w_k"].shape == (D_K, h)
    assert params["v"].shape == (h,)
    assert all(p.dtype == jnp.float32 for p in params.values())


def test_additive_init_is_lecun_normal():
    d_k, d_hidden = 64, 512  # 32768 entries per matrix: variance known to ~1%
    params = attention.init_params("additive", jax.random.PRNGKey(0), d_k, d_hidden=d_hidden)
    for name in ("w_q", "w_k"):
        w = np.asarray(params[name], np.float64)
        assert abs(w.mean()) < 0.01 / math.sqrt(d_k)
        assert w.var() == pytest.approx(1.0 / d_k, rel=0.05), name
    v = np.asarray(params["v"], np.float64)  # fan-in d_hidden, 512 entries: looser
    assert v.var() == pytest.approx(1.0 / d_hidden, rel=0.25)
    assert not np.allclose(params["w_q"], params["w_k"])  # independent draws


# --- mup, qk_norm, cosine, ssmax against closed forms --------------------------------

@pytest.mark.parametrize("multiplier", [None, 8.0])
def test_mup_is_dot_over_d_k(multiplier):
    options = {} if multiplier is None else {"multiplier": multiplier}
    q, k, v = qkv(4)
    expected = (1.0 if multiplier is None else multiplier) * _np_dot(q, k) / D_K
    np.testing.assert_allclose(scores("mup", {}, q, k, **options), expected,
                               rtol=1e-5, atol=1e-6)
    _, weights = attend("mup", {}, q, k, v, **options)
    np.testing.assert_allclose(weights, jax.nn.softmax(jnp.asarray(expected, jnp.float32), -1),
                               atol=1e-6)


def test_qk_norm_is_layer_norm_dot():
    def layer_norm(x):
        x = np.asarray(x, np.float64)
        return (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)

    params = params_for("qk_norm")
    assert set(params) == {"gain_q", "gain_k"}
    np.testing.assert_array_equal(params["gain_q"], np.ones(D_K))
    np.testing.assert_array_equal(params["gain_k"], np.ones(D_K))
    q, k, _ = qkv(5)
    q = 3.0 * q + 1.5  # LayerNorm removes shift and scale
    expected = _np_dot(layer_norm(q), layer_norm(k)) / math.sqrt(D_K)
    np.testing.assert_allclose(scores("qk_norm", params, q, k), expected,
                               rtol=1e-5, atol=1e-5)


def test_cosine_is_ten_times_cosine_at_init():
    params = params_for("cosine")
    q, k, _ = qkv(6)
    qn = np.linalg.norm(np.asarray(q, np.float64), axis=-1)[..., :, None]
    kn = np.linalg.norm(np.asarray(k, np.float64), axis=-1)[..., None, :]
    expected = 10.0 * _np_dot(q, k) / (qn * kn)
    np.testing.assert_allclose(scores("cosine", params, q, k), expected,
                               rtol=1e-5, atol=1e-5)
    q_big = 100.0 * q  # scale-free
    np.testing.assert_allclose(scores("cosine", params, q_big, k), expected,
                               rtol=1e-5, atol=1e-5)


def test_ssmax_is_log_n_times_scaled_at_init():
    params = params_for("ssmax")
    q, k, v = qkv(7)
    expected = math.log(N_K) * _np_dot(q, k) / math.sqrt(D_K)
    np.testing.assert_allclose(scores("ssmax", params, q, k), expected,
                               rtol=1e-5, atol=1e-5)


def test_ssmax_with_mask_uses_each_rows_key_count():
    params = params_for("ssmax")
    q, k, v = qkv(8)
    mask = np.array(random_mask(9, (B, H, N_Q, N_K), p=0.4))
    mask[0, 0, 0, :] = False
    mask[0, 0, 0, 2] = True  # a one-key row: log 1 = 0, its weight is still 1
    count = mask.sum(-1, keepdims=True)
    assert len(np.unique(count)) > 2  # rows really differ
    expected = np.log(count) * _np_dot(q, k) / math.sqrt(D_K)
    np.testing.assert_allclose(scores("ssmax", params, q, k, mask=jnp.asarray(mask)),
                               expected, rtol=1e-5, atol=1e-5)
    out, weights = attend("ssmax", params, q, k, v, mask=jnp.asarray(mask))
    ref = np.where(mask, np.exp(expected - np.where(mask, expected, -np.inf).max(-1, keepdims=True)), 0)
    np.testing.assert_allclose(weights, ref / ref.sum(-1, keepdims=True), atol=1e-5)
    assert float(weights[0, 0, 0, 2]) == pytest.approx(1.0)
    # a mask shared across batch and heads gives the same counts
    shared = mask[0, 0]
    np.testing.assert_allclose(
        scores("ssmax", params, q, k, mask=jnp.asarray(shared)),
        np.log(shared.sum(-1, keepdims=True)) * _np_dot(q, k) / math.sqrt(D_K), rtol=1e-5, atol=1e-5)


# --- every variant: masks, fully masked rows, transforms, dtypes, errors -----------

@functools.lru_cache(maxsize=None)
def loss_and_grads(name):
    """(loss, (out, weights)), grads w.r.t. (params, q, k, v). Cached, so that jitting
    it compiles once per variant, dtype and shape across the tests below."""
    def loss(params, q, k, v, mask, probe):
        out, weights = attention.attend(name, params, q, k, v, mask=mask)
        value = jnp.sum(out.astype(jnp.float32) * probe) + jnp.sum(weights.astype(jnp.float32) ** 2)
        return value, (out, weights)
    return jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True)


def masks_with_empty_rows(seed, lead=(B, H)):
    """Random masks where rows 1 and 3 are fully masked, and so is all of [0, 0]."""
    m = np.array(random_mask(seed, lead + (N_Q, N_K)))
    m[..., (1, 3), :] = False
    m[(0,) * len(lead)] = False
    return jnp.asarray(m)


EMPTY_ROWS = (1, 3)
FULL_ROWS = (0, 2, 4)


@pytest.mark.parametrize("name", NAMES)
def test_masks_and_fully_masked_rows(name):
    params = params_for(name)
    q, k, v = qkv(13)
    mask = masks_with_empty_rows(14)
    (_, (out, weights)), grads = jit(loss_and_grads(name))(params, q, k, v, mask, normal(15, (B, H, N_Q, D_V)))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    assert np.all(np.asarray(weights)[~np.asarray(mask)] == 0.0)  # masked keys: weight exactly 0
    if attention.get_variant(name).weights is attention.masked_softmax:  # a distribution over the keys
        np.testing.assert_allclose(weights[1:, :, FULL_ROWS].sum(-1), 1.0, atol=1e-6)
        np.testing.assert_allclose(weights[0, 1:, FULL_ROWS].sum(-1), 1.0, atol=1e-6)
    # fully masked rows: zero weights, zero output
    np.testing.assert_array_equal(weights[..., EMPTY_ROWS, :], 0.0)
    np.testing.assert_array_equal(out[..., EMPTY_ROWS, :], 0.0)
    np.testing.assert_array_equal(weights[0, 0], 0.0)  # every row of this head
    np.testing.assert_array_equal(out[0, 0], 0.0)
    # ... and finite gradients; queries of empty rows get none, values still do
    for g in jax.tree.leaves(grads):
        assert np.all(np.isfinite(g)), name
    g_params, g_q, g_k, g_v = grads
    np.testing.assert_array_equal(g_q[..., EMPTY_ROWS, :], 0.0)
    np.testing.assert_array_equal(g_q[0, 0], 0.0)
    np.testing.assert_array_equal(g_v[0, 0], 0.0)
    assert np.any(g_v != 0) and np.any(g_q != 0)


@pytest.mark.parametrize("name", NAMES)
def test_jit_vmap_grad_with_leading_dims(name):
    params = params_for(name)
    q, k, v = qkv(16, lead=(3, B, H))  # vmap over axis 0, then [B, H] leading dims
    mask = masks_with_empty_rows(17, lead=(3, B, H))
    probe = normal(18, (3, B, H, N_Q, D_V))
    batched = jit(jax.vmap(loss_and_grads(name), in_axes=(None, 0, 0, 0, 0, 0)))
    (values, (out, _)), grads = batched(params, q, k, v, mask, probe)
    assert values.shape == (3,) and out.shape == (3, B, H, N_Q, D_V)
    assert [g.shape for g in jax.tree.leaves(grads[1:])] == [q.shape, k.shape, v.shape]
    for leaf, g in zip(jax.tree.leaves(params), jax.tree.leaves(grads[0])):
        assert g.shape == (3,) + leaf.shape
    single = jit(loss_and_grads(name))
    for i in range(3):  # same as one un-vmapped call per example
        (value, (out_i, _)), grads_i = single(params, q[i], k[i], v[i], mask[i], probe[i])
        np.testing.assert_allclose(values[i], value, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[i], out_i, rtol=1e-5, atol=1e-6)
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads_i)):
            np.testing.assert_allclose(a[i], b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_bfloat16_close_to_float32(name):
    bf = lambda x: x.astype(jnp.bfloat16)
    params = params_for(name)
    q, k, v = qkv(13)
    mask = masks_with_empty_rows(14)
    (_, (out32, w32)), _ = jit(loss_and_grads(name))(params, q, k, v, mask, normal(15, (B, H, N_Q, D_V)))
    # parameters in bfloat16 too (every variant casts them to q's dtype anyway)
    out16, w16 = attend(name, jax.tree.map(bf, params), bf(q), bf(k), bf(v), mask=mask)
    assert out16.dtype == jnp.bfloat16
    out16, w16 = np.asarray(out16, np.float32), np.asarray(w16, np.float32)
    assert np.all(np.isfinite(out16)) and np.all(np.isfinite(w16))
    assert np.all(w16[~np.asarray(mask)] == 0.0)
    np.testing.assert_allclose(w16, w32, atol=0.05)
    np.testing.assert_allclose(out16, out32, atol=0.1, rtol=0.05)


@pytest.mark.parametrize("name", NAMES)
def test_init_params(name):
    params = params_for(name)
    if attention.get_variant(name).init is attention.registry.no_params:
        assert params == {}
    else:
        assert params and all(jnp.issubdtype(p.dtype, jnp.floating) for p in jax.tree.leaves(params))
    # deterministic in the rng (params_for caches: draw again directly)
    again = attention.init_params(name, jax.random.PRNGKey(42), D_K)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(again)):
        np.testing.assert_array_equal(a, b)


def test_variant_names_are_the_contract():
    """The contract's names are registered (a new variant may join them)."""
    assert set(attention.VARIANTS) >= {"scaled", "unscaled", "additive", "mup", "qk_norm",
                                       "cosine", "ssmax"}
    assert attention.variant_names()[:3] == ["scaled", "unscaled", "additive"]


def _assert_lists_every_name(excinfo):
    message = str(excinfo.value)
    assert "nope" in message
    words = set(re.findall(r"\w+", message))  # whole words: "scaled" is inside "unscaled"
    assert set(attention.VARIANTS) <= words, message


def test_unknown_name_raises_listing_valid_names():
    q, k, v = qkv(20)
    with pytest.raises(ValueError) as excinfo:
        attention.init_params("nope", jax.random.PRNGKey(0), D_K)
    _assert_lists_every_name(excinfo)
    assert isinstance(excinfo.value, attention.UnknownVariantError)
    with pytest.raises(ValueError) as excinfo:
        attention.attend("nope", {}, q, k, v)
    _assert_lists_every_name(excinfo)
    with pytest.raises(ValueError) as excinfo:
        attention.scores("nope", {}, q, k)
    _assert_lists_every_name(excinfo)


@pytest.mark.parametrize("name", NAMES)
def test_d_k_mismatch_raises(name):
    q = normal(21, (B, H, N_Q, D_K))
    k = normal(22, (B, H, N_K, D_K - 2))
    v = normal(23, (B, H, N_K, D_V))
    with pytest.raises(ValueError, match=rf"d_k.*{D_K}.*{D_K - 2}"):
        attention.attend(name, params_for(name), q, k, v)


def test_sigmoid_attention_is_its_closed_form():
    """sigmoid(q.k / sqrt(d_k) - log n) per key, n the keys the row may attend to
    (Ramapuram et al. 2024); masked keys weigh 0; the weights are the variant's own."""
    q, k, v = (np.asarray(normal(i, shape), np.float64) for i, shape in
               ((21, (5, D_K)), (22, (7, D_K)), (23, (7, D_V))))
    mask = np.tril(np.ones((5, 7), bool), k=2)
    out, weights = attention.attend("sigmoid", {}, jnp.asarray(q, jnp.float32), jnp.asarray(k, jnp.float32),
                                    jnp.asarray(v, jnp.float32), mask=jnp.asarray(mask))
    n = mask.sum(-1, keepdims=True)
    want = np.where(mask, 1 / (1 + np.exp(-(q @ k.T / np.sqrt(D_K) - np.log(n)))), 0.0)
    np.testing.assert_allclose(weights, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, want @ v, rtol=1e-4, atol=1e-5)
    assert not np.allclose(np.asarray(weights).sum(-1), 1.0)  # not a softmax
