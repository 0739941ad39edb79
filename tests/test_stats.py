"""Unit tests of the attention statistics (src/attention/stats.py) against
references computed here: jax.jacobian of softmax, closed forms of the entropy
of uniform and one-hot rows, numpy moments over each row's valid keys, and
numpy reductions over the selected rows."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import stats as _stats

# Tiny shapes, so XLA's compile time is most of the run time: LLVM optimisation
# level 0 cuts it by ~40% and leaves the float semantics (no fast-math) as they are.
jit = functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})
ROWS, N = 12, 9  # rows of attention, keys per row


class _Jitted:
    """attention.stats with each function jitted: one compile per shape instead of
    one per eager op (slow on CPU). The tests call the library through this."""
    STAT_COLUMNS = _stats.STAT_COLUMNS
    row_entropy = staticmethod(jit(_stats.row_entropy))
    row_entropy_norm = staticmethod(jit(_stats.row_entropy_norm))
    row_saturation = staticmethod(jit(_stats.row_saturation, static_argnames="threshold"))
    row_jacobian_norm = staticmethod(jit(_stats.row_jacobian_norm))
    row_logit_moments = staticmethod(jit(_stats.row_logit_moments))
    masked_mean = staticmethod(jit(_stats.masked_mean))
    masked_quantile = staticmethod(jit(_stats.masked_quantile))
    masked_median = staticmethod(jit(_stats.masked_median))
    row_summary = staticmethod(_stats.row_summary)


stats = _Jitted
masked_softmax = jit(attention.masked_softmax)


def rng(seed):
    return np.random.default_rng(seed)


def random_rows(seed, sharpness=1.0, shape=(ROWS, N)):
    """Softmax rows from normal logits times `sharpness`, float32."""
    logits = sharpness * rng(seed).standard_normal(shape)
    return jnp.asarray(logits, jnp.float32), jax.nn.softmax(jnp.asarray(logits, jnp.float32), -1)


def random_mask(seed, shape=(ROWS, N), p=0.6):
    m = rng(seed).random(shape) < p
    m[..., 0] = True  # no empty row
    m[..., 1] |= rng(seed + 1).random(shape[:-1]) < 0.5  # most rows have >= 2 keys
    return m


# --- Jacobian norm ----------------------------------------------------------

@jit
def _jacobian_frobenius(logits):
    """||d softmax / d logits||_F per row, from jax.jacobian (the n x n matrix)."""
    jac = jax.vmap(jax.jacobian(jax.nn.softmax))(logits)  # (rows, n, n)
    return jnp.sqrt(jnp.sum(jac ** 2, axis=(-2, -1)))


@pytest.mark.parametrize("sharpness", [0.1, 1.0, 4.0])
def test_jacobian_norm_equals_frobenius_of_jax_jacobian(sharpness):
    logits, weights = random_rows(0, sharpness)
    expected = _jacobian_frobenius(logits)
    np.testing.assert_allclose(stats.row_jacobian_norm(weights), expected, rtol=1e-4, atol=1e-5)
    # ... and the closed form from diag(s) - s s^T, in float64
    s = np.asarray(weights, np.float64)
    j = np.stack([np.diag(r) - np.outer(r, r) for r in s])
    np.testing.assert_allclose(expected, np.linalg.norm(j, axis=(-2, -1)), rtol=1e-4, atol=1e-6)


def test_jacobian_norm_near_saturation():
    # logit std 32: unscaled attention at d_k = 1024 at init
    logits = 32.0 * rng(14).standard_normal((ROWS, 64))
    s = np.exp(logits - logits.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)  # float64
    rest = s.sum(-1) - s.max(-1)  # 1 - s_max without cancellation
    assert np.median(rest) < 1e-3  # most rows are saturated
    j = np.stack([np.diag(r) - np.outer(r, r) for r in s])
    expected = np.linalg.norm(j, axis=(-2, -1))
    weights = jax.nn.softmax(jnp.asarray(logits, jnp.float32), -1)
    np.testing.assert_allclose(stats.row_jacobian_norm(weights), expected, rtol=1e-2)


def test_jacobian_norm_with_leading_dims_and_masked_zeros():
    # masked keys carry weight 0: the norm is that of the softmax over the valid keys
    mask = random_mask(1, (2, ROWS, N))
    logits = jnp.asarray(rng(2).standard_normal((2, ROWS, N)), jnp.float32)
    weights = masked_softmax(logits, jnp.asarray(mask))
    got = np.asarray(stats.row_jacobian_norm(weights))
    assert got.shape == (2, ROWS)
    for idx in np.ndindex(2, ROWS):
        s = np.asarray(weights[idx], np.float64)[mask[idx]]
        assert got[idx] == pytest.approx(np.linalg.norm(np.diag(s) - np.outer(s, s)), rel=1e-4, abs=1e-6)


# --- entropy, saturation on uniform and one-hot rows -------------------------------

@pytest.mark.parametrize("n", [1, 2, N, 64])
def test_uniform_row(n):
    weights = jnp.full((ROWS, n), 1.0 / n, jnp.float32)
    np.testing.assert_allclose(stats.row_entropy(weights), math.log(n), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.row_entropy_norm(weights), 1.0 if n > 1 else 0.0, rtol=1e-5)
    np.testing.assert_array_equal(stats.row_saturation(weights), 1.0 if n == 1 else 0.0)


def test_uniform_over_valid_keys_has_entropy_norm_one():
    mask = random_mask(3)
    weights = masked_softmax(jnp.zeros((ROWS, N)), jnp.asarray(mask))
    count = mask.sum(-1)
    np.testing.assert_allclose(stats.row_entropy(weights), np.log(count), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.row_entropy_norm(weights, jnp.asarray(mask)),
                               np.where(count > 1, 1.0, 0.0), rtol=1e-5)


def test_one_hot_row():
    weights = jnp.asarray(np.eye(N, dtype=np.float32)[rng(13).integers(0, N, ROWS)])
    np.testing.assert_array_equal(stats.row_entropy(weights), 0.0)
    np.testing.assert_array_equal(stats.row_entropy_norm(weights), 0.0)
    np.testing.assert_array_equal(stats.row_saturation(weights), 1.0)
    np.testing.assert_array_equal(stats.row_jacobian_norm(weights), 0.0)


def test_entropy_and_saturation_of_random_rows():
    logits, weights = random_rows(4, sharpness=3.0)
    s = np.asarray(weights, np.float64)
    np.testing.assert_allclose(stats.row_entropy(weights), -(s * np.log(s)).sum(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(stats.row_saturation(weights), (s.max(-1) > 0.99).astype(float))
    np.testing.assert_array_equal(stats.row_saturation(weights, threshold=0.5),
                                  (s.max(-1) > 0.5).astype(float))
    assert 0 < float(stats.row_saturation(weights, threshold=0.5).mean()) < 1  # both kinds present


# --- logit moments -------------------------------------------------------------

@pytest.mark.parametrize("with_mask", [False, True])
def test_logit_moments_match_numpy_over_valid_keys(with_mask):
    logits = 3.0 * rng(5).standard_normal((2, ROWS, N)) + 0.5
    mask = random_mask(6, (2, ROWS, N)) if with_mask else np.ones((2, ROWS, N), bool)
    mask[0, 0] = False
    mask[0, 0, 4] = True  # a one-key row: mean is its logit, variance 0
    got = stats.row_logit_moments(jnp.asarray(logits, jnp.float32),
                                  jnp.asarray(mask) if with_mask else None)
    if not with_mask:
        mask = np.ones_like(mask)
    for idx in np.ndindex(2, ROWS):
        x = logits[idx][mask[idx]]
        var = np.var(x, ddof=1) if x.size > 1 else 0.0
        assert got["mean"][idx] == pytest.approx(x.mean(), rel=1e-5, abs=1e-5)
        assert got["var"][idx] == pytest.approx(var, rel=1e-5, abs=1e-5)
        assert got["std"][idx] == pytest.approx(math.sqrt(var), rel=1e-5, abs=1e-5)
        assert got["absmax"][idx] == pytest.approx(np.abs(x).max(), rel=1e-6)


def test_logit_moments_of_fully_masked_row_are_finite_zero():
    logits = jnp.asarray(rng(7).standard_normal((ROWS, N)), jnp.float32)
    mask = np.ones((ROWS, N), bool)
    mask[2] = False
    got = stats.row_logit_moments(logits, jnp.asarray(mask))
    for name, value in got.items():
        assert np.all(np.isfinite(value)), name
        assert float(value[2]) == 0.0, name


# --- reductions over rows ---------------------------------------------------------

def test_masked_reductions_respect_row_mask():
    x = rng(8).standard_normal((3, ROWS))
    row_mask = rng(9).random((3, ROWS)) < 0.5
    poisoned = np.where(row_mask, x, 1e6)  # unselected rows must not matter
    xj, mj = jnp.asarray(poisoned, jnp.float32), jnp.asarray(row_mask)
    selected = x[row_mask]
    assert float(stats.masked_mean(xj, mj)) == pytest.approx(selected.mean(), rel=1e-5)
    assert float(stats.masked_median(xj, mj)) == pytest.approx(np.median(selected), rel=1e-5)
    for q in (0.1, 0.25, 0.9):
        assert float(stats.masked_quantile(xj, q, mj)) == pytest.approx(np.quantile(selected, q),
                                                                         rel=1e-5)
    # without a row mask: every row
    assert float(stats.masked_mean(jnp.asarray(x, jnp.float32))) == pytest.approx(x.mean(), rel=1e-5)
    assert float(stats.masked_median(jnp.asarray(x, jnp.float32))) == pytest.approx(np.median(x), rel=1e-5)
    # a row mask shared across the leading dim broadcasts
    shared = row_mask[0]
    assert float(stats.masked_mean(jnp.asarray(x, jnp.float32), jnp.asarray(shared))) == pytest.approx(
        x[:, shared].mean(), rel=1e-5)


def test_masked_reductions_with_no_row_selected():
    x = jnp.ones((4,))
    none = jnp.zeros((4,), bool)
    assert float(stats.masked_mean(x, none)) == 0.0
    assert np.isnan(float(stats.masked_median(x, none)))  # documented: NaN if none selected


# --- row_summary --------------------------------------------------------------------

def _summary_inputs():
    logits = jnp.asarray(2.0 * rng(10).standard_normal((2, 3, ROWS, N)), jnp.float32)
    mask = jnp.asarray(random_mask(11, (2, 3, ROWS, N)))
    weights = masked_softmax(logits, mask)
    row_mask = jnp.asarray(rng(12).random((2, 3, ROWS)) < 0.6)
    return logits, weights, mask, row_mask


def test_row_summary_has_every_column_and_is_jittable():
    logits, weights, mask, row_mask = _summary_inputs()
    out_shapes = jax.eval_shape(stats.row_summary, logits, weights, mask, row_mask)  # traced, not run
    got = jit(stats.row_summary)(logits, weights, mask, row_mask)
    assert set(out_shapes) == set(stats.STAT_COLUMNS) == set(got)
    for name in stats.STAT_COLUMNS:
        assert got[name].shape == () and got[name].dtype == jnp.float32, name
        assert np.isfinite(float(got[name])), name


def test_row_summary_values():
    logits, weights, mask, row_mask = _summary_inputs()
    got = jit(stats.row_summary)(logits, weights, mask, row_mask)
    sel = np.asarray(row_mask)
    moments = stats.row_logit_moments(logits, mask)
    jac = np.asarray(stats.row_jacobian_norm(weights))[sel]
    expected = {
        "logit_mean": np.asarray(moments["mean"])[sel].mean(),
        "logit_var": np.asarray(moments["var"])[sel].mean(),
        "logit_std": math.sqrt(np.asarray(moments["var"])[sel].mean()),
        "logit_absmax": np.asarray(moments["absmax"])[sel].mean(),
        "entropy": np.asarray(stats.row_entropy(weights))[sel].mean(),
        "entropy_norm": np.asarray(stats.row_entropy_norm(weights, mask))[sel].mean(),
        "saturation": np.asarray(stats.row_saturation(weights))[sel].mean(),
        "jacobian_norm_mean": jac.mean(),
        "jacobian_norm_median": np.median(jac),
    }
    for name, value in expected.items():
        assert float(got[name]) == pytest.approx(value, rel=1e-5, abs=1e-6), name
    # row_mask=None: every row
    all_rows = jit(stats.row_summary)(logits, weights, mask)
    assert float(all_rows["entropy"]) == pytest.approx(
        float(np.asarray(stats.row_entropy(weights)).mean()), rel=1e-5)
