"""A variant of attention is its compatibility (score) function.

Each variant supplies two pure functions:
  init(rng, d_k, **options) -> params      (a dict pytree, {} if parameter-free)
  score(params, q, k, key_count, **options) -> logits [..., n_q, n_k]
Masking, softmax and the weighted sum live once, in `core.attend`.

`key_count` ([..., n_q, 1], float) is the number of keys each query row may
attend to; only length-aware variants (ssmax) read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

Params = dict[str, Any]


@dataclass(frozen=True)
class Variant:
    name: str
    init: Callable[..., Params]
    score: Callable[..., Any]
    doc: str = ""
    # The factor c in logits = c * q.k at init, as a function of d_k and the
    # number of keys; None where the score is not a scaled dot product.
    # Used for theory lines (Var(logit) = c^2 Var(q.k)).
    logit_scale: Callable[[int, int], float] | None = None


VARIANTS: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    VARIANTS[variant.name] = variant
    return variant


class UnknownVariantError(ValueError):
    pass


def get_variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        valid = ", ".join(sorted(VARIANTS))
        raise UnknownVariantError(
            f"attention: unknown variant {name!r}; valid names: {valid}"
        ) from None


def no_params(rng, d_k: int, **options) -> Params:
    del rng, d_k, options
    return {}
