"""Attention as the paper defines it: a compatibility function of query and
key gives weights over the values; the output is their weighted sum.

A variant supplies only its compatibility (score) function and its
parameters; masking, softmax and the weighted sum are shared (`core`).
"""
from attention import additive, dot, normed, stats  # noqa: F401  (register the variants)
from attention.core import (
    attend,
    attend_with_logits,
    factored_scores,
    init_params,
    masked_softmax,
    scores,
)
from attention.registry import VARIANTS, UnknownVariantError, Variant, get_variant

__all__ = [
    "VARIANTS", "Variant", "UnknownVariantError", "get_variant",
    "init_params", "scores", "factored_scores", "attend", "attend_with_logits", "masked_softmax", "stats",
]
