"""unscaled_init: a control that separates the two causes of unscaled's fall at large d_k.

Its score is unscaled's, q.k with no factor, but the model draws W_q with its init shrunk
by 1/sqrt(d_k) (Variant.query_init_scale, applied in training.inits). Then q's components
have variance p / d_k, and given q the logits are N(0, p |q|^2) with |q|^2 = (p / d_k)
chi2(d_k): at init exactly scaled's law (scaled: (1/d_k) p |q|^2 with |q|^2 = p chi2(d_k)).

Under Adam each entry moves by about lr per step whatever its scale (the first step is
lr * sign(gradient), and the gradient's sign does not depend on W_q's scale), so:
  * W_q's step moves the logit by lr |x_q|_1 |k|_1, as unscaled's does (k as unscaled's);
  * W_k's step moves it by lr |x_k|_1 |q|_1, with |q| shrunk by 1/sqrt(d_k): as scaled's.
tests/test_controls_init.py checks both with one real Adam step.

What it separates, at each d_k's own best rate (verdicts.controls):
  * near scaled: the saturated start was the harm (the start is the only thing it shares
    with scaled that unscaled lacks, beside W_k's step);
  * near unscaled: the harm is what training does to the logits, Adam's step through W_q
    growing like d_k * lr;
  * what it cannot separate: W_k's share (its W_k step is scaled's, so a gap that W_k's step
    alone makes reads as "the start"), and a rate choice can absorb part of either cause
    (each variant at its own best rate: a smaller rate also shrinks W_q's logit step).
"""
from __future__ import annotations

import math

from attention.dot import dot
from attention.registry import Variant, no_params, register


def _unscaled_init(params, q, k, key_count=None):
    return dot(q, k)


register(Variant(
    "unscaled_init", no_params, _unscaled_init,
    doc="softmax(q.k), W_q's init shrunk by 1/sqrt(d_k): scaled's logits at init, unscaled's score",
    # the score is exactly q.k: reassociation (training.reassociate) and the Adam-step
    # prediction (lr.theory) read its factor, 1; its init is what the query factor shrinks
    logit_scale=lambda d_k, n_keys: 1.0, bilinear=True,
    query_init_scale=lambda d_k: 1.0 / math.sqrt(d_k),
    label="unscaled, W_q init / √d_k", color="#7f7f7f",  # grey: a control, apart from every hue
))
