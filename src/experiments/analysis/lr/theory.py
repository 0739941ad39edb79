"""What the Adam step predicts for the best learning rate's drift with d_k.

Under Adam each entry of W_q and W_k moves by about lr per step (the first
step is exactly lr * sign(gradient)), and the moves add up coherently over
the d_k components of q.k: with d_model fixed, the logit c * q.k changes by
about c * d_k * lr per step, c the variant's score factor. Holding that
change fixed as d_k grows asks lr ∝ 1 / (c d_k), so per doubling of d_k

    log2(best lr) moves by -(1 + dlog2 c / dlog2 d_k):
    -1 for unscaled (c = 1), -0.5 for scaled (c = 1/sqrt(d_k)), 0 for muP (c = m/d_k).

tests/test_lr_theory.py checks the premise with one real Adam step.
"""

from __future__ import annotations

import math

from attention.registry import get_variant


def factor_slope(name: str, d_lo: int = 64, d_hi: int = 128, n_keys: int = 16) -> float | None:
    """dlog2 c / dlog2 d_k of a variant's score factor c(d_k); None where the variant has no
    fixed bilinear factor (its logit is not c * q.k)."""
    scale = get_variant(name).logit_scale
    if scale is None:
        return None
    return math.log2(scale(d_hi, n_keys) / scale(d_lo, n_keys)) / math.log2(d_hi / d_lo)


ADAM_STEP = ("adam", "adamw")  # optimizers whose step size is lr per entry, whatever the gradient


def predicted_lr_slope(name: str, optimizer: str = "adam") -> float | None:
    """Predicted slope of log2(best lr) per doubling of d_k under Adam; None where undefined
    (no fixed factor, or an optimizer whose step scales with the gradient, such as SGD)."""
    slope = factor_slope(name)
    if slope is None or optimizer not in ADAM_STEP:
        return None
    return 0.0 - (1.0 + slope)  # 0.0 - : muP's prediction prints as +0.0, not -0.0
