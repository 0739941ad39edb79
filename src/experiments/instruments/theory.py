"""What the paper's argument predicts for attention logits at initialisation.

Plain numpy, no JAX and nothing from `attention/`: the probe compares the
attention code with these numbers, so they must not come from that code.

The law of one attention row (one query, n keys), docs/CLAIM.md sub-claims 1-3:

* dot-product variants (scaled, unscaled, mup, ssmax), logits = c q.k.
  Query and key components have variance p (p = 1 for the `iid` input model;
  p = d_model s^2 for q = x W with x ~ N(0, I) and W entries of variance s^2).
  Given q, the n logits are i.i.d. N(0, c^2 p |q|^2), and |q|^2 = p chi2(d_k):
  the row's own scale is random, and the Monte Carlo draws it per row.
  Var(logit) = E[c^2 p |q|^2] = c^2 d_k p^2 (docs/CLAIM.md: d_k (d_model s^2)^2).
  For the `model` input model (q = x W, W [d_model, d_k]) q has rank
  m = min(d_k, d_model): |q|^2 = x (W W^T) x^T, and with W W^T ~ its mean on
  an m-dim space, |q|^2 ~ p (d_k / m) chi2(m) (the `rank` argument; same
  mean, more spread when d_k > d_model). Approximation: it ignores the
  spread of W W^T's eigenvalues (O(sqrt(m / max(d_k, d_model)))), and the one
  draw of W, whose |W_q W_k^T|_F^2 (the row-averaged logit variance) misses
  its mean by ~ sqrt(4 / (d_model d_k) + 1 / d_model^2) from draw to draw.
* qk_norm: LayerNorm with unit gain makes each of q, k mean-free with
  |q|^2 = |k|^2 = d_k exactly, so the row has no random scale. Both lie in
  the (d_k - 1)-dim mean-free subspace, k's direction uniform there, so
  logit = sqrt(d_k) t with t the coordinate of a uniform point on the sphere
  in m = d_k - 1 dimensions: (1 + t) / 2 ~ Beta((m - 1)/2, (m - 1)/2),
  Var = d_k / (d_k - 1). Independent of p (LayerNorm removes it); for the
  `model` input the anisotropy of W W^T is ignored.
* cosine: g cos(q, k) with g = 10 at init; for independent isotropic q, k,
  cos = t on the sphere in m = d_k dimensions, Var = g^2 / d_k. Independent
  of p; anisotropy of W ignored likewise.
* additive: v . tanh(q W_q + k W_k), lecun_normal W (variance 1/d_k) and v
  (variance 1/d_hidden). In the limit of large d_k = d_hidden the hidden
  pre-activations are a + Z, a (from q) fixed in the row and Z (from k_j)
  varying, both N(0, p), and the logit given q is Gaussian with variance
  tau(p) = E_a Var_Z tanh(a + Z) (Gauss-Hermite quadrature). Only the
  large-d_k limit: at small d_k the row variance also carries |v|^2, a
  chi2(d_hidden)/d_hidden factor fixed by the one draw of v, and for the
  `model` input with d_k > d_model the hidden units are correlated (q, k
  have rank d_model), which this limit ignores: expect tens of percent there.

Softmax statistics (entropy, saturation, Jacobian norm) then come from a
Monte Carlo of softmax over rows drawn from that law.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SATURATION_THRESHOLD = 0.99  # max weight above this: a saturated row
COSINE_TEMPERATURE = 10.0    # g at init (Swin v2)
THEORY_STATS = (
    "logit_var", "logit_std", "entropy", "entropy_norm", "saturation",
    "jacobian_norm_mean", "jacobian_norm_median",
)

# The factor c in logits = c q.k for the scaled-dot-product variants.
_LOGIT_SCALE = {
    "scaled": lambda d_k, n: 1.0 / math.sqrt(d_k),
    "unscaled": lambda d_k, n: 1.0,
    "mup": lambda d_k, n: 1.0 / d_k,                     # multiplier 1
    "ssmax": lambda d_k, n: math.log(n) / math.sqrt(d_k),  # s = 1
}


def logit_scale(variant: str, d_k: int, n_keys: int) -> float | None:
    """c of a scaled-dot-product variant, None for the others."""
    f = _LOGIT_SCALE.get(variant)
    return None if f is None else f(d_k, n_keys)


@dataclass(frozen=True)
class RowLaw:
    """The law of one row's logits.

    kind "gauss_chi2": logits = scale sqrt(chi2(dof)) z, z ~ N(0, I_n)
    kind "sphere":     logits = scale t, (1 + t)/2 ~ Beta((dof-1)/2, (dof-1)/2); t = +-1 at dof 1
    kind "gauss":      logits = scale z
    """
    kind: str
    scale: float
    dof: int = 0

    @property
    def var(self) -> float:
        if self.kind == "gauss_chi2":
            return self.scale ** 2 * self.dof
        if self.kind == "sphere":
            return self.scale ** 2 / self.dof
        return self.scale ** 2


def additive_tau(component_var: float = 1.0, n_nodes: int = 80) -> float:
    """E_a Var_Z tanh(a + Z), a, Z independent N(0, p): Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    sd = math.sqrt(component_var)
    h = np.tanh(sd * x[:, None] + sd * x[None, :])  # [a node, z node]
    m1 = h @ w
    m2 = (h * h) @ w
    return float(w @ (m2 - m1 * m1))


def row_law(variant: str, d_k: int, n_keys: int, component_var: float = 1.0,
            rank: int | None = None) -> RowLaw | None:
    """The law of one row's logits for `variant` (None where not derived).

    rank: the rank of q (d_model for q = x W with d_model < d_k), None = d_k."""
    c = logit_scale(variant, d_k, n_keys)
    if c is not None:
        m = d_k if rank is None else min(d_k, rank)
        return RowLaw("gauss_chi2", c * component_var * math.sqrt(d_k / m), m)
    if variant == "qk_norm":
        return RowLaw("sphere", math.sqrt(d_k), d_k - 1)
    if variant == "cosine":
        return RowLaw("sphere", COSINE_TEMPERATURE, d_k)
    if variant == "additive":
        return RowLaw("gauss", math.sqrt(additive_tau(component_var)))
    return None


def predicted_logit_var(variant: str, d_k: int, n_keys: int, component_var: float = 1.0,
                        rank: int | None = None) -> float:
    """Expected within-row logit variance (NaN where not derived)."""
    law = row_law(variant, d_k, n_keys, component_var, rank)
    return math.nan if law is None else law.var


def small_sigma_entropy(sigma: float, n_keys: int) -> float:
    """E[H] ~ log n - sigma^2 (n - 1) / (2n) for i.i.d. N(0, sigma^2) logits, small sigma."""
    return math.log(n_keys) - sigma ** 2 * (n_keys - 1) / (2 * n_keys)


# --- Monte Carlo of softmax over rows drawn from a RowLaw ---------------------

@lru_cache(maxsize=8)
def _base_normals(n_rows: int, n_keys: int, seed: int) -> np.ndarray:
    # shared by all laws with the same (n_rows, n_keys, seed): common random numbers
    return np.random.default_rng([seed, n_keys, n_rows]).standard_normal((n_rows, n_keys))


def draw_logits(law: RowLaw, n_rows: int, n_keys: int, seed: int = 0) -> np.ndarray:
    """[n_rows, n_keys] logits from `law`, deterministic in seed."""
    rng = np.random.default_rng([seed, n_keys, n_rows, law.dof, 1])
    if law.kind == "gauss_chi2":
        row_scale = np.sqrt(rng.chisquare(law.dof, size=(n_rows, 1)))
        return law.scale * row_scale * _base_normals(n_rows, n_keys, seed)
    if law.kind == "gauss":
        return law.scale * _base_normals(n_rows, n_keys, seed)
    if law.kind == "sphere":
        if law.dof == 1:  # Beta(0, 0) is degenerate: one dimension leaves only the directions +-1, even odds
            return law.scale * (2.0 * rng.integers(0, 2, size=(n_rows, n_keys)) - 1.0)
        a = (law.dof - 1) / 2.0
        return law.scale * (2.0 * rng.beta(a, a, size=(n_rows, n_keys)) - 1.0)
    raise ValueError(f"RowLaw.kind: must be gauss_chi2, gauss or sphere, got {law.kind!r}")


def softmax_row_stats(logits: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row entropy (nats), max weight and Jacobian Frobenius norm."""
    x = logits - logits.max(-1, keepdims=True)
    e = np.exp(x)
    z = e.sum(-1, keepdims=True)
    s = e / z
    # H = log z - sum s x (x = logit - max), exact and free of 0 log 0
    entropy = np.log(z[:, 0]) - (s * x).sum(-1)
    s2 = (s * s).sum(-1)
    s3 = (s * s * s).sum(-1)
    jac = np.sqrt(np.maximum(s2 - 2.0 * s3 + s2 * s2, 0.0))
    return {"entropy": entropy, "max_weight": s.max(-1), "jacobian_norm": jac}


def monte_carlo(law: RowLaw, n_keys: int, n_rows: int = 32768, seed: int = 0,
                chunk: int = 8192) -> dict[str, float]:
    """Mean entropy, entropy_norm, saturated share and Jacobian norm mean/median."""
    logits = draw_logits(law, n_rows, n_keys, seed)
    parts = [softmax_row_stats(logits[i:i + chunk]) for i in range(0, n_rows, chunk)]
    rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    entropy = float(rows["entropy"].mean())
    return {
        "entropy": entropy,
        "entropy_norm": entropy / math.log(n_keys),
        "saturation": float((rows["max_weight"] > SATURATION_THRESHOLD).mean()),
        "jacobian_norm_mean": float(rows["jacobian_norm"].mean()),
        "jacobian_norm_median": float(np.median(rows["jacobian_norm"])),
    }


@lru_cache(maxsize=4096)
def predict(variant: str, d_k: int, n_keys: int, component_var: float = 1.0,
            n_mc: int = 32768, seed: int = 0, rank: int | None = None) -> dict[str, float]:
    """The `theory_<stat>` columns for one (variant, d_k, n_keys, input law)."""
    law = row_law(variant, d_k, n_keys, component_var, rank)
    if law is None:
        return {f"theory_{k}": math.nan for k in THEORY_STATS}
    out = {"logit_var": law.var, "logit_std": math.sqrt(law.var)}
    out.update(monte_carlo(law, n_keys, n_mc, seed))
    return {f"theory_{k}": out[k] for k in THEORY_STATS}
