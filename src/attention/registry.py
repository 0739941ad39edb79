"""A variant of attention is its compatibility (score) function.

Each variant supplies two pure functions:
  init(rng, d_k, **init_options) -> params      (a dict pytree, {} if parameter-free)
  score(params, q, k, key_count, **score_options) -> logits [..., n_q, n_k]
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
    # Names of the knobs each function takes; anything else is an error.
    init_options: tuple[str, ...] = ()
    score_options: tuple[str, ...] = ()
    # The factor c in logits = c * q.k at init, as a function of d_k and the
    # number of keys; None where the score is not a scaled dot product.
    # Used for theory lines (Var(logit) = c^2 Var(q.k)).
    logit_scale: Callable[[int, int], float] | None = None
    # True where score(params, q, k) = c * q.k with c fixed by d_k and the
    # options alone (no per-row factor): then q.k = (W_k^T q).x lets a model
    # skip forming the keys (see experiments.training.reassociate.bilinear_rows).
    bilinear: bool = False
    # factored(params, q, w_k, x, key_count, **score_options) -> logits: the same
    # score with the keys given in factored form k = x @ w_k (w_k [d_model, d_k],
    # x [..., n_k, d_model]), written so that nothing of size n_k x d_k is formed.
    # None where the variant has no such form (see training.reassociate.factored_rows).
    factored: Callable[..., Any] | None = None

    @property
    def reassociable(self) -> bool:
        """Whether model.reassociate changes this variant's computation."""
        return self.bilinear or self.factored is not None


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


def split_options(variant: Variant, options: dict) -> tuple[dict, dict]:
    """(init options, score options) of a variant; unknown names are an error."""
    known = variant.init_options + variant.score_options
    unknown = sorted(set(options) - set(known))
    if unknown:
        allowed = ", ".join(known) or "none"
        raise ValueError(f"attention.{unknown[0]}: not an option of {variant.name!r}; "
                         f"allowed: {allowed}")
    pick = lambda names: {k: v for k, v in options.items() if k in names}
    return pick(variant.init_options), pick(variant.score_options)


def no_params(rng, d_k: int) -> Params:
    del rng, d_k
    return {}
